"""What "Put down all" puts down, and which cards in a hand the page marks as making melds.

The page's button places every meld and lay-off at once. Which ones is a choice (a card can be
in a set or in a run, a lay-off can open room for another), so the plan is the sequence of
legal melds and lay-offs that raises the player's hand score the most, found by a bounded
search over the engine's own legal actions: the engine decides what is legal (the dig
obligation first, `discard_to_go_out`, ...), this module only chooses among legal actions.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rummy500_env.engine.cards import JOKER, card_str
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld
from rummy500_env.engine.notation import Action
from rummy500_env.engine.positions import Position

PUT_DOWN_KINDS = ("meld", "layoff")
SEARCH_NODES = 1500
"""Positions the search may visit. A hand rarely offers more than a few melds, so the best plan
is found long before this; a huge dug hand gets the best plan found within it."""


def put_down_plan(game: Game, budget: int = SEARCH_NODES) -> list[Action]:
    """The melds and lay-offs, in an order the engine accepts, that raise the hand score of the
    player to act the most (ties: fewer actions). Empty when none is legal (before the draw)."""
    if game.is_hand_over:
        return []
    player = game.current_player
    start = game.hand_scores()[player]
    best: tuple[int, int] = (0, 0)
    best_path: list[Action] = []
    seen: set[tuple[tuple[int, ...], tuple[Meld, ...]]] = set()
    stack: list[tuple[Game, list[Action]]] = [(game, [])]
    while stack and len(seen) < budget:
        g, path = stack.pop()
        key = (tuple(g.hand(player)), tuple(g.melds))
        if key in seen:
            continue
        seen.add(key)
        value = (g.hand_scores()[player] - start, -len(path))
        if path and value > best:
            best, best_path = value, path
        if g.is_hand_over:
            continue
        for a in g.legal_actions():
            if a.kind in PUT_DOWN_KINDS:
                child = g.copy()
                child.play_unchecked(a)  # taken from the legal list
                stack.append((child, [*path, a]))
    return best_path


@dataclasses.dataclass(frozen=True)
class Mark:
    """Where a card of the hand would go under the plan: `group` numbers the meld it joins (the
    page gives each group a colour); `onto` is the table meld's index for a lay-off onto a
    meld already on the table, else None (a new meld, or a lay-off onto one)."""

    group: int
    onto: int | None


def hand_marks(game: Game, player: int) -> list[Mark | None]:
    """For each card of `player`'s hand (in `Game.hand` order), where "Put down all" would put
    it, or None. On the player's own play phase this is the plan of `put_down_plan`; at any
    other time it is the plan the same hand would have right after drawing nothing, so the
    page can mark meldable cards while the player waits. Reads only the player's hand and the
    table, which the player sees."""
    g = _as_if_playing(game, player)
    if g is None:
        return []
    hand = g.hand(player)
    marks: list[Mark | None] = [None] * len(hand)
    groups: dict[int, int] = {}  # meld index -> group
    for a in put_down_plan(g):
        if a.kind == "meld":
            target, onto = len(g.melds), None
        else:
            target = a.target
            onto = None if target in groups or target >= len(game.melds) else target
        group = groups.setdefault(target, len(groups))
        for c in a.cards:
            held = JOKER if a.jokers >> c & 1 else c  # "JK=QD" is the joker in the hand
            i = next((i for i, h in enumerate(hand) if h == held and marks[i] is None), None)
            if i is None:  # cannot happen: the plan plays cards of this hand
                raise RuntimeError(f"the plan's {a} names {card_str(held)}, not in the hand")
            marks[i] = Mark(group, onto)
        g.play_unchecked(a)
    return marks


def _as_if_playing(game: Game, player: int) -> Game | None:
    """The game itself on `player`'s play phase; otherwise a copy of the position with
    `player` in the play phase and no obligations; None once the hand is over."""
    if game.is_hand_over:
        return None
    if game.phase == "play" and game.current_player == player:
        return game.copy()
    fields: dict[str, Any] = {"phase": "play", "turn": player, "taken_top": None, "must_play": None}
    if any(f.name == "discarder" for f in dataclasses.fields(Position)):
        fields["discarder"] = None  # a "Rummy!" call window (docs/rules.md §5) closes too
    p = dataclasses.replace(game.position(), **fields)
    try:
        return Game.from_position(p)
    except Rummy500Error:  # cannot happen for a live hand; marks are only a convenience
        return None
