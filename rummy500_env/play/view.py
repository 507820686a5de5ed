"""What the page is sent: a seat's information state as JSON, and each move told in words.

Both read the engine's `SeatView` (what one seat knows; `Game.seat_view`), so what a seat
may see is decided once, in the engine: its own hand, the pile in order, the table, hand
sizes, the cards each player is known to hold, totals and table points; never another hand
or the stock. `shown` adds the hands that are face up: every hand once the hand is over
(they are laid down to be counted), or every hand when watching a recorded game.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rummy500_env.engine.cards import JOKER, Card, card_str, rank_of, suit_of
from rummy500_env.engine.melds import hand_values
from rummy500_env.engine.notation import Action, pile_action, pile_depth
from rummy500_env.engine.scoring import table_points
from rummy500_env.engine.seat_view import SeatView

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
    return [str(pile_action(pile, "dig", len(pile) - 1 - i)) for i in range(len(pile))]


def table_view(
    view: SeatView, names: Sequence[str], shown: Sequence[Sequence[Card]] | None = None
) -> dict[str, Any]:
    """What `view`'s seat may see, as JSON-ready data, with the face-up hands `shown`."""
    r, n = view.rules, view.rules.players
    over = view.result is not None
    points = table_points(r, view.melds)
    players = []
    for q in range(n):
        entry: dict[str, Any] = {
            "seat": q,
            "name": names[q],
            "hand_size": view.hand_sizes[q],
            "known": names_of(display_order(view.known[q])),
            "total": view.totals[q],
            "table_points": points[q],
        }
        if q == view.seat:
            entry["hand"] = names_of(display_order(view.hand))
        elif shown is not None:
            entry["hand"] = names_of(display_order(shown[q]))
        players.append(entry)
    return {
        "rules": {
            "name": r.preset_name() or "custom",
            "players": n,
            "target": r.target,
            "scoring": r.scoring,
            "stock_out": r.stock_out,
        },
        "phase": view.phase,
        "turn": view.turn,
        "dealer": view.dealer,
        "hand_number": view.hands_played + (0 if over else 1),
        "players": players,
        "stock": view.stock_size,
        "pile": names_of(view.pile),
        "pile_actions": pile_actions(view.pile),
        "melds": [  # the engine's own notation of each meld (a joker is "JK=9D")
            {
                "cards": m.labels(),
                "owners": list(m.owners),
                "kind": m.kind,
                "fits": names_of(m.fits),
            }
            for m in view.melds
        ],
        "must_play": None if view.must_play is None else card_str(view.must_play),
        "taken_top": None if view.taken_top is None else card_str(view.taken_top),
        "result": hand_result(view, shown) if over and shown is not None else None,
    }


def hand_result(view: SeatView, shown: Sequence[Sequence[Card]]) -> dict[str, Any]:
    """The end of a hand, per player: table points, the penalty of the cards left in hand
    (`shown`: the hands laid down), the hand score (table - penalty), the new totals; who
    went out; the winner if the game is over (docs/rules.md §1 scoring)."""
    result = view.result
    assert result is not None, "the hand is not over"
    values = hand_values(view.rules.scoring)
    return {
        "table": table_points(view.rules, view.melds),
        "penalty": [sum(values[c] for c in h) for h in shown],
        "scores": list(result.scores),
        "totals_before": list(view.totals),
        "totals": list(result.totals),
        "went_out": result.went_out,
        "game_over": result.game_over,
        "winner": result.winner,
    }


def describe(
    before: SeatView,
    after: SeatView,
    action: Action,
    names: Sequence[str],
    you: bool | None = None,
) -> dict[str, Any]:
    """One move in words as the seat of the views `before` and `after` it knows it (a card
    drawn from the stock is named only in the drawer's own views), with the cards it moved
    in view (the page highlights them). The mover is `before.turn`; `you` (default: the
    views are the mover's) writes "You draw" rather than the mover's name."""
    player = before.turn
    you = before.seat == player if you is None else you
    name = names[player]
    text, cards = _move_text(before, after, action)
    if after.hand_sizes[player] == 0:
        text += " and {go|goes} out"
    elif after.result is not None and action.kind != "decline":
        limit = after.rules.turn_limit
        why = "the turn limit" if limit is not None and after.turns >= limit else "an empty stock"
        text += f"; the hand ends ({why})"
    return {
        "seat": player,
        "action": str(action),
        "text": f"{name} {_verb(text, you)}",
        "cards": cards,
    }


def _move_text(before: SeatView, after: SeatView, action: Action) -> tuple[str, list[str]]:
    """The move's words with each verb as ``{base|third person}``, and the cards it showed.

    Cards are written as the action writes them (so a joker reads ``JK=6H``)."""
    k, words = action.kind, str(action).split()[1:]
    faces = [w.split("=")[0].split("#")[0] for w in words]  # as the page's data-card names them
    if k == "draw":
        if before.seat != before.turn:  # only the drawer sees the card
            return "{draw|draws} from the stock", []
        drawn = names_of((Counter(after.hand) - Counter(before.hand)).elements())
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
        onto = str(before.melds[action.target])
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
    depth = pile_depth(pile, action)
    return list(pile[len(pile) - 1 - depth :]) if depth is not None else list(action.cards)


def _verb(text: str, you: bool) -> str:
    """Fill each ``{base|third person}`` verb slot for "You" or for a named player."""
    out, rest = [], text
    while "{" in rest:
        head, _, tail = rest.partition("{")
        forms, _, rest = tail.partition("}")
        base, _, third = forms.partition("|")
        out += [head, base if you else third]
    return "".join([*out, rest])
