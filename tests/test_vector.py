"""Vector envs: ``gymnasium.make_vec("Rummy500-v0", ...)`` in every vectorization mode and every
autoreset mode hands a masked policy at least one legal action on every row of every step
(the convention: a finished env's row is `DONE_ACTION` alone until it is reset), and the
native vector env (the ``vector_entry_point``) plays exactly what Gymnasium's sync vector env
plays, batching its opponents."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import rummy500_env  # noqa: F401 - registers "Rummy500-v0"
from rummy500_env import Rules, Rummy500Error
from rummy500_env.agents import GreedyAgent
from rummy500_env.rl.vector import DONE_ACTION, Rummy500VectorEnv

MODES = ["vector_entry_point", "sync", "async"]
AUTORESETS = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
N = 4


def make(mode: str, autoreset: AutoresetMode, **kwargs):
    """``make_vec`` as a user writes it: the autoreset mode goes in ``vector_kwargs`` for
    Gymnasium's vector envs and as a keyword of the native one."""
    kwargs = {"episode": "hand", "illegal": "raise"} | kwargs
    if mode == "vector_entry_point":
        return gymnasium.make_vec("Rummy500-v0", N, autoreset_mode=autoreset, **kwargs)
    vector_kwargs = {"autoreset_mode": autoreset}
    return gymnasium.make_vec("Rummy500-v0", N, mode, vector_kwargs=vector_kwargs, **kwargs)


def masks_of(envs) -> np.ndarray:
    if isinstance(envs, Rummy500VectorEnv):
        return envs.action_masks()
    return np.stack(envs.call("action_masks"))


@pytest.mark.parametrize("autoreset", AUTORESETS, ids=lambda m: m.name)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.slow
def test_a_masked_sampler_always_has_a_legal_action(mode, autoreset):
    """2,000 vector steps (8,000 learner decisions, about 130 hands) of a masked random
    sampler. ``illegal="raise"`` makes any action outside the engine's legal set an error, so
    the masks of live envs are true ones; finished envs show the placeholder until reset."""
    steps = 2000 if mode != "async" else 1000
    rng = np.random.default_rng(0)
    envs = make(mode, autoreset)
    assert envs.metadata["autoreset_mode"] == autoreset
    try:
        envs.reset(seed=1)
        done = np.zeros(N, dtype=bool)
        episodes = 0
        for _ in range(steps):
            masks = masks_of(envs)
            assert masks.shape == (N, envs.single_action_space.n)
            assert masks.any(axis=1).all(), "a row with no legal action"
            for i in np.flatnonzero(done):  # finished, not yet reset: the placeholder alone
                assert np.flatnonzero(masks[i]).tolist() == [DONE_ACTION]
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, terms, truncs, infos = envs.step(actions)
            assert obs.shape == (N, envs.single_observation_space.shape[0])
            if autoreset is AutoresetMode.NEXT_STEP:  # the envs reset by this step
                assert not (terms[done] | truncs[done]).any() and (rewards[done] == 0).all()
            done = terms | truncs
            episodes += int(done.sum())
            if done.any() and autoreset is AutoresetMode.SAME_STEP:
                assert infos["_final_obs"].tolist() == done.tolist()
                assert infos["final_info"]["_hand_scores"].tolist() == done.tolist()
                done = np.zeros(N, dtype=bool)  # already reset: live masks
            elif done.any() and autoreset is AutoresetMode.DISABLED:
                done_ids = np.flatnonzero(done)
                masks = masks_of(envs)
                assert all(np.flatnonzero(masks[i]).tolist() == [DONE_ACTION] for i in done_ids)
                envs.reset(options={"reset_mask": done})
                done = np.zeros(N, dtype=bool)
        assert episodes >= 20
    finally:
        envs.close()


