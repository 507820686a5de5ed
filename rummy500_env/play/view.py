"""What the page is sent: a position as one seat sees it, and each move told in words.

Everything the browser receives about a game goes through `table_view` and `describe`, so
the one question "may this seat see that?" is answered here. With a `viewer` seat: that
seat's hand, the pile in order, the table, each player's hand size, the cards each player is
known to hold (taken from the pile in view), totals and table points; never another hand or
the stock, until the hand is over and the hands are laid down to be counted. With no viewer
(watching a recorded game) every hand is shown. The stock's order and the seed are never
shown here at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rummy500_env.engine.cards import JOKER, Card, card_str, rank_of, suit_of
from rummy500_env.engine.melds import hand_values
from rummy500_env.engine.notation import Action
from rummy500_env.engine.positions import Position, to_dict
from rummy500_env.engine.scoring import table_points

SUIT_PLACE = (0, 1, 3, 2)
"""Display order of the suits C, D, H, S: clubs, diamonds, spades, hearts, so colours alternate."""


def display_key(card: Card) -> tuple[int, int]:
    """Where a card goes in a shown hand: by suit (black and red alternating), then rank;
    jokers last."""
    if card == JOKER:
        return (len(SUIT_PLACE), 0)
    return (SUIT_PLACE[suit_of(card)], rank_of(card))


def display_order(cards: Sequence[Card]) -> list[Card]:
    """Cards sorted for showing a hand (`display_key`)."""
    return sorted(cards, key=display_key)


def names_of(cards: Iterable[Card]) -> list[str]:
    return [card_str(c) for c in cards]


def pile_actions(pile: Sequence[Card]) -> list[str]:
    """For each pile card (bottom first), the action that picks it up: ``take`` for the top,
    ``dig 9D`` below it (``dig 9D#2`` for the second buried copy from the top, two decks).
    Whether each is legal now is the engine's to say; the page asks it."""
    out = []
    for i, c in enumerate(pile):
        if i == len(pile) - 1:
            out.append("take")
            continue
        copy = 1 + sum(1 for x in pile[i + 1 : -1] if x == c)
        out.append(f"dig {card_str(c)}" + (f"#{copy}" if copy != 1 else ""))
    return out


def table_view(p: Position, viewer: int | None, names: Sequence[str]) -> dict[str, Any]:
    """The position as `viewer` may see it (None: every hand shown), as JSON-ready data."""
    r, n = p.rules, p.rules.players
    over = p.phase in ("hand_over", "game_over")
    points = table_points(r, p.melds)
    totals = p.totals_before()
    players = []
    for q in range(n):
        entry: dict[str, Any] = {
            "seat": q,
            "name": names[q],
            "hand_size": len(p.hands[q]),
            "known": names_of(display_order(p.known_cards(q))),
            "total": totals[q],
            "table_points": points[q],
        }
        if viewer is None or q == viewer or over:  # at the hand's end the hands are counted
            entry["hand"] = names_of(display_order(p.hands[q]))
        players.append(entry)
    view: dict[str, Any] = {
        "rules": {
            "name": r.preset_name() or "custom",
            "players": n,
            "target": r.target,
            "scoring": r.scoring,
            "stock_out": r.stock_out,
        },
        "phase": p.phase,
        "turn": p.turn,
        "dealer": p.dealer,
        "hand_number": p.hands_played + (0 if over else 1),
        "players": players,
        "stock": len(p.stock),
        "pile": names_of(p.pile),
        "pile_actions": pile_actions(p.pile),
        "melds": [  # the engine's own notation of each meld (a joker is "JK=9D")
            d | {"kind": m.kind, "fits": names_of(m.fits)}
            for d, m in zip(to_dict(p)["melds"], p.melds, strict=True)
        ],
        "must_play": None if p.must_play is None else card_str(p.must_play),
        "taken_top": None if p.taken_top is None else card_str(p.taken_top),
        "result": hand_result(p) if over else None,
    }
    if viewer is not None:
        view["hand"] = names_of(display_order(p.hands[viewer]))
    return view


def hand_result(p: Position) -> dict[str, Any]:
    """The end of a hand, per player: table points, the penalty of the cards left in hand,
    the hand score (table - penalty), the new totals; who went out; the winner if the game
    is over (docs/rules.md §1 scoring)."""
    r, result = p.rules, p.result()
    values = hand_values(r.scoring)
    return {
        "table": table_points(r, p.melds),
        "penalty": [sum(values[c] for c in h) for h in p.hands],
        "scores": list(result.scores),
        "totals_before": p.totals_before(),
        "totals": list(result.totals),
        "went_out": result.went_out,
        "game_over": result.game_over,
        "winner": result.winner,
    }


def describe(
    before: Position,
    after: Position,
    player: int,
    action: Action,
    names: Sequence[str],
    viewer: int | None,
) -> dict[str, Any]:
    """One move in words, as `viewer` may know it (a card drawn from the stock is named only
    to the player who drew it, or when every hand is shown), with the cards it moved in view
    (the page highlights them)."""
    you = viewer is not None and player == viewer
    name = names[player]
    text, cards = _move_text(before, after, player, action, you or viewer is None)
    if not after.hands[player]:
        text += " and {go|goes} out"
    elif after.phase in ("hand_over", "game_over") and action.kind != "decline":
        limit = after.rules.turn_limit
        why = "the turn limit" if limit is not None and after.turns >= limit else "an empty stock"
        text += f"; the hand ends ({why})"
    return {
        "seat": player,
        "action": str(action),
        "text": f"{name} {_verb(text, you)}",
        "cards": cards,
    }


def _move_text(
    before: Position, after: Position, player: int, action: Action, see_draw: bool
) -> tuple[str, list[str]]:
    """The move's words with each verb as ``{base|third person}``, and the cards it showed.

    Cards are written as the action writes them (so a joker reads ``JK=6H``)."""
    k, words = action.kind, str(action).split()[1:]
    faces = [w.split("=")[0].split("#")[0] for w in words]  # as the page's data-card names them
    if k == "draw":
        if not see_draw:
            return "{draw|draws} from the stock", []
        drawn = names_of((Counter(after.hands[player]) - Counter(before.hands[player])).elements())
        return f"{{draw|draws}} {' '.join(drawn)} from the stock", []
    if k == "take":
        top = card_str(before.pile[-1])
        return f"{{take|takes}} {top} from the pile", [top]
    if k == "dig":
        taken = names_of(_dug(before.pile, action))
        return (
            f"{{dig|digs}} for {words[0]} and {{pick|picks}} up {len(taken)} cards: "
            f"{' '.join(taken)}",
            taken,
        )
    if k == "decline":
        return "{take|takes} nothing: the stock is empty, so the hand ends", []
    if k == "meld":
        return f"{{meld|melds}} {' '.join(words)}", faces
    if k == "layoff":
        onto = " ".join(to_dict(before)["melds"][action.target]["cards"])
        return f"{{lay|lays}} {words[0]} off on {onto}", faces[:1]
    if k == "discard":
        return f"{{discard|discards}} {words[0]}", faces
    if k == "call":  # docs/rules.md §5: a "Rummy!" call on the pile
        return f"{{call|calls}} Rummy on {words[0]}", faces
    if k == "pass":
        return "{pass|passes}", []
    if k == "done":
        return "{end|ends} the out-of-turn play", []
    return f"{{play|plays}} {action}", faces  # a kind this page does not know by name yet


def _dug(pile: Sequence[Card], action: Action) -> list[Card]:
    """The cards a dig takes: the named buried copy and every card above it."""
    card, seen = action.cards[0], 0
    for depth in range(1, len(pile)):
        if pile[-1 - depth] == card:
            seen += 1
            if seen == action.copy:
                return list(pile[-1 - depth :])
    return [card]


def _verb(text: str, you: bool) -> str:
    """Fill each ``{base|third person}`` verb slot for "You" or for a named player."""
    out, rest = [], text
    while "{" in rest:
        head, _, tail = rest.partition("{")
        forms, _, rest = tail.partition("}")
        base, _, third = forms.partition("|")
        out += [head, base if you else third]
    return "".join([*out, rest])
