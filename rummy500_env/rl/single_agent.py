"""Gymnasium single-agent view: one seat learns, the other seats are played by fixed agents.

`step` plays the learner's action, then the opponents until the learner is to act again or
the episode ends, and returns the learner's own observation and the reward it received in
between; the learner never sees another seat's turn. With "Rummy!" calls (docs/rules.md §5)
the decisions follow the engine's player to act, so the learner is asked for its own calls
(``call`` or ``pass``, and a caller's play until ``done``) even out of turn, and the opponents'
calls and out-of-turn plays happen inside `step`. `action_masks()` is defined on the env
itself, so sb3-contrib's MaskablePPO finds it through ``env_method`` inside `SubprocVecEnv`
(an ``ActionMasker`` wrapper cannot cross processes).

Two conventions serve Gymnasium's vector envs (`rummy500_env.rl.vector`, docs/frameworks.md):

* Once the learner's episode is over, `action_masks()` marks exactly one id legal,
  `DONE_ACTION` (0). A vector env in ``NEXT_STEP`` or ``DISABLED`` autoreset mode hands the
  policy a finished env's mask until that env is reset, and a masked sampler needs one legal
  action to draw; the action it draws is never played (the vector env resets instead, and
  `step` itself still refuses a finished episode). With a single legal id, a masked policy's
  log-probability there is 0 and its entropy 0, so that placeholder step adds nothing to a
  policy-gradient loss.
* `info` holds no None: a key whose value is None (``went_out`` when nobody went out,
  ``winner`` in a draw) is left out, because a vector env stacks each key into one array
  typed by its first value, and an ``int`` array cannot take None; its ``_went_out`` mask
  then says which envs have the key.

    >>> from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv
    >>> env = Rummy500SingleAgentEnv(seat="random", rules="standard")
    >>> obs, info = env.reset(seed=0)
    >>> int(env.action_masks().sum()) > 0
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gymnasium
import numpy as np

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.render import render
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.opponents import Agent, RandomAgent, as_agent, choose, pool_weights
from rummy500_env.rl.rummy500_v0 import raw_env

Opponents = Any  # an agent, a callable, or a sequence with one per other seat
REDEALS = 1000
"""Deals `reset` tries before it gives up on reaching a decision of the learner."""
MAX_ROUNDS = 10_000
"""Opponent rounds `play_opponents` may take before it gives up (opponents that never let the
learner act would otherwise loop for ever)."""
OPPONENT_STREAM = 1
"""Mixed with the env's seed (and the opponent's index) to seed its default opponents."""
DONE_ACTION = 0
"""The one id `Rummy500SingleAgentEnv.action_masks` marks legal once the episode is over (a
placeholder for vector envs; see the module docstring)."""


class Rummy500SingleAgentEnv(gymnasium.Env[np.ndarray, np.int64]):
    """One learning seat against fixed opponents (see the module docstring).

    Args:
        opponents: an agent (``act(observation, action_mask) -> int``) or plain callable used
            for every other seat, or a sequence with one per other seat in seat order after
            the learner; None plays `RandomAgent`s, seeded from the env's seed at each
            seeded `reset` (so a seeded episode replays exactly; agents you pass keep their
            own generators).
        seat: the learner's seat, an int, or ``"random"`` to draw it each episode (seats
            alternate across episodes in expectation, so the learner sees both first and
            second player).
        rules: as for `rummy500_env.rl.rummy500_v0.Rummy500Env`.
        episode: as for `rummy500_env.rl.rummy500_v0.Rummy500Env`.
        reward: as for `rummy500_env.rl.rummy500_v0.Rummy500Env`.
        render_mode: None, ``"ansi"`` (`render` returns the learner's view as text) or
            ``"human"`` (`step` prints it).
        illegal: what an action outside the mask does: ``"terminate"`` (the default, as
            PettingZoo's TerminateIllegalWrapper: the episode ends with ``illegal_reward``)
            or ``"raise"`` (`IllegalActionError`). Masked learners never hit either.
        illegal_reward: the learner's reward for an illegal action under ``"terminate"``.
    """

    metadata = {"render_modes": ["ansi", "human"]}  # noqa: RUF012 - gymnasium convention

    def __init__(
        self,
        opponents: Opponents = None,
        seat: int | str = 0,
        rules: Rules | str | dict[str, Any] = "standard",
        episode: str = "game",
        reward: str | None = None,
        render_mode: str | None = None,
        illegal: str = "terminate",
        illegal_reward: float = -1.0,
    ) -> None:
        if illegal not in ("terminate", "raise"):
            raise Rummy500Error(f"illegal={illegal!r} is not allowed: use 'terminate' or 'raise'")
        self.illegal, self.illegal_reward = illegal, float(illegal_reward)
        self.aec = raw_env(rules=rules, episode=episode, reward=reward, render_mode=None)
        self.rules = self.aec.rules
        n = self.rules.players
        if not (seat == "random" or (type(seat) is int and 0 <= seat < n)):
            raise Rummy500Error(f"seat={seat!r} is not allowed: use 0..{n - 1} or 'random'")
        if render_mode not in (None, "ansi", "human"):
            raise Rummy500Error(f"render_mode={render_mode!r}: use None, 'ansi' or 'human'")
        self.seat_option = seat
        self.render_mode = render_mode
        agent0 = self.aec.possible_agents[0]
        self.observation_space = self.aec.observation_space(agent0)["observation"]
        self.action_space = self.aec.action_space(agent0)
        self.seat = 0 if seat == "random" else int(seat)
        self._pool: list[tuple[list[Agent], float]] = []
        self._default_opponents: list[RandomAgent] = []  # made here for None: the env seeds them
        self._illegal_end = False
        self.learner: str | None = None  # the learner's agent name, once reset
        self.opponents: list[Agent] = []
        self.set_opponents(opponents)

    # --- opponents ------------------------------------------------------------------------

    def set_opponents(self, opponents: Opponents) -> None:
        """Use these opponents from the next reset on (clears any pool)."""
        self._default_opponents = []
        self.opponents = self._opponent_list(opponents)
        self._pool = []

    def set_opponent_pool(
        self, pool: Sequence[Opponents], weights: Sequence[float] | None = None
    ) -> None:
        """Draw the opponents of each episode from `pool` (self-play), by `weights`."""
        weights = pool_weights(pool, weights)
        self._default_opponents = [  # those still playing until the next reset draws
            a for a in self._default_opponents if any(a is o for o in self.opponents)
        ]
        self._pool = [(self._opponent_list(o), w) for o, w in zip(pool, weights, strict=True)]

    def _seed_default_opponents(self, seed: int) -> None:
        """Seed the `RandomAgent`s the env made (for ``opponents=None``) from `seed`, each
        from its own stream, apart from the env's own generator (which deals): without
        it, two envs reset with one seed play different games. Unseeded resets continue
        these generators, as they continue the env's."""
        for k, agent in enumerate(self._default_opponents):
            agent.rng = np.random.default_rng(np.random.SeedSequence([seed, OPPONENT_STREAM, k]))

    def _opponent_list(self, opponents: Opponents) -> list[Agent]:
        n = self.rules.players
        if opponents is None:
            made = [RandomAgent() for _ in range(n - 1)]
            self._default_opponents += made
            return list(made)
        if isinstance(opponents, (list, tuple)):
            if len(opponents) != n - 1:
                raise Rummy500Error(
                    f"give one opponent per other seat: {n - 1} for players={n}, "
                    f"got {len(opponents)}"
                )
            return [as_agent(o) for o in opponents]
        agent = as_agent(opponents)
        return [agent] * (n - 1)

    # --- gymnasium API -------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._seed_default_opponents(seed)
        if self._pool:
            weights = np.array([w for _, w in self._pool], dtype=float)
            pick = int(self.np_random.choice(len(self._pool), p=weights / weights.sum()))
            self.opponents = self._pool[pick][0]
        if self.seat_option == "random":
            self.seat = int(self.np_random.integers(self.rules.players))
        # Deals come from the env's own generator, so a reset without a seed after a seeded
        # one deals reproducibly (Gymnasium's convention; vector envs reset that way).
        aec_seed = int(self.np_random.integers(2**63))
        for _deal in range(REDEALS):
            me = self._deal(aec_seed, options)
            self._play_opponents()
            if not (self.aec.terminations[me] or self.aec.truncations[me]):
                return self._observation(), self._info()
            # The episode ended before the learner's first decision (an opponent went out on
            # its first turn): an episode without a decision teaches nothing, so deal again.
            if options and options.get("position") is not None:
                raise Rummy500Error(
                    f"the episode from this position ends before seat {self.seat} acts"
                )
            aec_seed = int(self.np_random.integers(2**63))
        self.learner = None
        raise Rummy500Error(
            f"{REDEALS} deals in a row ended before seat {self.seat} could act: the opponents "
            f"{self.opponents} go out at once under these rules ({self.rules}); "
            "check the rules (hand_size) and the opponents"
        )

    def step(
        self, action: int | np.integer[Any]
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        reward = self._learner_plays(action)
        if self._illegal_end:
            info = self._info() | {"illegal_action": int(action)}
            return self._observation(), self.illegal_reward, True, False, info
        return self._result(reward + self._play_opponents())

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as booleans (sb3-contrib's MaskablePPO reads this);
        once the episode is over, only `DONE_ACTION` (see the module docstring)."""
        me = self._require_reset()
        if self._illegal_end or self.aec.terminations[me] or self.aec.truncations[me]:
            mask = np.zeros(self.action_space.n, dtype=bool)
            mask[DONE_ACTION] = True
            return mask
        return self.aec.observe(me)["action_mask"].astype(bool)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        self._require_reset()
        assert self.aec.game is not None  # reset() made it
        return render(self.aec.game.position(), viewer=self.seat)

    def _require_reset(self) -> str:
        """The learner's agent name; a clear error before the first `reset`."""
        if self.learner is None:
            raise Rummy500Error("call reset() before using the env")
        return self.learner

    # --- internals ---------------------------------------------------------------------------

    # `step` in three parts, so that `rummy500_env.rl.vector` can play many envs' opponents
    # in rounds and ask a batching opponent (``act_batch``) once per round.

    def _check_learner_action(self, action: int | np.integer[Any]) -> bool:
        """Raise for an action `step` refuses (a finished episode, not an action id, or an
        illegal one under "raise"); else whether it is legal. Changes nothing, so that a
        vector env can check every env's action before it plays any."""
        aec, me = self.aec, self._require_reset()
        if self._illegal_end or aec.terminations[me] or aec.truncations[me]:
            raise Rummy500Error("the episode is over: call reset()")
        aec.check_action_id(action)
        legal = int(action) in aec.legal_ids()
        if not legal and self.illegal == "raise":
            aec.step(int(action))  # refuses an id outside the mask, saying why, and plays nothing
        return legal

    def _learner_plays(self, action: int | np.integer[Any]) -> float:
        """Check and play the learner's action; its reward (an illegal action under
        "terminate" plays nothing and sets ``_illegal_end``)."""
        if not self._check_learner_action(action):
            self._illegal_end = True
            return 0.0
        return self._play(int(action))

    def _deal(self, aec_seed: int | None, options: dict[str, Any] | None = None) -> str:
        """A new deal in the AEC env, the learner in `seat` and nobody moved yet; the learner's
        agent name. `reset` plays the opponents after it; batched self-play
        (`rummy500_env.rl.selfplay`) deals its own games with it, seat and opponents chosen."""
        self._illegal_end = False
        self.learner = self.aec.possible_agents[self.seat]
        self.aec.reset(seed=aec_seed, options=options)
        return self.learner

    def _opponent_to_act(self) -> Agent | None:
        """The opponent to act now; None when the learner is to act or the episode is over."""
        aec, me = self.aec, self._require_reset()
        if aec.terminations[me] or aec.truncations[me] or aec.agent_selection == me:
            return None
        seat = aec.agent_name_mapping[aec.agent_selection]
        return self.opponents[(seat - self.seat) % self.rules.players - 1]

    def _opponent_observation(self) -> dict[str, np.ndarray]:
        """The observation dict of the opponent to act (for agents that act on one)."""
        return self.aec.observe(self.aec.agent_selection)

    def _play(self, action: int) -> float:
        """Play an action id, already checked, for the seat to act; the learner's reward."""
        self.aec.step(action)
        return float(self.aec.rewards[self._require_reset()])

    def _play_opponents(self) -> float:
        """Let the other seats act until the learner is to act or the episode ends; return the
        reward the learner received meanwhile."""
        received = 0.0

        def credit(_env: int, reward: float) -> None:
            nonlocal received
            received += reward

        play_opponents([self], [0], credit)
        return received

    def _result(self, reward: float) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """`step`'s return once the opponents have played."""
        me = self._require_reset()
        if self.render_mode == "human":
            print(self.render())
        return (
            self._observation(),
            float(reward),
            bool(self.aec.terminations[me]),
            bool(self.aec.truncations[me]),
            self._info(),
        )

    def _observation(self) -> np.ndarray:
        return self.aec.observe(self._require_reset())["observation"].copy()

    def _info(self) -> dict[str, Any]:
        info = self.aec.infos.get(self._require_reset(), {})
        # No None values: a vector env cannot stack them (see the module docstring).
        return {k: v for k, v in info.items() if v is not None} | {"seat": self.seat}


def play_opponents(
    envs: Sequence[Rummy500SingleAgentEnv],
    playing: Iterable[int],
    credit: Callable[[int, float], None],
    settle: Callable[[int], None] | None = None,
) -> None:
    """Let the opponents in ``envs[i]``, for each i in `playing`, act until each env's learner
    is to act or its episode is over: the one loop of the opponents' turns behind the
    single-agent env, the vector env (`rummy500_env.rl.vector`) and batched self-play
    (`rummy500_env.rl.selfplay`).

    It plays in rounds: each round asks every opponent once for all the envs where it is to
    act (`opponent_actions`; a batch only where `envs` holds more than one env, so a lone env
    asks ``act`` as a PettingZoo loop would), in env order, and hands the learner's reward
    from each move to ``credit(i, reward)``. ``settle(i)``, called on each env still playing
    before each round, may start a new episode there (batched self-play deals a finished game
    again at once, and the new deal's opponents play in the same rounds).
    """
    playing = list(playing)
    batch = len(envs) > 1
    for _round in range(MAX_ROUNDS):
        if settle is not None:
            for i in playing:
                settle(i)
        turns: dict[int, tuple[Agent, list[int]]] = {}
        for i in playing:
            opponent = envs[i]._opponent_to_act()
            if opponent is not None:
                turns.setdefault(id(opponent), (opponent, []))[1].append(i)
        if not turns:
            return
        for opponent, rows in turns.values():
            actions = opponent_actions(opponent, [envs[i] for i in rows], batch)
            for i, action in zip(rows, actions, strict=True):
                credit(i, envs[i]._play(action))
        moved = {i for _, rows in turns.values() for i in rows}
        playing = [i for i in playing if i in moved]
    raise Rummy500Error(
        f"the opponents played {MAX_ROUNDS} rounds without reaching a learner decision in "
        f"every env: check the rules ({envs[0].rules}) and the opponents"
    )


def opponent_actions(
    opponent: Agent, envs: Sequence[Rummy500SingleAgentEnv], batch: bool = True
) -> list[int]:
    """The opponent's actions in these envs, where it is to act: a bot decides on each seat's
    view (`choose`); with `batch`, any other agent with ``act_batch`` is asked once for all
    their observations (one forward pass for a policy); else `choose` (``act``) env by env."""
    batched = getattr(opponent, "act_batch", None) if batch else None
    if batched is not None and getattr(opponent, "decide", None) is None:
        observations = [env._opponent_observation() for env in envs]
        obs = np.stack([o["observation"] for o in observations])
        masks = np.stack([o["action_mask"] for o in observations]).astype(bool)
        return [int(a) for a in batched(obs, masks)]
    out = []
    for env in envs:
        game = env.aec.game
        assert game is not None, "an episode is being played"
        out.append(choose(opponent, game, env.aec.codec, env._opponent_observation))
    return out
