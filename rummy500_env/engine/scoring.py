"""Hand scores and the end of the game (rules §1 "Scoring", §2 `winner_must_go_out`, §4).

Pure functions of the table, the hands and the totals, so that a `Game`, a position being
checked and a rendering all score the same way. `hand_result` is the one place the end of a
hand is worked out (scores, who went out, totals, winner, whether the game is over): the game,
position checks, renderings, records and the play page all read its `HandResult`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class HandResult:
    """How a hand ended: what everyone scored and whether that ends the game."""

    scores: tuple[int, ...]
    """Per player: table value of the cards they put down minus the value of their hand."""
    totals: tuple[int, ...]
    """Running totals after this hand."""
    went_out: int | None
    """The player whose hand is empty (None: the stock ran out, or `turn_limit`)."""
    game_over: bool
    """These totals end the game (a winner, or `hand_limit` reached)."""
    winner: int | None
    """The winner when the game is over (None: play on, or a draw at `hand_limit`)."""
    truncated: bool
    """The game ended by `hand_limit` rather than by the target (§4)."""

    def __reduce__(self) -> tuple[type[HandResult], tuple[object, ...]]:
        """Copied and pickled through the constructor: a compiled frozen class (setup.py)
        refuses the field-by-field assignment `copy` and `pickle` do by default."""
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def to_dict(self) -> dict[str, object]:
        """JSON-compatible form (lists for tuples)."""
        return {
            "scores": list(self.scores),
            "totals": list(self.totals),
            "went_out": self.went_out,
            "game_over": self.game_over,
            "winner": self.winner,
            "truncated": self.truncated,
        }


def hand_result(
    rules: Rules,
    melds: Iterable[Meld],
    hands: Sequence[Sequence[Card]],
    totals_before: Sequence[int],
    hands_played: int,
) -> HandResult:
    """The result of a hand that has ended, `hands_played` counting it (rules §1, §2, §4)."""
    scores = hand_scores(rules, melds, hands)
    went_out = next((p for p in range(rules.players) if not hands[p]), None)
    return result_of_scores(rules, scores, totals_before, went_out, hands_played)


def result_of_scores(
    rules: Rules,
    scores: Sequence[int],
    totals_before: Sequence[int],
    went_out: int | None,
    hands_played: int,
) -> HandResult:
    """`hand_result` from the hand's scores (all a seat needs once the hand is shown)."""
    totals = tuple(t + s for t, s in zip(totals_before, scores, strict=True))
    by_target = game_winner(rules, totals, went_out, limit_reached=False)
    limit_reached = rules.hand_limit is not None and hands_played >= rules.hand_limit
    over = by_target is not None or limit_reached
    winner = game_winner(rules, totals, went_out, limit_reached=True) if over else None
    return HandResult(tuple(scores), totals, went_out, over, winner, over and by_target is None)
