"""The JAX engine's pgx interface, its refusals, its conversions and its import error.

The game itself is compared with the engine in tests/test_jax_differential.py; this file
checks the shell around it: `make` and what it refuses, pgx's `Env` behaviour (illegal
actions, stepping an ended episode, the mask at the end), what it refuses (a float or an id of
any width outside the range, another env's state, a player that is not one), `Env.to_game`
of `Env.from_game` over random positions, play on from an engine deal, and the message without
JAX.
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
    one = jax.tree_util.tree_map(lambda a: a[5], after)
    assert hand_env.to_game(after, 5) == hand_env.to_game(one)
    with pytest.raises(ValueError, match="index="):
        hand_env.to_game(after)


def test_state_holds_arrays_only_and_the_env_is_a_static_argument(hand_env: rj.Env) -> None:
    """One state type: every field is an array (jit keys on shapes), and the env, hashable
    by its configuration, is what a jitted function takes as static."""
    state = hand_env.init(jax.random.PRNGKey(0))
    leaves = jax.tree_util.tree_leaves(state)
    assert all(isinstance(leaf, jax.Array) for leaf in leaves)
    assert len(leaves) == len(jax.tree_util.tree_leaves(state._x)) + 7
    same = rj.make("standard", episode="hand")
    assert same == hand_env and hash(same) == hash(hand_env)
    assert rj.make("standard") != hand_env

    @jax.jit  # type: ignore[untyped-decorator]
    def steps(state: rj.State) -> rj.State:
        return jax.lax.fori_loop(0, 3, lambda i, s: hand_env.step(s, 0), state)

    assert int(steps(state)._step_count) == 1  # the draw, then two illegal draws change nothing


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
    # the position stays the one the action was tried in
    kept = jax.tree_util.tree_map(lambda a, b: bool(np.array_equal(a, b)), bad._x, state._x)
    assert all(jax.tree_util.tree_leaves(kept))


@pytest.mark.parametrize("action", ["second draw", 10**6, -1])
def test_to_game_refuses_a_state_ended_by_an_illegal_action(
    hand_env: rj.Env, jitted: tuple, action: object
) -> None:
    """Issue 60 (3): after a second draw, or an id far outside the range, `to_game` used to
    give a game that never happened (hands of 15 and 13; a pile holding card 999692)."""
    init, step = jitted
    state = step(init(jax.random.PRNGKey(5)), 0, jax.random.PRNGKey(0))  # drawn: play phase
    bad = step(state, 0 if action == "second draw" else action, jax.random.PRNGKey(0))
    assert bool(bad.terminated)
    with pytest.raises(ValueError, match="ended by an illegal action"):
        hand_env.to_game(bad)
    assert hand_env.to_game(state).phase == "play"


@pytest.mark.parametrize("action", [0.9, np.float32(2.0), True, jnp.float32(0.0)])
def test_a_non_integer_action_is_refused(hand_env: rj.Env, action: object) -> None:
    """Issue 60 (6): a float used to play id 0."""
    state = hand_env.init(jax.random.PRNGKey(0))
    with pytest.raises(TypeError, match=r"integer id 0\.\.359"):
        hand_env.step(state, action)


@pytest.mark.parametrize("action", [np.int64(2**32 + 1), 2**32, np.uint64(2**63), 360])
def test_an_id_outside_the_range_is_illegal_whatever_its_width(
    hand_env: rj.Env, action: object
) -> None:
    """Issue 60 (6): ``np.int64(2**32 + 1)`` used to play id 1 (narrowed to int32 first)."""
    state = hand_env.init(jax.random.PRNGKey(0))
    bad = hand_env.step(state, action)
    assert bool(bad.terminated)
    np.testing.assert_array_equal(bad.rewards, [-1.0, 1.0])
    batch = jax.vmap(hand_env.init)(jax.random.split(jax.random.PRNGKey(0), 3))
    traced = jax.vmap(hand_env.step)(batch, jnp.array([0, 360, -5], jnp.int32))
    assert np.asarray(traced.terminated).tolist() == [False, True, True]


def test_another_envs_state_and_other_players_are_refused(hand_env: rj.Env) -> None:
    """Issue 60 (7): a state of another player count, and a player outside 0..n-1."""
    three = rj.make("pagat,players=3", episode="hand")
    theirs = three.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"arrays are for 3 players .* this env plays"):
        hand_env.step(theirs, 0)
    with pytest.raises(ValueError, match="arrays are for 3 players"):
        hand_env.observe(theirs)
    with pytest.raises(ValueError, match="arrays are for 3 players"):
        hand_env.to_game(theirs)
    with pytest.raises(ValueError, match="arrays are for 3 players"):
        jax.vmap(hand_env.observe)(jax.vmap(three.init)(jax.random.split(jax.random.PRNGKey(0), 2)))
    state = hand_env.init(jax.random.PRNGKey(0))
    for player in (5, -1, 2, np.int64(7), 0.5):
        with pytest.raises(ValueError, match=r"is not a player of this env: use an int 0\.\.1"):
            hand_env.observe(state, player)
    np.testing.assert_array_equal(hand_env.observe(state, np.int64(1)), hand_env.observe(state, 1))


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
        state = hand_env.from_game(e.game)
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
        assert hand_env.to_game(state) == e.game


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
    env = rj.make(g.rules)
    state = env.from_game(g)
    assert env.to_game(state) == g
    if not g.is_hand_over:
        codec = ActionCodec(g.rules)
        assert np.flatnonzero(state.legal_action_mask).tolist() == sorted(codec.legal_ids(g))
    else:
        assert bool(state.terminated | state.truncated)


def test_from_game_refuses_another_envs_rules() -> None:
    with pytest.raises(ValueError, match="are not this env's"):
        rj.make("standard").from_game(Game.new("nordic", seed=1))
    with pytest.raises(ValueError, match="are not this env's"):
        rj.make("standard").from_game(Game.new(Rules(jokers=2), seed=1))
