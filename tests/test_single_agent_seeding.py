"""``gymnasium.make("Rummy500-v0")`` with its default opponents is reproducible: the default
`RandomAgent`s are seeded from the env's seed, so two envs reset with one seed and given the
same actions see the same game; other seeds give other games. Opponents passed in are the
caller's and keep their own generators."""

from __future__ import annotations

import gymnasium
import numpy as np

import rummy500_env  # noqa: F401 - registers "Rummy500-v0"
from rummy500_env.agents import RandomAgent
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv
from rummy500_env.rl.vector import Rummy500VectorEnv


def play(env: gymnasium.Env, seed: int, episodes: int = 1) -> list[tuple[object, ...]]:
    """Every observation, reward and end of a few episodes (the first from `seed`, the next
    ones from unseeded resets, which continue the seeded generators), the learner taking its
    first legal action."""
    steps: list[tuple[object, ...]] = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        steps.append((obs.tobytes(), info["seat"]))
        done = False
        while not done:
            action = int(np.flatnonzero(env.unwrapped.action_masks())[0])
            obs, reward, term, trunc, info = env.step(action)
            steps.append((obs.tobytes(), reward, term, trunc, info.get("totals")))
            done = term or trunc
    return steps


def test_make_with_default_opponents_is_reproducible():
    first = play(gymnasium.make("Rummy500-v0"), seed=0, episodes=2)
    assert len(first) > 20
    assert play(gymnasium.make("Rummy500-v0"), seed=0, episodes=2) == first
    assert play(gymnasium.make("Rummy500-v0"), seed=1, episodes=2) != first


def test_reseeding_one_env_replays_its_game():
    env = gymnasium.make("Rummy500-v0", episode="hand", seat="random", rules={"players": 3})
    first = play(env, seed=5, episodes=3)
    assert play(env, seed=5, episodes=3) == first
    assert play(env, seed=6, episodes=3) != first


def test_a_vector_env_with_default_opponents_is_reproducible():
    def run(seed: int) -> list[bytes]:
        envs = Rummy500VectorEnv(2, episode="hand")
        obs, _ = envs.reset(seed=seed)
        out = [obs.tobytes()]
        for _ in range(60):
            actions = [int(np.flatnonzero(m)[0]) for m in envs.action_masks()]
            obs, rewards, *_ = envs.step(actions)
            out += [obs.tobytes(), rewards.tobytes()]
        return out

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_opponents_given_keep_their_own_generators():
    """The caller's agents are the caller's: the env never reseeds them."""
    mine = RandomAgent()
    generator = mine.rng
    env = Rummy500SingleAgentEnv(opponents=mine, episode="hand")
    play(env, seed=0)
    assert env.opponents == [mine] and mine.rng is generator
    pool_agent = RandomAgent(seed=7)
    env.set_opponent_pool([pool_agent, None])
    for seed in range(4):
        play(env, seed=seed)
    assert pool_agent.rng.bit_generator.state != RandomAgent(seed=7).rng.bit_generator.state
    assert pool_agent.rng.bit_generator.seed_seq.entropy == 7
