"""The JAX engine's pgx interface, its refusals, its conversions and its import error.

The game itself is compared with the engine in tests/test_jax_differential.py; this file
checks the shell around it: `make` and what it refuses, pgx's `Env` behaviour (illegal
actions, stepping an ended episode, the mask at the end), `to_game(from_game(g)) == g` over
random positions, play on from an engine deal, and the message without JAX.
"""

from __future__ import annotations

import importlib
import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env import Game, Rules, RulesError, raw_env  # noqa: E402
from rummy500_env.rl.actions import ActionCodec  # noqa: E402


@pytest.mark.parametrize(
    ("rules", "named"),
    [
        ("standard,jokers=2", "jokers=2"),
        ("standard,rummy_calls=true", "rummy_calls=True"),
        ("standard,decks=2", "2 decks"),
        ("pagat,players=5", "2 decks"),
        ("pagat,players=5,decks=1", "players=5"),
        ("nordic,players=3,hand_size=17", "no stock"),
        ("standard,target=5000000", "target=5000000"),
    ],
)
def test_make_refuses_what_it_does_not_play(rules: str, named: str) -> None:
    with pytest.raises(RulesError) as e:
        rj.make(rules)
    assert named in str(e.value)
    assert "it plays one deck (decks=1 or None) with 2 to 4 players" in str(e.value)


def test_make_refuses_unknown_episodes_and_rewards() -> None:
    with pytest.raises(RulesError, match="episode='round'"):
        rj.make("standard", episode="round")
    with pytest.raises(RulesError, match="reward='points'"):
        rj.make("standard", reward="points")


def test_make_reads_rules_text_dicts_and_rules() -> None:
    a = rj.make("nordic,players=3,target=300")
    b = rj.make(Rules.preset("nordic", players=3, target=300))
    c = rj.make({"players": 3, "scoring": "fives", "stock_out": "ends_hand", "target": 300})
    assert a.rules == b.rules == c.rules
    assert (a.num_players, a.num_actions, a.observation_shape) == (3, 359, (52 * 16 + 23,))
    assert (a.id, a.version, a.episode, a.reward_mode) == ("rummy500", "v0", "game", "win")
    assert rj.make("fives", episode="hand").reward_mode == "score"


