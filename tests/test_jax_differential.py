"""The JAX engine plays the same game as the engine and `raw_env`, float for float.

Random play (biased towards melds and lay-offs, so hands go out as well as run dry) drives a
batch of games through both engines from the same deals: each game starts as a JAX deal
(`init`), which `to_game` hands to `raw_env`; in game episodes each next hand the JAX step
deals is handed over the same way. At every decision: the player to act, the legal mask
(== `ActionCodec.legal_ids`), every player's observation (== `raw_env`'s feature part, bit for
bit), the whole position (`to_game(state) == raw_env.game`); after every step: the rewards,
and at the end of a hand its scores, the totals, and the end of the episode (terminated or
truncated). One compile per players and hand size serves every configuration of that shape:
the other rule fields are traced parameters.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env import raw_env  # noqa: E402
from rummy500_env.jax.env import init_core, observe_core, step_core  # noqa: E402

CONFIGS: list[tuple[str, str, str | None]] = [
    ("standard", "hand", None),
    ("standard", "hand", "win"),
    ("standard", "game", None),
    ("standard,target=60", "game", None),
    ("standard,target=60", "game", "score"),
    ("pagat", "game", None),
    ("nordic,target=60", "game", None),
    ("fives", "hand", None),
    ("app,target=60", "game", None),
    ("standard,stock_out=ends_hand", "hand", None),
    ("standard,discard_to_go_out=true,target=60", "game", None),
    ("standard,top_card_must_meld=true", "hand", None),
    ("standard,winner_must_go_out=true,target=40", "game", None),
    ("standard,turn_limit=12,target=40", "game", "score"),
    ("standard,hand_limit=2", "game", None),
    ("standard,hand_limit=1,turn_limit=30", "hand", None),
    ("standard,turn_limit=none,hand_limit=none,target=60", "game", None),
    ("standard,hand_size=7,target=60", "game", None),
    ("pagat,players=3,target=60", "game", None),
    ("nordic,players=3,hand_limit=2", "game", "score"),
    ("fives,players=4,discard_to_go_out=true,top_card_must_meld=true", "hand", None),
    ("app,players=4,winner_must_go_out=true,target=30", "game", None),
]
"""Every supported rules field (docs/rules.md §2, §4) and preset, both episodes, both reward
modes; low targets and limits so that games end, by the target and by `hand_limit`."""
LONG_ONLY: list[tuple[str, str, str | None]] = [
    ("standard,players=3,hand_size=17,target=60", "game", None),  # no stock at the deal
    ("nordic,players=4,hand_size=12", "hand", None),
]
"""Shapes of their own (one more compile each), for the long run only (`check_long`)."""
NO_END_EXPECTED = {"standard", "pagat", "nordic,players=3,hand_limit=2"}
"""Games that the quick test's few thousand decisions are too few to finish."""


@functools.cache
def batched(shape: Any) -> Any:
    """Batched, jitted init/step/observe for one shape (params traced: shared by configs)."""
    n = shape.players

    def init(params: Any, keys: Any) -> Any:
        return jax.vmap(lambda k: init_core(shape, params, k))(keys)

    def step(params: Any, state: Any, actions: Any, keys: Any) -> Any:
        return jax.vmap(lambda s, a, k: step_core(shape, params, s, a, k))(state, actions, keys)

    def observe_all(params: Any, state: Any) -> Any:
        each = jax.vmap(lambda q, s: observe_core(shape, params, s, q), in_axes=(0, None))
        return jax.vmap(lambda s: each(jnp.arange(n), s))(state)

    def restart(params: Any, state: Any, keys: Any, flags: Any) -> Any:
        fresh = init(params, keys)
        return jax.tree_util.tree_map(
            lambda f, c: jnp.where(flags.reshape((-1,) + (1,) * (c.ndim - 1)), f, c), fresh, state
        )

    return jax.jit(init), jax.jit(step), jax.jit(observe_all), jax.jit(restart)


def choose(
    rng: np.random.Generator, legal: np.ndarray, discard_base: int, meld_base: int, eager: bool
) -> int:
    """A random legal id; for an `eager` player melds and lay-offs two times in three when
    there are any (its hands go out; the others' run the stock dry, or reach turn_limit)."""
    plays = legal[(legal >= meld_base) & (legal < discard_base)]
    if eager and plays.size and rng.random() < 0.67:
        return int(rng.choice(plays))
    return int(rng.choice(legal))


