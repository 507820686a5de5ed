"""`Env.deal_world`, what a seat knows in JAX: the twin of `Game.from_seat_view`.

Over thousands of states from random play in every shape the JAX engine plays (2, 3 and 4
players; 13 and 7 cards) and for every seat: the world's observation of that seat equals the
state's bit for bit; the cards are conserved; what the seat knows stays where it is (its hand,
the pile, the table, the cards the others are known to hold, every count); the player to act,
phase, scores, rewards and step count are unchanged. And the deal is uniform: over many worlds
of one position, where each unseen card lands (each other hand, the top of the stock, the rest
of the stock) is tested against `Game.from_seat_view`'s worlds of the same position with a
chi-square test, which must catch a planted bias.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
scipy_stats = pytest.importorskip("scipy.stats")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env import Game, Rules  # noqa: E402
from rummy500_env.jax import _seat  # noqa: E402
from rummy500_env.jax._rules import Shape  # noqa: E402
from rummy500_env.jax._state import NUM_CARDS  # noqa: E402
from rummy500_env.jax.env import init_core, observe_core, step_core, world_core  # noqa: E402

CONFIGS = [
    ("standard", "game"),
    ("pagat,players=3,target=60", "game"),
    ("fives,players=4,discard_to_go_out=true,top_card_must_meld=true", "hand"),
]
"""2, 3 and 4 players, with hands of 13 and of 7 cards (each shape is a compile of 10 to 15 s)."""


@functools.cache
def batched(shape: Shape) -> Any:
    """Jitted batched init, step, and the worlds of every seat of every game."""
    seats = jnp.arange(shape.players)

    def init(params: Any, keys: Any) -> Any:
        return jax.vmap(lambda k: init_core(shape, params, k))(keys)

    def step(params: Any, state: Any, actions: Any, keys: Any) -> Any:
        return jax.vmap(lambda s, a, k: step_core(shape, params, s, a, k))(state, actions, keys)

    def worlds(params: Any, state: Any, key: Any) -> Any:
        """Each seat's world of each game, and each seat's observation of both."""

        def of_game(s: Any, k: Any) -> Any:
            keys = jax.random.split(k, shape.players)
            world = jax.vmap(lambda q, kq: world_core(shape, params, s, q, kq))(seats, keys)
            mine = jax.vmap(lambda q: observe_core(shape, params, s, q))(seats)
            theirs = jax.vmap(lambda w, q: observe_core(shape, params, w, q))(world, seats)
            return world, mine, theirs

        keys = jax.random.split(key, state.current_player.shape[0])
        return jax.vmap(of_game)(state, keys)

    return jax.jit(init), jax.jit(step), jax.jit(worlds)


def places(x: Any, n: int) -> np.ndarray:
    """Where each card lies, one row per place kind: hands (n rows), the stock, the pile,
    the table; each card must be in exactly one."""
    stock = np.zeros(NUM_CARDS, bool)
    stock[np.asarray(x.stock)[: int(x.stock_size)]] = True
    pile = np.zeros(NUM_CARDS, bool)
    pile[np.asarray(x.pile)[: int(x.pile_size)]] = True
    table = np.asarray(x.meld_of) >= 0
    return np.vstack([np.asarray(x.hands), stock, pile, table])


def check_world(state: Any, world: Any, b: int, q: int, n: int) -> bool:
    """Everything seat q knows is unchanged in its world of game b (both on the host); returns
    whether another hand or the stock changed (the world dealt something anew)."""
    x = jax.tree_util.tree_map(lambda a: a[b], state._x)
    w = jax.tree_util.tree_map(lambda a: a[b, q], world._x)
    assert (places(w, n).sum(axis=0) == 1).all(), "a card lost or doubled"
    for field in ("pile", "meld_of", "owner", "slot", "meld_lo", "meld_hi", "meld_run", "known"):
        np.testing.assert_array_equal(getattr(w, field), getattr(x, field), field)
    for field in ("turn", "phase", "dealer", "stock_size", "pile_size", "meld_count", "totals"):
        np.testing.assert_array_equal(getattr(w, field), getattr(x, field), field)
    for field in ("scores", "turns", "hands_played", "taken_top", "must_play"):
        np.testing.assert_array_equal(getattr(w, field), getattr(x, field), field)
    np.testing.assert_array_equal(w.hands[q], x.hands[q])
    np.testing.assert_array_equal(w.hands.sum(axis=1), x.hands.sum(axis=1))
    assert (w.hands >= w.known).all()
    for field in ("current_player", "rewards", "terminated", "truncated", "_step_count"):
        np.testing.assert_array_equal(
            np.asarray(getattr(world, field))[b, q], np.asarray(getattr(state, field))[b], field
        )
    size = int(x.stock_size)
    return bool((w.hands != x.hands).any() or (w.stock[:size] != x.stock[:size]).any())


@pytest.mark.parametrize(("rules", "episode"), CONFIGS)
def test_a_world_is_what_the_seat_sees_and_keeps_what_it_knows(rules: str, episode: str) -> None:
    env = rj.make(rules, episode=episode)
    init, step, worlds = batched(env.shape)
    n, batch = env.num_players, 32
    params = env.rule_params
    key = jax.random.PRNGKey(len(rules))
    state = init(params, jax.random.split(key, batch))
    rng = np.random.default_rng(0)
    checked = redealt = 0
    for i in range(32):
        world, mine, theirs = worlds(params, state, jax.random.fold_in(key, i))
        assert np.asarray(mine).tobytes() == np.asarray(theirs).tobytes(), i
        host, host_world = jax.device_get((state, world))
        for b in range(0, batch, 8):  # the slower host-side checks on a sample of the games
            for q in range(n):
                redealt += check_world(host, host_world, b, q, n)
                checked += 1
        mask = np.asarray(state.legal_action_mask)
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask], np.int32)
        keys = jax.random.split(jax.random.fold_in(key, 1000 + i), batch)
        state = step(params, state, jnp.asarray(actions), keys)
    assert checked * 8 >= 1000  # thousands of seats' worlds observed, hundreds checked on host
    assert redealt > 0.9 * checked  # the unseen cards really are dealt again


def test_deal_world_refuses_another_envs_state_and_a_seat_that_is_none() -> None:
    env = rj.make("standard", episode="hand")
    state = env.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="not a player of this env"):
        env.deal_world(state, 2, jax.random.PRNGKey(1))
    three = rj.make("pagat,players=3", episode="hand")
    with pytest.raises(ValueError, match="arrays are for 3 players"):
        env.deal_world(three.init(jax.random.PRNGKey(0)), 0, jax.random.PRNGKey(1))
    world = jax.jit(env.deal_world)(state, 0, jax.random.PRNGKey(1))
    assert np.asarray(world.observation).shape == env.observation_shape


# --- uniformity --------------------------------------------------------------------------------


def mid_game(seed: int = 3) -> Game:
    """A 3-player position at the draw with cards known to be held (a dig), a table and a
    stock: every kind of hidden place."""
    rng = random.Random(seed)
    g = Game.new(Rules.parse("pagat,players=3"), seed=seed)
    while True:
        if g.phase == "draw" and any(g.known(q) for q in range(3)) and g.melds:
            if all(g.count[q] > len(g.known(q)) for q in range(3)) and len(g.stock) > 2:
                return g
        if g.is_hand_over:
            g = Game.new(Rules.parse("pagat,players=3"), seed=rng.randrange(10**6))
            continue
        legal = g.legal_actions()
        digs = [a for a in legal if a.kind in ("take", "dig")]
        melds = [a for a in legal if a.kind in ("meld", "layoff")]
        g.apply(rng.choice(digs or melds or legal))


def category_counts(placed: list[tuple[list[list[int]], list[int]]], seat: int, n: int) -> Any:
    """For each card, how often it lands in each hidden place: each other hand (seat order),
    the top of the stock (drawn next), the rest of the stock. `placed`: (hands, stock top
    first) of each world."""
    others = [q for q in range(n) if q != seat]
    counts = np.zeros((NUM_CARDS, len(others) + 2), np.int64)
    for hands, stock in placed:
        for k, q in enumerate(others):
            counts[hands[q], k] += 1
        counts[stock[0], len(others)] += 1
        counts[stock[1:], len(others) + 1] += 1
    return counts


def jax_worlds(game: Game, seat: int, count: int, seed: int) -> list[Any]:
    env = rj.make(game.rules, episode="hand")
    state = env.from_game(game)
    sample = jax.jit(jax.vmap(lambda k: _seat.deal_world(env.shape, state._x, seat, k)))
    x = jax.device_get(sample(jax.random.split(jax.random.PRNGKey(seed), count)))
    out = []
    for i in range(count):
        hands = [np.flatnonzero(x.hands[i, q]).tolist() for q in range(game.rules.players)]
        stock = x.stock[i, : int(x.stock_size[i])][::-1].tolist()  # top first
        out.append((hands, stock))
    return out


def engine_worlds(game: Game, seat: int, count: int, seed: int) -> list[Any]:
    view = game.seat_view(seat)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        p = Game.from_seat_view(view, rng, check=False).position()
        out.append(([list(h) for h in p.hands], list(p.stock)))
    return out


def homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """The p-value that two samples' card-by-place counts come from one distribution: the
    chi-square statistics of every card's 2 x places table, summed with their freedoms."""
    stat = dof = 0.0
    for row_a, row_b in zip(a, b, strict=True):
        used = (row_a + row_b) > 0
        if used.sum() < 2:
            continue  # a card seen by the seat, or one with a single possible place
        result = scipy_stats.chi2_contingency(np.vstack([row_a[used], row_b[used]]))
        stat += result.statistic
        dof += result.dof
    return float(scipy_stats.chi2.sf(stat, dof))


