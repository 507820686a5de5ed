"""PettingZoo's own harness on every rules preset and on jokers and calls: ``render_test``,
PettingZoo's unwrapped test (its wrappers stacked on ``env()``, ``.unwrapped`` still the bare
env), ``parallel_api_test`` and ``parallel_seed_test`` on the registered parallel form, and
PettingZoo's pickle round trip (a pickled fresh env plays the same seeded game as the
original). ``api_test`` and ``seed_test`` run in tests/test_env.py and
tests/test_jokers_calls_env.py.

Pickling here is of fresh envs, as PettingZoo's ``pickle_test`` does; a copy taken in the
middle of a game is the env's own tests' business.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import parallel_api_test, parallel_seed_test, render_test
from pettingzoo.test.seed_test import seed_action_spaces, seed_observation_spaces
from pettingzoo.utils import wrappers

from rummy500_env import Rules
from rummy500_env.engine.rules import PRESETS
from rummy500_env.rl.registration import parallel_env
from rummy500_env.rl.rummy500_v0 import Rummy500Env, env

CONFIGS: dict[str, dict[str, object]] = {
    **{name: Rules.preset(name).to_dict() for name in PRESETS},
    "jokers": {"jokers": 2},
    "calls": {"rummy_calls": True},
    "jokers+calls, 3 players": {"jokers": 2, "rummy_calls": True, "players": 3},
}
"""Every preset, then the two extensions on `standard` alone and together."""
CYCLES = 300


@pytest.fixture(params=list(CONFIGS), ids=list(CONFIGS))
def rules(request: pytest.FixtureRequest) -> dict[str, object]:
    return CONFIGS[request.param]


def test_every_preset_is_covered():
    assert set(PRESETS) <= set(CONFIGS)
    assert Rules.coerce(CONFIGS["standard"]) == Rules.preset("standard")


def test_render_test(rules):
    """Each render mode the metadata lists gives what PettingZoo expects (ansi: a string,
    human: None, printed), over random masked play."""
    assert env(rules=rules).metadata["render_modes"] == ["ansi", "human"]
    render_test(lambda render_mode=None: env(rules=rules, render_mode=render_mode))


def test_unwrapped_test(rules):
    """PettingZoo's wrappers stacked on ``env()`` keep `.unwrapped` the bare env (the check
    PettingZoo's test/unwrapped_test.py runs on its own envs), and the parallel form reaches
    it too."""
    e = env(rules=rules, render_mode="human")  # CaptureStdoutWrapper asks for human
    base = e.unwrapped
    assert isinstance(base, Rummy500Env)
    e.reset(seed=0)
    wrapped = wrappers.BaseWrapper(e)
    wrapped = wrappers.CaptureStdoutWrapper(wrapped)
    wrapped = wrappers.OrderEnforcingWrapper(wrapped)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, 1.0)
    assert wrapped.unwrapped is base
    wrapped.reset(seed=0)  # and the stack plays: the rendered board is captured, not printed
    obs, *_ = wrapped.last()
    wrapped.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert isinstance(wrapped.render(), str)
    par = parallel_env(rules=rules)
    assert isinstance(par.unwrapped, Rummy500Env)
    assert par.unwrapped.rules == Rules.coerce(rules)


@pytest.mark.filterwarnings("ignore:reset ignores the unknown option")  # the test's own option
def test_parallel_api_test(rules):
    parallel_api_test(parallel_env(rules=rules), num_cycles=CYCLES)


def test_parallel_seed_test(rules):
    parallel_seed_test(lambda: parallel_env(rules=rules), num_cycles=CYCLES)


@pytest.mark.parametrize("factory", [env, Rummy500Env], ids=["env", "raw_env"])
def test_pickle_round_trip(rules, factory):
    """PettingZoo's test/pickle_test.py, for a whole hand instead of ten steps: the unpickled
    copy of a fresh env and the original, reset with one seed and stepped with masked samples
    of equally seeded action spaces, agree on every agent, observation, reward, ending and
    info."""
    env1 = factory(rules=rules, episode="hand")
    env2 = pickle.loads(pickle.dumps(env1))
    assert env2.unwrapped.rules == env1.unwrapped.rules
    env1.reset(seed=42)
    env2.reset(seed=42)
    for e in (env1, env2):
        seed_action_spaces(e)
        seed_observation_spaces(e)
    steps = 0
    for agent1, agent2 in zip(env1.agent_iter(), env2.agent_iter(), strict=True):
        assert agent1 == agent2
        last1, last2 = env1.last(), env2.last()
        for got, want in zip(last1, last2, strict=True):
            assert data_equivalence(got, want), (agent1, got, want)
        obs, _, term, trunc, _ = last1
        action = None
        if not (term or trunc):
            action = env1.action_space(agent1).sample(mask=obs["action_mask"])
            assert action == env2.action_space(agent2).sample(mask=obs["action_mask"])
            steps += 1
        env1.step(action)
        env2.step(action)
    assert steps > 20 and not env1.agents and not env2.agents  # a whole hand was played
    assert np.array_equal(env1.unwrapped.game.totals, env2.unwrapped.game.totals)


def test_pickle_round_trip_of_a_reset_env(rules):
    """Pickled right after reset (before any step), the copy plays on exactly as the original."""
    env1 = env(rules=rules, episode="hand")
    env1.reset(seed=7)
    env2 = pickle.loads(pickle.dumps(env1))
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs1, *rest1 = env1.last()
        obs2, *rest2 = env2.last()
        assert data_equivalence(obs1, obs2) and data_equivalence(rest1, rest2)
        if rest1[1] or rest1[2]:
            break
        action = int(rng.choice(np.flatnonzero(obs1["action_mask"])))
        env1.step(action)
        env2.step(action)
