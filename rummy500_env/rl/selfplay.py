"""`SelfPlayGames`: many games in one process, one learning seat in each, stepped as a batch
(`training.ppo` collects its rollouts with it).

Each game is a `Rummy500SingleAgentEnv`, and the opponents play through the same loop as the
single-agent env's and the vector env's (`single_agent.play_opponents`): in rounds, a policy
opponent answering all the games it is to act in with one forward pass (``act_batch``), a bot
deciding game by game on the engine's information state, with no observation built for it.
So rewards, hand and game ends, truncation and seeding are exactly the env's; what this class
adds is the schedule self-play needs:

* each deal draws the learner's seat and an opponent for every other seat from a weighted
  pool, all from one seeded generator, so a seed replays the same games;
* a game whose episode ends is dealt again at once, inside the same rounds, so every row
  always holds a learner decision; an episode that ends before the learner's first decision
  (an opponent went out at once) teaches nothing and is dealt again unreported;
* the learner's actions arrive as one array, checked against the masks all together before
  any game moves.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rummy500_env.engine.errors import IllegalActionError, Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.opponents import Agent, pool_weights
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv, play_opponents

FloatArray = np.ndarray[Any, np.dtype[np.float32]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class Step:
    """What `SelfPlayGames.step` returns, one row per game."""

    observations: FloatArray
    """The learner's next observation (of a new deal where the episode ended)."""
    action_masks: BoolArray
    rewards: FloatArray
    """The learner's reward since its previous decision, the end of the episode included."""
    terminated: BoolArray
    truncated: BoolArray
    episode_returns: list[float | None]
    """The learner's return of the episode that just ended in each game, else None."""


