"""`ISMCTSAgent`: OpenSpiel's own IS-MCTS bot playing Rummy 500 (the ``openspiel`` extra).

The package's loops hand a bot its seat's `SeatView`; OpenSpiel's bot searches an OpenSpiel
state. The agent builds that state from the view by determinization
(`Rummy500Game.state_from_seat_view`: the hidden cards dealt at random, `Game.from_seat_view`),
and the bot's resampler draws every simulation's world the same way
(`Rummy500State.resample_from_infostate`), so the search never sees a hidden card. Draws from
the stock inside the tree are the game's explicit chance nodes, which the bot samples.

Leaves are valued by one rollout with the fast policy `SearchAgent` uses (put down what can go
down, shed high cards), played on the engine with each stock card drawn at random, scored as
the game's returns: the hand-score margin (a seat's hand score minus the others' mean, in
points), the quantity `SearchAgent` maximizes too. The bot is
`open_spiel.python.algorithms.ismcts.ISMCTSBot` (OpenSpiel's C++ ``ISMCTSBot`` cannot call a
Python game's resampler), with UCT and the most-visited action chosen.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from open_spiel.python.algorithms import ismcts, mcts

from rummy500_env.agents.bot import Bot
from rummy500_env.agents.playout import ROLLOUT_CAP, rollout_action
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import hand_values
from rummy500_env.engine.notation import DRAW, Action
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.openspiel import Rummy500State, Settings, load


class RolloutEvaluator(mcts.Evaluator):
    """OpenSpiel evaluator: one fast rollout of the hand on the engine (module docstring)."""

    def __init__(self, settings: Settings, seed: int | None = None) -> None:
        self.settings = settings
        self.values = hand_values(settings.rules.scoring)
        self.rng = random.Random(seed)

    def evaluate(self, state: Rummy500State) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Each seat's return after playing the hand out from `state` (a decision node)."""
        if state.is_terminal():
            return np.array(state.returns())
        assert state.engine is not None
        g = state.engine.copy()
        for _ in range(ROLLOUT_CAP):
            if g.is_hand_over:
                break
            a = rollout_action(g, self.rng, self.values)
            if a == DRAW:
                g.set_next_draw(self.rng.choice(g.stock_cards))
            g.play_unchecked(a)
        return np.array(self._returns(g))

    def _returns(self, g: Game) -> list[float]:
        if g.is_hand_over:
            return self.settings.returns_of(g.result())
        scores = g.hand_scores()  # a rollout cut short: scored where it stands
        n, total = len(scores), sum(scores)
        return [s - (total - s) / (n - 1) for s in scores]

    def prior(self, state: Rummy500State) -> list[tuple[int, float]]:
        """Uniform over the legal actions (UCT reads no prior)."""
        legal = state.legal_actions()
        return [(a, 1.0 / len(legal)) for a in legal]


class ISMCTSAgent(Bot):
    """OpenSpiel's IS-MCTS on the engine's information state (see the module docstring).

    Args:
        rules: the rules the agent plays.
        simulations: IS-MCTS simulations (one sampled world each) per decision.
        uct_c: UCT's exploration constant, in points of hand-score margin.
        seed: seeds the worlds, the tree's chance samples and the rollouts.
    """

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        simulations: int = 100,
        uct_c: float = 40.0,
        seed: int | None = None,
    ) -> None:
        super().__init__(rules)
        if type(simulations) is not int or simulations < 1:
            raise ValueError(f"simulations must be a positive int, got {simulations!r}")
        self.simulations = simulations
        self.game = load(self.rules, episode="hand", returns="margin")
        self.rng = random.Random(seed)
        self.bot = ismcts.ISMCTSBot(
            game=self.game,
            evaluator=RolloutEvaluator(self.game.settings, self.rng.getrandbits(32)),
            uct_c=uct_c,
            max_simulations=simulations,
            random_state=np.random.RandomState(self.rng.getrandbits(32)),
            final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
        )
        self.bot.set_resampler(self._resample)

    def _resample(self, state: Rummy500State, player: int) -> Rummy500State:
        """A world for one simulation, from the agent's own seeded generator."""
        return state.resample_from_infostate(player, self.rng.random)

    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        if not legal:
            raise ValueError("no legal action given: is this seat to act?")
        if len(legal) == 1:
            return legal[0]
        state = self.game.state_from_seat_view(view, self.rng)
        chosen = self.codec.decode(view, int(self.bot.step(state)))
        if chosen not in legal:  # the view's legal set is the world's: never expected
            raise ValueError(f"IS-MCTS chose {chosen}, which is not among the legal actions")
        return chosen

    def __repr__(self) -> str:
        return f"ISMCTSAgent({self.simulations} simulations)"
