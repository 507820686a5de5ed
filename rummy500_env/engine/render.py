"""Plain-text rendering of a position: hands, the pile in order, melds with owners, scores.

Works on a `Position` (what `Game.position()` returns, or a recorded one), so anything that
holds a position can be shown without a live game.
"""

from __future__ import annotations

from rummy500_env.engine.cards import card_str, cards_str
from rummy500_env.engine.positions import Position

_STATUS = {
    "draw": "player {} to draw",
    "play": "player {} to play",
    "call": "player {} may call Rummy! or pass",
    "called": "player {} called Rummy! and plays out of turn",
}


def render(position: Position, viewer: int | None = None) -> str:
    """A readable picture of the position.

    With `viewer` set, other players' hands show only their size and the cards they are known
    to hold (what that seat may see); with None every hand is shown.
    """
    p, r = position, position.rules
    over = p.phase in ("hand_over", "game_over")
    status = _STATUS[p.phase].format(p.turn) if not over else p.phase.replace("_", " ")
    if p.discarder is not None:
        status += f" (after player {p.discarder}'s discard)"
    lines = [
        f"Rummy 500 - hand {p.hands_played + (0 if over else 1)}, "
        f"dealer {p.dealer}, turn {p.turns}: {status}"
    ]
    result = p.result()
    scores = result.scores
    totals = result.totals if over else tuple(p.totals_before())
    if p.phase == "game_over":
        w = result.winner
        lines.append("winner: " + ("none (a draw)" if w is None else f"player {w}"))
    for q in range(r.players):
        mark = ">" if q == p.turn and not over else " "
        if viewer is None or viewer == q:
            hand = cards_str(p.hands[q]) or "(empty)"
        else:
            known = p.known_cards(q)
            hand = f"{len(p.hands[q])} cards" + (f", known: {cards_str(known)}" if known else "")
        lines.append(f"{mark} P{q} [{hand}]  hand score {scores[q]:+d}  total {totals[q]}")
    lines.append(f"  stock: {len(p.stock)} cards")
    lines.append("  pile (bottom -> top): " + (cards_str(p.pile) if p.pile else "(empty)"))
    if p.melds:
        lines.append("  melds:")
        for i, m in enumerate(p.melds):
            owned = " ".join(f"{c}/P{o}" for c, o in zip(m.labels(), m.owners, strict=True))
            lines.append(f"    #{i} {m.kind}: {owned}")
    else:
        lines.append("  melds: none")
    extras = []
    if p.must_play is not None:
        extras.append(f"must play {card_str(p.must_play)}")
    if p.taken_top is not None:
        extras.append(f"may not discard {card_str(p.taken_top)}")
    if extras:
        lines.append("  " + "; ".join(extras))
    return "\n".join(lines)