class SelfPlayGames:
    """`n_games` games, each with one learning seat and opponents drawn from a pool.

    Args:
        rules, episode, reward: as for the env (`Rummy500Env`).
        n_games: games stepped together.
        pool: the opponents to draw from (agents; a policy opponent is asked for a whole batch
            at once through its `act_batch`).
        weights: the pool's sampling weights (default: equal).
        seed: seeds the deals, the seats and the opponent draws.
    """

    def __init__(
        self,
        rules: Rules | str | dict[str, Any],
        n_games: int,
        pool: Sequence[Agent],
        weights: Sequence[float] | None = None,
        episode: str = "hand",
        reward: str | None = None,
        seed: int = 0,
    ) -> None:
        if type(n_games) is not int or n_games < 1:
            raise Rummy500Error(f"n_games={n_games!r} is not allowed: use an int >= 1")
        self.envs = [
            Rummy500SingleAgentEnv(rules=rules, episode=episode, reward=reward)
            for _ in range(n_games)
        ]
        first = self.envs[0]
        self.rules = first.rules
        self.observation_size = first.aec.encoder.size
        self.action_size = first.aec.codec.size
        self.rng = random.Random(seed)
        self.set_pool(pool, weights)
        self._episode_return = [0.0] * n_games
        self._acc = np.zeros(n_games, np.float32)
        """The learner's rewards since its last decision, per game."""
        self._fresh = [True] * n_games
        """Per game: no learner decision yet in this episode."""
        self._masks: BoolArray | None = None
        """The learner's masks of the last observations handed out."""

    def set_pool(self, pool: Sequence[Agent], weights: Sequence[float] | None = None) -> None:
        """Draw the opponents of the next deals from `pool` by `weights`."""
        self.weights = pool_weights(pool, weights)
        self.pool = list(pool)

    @property
    def learner(self) -> list[int]:
        """The learner's seat in each game."""
        return [env.seat for env in self.envs]

    def reset(self) -> tuple[FloatArray, BoolArray]:
        """Deal every game; return the learner's observations and masks."""
        for i in range(len(self.envs)):
            self._deal(i)
        self._play_until_learners_act(_Outputs(len(self.envs)))
        return self._learner_inputs()

    def step(self, actions: Sequence[int] | IntArray) -> Step:
        """Play the learner's action in every game, then the opponents until the learner is to
        act again; a game whose episode ends is dealt again."""
        n = len(self.envs)
        if self._masks is None:
            raise Rummy500Error("call reset() before step()")
        ids = np.asarray(actions)
        if ids.shape != (n,) or not np.issubdtype(ids.dtype, np.integer):
            raise Rummy500Error(f"give one int action id per game: shape ({n},), got {ids!r}")
        inside = (ids >= 0) & (ids < self.action_size)
        legal = inside & self._masks[np.arange(n), np.where(inside, ids, 0)]
        if not legal.all():  # checked before any game moves, so the batch stays whole
            bad = [(int(i), int(ids[i])) for i in np.flatnonzero(~legal)]
            raise IllegalActionError(
                f"actions outside the masks, as (game, action): {bad[:8]}; every action must "
                "be one the game's mask allows"
            )
        for i, env in enumerate(self.envs):
            self._acc[i] += env._play(int(ids[i]))  # legal: the masks above are the env's
            self._fresh[i] = False
        out = _Outputs(n)
        self._play_until_learners_act(out)
        obs, masks = self._learner_inputs()
        return Step(obs, masks, out.rewards, out.terminated, out.truncated, out.returns)

    def _play_until_learners_act(self, out: _Outputs) -> None:
        """The opponents' rounds until every game waits for its learner (`play_opponents`),
        an ended episode reported in `out` and dealt again as the rounds go; then the rewards
        of the games whose episode goes on."""

        def credit(i: int, reward: float) -> None:
            self._acc[i] += reward

        def settle(i: int) -> None:
            if self._episode_over(i):
                self._end_episode(i, out)

        play_opponents(self.envs, range(len(self.envs)), credit, settle)
        for i in range(len(self.envs)):
            if out.returns[i] is None:  # the episode goes on
                out.rewards[i] = self._acc[i]
                self._episode_return[i] += float(self._acc[i])
                self._acc[i] = 0.0

    def _end_episode(self, i: int, out: _Outputs) -> None:
        env = self.envs[i]
        if not self._fresh[i]:
            me = env._require_reset()
            out.terminated[i], out.truncated[i] = env.aec.terminations[me], env.aec.truncations[me]
            out.rewards[i] = self._acc[i]
            out.returns[i] = self._episode_return[i] + float(self._acc[i])
        self._deal(i)

    def _deal(self, i: int) -> None:
        """A new episode in game `i`: a seeded deal, the learner's seat and an opponent drawn
        for each seat (the learner's draw unused, so a seat's opponent does not depend on where
        the learner sits)."""
        env, n = self.envs[i], self.rules.players
        seed = self.rng.getrandbits(63)
        env.seat = self.rng.randrange(n)
        drawn = self.rng.choices(self.pool, self.weights, k=n)
        env.opponents = [drawn[(env.seat + k) % n] for k in range(1, n)]
        env._deal(seed)
        self._episode_return[i] = 0.0
        self._acc[i] = 0.0
        self._fresh[i] = True

    def _episode_over(self, i: int) -> bool:
        env = self.envs[i]
        me = env._require_reset()
        return bool(env.aec.terminations[me] or env.aec.truncations[me])

    def _learner_inputs(self) -> tuple[FloatArray, BoolArray]:
        views = [env.aec.observe(env._require_reset()) for env in self.envs]
        obs = np.stack([v["observation"] for v in views])
        self._masks = np.stack([v["action_mask"] for v in views]).astype(bool)
        return obs, self._masks.copy()


class _Outputs:
    """One step's per-game outputs, filled as episodes end and the rounds finish."""

    def __init__(self, n: int) -> None:
        self.rewards: FloatArray = np.zeros(n, np.float32)
        self.terminated: BoolArray = np.zeros(n, bool)
        self.truncated: BoolArray = np.zeros(n, bool)
        self.returns: list[float | None] = [None] * n
