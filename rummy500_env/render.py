"""Plain-text rendering of a position: hands, the pile in order, melds with owners, scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rummy500_env.cards import card_str, cards_str

if TYPE_CHECKING:
    from rummy500_env.game import Game


def render(game: Game, viewer: int | None = None) -> str:
    """A readable picture of the position.

    With `viewer` set, other players' hands show only their size and the cards they are known
    to hold (what that seat may see); with None every hand is shown.
    """
    r = game.rules
    lines = []
    status = {
        "draw": f"player {game.turn} to draw",
        "play": f"player {game.turn} to play",
        "hand_over": "hand over",
        "game_over": "game over",
    }[game.phase]
    lines.append(
        f"Rummy 500 - hand {game.hands_played + (0 if game.is_hand_over else 1)}, "
        f"dealer {game.dealer}, turn {game.turns}: {status}"
    )
    if game.phase == "game_over":
        w = game.winner
        lines.append("winner: " + ("none (a draw)" if w is None else f"player {w}"))
    scores = game.hand_scores()
    totals = game.totals
    for p in range(r.players):
        mark = ">" if p == game.turn and not game.is_hand_over else " "
        if viewer is None or viewer == p:
            hand = cards_str(game.hand(p)) or "(empty)"
        else:
            known = game.known(p)
            hand = f"{game.count[p]} cards" + (f", known: {cards_str(known)}" if known else "")
        lines.append(f"{mark} P{p} [{hand}]  hand score {scores[p]:+d}  total {totals[p]}")
    lines.append(f"  stock: {len(game.stock)} cards")
    pile = game.pile
    lines.append("  pile (bottom -> top): " + (cards_str(pile) if pile else "(empty)"))
    if game.melds:
        lines.append("  melds:")
        for i, m in enumerate(game.melds):
            owned = " ".join(f"{card_str(c)}/P{o}" for c, o in zip(m.cards, m.owners, strict=True))
            lines.append(f"    #{i} {m.kind}: {owned}")
    else:
        lines.append("  melds: none")
    extras = []
    if game.must_play is not None:
        extras.append(f"must play {card_str(game.must_play)}")
    if game.taken_top is not None:
        extras.append(f"may not discard {card_str(game.taken_top)}")
    if extras:
        lines.append("  " + "; ".join(extras))
    return "\n".join(lines)
