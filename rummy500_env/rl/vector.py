"""A native Gymnasium vector env of the single-agent view: ``Rummy500-v0``'s
``vector_entry_point``.

``gymnasium.make_vec("Rummy500-v0", num_envs=N)`` builds `Rummy500VectorEnv`; with
``vectorization_mode="sync"`` or ``"async"`` Gymnasium's `SyncVectorEnv` / `AsyncVectorEnv`
over ``gymnasium.make`` instead. All three step N `Rummy500SingleAgentEnv`s and follow
Gymnasium's autoreset modes; this one does it in one process without the per-env wrappers,
and plays the opponents of all N envs in rounds, so an opponent with ``act_batch`` (a
`PolicyAgent`, one forward pass per round) is asked once per round instead of once per env.
Measured figures and when to take which: docs/frameworks.md.

Masks: `action_masks()` returns the (N, actions) boolean masks. No row is ever empty: a
finished env's row holds one legal placeholder, `DONE_ACTION`, until the env is reset
(``NEXT_STEP``: by the next step, which plays no action there; ``DISABLED``: by your
``reset(options={"reset_mask": ...})``); with ``SAME_STEP`` every row is a live position's.
``envs.call("action_masks")`` gives the same rows from a sync or async vector env.

    >>> import gymnasium, rummy500_env
    >>> envs = gymnasium.make_vec("Rummy500-v0", num_envs=2, episode="hand")
    >>> obs, info = envs.reset(seed=0)
    >>> obs.shape == (2, *envs.single_observation_space.shape)
    True
    >>> bool(envs.action_masks().any(axis=1).all())  # a legal action in every row
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from rummy500_env.engine.errors import IllegalActionError, Rummy500Error
from rummy500_env.rl.single_agent import DONE_ACTION, Rummy500SingleAgentEnv, play_opponents

__all__ = ["DONE_ACTION", "Rummy500VectorEnv"]


class Rummy500VectorEnv(gymnasium.vector.VectorEnv):  # type: ignore[misc]  # an untyped base
    """N single-agent views in one process (see the module docstring).

    Args:
        num_envs: how many envs.
        autoreset_mode: Gymnasium's `AutoresetMode` (or its value as a string):
            ``NEXT_STEP`` (Gymnasium's default: the step after an episode's last resets that
            env and ignores its action), ``SAME_STEP`` (the last step resets at once and puts
            the final observation and info in ``info["final_obs"]`` / ``info["final_info"]``)
            or ``DISABLED`` (reset finished envs yourself with ``options["reset_mask"]``).
        **kwargs: `Rummy500SingleAgentEnv`'s arguments (opponents, seat, rules, episode,
            reward, render_mode, illegal, illegal_reward), the same for every env. One
            opponent object is shared by all envs, which is what lets it batch.
    """

    def __init__(
        self,
        num_envs: int,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        if type(num_envs) is not int or num_envs < 1:
            raise Rummy500Error(f"num_envs={num_envs!r} is not allowed: use an int >= 1")
        try:
            self.autoreset_mode = AutoresetMode(autoreset_mode)
        except ValueError:
            allowed = [m.value for m in AutoresetMode]
            raise Rummy500Error(
                f"autoreset_mode={autoreset_mode!r} is not allowed: use one of {allowed}"
            ) from None
        self.envs = [Rummy500SingleAgentEnv(**kwargs) for _ in range(num_envs)]
        first = self.envs[0]
        self.num_envs = num_envs
        self.metadata = dict(first.metadata) | {"autoreset_mode": self.autoreset_mode}
        self.render_mode = first.render_mode
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, num_envs)
        self.action_space = batch_space(first.action_space, num_envs)
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env, or those in ``options["reset_mask"]`` (a bool array); an int seed
        seeds env i with seed + i, as Gymnasium's vector envs do."""
        seeds = self._seeds(seed)
        options = dict(options or {})
        which = options.pop("reset_mask", None)
        if which is None:
            which = np.ones(self.num_envs, dtype=np.bool_)
        elif not (
            isinstance(which, np.ndarray)
            and which.dtype == np.bool_
            and which.shape == (self.num_envs,)
        ):
            raise Rummy500Error(
                f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)"
            )
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(which):
            self._obs[i], info = self.envs[i].reset(seed=seeds[i], options=options or None)
            infos = self._add_info(infos, info, int(i))
        self._terminations[which] = self._truncations[which] = self._autoreset[which] = False
        return self._obs.copy(), infos

    def step(
        self, actions: np.ndarray | Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one learner action in every env, then all envs' opponents in rounds. Every
        action is checked first: one an env refuses raises before any env plays."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise Rummy500Error(
                f"step takes one action per env, shape ({self.num_envs},); got {actions.shape}"
            )
        if self.autoreset_mode is AutoresetMode.DISABLED and self._autoreset.any():
            done = np.flatnonzero(self._autoreset).tolist()
            raise Rummy500Error(
                f"envs {done} are finished and autoreset_mode is DISABLED: "
                "reset them first, envs.reset(options={'reset_mask': terminations | truncations})"
            )
        next_step = self.autoreset_mode is AutoresetMode.NEXT_STEP
        self._check_actions(actions, resetting=self._autoreset if next_step else None)
        infos: dict[str, Any] = {}
        playing: list[int] = []
        for i, env in enumerate(self.envs):
            if next_step and self._autoreset[i]:  # this step resets; the action is not played
                self._obs[i], info = env.reset()
                self._rewards[i], self._terminations[i], self._truncations[i] = 0.0, False, False
                infos = self._add_info(infos, info, i)
            else:
                self._rewards[i] = env._learner_plays(actions[i])
                playing.append(i)
        self._play_opponents([i for i in playing if not self.envs[i]._illegal_end])
        for i in playing:
            env = self.envs[i]
            if env._illegal_end:
                result = env._observation(), env.illegal_reward, True, False, env._info()
                result[4]["illegal_action"] = int(actions[i])
            else:
                result = env._result(float(self._rewards[i]))
            obs, self._rewards[i], self._terminations[i], self._truncations[i], info = result
            if self.autoreset_mode is AutoresetMode.SAME_STEP and (
                self._terminations[i] or self._truncations[i]
            ):
                infos = self._add_info(infos, {"final_obs": obs, "final_info": info}, i)
                obs, info = env.reset()
            self._obs[i] = obs
            infos = self._add_info(infos, info, i)
        if self.autoreset_mode is not AutoresetMode.SAME_STEP:  # SAME_STEP has reset them
            self._autoreset = self._terminations | self._truncations
        return (
            self._obs.copy(),
            self._rewards.copy(),
            self._terminations.copy(),
            self._truncations.copy(),
            infos,
        )

    def _check_actions(self, actions: np.ndarray, resetting: np.ndarray | None) -> None:
        """Refuse the step before any env plays if one env's action would be refused (the
        env named), so a step is all or nothing: an env left between its learner's move and
        its opponents' replies would ask the learner's policy to play an opponent's turn.
        Envs in `resetting` play no action this step."""
        for i, env in enumerate(self.envs):
            if resetting is not None and resetting[i]:
                continue
            try:
                env._check_learner_action(actions[i])
            except Rummy500Error as e:
                kind = IllegalActionError if isinstance(e, IllegalActionError) else Rummy500Error
                raise kind(f"env {i}: {e}; no env played this step") from None

    def action_masks(self) -> np.ndarray:
        """(num_envs, actions) booleans; a finished env's row is `DONE_ACTION` alone."""
        return np.stack([env.action_masks() for env in self.envs])

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method of every env (or read an attribute), as `SyncVectorEnv.call` does:
        ``envs.call("set_opponents", agent)``."""
        out = []
        for env in self.envs:
            attr = getattr(env, name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every env."""
        return tuple(getattr(env, name) for env in self.envs)

    def set_attr(self, name: str, values: Any) -> None:
        """Set an attribute on every env: one value for all, or a list or tuple with one per
        env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise Rummy500Error(f"give one value per env ({self.num_envs}), got {len(values)}")
        for env, value in zip(self.envs, values, strict=True):
            setattr(env, name, value)

    def render(self) -> tuple[str | None, ...] | None:
        """Each env's `render()` (None without a render mode)."""
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)

    def _play_opponents(self, playing: list[int]) -> None:
        """Let the opponents of the given envs act until each env's learner is to act or its
        episode is over, in rounds (`play_opponents`: each round asks every opponent once for
        all the envs it is to act in)."""

        def credit(i: int, reward: float) -> None:
            self._rewards[i] += reward

        play_opponents(self.envs, playing, credit)

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise Rummy500Error(f"give one seed per env ({self.num_envs}), got {len(seeds)}")
        return seeds
