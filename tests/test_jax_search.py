"""The fair search in JAX (`rummy500_env.jax.search`).

- Fair: the search of a state equals, bit for bit, the search of any state its seat cannot
  tell apart (the same key), and a search planted with a peek at the true state (its worlds
  replaced by the state itself) is caught by the same test.
- Sound output: the action is legal, the improved policy is a distribution over the legal
  actions, the visits add up to the budget's, and a search with one candidate and no noise
  plays the prior's choice; the same key gives the same search; 2, 3 and 4 players.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env.jax.network import CardNetwork, masked_logits  # noqa: E402
from rummy500_env.jax.search import SearchConfig, search  # noqa: E402

SMALL = SearchConfig(simulations=12, worlds=4, candidates=4, horizon=6)
NOISY = SearchConfig(simulations=12, worlds=4, candidates=4, horizon=6, gumbel_scale=1.0)
ONE = SearchConfig(simulations=2, worlds=2, candidates=1, horizon=2)
SEARCH = jax.jit(search, static_argnums=(0, 1))
"""Compiled once per env, network and budget (a search takes 10 to 20 s to compile here): the
tests share five compiles (standard with `SMALL` and `NOISY`, three players with `ONE`, four
with `SMALL`, and the peeking search)."""


def small_network(env: rj.Env, seed: int = 0) -> tuple[CardNetwork, dict[str, Any]]:
    """A small card network with random weights (what the search does with them is the test)."""
    net = CardNetwork.for_rules(env.rules, channels=8, blocks=1, hidden=32)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(net.shapes()))
    params = {
        name: 0.3 * jax.random.normal(k, shape)
        for k, (name, shape) in zip(keys, net.shapes().items(), strict=True)
    }
    return net, params


@functools.cache
def positions(rules: str, batch: int = 24, moves: int = 9) -> tuple[rj.Env, rj.State]:
    """`batch` hand-episode games after `moves` random legal steps (some hands may be over)."""
    env = rj.make(rules, episode="hand")
    state = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(7), batch))
    rng = np.random.default_rng(0)
    step = jax.jit(jax.vmap(env.step))
    for i in range(moves):
        mask = np.asarray(state.legal_action_mask)
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask], np.int32)
        state = step(state, jnp.asarray(actions), jax.random.split(jax.random.PRNGKey(i), batch))
    return env, state


def live(state: rj.State) -> np.ndarray:
    return ~np.asarray(state.terminated | state.truncated)


def twins(env: rj.Env, state: rj.State) -> rj.State:
    """For each state, a state its player to act cannot tell apart (hidden cards dealt anew)."""
    keys = jax.random.split(jax.random.PRNGKey(99), state.current_player.shape[0])
    return jax.vmap(lambda s, k: env.deal_world(s, s.current_player, k))(state, keys)


def searched(
    env: rj.Env, state: rj.State, config: SearchConfig = SMALL, key: int = 3, fresh: bool = False
) -> Any:
    """The search's output on the host; `fresh` compiles it anew (for a patched search)."""
    net, params = small_network(env)
    # a new function object: jit's trace cache keys on the function, not on the wrapper
    run = jax.jit(lambda *args: search(*args), static_argnums=(0, 1)) if fresh else SEARCH
    return jax.device_get(run(env, net, params, state, jax.random.PRNGKey(key), config))


def test_the_search_is_blind_to_the_cards_its_seat_cannot_see() -> None:
    env, state = positions("standard")
    other = twins(env, state)
    differs = np.asarray((other._x.hands != state._x.hands).any(axis=(1, 2)))
    assert differs[live(state)].mean() > 0.9  # the twins really hold other hidden cards
    a, b = searched(env, state), searched(env, other)
    for field in ("action", "policy", "q", "visits", "value"):
        assert np.asarray(getattr(a, field)).tobytes() == np.asarray(getattr(b, field)).tobytes()


def test_a_search_that_peeks_at_the_true_state_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same comparison, with the worlds replaced by the true state: the searches of
    states the seat cannot tell apart now differ, so the test above would fail."""
    env, state = positions("standard")
    other = twins(env, state)
    monkeypatch.setattr(rj.Env, "deal_world", lambda self, state, player, key: state)
    a, b = searched(env, state, fresh=True), searched(env, other, fresh=True)
    assert np.asarray(a.q).tobytes() != np.asarray(b.q).tobytes()


@pytest.mark.parametrize(
    ("rules", "config"),
    [("standard", NOISY), ("pagat,players=3", ONE), ("standard,players=4", SMALL)],
)
def test_the_search_plays_legal_moves_and_its_policy_is_a_distribution(
    rules: str, config: SearchConfig
) -> None:
    env, state = positions(rules)
    out = searched(env, state, config)
    mask = np.asarray(state.legal_action_mask)
    rows = np.arange(mask.shape[0])
    assert mask[rows, out.action].all()
    np.testing.assert_allclose(out.policy.sum(axis=1), 1.0, rtol=1e-5)
    assert (out.policy[~mask] == 0).all()
    assert (out.visits[~mask] == 0).all() and (out.q[out.visits == 0] == 0).all()
    # every legal candidate of the first round was visited; at most the budget in all
    legal_count = mask.sum(axis=1)
    visited = (out.visits > 0).sum(axis=1)
    assert (visited[live(state)] == np.minimum(legal_count, config.candidates)[live(state)]).all()
    assert (out.visits.sum(axis=1) <= config.simulations).all()
    again = searched(env, state, config)
    assert np.asarray(again.policy).tobytes() == np.asarray(out.policy).tobytes()


def test_one_candidate_without_noise_plays_the_prior_choice() -> None:
    env, state = positions("pagat,players=3")
    net, params = small_network(env)
    logits, _ = net.apply(params, state.observation)
    prior = np.asarray(jnp.argmax(masked_logits(logits, state.legal_action_mask), axis=1))
    out = searched(env, state, ONE)
    np.testing.assert_array_equal(out.action, prior)


def test_gumbel_noise_explores_and_a_bad_config_is_refused() -> None:
    env, state = positions("standard")
    noisy, quiet = searched(env, state, NOISY, key=1), searched(env, state, SMALL, key=1)
    assert (noisy.visits != quiet.visits).any()  # the same worlds: other candidates
    with pytest.raises(ValueError, match=r"SearchConfig\.worlds must be an int >= 1"):
        SearchConfig(worlds=0)
    with pytest.raises(ValueError, match=r"SearchConfig\.gumbel_scale must be a finite number"):
        SearchConfig(gumbel_scale=float("nan"))
    net, params = small_network(rj.make("pagat,players=3"))  # another table's network
    with pytest.raises(ValueError, match="use a policy made for these rules"):
        search(env, net, params, state, jax.random.PRNGKey(0))
