"""`SearchAgent`: determinized Monte-Carlo search over the candidate actions.

For each decision it samples the cards it cannot see consistently with what its seat knows,
with the engine's determinization (`Game.from_seat_view`: opponents keep the cards they are
known to hold and get their hand sizes; the rest of the unseen cards fill the stock in random
order), plays every candidate action in that world,
finishes the hand with fast rollout policies, and picks the candidate with the best mean
hand-score difference. All candidates share each sampled world and its rollout randomness
(common random numbers), so their comparison is paired. The budget is a number of sampled
worlds or milliseconds per decision.

With jokers and calls (docs/rules.md §5) the hidden jokers are sampled with the other hidden
cards (those not in the seat's hand, the pile, on the table or known in an opponent's hand),
and the rollouts play jokers and calls too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from rummy500_env.agents.bot import Bot
from rummy500_env.agents.expert import ExpertAgent
from rummy500_env.agents.playout import play_out
from rummy500_env.engine.errors import InvalidPositionError
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action, pile_depth
from rummy500_env.engine.positions import LIVE_PHASES
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView


class SearchAgent(Bot):
    """Determinized Monte-Carlo search (see the module docstring).

    Args:
        rules: the rules the agent plays.
        ms: time budget per decision in milliseconds (default 50 when `rollouts` is None).
        rollouts: number of sampled worlds per decision instead of a time budget.
        candidates: how many actions to search, the `ExpertAgent`'s favourites first.
        seed: seeds the sampling.
    """

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        ms: float | None = None,
        rollouts: int | None = None,
        candidates: int = 5,
        seed: int | None = None,
    ) -> None:
        super().__init__(rules)
        self.prior = ExpertAgent(self.rules)
        if rollouts is None and ms is None:
            ms = 50.0
        self.ms, self.rollouts, self.candidates = ms, rollouts, candidates
        self.rng = random.Random(seed)
        self.last_worlds = 0
        """Worlds sampled and played out for the last decision (for benchmarks)."""

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        start = time.perf_counter()
        ordered = self.ordered(view, legal)
        favourite = self.prior.decide(view, ordered)
        cands = self._candidates(view, ordered, favourite)
        self.last_worlds = 0
        if len(cands) == 1:
            return cands[0]
        totals = [0.0] * len(cands)
        worlds = 0
        # Stop when the next world would end past 95% of the budget: the rest of the
        # decision (the expert's pick, the final choice) must fit too.
        deadline = None if self.ms is None else start + 0.95 * self.ms / 1000
        budget = self.rollouts if self.rollouts is not None else 10_000
        for _attempt in range(3 * budget):
            world_start = time.perf_counter()
            outcome = self._evaluate_world(view, cands)
            if outcome is not None:
                for k, v in enumerate(outcome):
                    totals[k] += v
                worlds += 1
            if worlds >= budget:
                break
            now = time.perf_counter()
            if deadline is not None and now + 1.5 * (now - world_start) >= deadline:
                break  # the next world would not finish inside the budget
        self.last_worlds = worlds
        if worlds == 0:
            return favourite
        best = max(range(len(cands)), key=lambda k: (totals[k], cands[k] == favourite))
        return cands[best]

    def _evaluate_world(self, view: SeatView, cands: list[Action]) -> list[float] | None:
        """Sample one world and play every candidate out in it with the same rollout seed;
        None when the view admits no world."""
        game = self.sample_world(view)
        if game is None:
            return None
        seed = self.rng.getrandbits(32)
        outcome = []
        for a in cands:
            g = game.copy()
            g.play_unchecked(a)
            outcome.append(play_out(g, random.Random(seed), self.values, view.seat))
        return outcome

    # --- candidates ------------------------------------------------------------------------

    def _candidates(self, view: SeatView, legal: list[Action], favourite: Action) -> list[Action]:
        """The expert's choice plus the next best of each kind, at most `candidates`."""
        out = [favourite]
        if view.phase in ("draw", "call"):
            rest = [a for a in legal if a != favourite]
            depth = {a: pile_depth(view.pile, a) for a in rest}  # None: draw, decline, pass
            rest.sort(key=lambda a: (a.kind not in ("draw", "pass"), _or_first(depth[a])))
        else:
            w = self.prior.urgency(view)
            plays = [a for a in legal if a.kind in ("meld", "layoff", "done") and a != favourite]
            discards = [a for a in legal if a.kind == "discard" and a != favourite]
            discards.sort(key=lambda a: self.prior.keep_score(a.cards[0], view, w))
            rest = plays + discards
        return (out + rest)[: self.candidates]

    # --- sampling a world ------------------------------------------------------------------------

    def sample_world(self, view: SeatView) -> Game | None:
        """A full position consistent with the view, the hidden cards dealt at random by the
        engine's determinization (`Game.from_seat_view`); None when the view admits none."""
        if view.phase not in LIVE_PHASES:
            return None
        try:
            return Game.from_seat_view(view, self.rng, check=False)
        except InvalidPositionError:
            return None

    def __repr__(self) -> str:
        budget = f"{self.rollouts} worlds" if self.rollouts is not None else f"{self.ms:g} ms"
        return f"SearchAgent({budget})"


def _or_first(depth: int | None) -> int:
    """A pile depth for sorting; no depth (draw, decline, pass) first."""
    return -1 if depth is None else depth
