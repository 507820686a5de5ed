"""`SelfPlayGames`: many games in one process, one learning seat in each, stepped as a batch.

The learner's decisions of all games come out as one array (one forward of its network per
step); the opponents play inside `step`, in rounds: in each round every game whose turn is an
opponent's asks it, and a policy opponent answers all the games it sits in with one forward
(`act_batch`), a bot one game at a time on the engine's information state (`rl.opponents.choose`),
with no observation built for it. Games that end are dealt again at
once (the seat and the opponents drawn anew), so every row always holds a learner decision.

Each game is a `Rummy500Env` (the bare AEC env), so rewards, hand and game ends, truncation
and seeding are exactly the env's; this module only schedules who acts, and, for a critic
that sees the whole table in training (`training.ppo`'s ``critic: full``), says what the other
seats hold (`hidden_hands`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rummy500_env.engine.errors import IllegalActionError, Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.hidden import hidden_hands
from rummy500_env.rl.opponents import Agent, choose, pool_weights
from rummy500_env.rl.rummy500_v0 import Rummy500Env

MAX_ROUNDS = 10_000
"""Opponent rounds one step may take before it gives up (a pool that never lets the learner
act would otherwise loop for ever)."""
FloatArray = np.ndarray[Any, np.dtype[np.float32]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]


def act_batch(agent: Agent, observations: FloatArray, action_masks: BoolArray) -> IntArray:
    """The agent's actions for a batch of positions: one call of its `act_batch` if it has
    one, else `act` row by row."""
    batched = getattr(agent, "act_batch", None)
    if batched is not None:
        return np.asarray(batched(observations, action_masks), dtype=np.int64)
    return np.array(
        [agent.act(o, m) for o, m in zip(observations, action_masks, strict=True)],
        dtype=np.int64,
    )


@dataclass
class Step:
    """What `SelfPlayGames.step` returns, one row per game."""

    observations: FloatArray
    """The learner's next observation (of a new deal where the episode ended)."""
    action_masks: BoolArray
    rewards: np.ndarray[Any, np.dtype[np.float32]]
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
            Rummy500Env(rules=rules, episode=episode, reward=reward) for _ in range(n_games)
        ]
        self.rules = self.envs[0].rules
        self.observation_size = self.envs[0].encoder.size
        self.action_size = self.envs[0].codec.size
        self.rng = random.Random(seed)
        self.set_pool(pool, weights)
        self.learner = [0] * n_games
        self.opponents: list[list[Agent]] = [[] for _ in range(n_games)]
        """Per game, the agent in each seat (the learner's entry is unused)."""
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

    # --- the batch ----------------------------------------------------------------------

    def reset(self) -> tuple[FloatArray, BoolArray]:
        """Deal every game; return the learner's observations and masks."""
        n = len(self.envs)
        for i in range(n):
            self._deal(i)
        self._advance(np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), [None] * n)
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
            env.step(int(actions[i]))
            self._acc[i] += env.rewards[env.possible_agents[self.learner[i]]]
            self._fresh[i] = False
        rewards = np.zeros(n, np.float32)
        terminated, truncated = np.zeros(n, bool), np.zeros(n, bool)
        returns: list[float | None] = [None] * n
        self._advance(rewards, terminated, truncated, returns)
        obs, masks = self._learner_inputs()
        return Step(obs, masks, rewards, terminated, truncated, returns)

    def _advance(
        self,
        rewards: np.ndarray[Any, np.dtype[np.float32]],
        terminated: BoolArray,
        truncated: BoolArray,
        returns: list[float | None],
    ) -> None:
        """Let the opponents act, in rounds, until every game waits for its learner, and fill
        the step's outputs. An episode that ends is reported and dealt again; one that ends
        before the learner's first decision (an opponent went out at once) teaches nothing
        and is dealt again unreported."""
        waiting = list(range(len(self.envs)))
        for _round in range(MAX_ROUNDS):
            for i in waiting:
                if self._episode_over(i):
                    self._end_episode(i, rewards, terminated, truncated, returns)
            waiting = [i for i in waiting if self._opponent_to_act(i)]
            if not waiting:
                break
            self._opponents_round(waiting)
        else:
            raise Rummy500Error(
                f"the opponents played {MAX_ROUNDS} rounds without reaching a learner decision "
                f"in every game: check the rules ({self.rules}) and the pool"
            )
        for i in range(len(self.envs)):
            if returns[i] is None:  # the episode goes on
                rewards[i] = self._acc[i]
                self._episode_return[i] += float(self._acc[i])
                self._acc[i] = 0.0

    def _end_episode(
        self,
        i: int,
        rewards: np.ndarray[Any, np.dtype[np.float32]],
        terminated: BoolArray,
        truncated: BoolArray,
        returns: list[float | None],
    ) -> None:
        env = self.envs[i]
        if not self._fresh[i]:
            me = env.possible_agents[self.learner[i]]
            terminated[i], truncated[i] = env.terminations[me], env.truncations[me]
            rewards[i] = self._acc[i]
            returns[i] = self._episode_return[i] + float(self._acc[i])
        self._deal(i)

    def _opponents_round(self, games: list[int]) -> None:
        """One decision of the opponent to act in each of `games`: one batch per agent."""
        by_agent: dict[int, list[int]] = {}
        for i in games:
            env = self.envs[i]
            seat = env.agent_name_mapping[env.agent_selection]
            by_agent.setdefault(id(self.opponents[i][seat]), []).append(i)
        for rows in by_agent.values():
            first = self.envs[rows[0]]
            agent = self.opponents[rows[0]][first.agent_name_mapping[first.agent_selection]]
            if getattr(agent, "decide", None) is not None:  # a bot: `choose`, game by game
                for i in rows:
                    env = self.envs[i]
                    g = env.unwrapped.game
                    assert g is not None, "a game is dealt in every row"
                    env.step(choose(agent, g, env.codec, partial(env.observe, env.agent_selection)))
                    self._acc[i] += env.rewards[env.possible_agents[self.learner[i]]]
                continue
            views = [self.envs[i].observe(self.envs[i].agent_selection) for i in rows]
            actions = act_batch(
                agent,
                np.stack([v["observation"] for v in views]),
                np.stack([v["action_mask"] for v in views]).astype(bool),
            )
            for i, a in zip(rows, actions, strict=True):
                env = self.envs[i]
                env.step(int(a))
                self._acc[i] += env.rewards[env.possible_agents[self.learner[i]]]

    def _deal(self, i: int) -> None:
        """A new episode in game `i`: a seeded deal, the learner's seat and the opponents."""
        env, n = self.envs[i], self.rules.players
        env.reset(seed=self.rng.getrandbits(63))
        self.learner[i] = self.rng.randrange(n)
        self.opponents[i] = self.rng.choices(self.pool, self.weights, k=n)
        self._episode_return[i] = 0.0
        self._acc[i] = 0.0
        self._fresh[i] = True

    def _episode_over(self, i: int) -> bool:
        env = self.envs[i]
        me = env.possible_agents[self.learner[i]]
        return bool(env.terminations[me] or env.truncations[me])

    def _opponent_to_act(self, i: int) -> bool:
        env = self.envs[i]
        return (
            not self._episode_over(i)
            and env.agent_name_mapping[env.agent_selection] != (self.learner[i])
        )

    def hidden_hands(self) -> FloatArray:
        """Per game, what the learner cannot see of its position now (`hidden_hands`): the
        rows match the observations `reset` and `step` last returned."""
        rows = []
        for i, env in enumerate(self.envs):
            game = env.unwrapped.game
            assert game is not None, "a game is dealt in every row"
            rows.append(hidden_hands(game, self.learner[i]))
        return np.stack(rows)

    def _learner_inputs(self) -> tuple[FloatArray, BoolArray]:
        views = [
            env.observe(env.possible_agents[self.learner[i]]) for i, env in enumerate(self.envs)
        ]
        obs = np.stack([v["observation"] for v in views])
        self._masks = np.stack([v["action_mask"] for v in views]).astype(bool)
        return obs, self._masks.copy()