def test_import_without_jax_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        m for m in sys.modules if m == "rummy500_env.jax" or m.startswith("rummy500_env.jax.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "rummy500_env\[jax\]"'):
        importlib.import_module("rummy500_env.jax")


@pytest.fixture(scope="module")
def hand_env() -> rj.Env:
    return rj.make("standard", episode="hand")


@pytest.fixture(scope="module")
def jitted(hand_env: rj.Env) -> tuple:
    return jax.jit(hand_env.init), jax.jit(hand_env.step)


def test_pgx_state_and_jit_vmap(hand_env: rj.Env, jitted: tuple) -> None:
    init, _ = jitted
    state = init(jax.random.PRNGKey(3))
    assert state.env_id == "rummy500"
    assert state.legal_action_mask.dtype == jnp.bool_
    assert state.observation.dtype == jnp.float32
    assert state.rewards.shape == (2,)
    assert not state.terminated and not state.truncated and int(state._step_count) == 0
    np.testing.assert_array_equal(hand_env.observe(state), state.observation)
    np.testing.assert_array_equal(hand_env.observe(state, 1), hand_env.observe(state, jnp.int32(1)))
    keys = jax.random.split(jax.random.PRNGKey(4), 8)
    batch = jax.vmap(hand_env.init)(keys)
    assert batch.legal_action_mask.shape == (8, 360)
    after = jax.jit(jax.vmap(hand_env.step))(batch, jnp.zeros(8, jnp.int32), keys)
    assert (after._step_count == 1).all() and (after.current_player == 0).all()
    assert rj.to_game(after, 5) == rj.to_game(jax.tree_util.tree_map(lambda a: a[5], after))
    with pytest.raises(ValueError, match="index="):
        rj.to_game(after)


def test_illegal_action_ends_the_episode_with_a_penalty(jitted: tuple) -> None:
    init, step = jitted
    state = init(jax.random.PRNGKey(5))
    decline = 1 + 50  # the stock is full: declining is illegal
    assert not state.legal_action_mask[decline]
    bad = step(state, decline, jax.random.PRNGKey(0))
    assert bool(bad.terminated) and not bool(bad.truncated)
    np.testing.assert_array_equal(bad.rewards, [-1.0, 1.0])
    assert bool(bad.legal_action_mask.all())  # pgx: all True once over
    again = step(bad, 0, jax.random.PRNGKey(0))  # an ended episode: nothing happens
    np.testing.assert_array_equal(again.rewards, [0.0, 0.0])
    assert int(again._step_count) == int(bad._step_count)
    assert rj.to_game(again) == rj.to_game(bad)


def test_three_players_illegal_penalty_is_zero_sum() -> None:
    env = rj.make("pagat,players=3", episode="hand")
    state = env.init(jax.random.PRNGKey(0))
    bad = env.step(state, env.num_actions - 1)  # discard KS before drawing
    np.testing.assert_array_equal(bad.rewards, np.float32([-1.0, 0.5, 0.5]))


def test_game_episode_step_needs_a_key() -> None:
    env = rj.make("standard")
    state = env.init(jax.random.PRNGKey(0))
    with pytest.raises(TypeError, match="needs a key"):
        env.step(state, 0)


def test_plays_on_from_an_engine_deal(hand_env: rj.Env, jitted: tuple) -> None:
    """from_game of a seeded engine deal (stock order included): both engines play on alike."""
    _, step = jitted
    rng = random.Random(11)
    for seed in (1, 2):
        e = raw_env(rules="standard", episode="hand")
        e.reset(seed=seed)
        state = rj.from_game(e.game, hand_env)
        features = e.encoder.features_size
        while not bool(state.terminated):
            agent = e.agent_selection
            mask = e.observe(agent)["action_mask"].astype(bool)
            np.testing.assert_array_equal(state.legal_action_mask, mask)
            assert (
                state.observation.tobytes() == e.observe(agent)["observation"][:features].tobytes()
            )
            action = rng.choice(np.flatnonzero(mask).tolist())
            e.step(action)
            state = step(state, action, jax.random.PRNGKey(0))
            np.testing.assert_array_equal(
                state.rewards, np.float32([e.rewards[a] for a in e.possible_agents])
            )
        assert all(e.terminations.values())
        assert rj.to_game(state) == e.game


SUPPORTED_RULES = [
    "standard",
    "nordic",
    "app",
    "fives,discard_to_go_out=true,top_card_must_meld=true",
    "standard,winner_must_go_out=true,target=100,turn_limit=40,hand_limit=4",
    "pagat,players=3",
    "nordic,players=4,hand_size=5",
    "standard,players=3,hand_size=17",  # no stock at the deal: take the top card or decline
]


@settings(max_examples=150)
@given(
    rules=st.sampled_from(SUPPORTED_RULES),
    seed=st.integers(-(2**63), 2**63 - 1),
    steps=st.integers(0, 400),
    chooser=st.randoms(use_true_random=False),
)
def test_to_game_from_game_round_trip(
    rules: str, seed: int, steps: int, chooser: random.Random
) -> None:
    """Random positions: random legal play from a seeded deal, across hands (totals, dealer
    and hand count move on), stopping anywhere, the end of a hand or game included."""
    g = Game.new(Rules.parse(rules), seed=seed)
    for _ in range(steps):
        if g.phase == "game_over":
            break
        if g.phase == "hand_over":
            g.next_hand()
            continue
        g.apply(chooser.choice(g.legal_actions()))
    state = rj.from_game(g)
    assert rj.to_game(state) == g
    if not g.is_hand_over:
        codec = ActionCodec(g.rules)
        assert np.flatnonzero(state.legal_action_mask).tolist() == sorted(codec.legal_ids(g))
    else:
        assert bool(state.terminated | state.truncated)


def test_from_game_refuses_rules_it_does_not_play() -> None:
    with pytest.raises(RulesError, match="jokers=2"):
        rj.from_game(Game.new(Rules(jokers=2), seed=1))
    with pytest.raises(ValueError, match="not the env's"):
        rj.from_game(Game.new("nordic", seed=1), rj.make("standard"))