class LowestLegal:
    """A deterministic opponent that can batch, counting its calls."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.single = 0

    def act(self, observation, action_mask) -> int:
        self.single += 1
        return int(np.flatnonzero(action_mask)[0])

    def act_batch(self, observations, action_masks) -> np.ndarray:
        self.batches.append(len(observations))
        return np.array([np.flatnonzero(m)[0] for m in action_masks])


def trajectory(envs, steps: int) -> list[tuple]:
    """What a learner that always plays its highest legal id sees, step by step."""
    out = []
    obs, _ = envs.reset(seed=5)
    for _ in range(steps):
        actions = np.array([np.flatnonzero(m)[-1] for m in masks_of(envs)])
        obs, rewards, terms, truncs, infos = envs.step(actions)
        final = infos.get("final_obs")
        final = None if final is None else [None if f is None else f.tolist() for f in final]
        out.append((obs.tolist(), rewards.tolist(), terms.tolist(), truncs.tolist(), final))
        if autoreset_of(envs) is AutoresetMode.DISABLED and (terms | truncs).any():
            envs.reset(options={"reset_mask": terms | truncs})
    return out


def autoreset_of(envs) -> AutoresetMode:
    return envs.metadata["autoreset_mode"]


@pytest.mark.parametrize("autoreset", AUTORESETS, ids=lambda m: m.name)
def test_the_native_vector_env_plays_what_the_sync_one_plays(autoreset):
    """Same seeds, same deterministic agents: identical observations, rewards and ends step for
    step, through several autoresets, although the native env batches its opponent."""
    rules = Rules.preset("standard")
    native_opponent, sync_opponent = LowestLegal(), LowestLegal()
    kwargs = {"seat": "random", "rules": rules}
    native = make("vector_entry_point", autoreset, opponents=native_opponent, **kwargs)
    sync = make("sync", autoreset, opponents=sync_opponent, **kwargs)
    assert isinstance(native, Rummy500VectorEnv)
    a, b = trajectory(native, 300), trajectory(sync, 300)
    assert sum(sum(t[2]) for t in a) >= 8  # hands ended
    assert a == b
    assert max(native_opponent.batches) > 1 and sync_opponent.batches == []
    # One act_batch call per round instead of one act per env and decision.
    assert len(native_opponent.batches) + native_opponent.single < sync_opponent.single


def test_the_native_vector_env_refuses_what_gymnasium_would_trip_on():
    with pytest.raises(Rummy500Error, match="num_envs"):
        Rummy500VectorEnv(0)
    with pytest.raises(Rummy500Error, match="autoreset_mode"):
        Rummy500VectorEnv(2, autoreset_mode="sometimes")
    envs = Rummy500VectorEnv(2, autoreset_mode=AutoresetMode.DISABLED, episode="hand")
    envs.reset(seed=0)
    with pytest.raises(Rummy500Error, match="one action per env"):
        envs.step(np.zeros(3, dtype=int))
    with pytest.raises(Rummy500Error, match="reset_mask"):
        envs.reset(options={"reset_mask": [True, False]})
    with pytest.raises(Rummy500Error, match="one seed per env"):
        envs.reset(seed=[1, 2, 3])
    while True:  # play to the end of one hand, then step again without resetting
        _, _, terms, truncs, _ = envs.step(
            np.array([np.flatnonzero(m)[0] for m in envs.action_masks()])
        )
        if (terms | truncs).any():
            break
    with pytest.raises(Rummy500Error, match="DISABLED"):
        envs.step(np.array([np.flatnonzero(m)[0] for m in envs.action_masks()]))


def test_call_get_attr_set_attr_reach_every_env():
    envs = Rummy500VectorEnv(3, episode="hand")
    envs.reset(seed=0)
    greedy = GreedyAgent(Rules.preset("standard"))
    envs.call("set_opponents", greedy)
    assert all(e.opponents == [greedy] for e in envs.envs)
    envs.set_attr("illegal_reward", [-1.0, -2.0, -3.0])
    assert envs.get_attr("illegal_reward") == (-1.0, -2.0, -3.0)
    assert envs.call("seat") == envs.get_attr("seat")


def test_an_illegal_action_ends_that_env_only():
    envs = Rummy500VectorEnv(2, episode="hand")  # illegal="terminate", the default
    envs.reset(seed=0)
    masks = envs.action_masks()
    illegal = int(np.flatnonzero(~masks[0])[0])
    _, rewards, terms, _, infos = envs.step(np.array([illegal, np.flatnonzero(masks[1])[0]]))
    assert terms.tolist() == [True, False] and rewards[0] == -1.0
    assert infos["_illegal_action"].tolist() == [True, False]
    assert infos["illegal_action"][0] == illegal