def test_the_deal_is_uniform_as_from_seat_view_deals() -> None:
    game = mid_game()
    n, count = game.rules.players, 2000
    for seat in (game.current_player, (game.current_player + 1) % n):
        ours = category_counts(jax_worlds(game, seat, count, seed=seat), seat, n)
        theirs = category_counts(engine_worlds(game, seat, count, seed=seat), seat, n)
        np.testing.assert_array_equal(ours.sum(axis=0), theirs.sum(axis=0))  # the same sizes
        assert ((ours > 0) == (theirs > 0)).all()  # the same cards can land in the same places
        assert homogeneity_p(ours, theirs) > 1e-3


def test_the_chi_square_catches_a_planted_bias(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deal that leaves the deck in id order one time in ten (so the lowest unseen cards
    go to the first other hand): the same test must reject it."""
    honest = _seat.shuffled_deck

    def biased(key: Any) -> Any:
        coin, rest = jax.random.split(key)
        return jnp.where(jax.random.uniform(coin) < 0.1, jnp.arange(NUM_CARDS), honest(rest))

    monkeypatch.setattr(_seat, "shuffled_deck", biased)
    game = mid_game()
    seat, n, count = game.current_player, game.rules.players, 2000
    ours = category_counts(jax_worlds(game, seat, count, seed=1), seat, n)
    theirs = category_counts(engine_worlds(game, seat, count, seed=1), seat, n)
    assert homogeneity_p(ours, theirs) < 1e-6
