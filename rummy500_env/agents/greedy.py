"""`GreedyAgent`: puts down all it can, takes only what it can use at once, sheds high cards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rummy500_env.agents.bot import Bot, joker_of, template
from rummy500_env.agents.heuristics import (
    laid_value,
    neighbours,
    partial_cards,
    plan,
    start_value,
)
from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.melds import JOKER_VALUE
from rummy500_env.engine.notation import Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView


class GreedyAgent(Bot):
    """A simple, honest baseline:

    * melds and lays off everything it can, most valuable first;
    * takes the top discard only when it completes a meld or a lay-off at once;
    * digs when the points the dig puts on the table this turn exceed the value of the extra
      cards it must take (those its plan leaves in hand);
    * discards its highest-value card that is in no partial meld.

    With jokers and calls (docs/rules.md §5): it plays its natural cards first, then its
    jokers (completing a pair, else on any lay-off spot), so it never discards a joker while a
    place for one exists, and discards one only when nothing else is left (going out); it
    calls "Rummy!" on the pile card whose call pays by the rule it digs by (a call being an
    extra play out of turn, up to `CALL_BONUS` of leftover cards is accepted), and ends a
    caller's play with ``done`` once nothing more goes down. With calls its discard is the
    loose card that could hand the fewest points to a caller (`call_safe`), the highest
    of those.
    """

    CALL_BONUS = 30.0
    """Points a call is worth beyond what it puts down: it is a play out of turn."""

    def __init__(self, rules: Rules | str | dict[str, Any] = "standard") -> None:
        super().__init__(rules)
        self.scoring = self.rules.scoring
        self.calls = self.rules.rummy_calls

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        ordered = self.ordered(view, legal)
        if view.phase == "draw":
            return self.choose_draw(view, ordered)
        if view.phase == "call":
            return self.choose_call(view, ordered)
        return self.choose_play(view, ordered)

    def choose_draw(self, view: SeatView, legal: list[Action]) -> Action:
        """The pile take worth most (`pickup_value` > 0), else the stock, else decline."""
        best = self.best_pickup(view, legal)
        if best is not None:
            return best
        return next((a for a in legal if a.kind == "draw"), None) or next(
            (a for a in legal if a.kind == "decline"), legal[0]
        )

    def choose_call(self, view: SeatView, legal: list[Action]) -> Action:
        """A "Rummy!" call is a dig out of turn (docs/rules.md §5): make the one worth most
        (`pickup_value` + `CALL_BONUS` > 0), else pass."""
        best = self.best_pickup(view, legal, self.CALL_BONUS)
        return best if best is not None else next(a for a in legal if a.kind == "pass")

    def best_pickup(self, view: SeatView, legal: list[Action], bonus: float = 0.0) -> Action | None:
        """The take, dig or call with the highest `pickup_value`, if that plus `bonus` is
        above 0."""
        base, _ = plan(view.hand, view.melds, self.scoring)
        best, best_net = None, -bonus
        for a in legal:
            if a.kind in ("take", "dig", "call"):
                net = self.pickup_value(view, a, base)
                if net > best_net:
                    best, best_net = a, net
        return best

    def pickup_value(self, view: SeatView, a: Action, base: int) -> float:
        """Net points of taking the pile down to `a`, given `base` points the hand can put
        down now: a top card only if it is used at once; a dig (or a call) if what it puts
        down exceeds the value of the taken cards left over."""
        cards = self.taken(view, a)
        value, used = plan((*view.hand, *cards), view.melds, self.scoring)
        gain = value - base
        if a.kind == "take":
            return gain if used[cards[0]] and gain > 0 else 0.0
        return gain - sum(self.values[c] for c in cards if not used[c])

    def choose_play(self, view: SeatView, legal: list[Action]) -> Action:
        """Natural melds, natural lay-offs, melds with a joker, joker lay-offs (each the most
        valuable first), then `done` after a call, else the discard."""
        for kind, wild in (("meld", False), ("layoff", False), ("meld", True), ("layoff", True)):
            plays = [a for a in legal if a.kind == kind and bool(a.jokers) == wild]
            if plays:
                return max(plays, key=lambda a: self.play_value(view, a))
        done = next((a for a in legal if a.kind == "done"), None)
        if done is not None:
            return done
        discards = [a for a in legal if a.kind == "discard" and a.cards[0] != JOKER]
        if not discards:  # only jokers left in hand: discarding one goes out
            return next(a for a in legal if a.kind == "discard")
        partial = partial_cards(view.naturals)
        loose = [a for a in discards if a.cards[0] not in partial] or discards
        if self.calls:  # any opponent may call the discard (docs/rules.md §5)
            unseen = set(view.unseen()) | {c for q in view.opponents for c in view.known[q]}
            return max(loose, key=lambda a: self.call_safe(a.cards[0], view, unseen))
        return max(loose, key=lambda a: (self.values[a.cards[0]], a.cards[0]))

    def call_safe(self, card: int, view: SeatView, unseen: set[int]) -> tuple[int, int, int]:
        """How safe a discard is when any opponent may call it: least first the points it
        could hand over (its value per pair an opponent could hold), then the highest card.
        Over 600 deals against `RandomAgent` this beat ranking by the pairs alone by 15
        points a hand."""
        value = self.values[card]
        return -callers(card, unseen) * value, value, card

    def play_value(self, view: SeatView, a: Action) -> int:
        """What a meld or a lay-off puts on the table."""
        if a.kind == "meld":
            return start_value(template(a), joker_of(a), self.scoring)
        if a.jokers:
            return JOKER_VALUE
        return self.layoff_value(view, a)

    def layoff_value(self, view: SeatView, a: Action) -> int:
        """What the lay-off `a` puts on the table (an ace laid below a 2 scores low)."""
        return laid_value(view.melds[a.target], a.cards[0], self.scoring)

    def __repr__(self) -> str:
        return "GreedyAgent()"


def callers(card: int, unseen: set[int]) -> int:
    """How many pairs of cards that make a meld with `card` lie both in `unseen` (the cards an
    opponent could hold: unseen ones and those known in their hands), so could call it."""
    return sum(1 for a, b in neighbours(card) if a in unseen and b in unseen)
