"""A native vector step is all or nothing: an action one env refuses (an illegal id under
``illegal="raise"``, an id out of range, a non-int) raises before any env plays, so every
env is left exactly as it was and the next step with legal actions plays normally. Before,
the envs ahead of the bad one had played their learner's action without their opponents'
replies, and the next step played the learner's id for the opponent."""

from __future__ import annotations

import numpy as np
import pytest

from rummy500_env import IllegalActionError, Rummy500Error
from rummy500_env.agents import RandomAgent
from rummy500_env.rl.vector import DONE_ACTION, Rummy500VectorEnv

N = 3


def snapshot(envs: Rummy500VectorEnv) -> list[tuple[object, ...]]:
    """What a refused step must leave alone, env by env."""
    out = []
    for env in envs.envs:
        assert env.aec.game is not None
        out.append(
            (
                env.aec.game.to_dict(),
                env.aec.agent_selection,
                env.action_masks().tolist(),
                env._observation().tolist(),
                env._illegal_end,
            )
        )
    return out


def legal_actions(envs: Rummy500VectorEnv, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in envs.action_masks()])


def an_illegal_id(mask: np.ndarray) -> int:
    return int(np.flatnonzero(~mask)[0])


@pytest.mark.parametrize("bad_env", [1, N - 1])
@pytest.mark.parametrize("illegal", ["raise", "terminate"])
def test_a_refused_action_leaves_every_env_as_it_was(bad_env, illegal):
    envs = Rummy500VectorEnv(N, episode="hand", illegal=illegal, opponents=RandomAgent(0))
    envs.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(5):  # a few moves in, so the opponents have played too
        envs.step(legal_actions(envs, rng))
    masks = envs.action_masks()
    bad_actions = [envs.single_action_space.n + 7, "draw", 1.5]  # refused in both modes
    if illegal == "raise":
        bad_actions.insert(0, an_illegal_id(masks[bad_env]))
    for bad in bad_actions:
        before = snapshot(envs)
        actions = list(legal_actions(envs, rng))
        actions[bad_env] = bad
        with pytest.raises(Rummy500Error, match=f"env {bad_env}"):
            envs.step(np.array(actions, dtype=object))
        assert snapshot(envs) == before, f"a refused step with {bad!r} changed an env"
    envs.step(legal_actions(envs, rng))
    assert envs.action_masks().any(axis=1).all()
    for env in envs.envs:  # every env is back at its learner's decision, or finished
        finished = env.aec.terminations[env.learner] or env.aec.truncations[env.learner]
        assert finished or env.aec.agent_selection == env.learner


def test_an_env_waiting_for_its_autoreset_is_not_reset_by_a_refused_step():
    """NEXT_STEP: a finished env resets on the step after; a step refused for another env
    must not reset it either."""
    envs = Rummy500VectorEnv(N, episode="hand", illegal="raise", opponents=RandomAgent(0))
    envs.reset(seed=2)
    rng = np.random.default_rng(3)
    for _ in range(2000):
        _, _, terms, truncs, _ = envs.step(legal_actions(envs, rng))
        done = np.flatnonzero(terms | truncs)
        if done.size and done[0] < N - 1:
            break
    else:
        pytest.fail("no env but the last finished a hand in 2,000 steps")
    finished = int(done[0])
    assert np.flatnonzero(envs.action_masks()[finished]).tolist() == [DONE_ACTION]
    before = snapshot(envs)
    actions = legal_actions(envs, rng)
    actions[N - 1] = an_illegal_id(envs.action_masks()[N - 1])
    with pytest.raises(IllegalActionError):
        envs.step(actions)
    assert snapshot(envs) == before
    assert np.flatnonzero(envs.action_masks()[finished]).tolist() == [DONE_ACTION]
    envs.step(legal_actions(envs, rng))  # now it resets
    assert envs.action_masks()[finished].sum() >= 1
    assert not envs.envs[finished].aec.terminations[envs.envs[finished].learner]
