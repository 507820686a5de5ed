"""Hand scores and the end of the game (rules §1 "Scoring", §2 `winner_must_go_out`, §4).

Pure functions of the table, the hands and the totals, so that a `Game`, a position being
checked and a rendering all score the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rummy500_env.engine.cards import Card
from rummy500_env.engine.melds import Meld, hand_values, meld_value
from rummy500_env.engine.rules import Rules


def table_points(rules: Rules, melds: Iterable[Meld]) -> list[int]:
    """Per player: the value of the cards they put on the table (read from the melds' shapes
    now: an ace's value is settled by its run's final shape)."""
    points = [0] * rules.players
    for m in melds:
        for owner, v in zip(m.owners, meld_value(m, rules.scoring), strict=True):
            points[owner] += v
    return points


def hand_scores(rules: Rules, melds: Iterable[Meld], hands: Sequence[Iterable[Card]]) -> list[int]:
    """Per player: table value of the cards they put down minus the value of their hand."""
    values = hand_values(rules.scoring)
    points = table_points(rules, melds)
    return [points[p] - sum(values[c] for c in hands[p]) for p in range(rules.players)]


def game_winner(
    rules: Rules, totals: Sequence[int], went_out: int | None, limit_reached: bool
) -> int | None:
    """Who has won, given the totals after a hand: None means play on (or, with
    `limit_reached`, a draw at `hand_limit`).

    The highest total wins once anyone has the target and no one ties it (rules §1); with
    `winner_must_go_out`, only the player who went out can end the game (§2); at
    `hand_limit` the single highest total wins (§4).
    """
    best = max(totals)
    leaders = [p for p, t in enumerate(totals) if t == best]
    if rules.winner_must_go_out:
        if went_out is not None and totals[went_out] >= rules.target:
            return went_out
    elif best >= rules.target and len(leaders) == 1:
        return leaders[0]
    if limit_reached and len(leaders) == 1:
        return leaders[0]
    return None