def play(
    text: str, episode: str, reward: str | None, decisions: int, batch: int, seed: int
) -> dict[str, int]:
    """Drive `batch` games through both engines until `decisions` decisions are checked;
    returns counts of what was seen (decisions, hand ends, episode ends, truncations)."""
    env = rj.make(text, episode=episode, reward=reward)
    rules, shape, params = env.rules, env.shape, env.rule_params
    init, step, observe_all, restart = batched(shape)
    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    core = init(params, jax.random.split(sub, batch))
    envs = [raw_env(rules=rules, episode=episode, reward=reward) for _ in range(batch)]
    features = envs[0].encoder.features_size
    assert env.observation_shape == (features,)
    assert env.num_actions == envs[0].codec.size
    meld_base, discard_base = envs[0].codec.MELD, envs[0].codec.DISCARD
    host = jax.device_get(core)
    for b, e in enumerate(envs):
        e.reset(options={"position": env.to_game(host, b)})
    agents = envs[0].possible_agents
    rng = np.random.default_rng(seed)
    seen = {"decisions": 0, "hands": 0, "episodes": 0, "truncated": 0, "went_out": 0}
    obs = np.asarray(observe_all(params, core))  # (batch, players, features)
    while seen["decisions"] < decisions:
        actions = np.zeros(batch, np.int32)
        for b, e in enumerate(envs):
            agent = e.agent_selection
            assert int(host.current_player[b]) == agents.index(agent)
            # the whole position (Game's == compares to_dict(): the same, slower)
            assert env.to_game(host, b).position() == e.game.position()
            mask = e.observe(agent)["action_mask"]
            np.testing.assert_array_equal(host.legal_action_mask[b], mask.astype(bool))
            for q, a in enumerate(agents):
                theirs = e.observe(a)["observation"][:features]
                assert obs[b, q].tobytes() == theirs.tobytes(), (
                    b,
                    q,
                    np.flatnonzero(obs[b, q] != theirs),
                )
            np.testing.assert_array_equal(host.observation[b], obs[b, host.current_player[b]])
            actions[b] = choose(rng, np.flatnonzero(mask), discard_base, meld_base, b % 2 == 0)
            e.step(int(actions[b]))
        key, sub = jax.random.split(key)
        core = step(params, core, jnp.asarray(actions), jax.random.split(sub, batch))
        host = jax.device_get(core)
        obs = np.asarray(observe_all(params, core))
        seen["decisions"] += batch
        ended = np.zeros(batch, bool)
        for b, e in enumerate(envs):
            rewards = np.array([e.rewards[a] for a in agents], np.float32)
            assert host.rewards[b].tobytes() == rewards.tobytes(), (b, host.rewards[b], rewards)
            x = jax.tree_util.tree_map(lambda a, b=b: a[b], host._x)
            term = any(e.terminations.values())
            trunc = any(e.truncations.values())
            assert (bool(host.terminated[b]), bool(host.truncated[b])) == (term, trunc)
            info = e.infos[agents[0]]
            if "hand_scores" not in info:
                continue
            seen["hands"] += 1
            seen["went_out"] += info["went_out"] is not None
            assert list(x.scores) == info["hand_scores"]
            if term or trunc:
                assert list(x.totals + x.scores) == info["totals"]
                assert host.legal_action_mask[b].all()  # pgx: all True once the episode is over
                for q, a in enumerate(agents):  # the last observation of each player
                    theirs = e.observe(a)["observation"][:features]
                    assert obs[b, q].tobytes() == theirs.tobytes(), (b, q)
                seen["episodes"] += 1
                seen["truncated"] += trunc
                ended[b] = True
            else:  # the next hand: the JAX step dealt it; the engine plays on from that deal
                assert list(x.totals) == info["totals"]
                assert int(x.hands_played) == info["hands_played"] == e.game.hands_played
                game = env.to_game(host, b)
                assert game.totals_before == e.game.totals_before
                assert game.dealer == e.game.dealer
                e.game = game
                e._after_move(game)
        if ended.any():
            key, sub = jax.random.split(key)
            core = restart(params, core, jax.random.split(sub, batch), jnp.asarray(ended))
            host = jax.device_get(core)
            obs = np.asarray(observe_all(params, core))
            for b in np.flatnonzero(ended):
                envs[b].reset(options={"position": env.to_game(host, b)})
    return seen


@pytest.mark.parametrize(("rules", "episode", "reward"), CONFIGS)
def test_same_game_as_the_engine(rules: str, episode: str, reward: str | None) -> None:
    seen = play(rules, episode, reward, decisions=4_096, batch=32, seed=len(rules))
    assert seen["hands"] > 0
    if rules not in NO_END_EXPECTED:
        assert seen["episodes"] > 0


def check_long(
    rules: str, episode: str, reward: str | None, decisions: int = 20_480
) -> dict[str, int]:
    """The long differential run of one configuration (benchmarks/jax_differential_long.py:
    at least 20,000 decisions, more than CI plays)."""
    seen = play(rules, episode, reward, decisions=decisions, batch=64, seed=1000 + len(rules))
    assert seen["went_out"] < seen["hands"]  # hands that ran dry too, not only hands gone out
    if rules not in ("standard", "pagat"):
        assert seen["episodes"] > 0
    return seen


def test_step_compiles_quickly() -> None:
    """The jitted step of a fresh env compiles in well under a minute (the issue's bound)."""
    env = rj.make("standard,target=77")  # a rules object no other test compiles
    state = jax.jit(env.init)(jax.random.PRNGKey(0))
    start = time.perf_counter()
    step = jax.jit(env.step).lower(state, jnp.int32(0), jax.random.PRNGKey(1)).compile()
    assert time.perf_counter() - start < 60
    after = step(state, jnp.int32(0), jax.random.PRNGKey(1))
    assert int(after._step_count) == 1
