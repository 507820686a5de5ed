"""A fair search in JAX: Gumbel sequential halving at the root over worlds the seat cannot tell
from the real position, the card network as prior and value, the JAX engine as the model.

Danihelka et al. (ICLR 2022), "Policy improvement by planning with Gumbel", at the root, as
`agents.psearch` does it in Python, for a batch of decisions in one jitted call:

1. **Worlds.** `Env.deal_world` deals the cards the seat to act cannot see again, `worlds`
   times. The true state's hidden cards are never read: two states the seat cannot tell
   apart give the same search, bit for bit (tests/test_jax_search.py).
2. **Candidates.** The `candidates` legal actions with the largest g + logits, g Gumbel
   noise scaled by `gumbel_scale` (0: the top prior moves, a deterministic player).
3. **Sequential halving.** The `simulations` are split evenly between ⌈log₂ m⌉ rounds; each
   round values every candidate left in the next worlds (the same worlds for every
   candidate: a paired comparison) and keeps the better half by g + logits + σ(q̂).
4. **Choice and improved policy.** The survivor with the largest g + logits + σ(q̂); the
   improved policy is softmax(logits + σ(completed q)), the unvisited actions completed by
   the mixed value (mctx's ``qtransform_completed_by_mix_value``: q rescaled to [0, 1],
   σ = (c_visit + max visits) · c_scale · q).

A simulation values a candidate in a world: the candidate is played, then the policy plays
greedily (its most likely legal action, in every seat) until the searching seat is to act
again (``leaf="turn"``) or to the episode's end (``leaf="episode"``, a rollout), at most
`horizon` steps; the value is the seat's rewards on the way plus the value head on the seat's
own observation (0 once the episode is over). Because the
value is always the searching seat's own, and the other seats play the policy in the leaves,
the search is sound at three and four players as at two: no sign flips, no turn order to
model beyond the engine's.

The values are in the unit of the env's rewards: make the env with the episode the policy
was trained for (its value head's unit; the shipped models: ``episode="hand"``, the hand
score difference / 100).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.jax._state import State
from rummy500_env.jax.env import Env
from rummy500_env.jax.network import CardNetwork, Params, masked_logits

Array = jax.Array
LEAVES = ("turn", "episode")
"""How far a leaf plays (`SearchConfig.leaf`)."""


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """The search's budget and constants: a pytree whose budget (simulations, worlds,
    candidates, horizon) is static, so `jit` compiles once per budget, and whose constants
    (the noise's scale, c_visit, c_scale) are arrays under `jit` (changing them does not
    compile again)."""

    simulations: int = 32
    """Leaf evaluations a decision (the candidates' visits over every round)."""
    worlds: int = 8
    """Worlds dealt a decision; a candidate's visits go through them in turn."""
    candidates: int = 8
    """m: the actions considered at the root (fewer when fewer are legal)."""
    horizon: int = 16
    """At most this many steps of greedy play in a leaf before the value head."""
    leaf: str = "turn"
    """How far a leaf plays greedily: "turn", until the searching seat is to act again;
    "episode", to the episode's end (a rollout: in a hand episode, the hand's score)."""
    gumbel_scale: float = 0.0
    """The Gumbel noise's scale: 0 for a player (the top prior moves), 1 for a teacher's
    exploration (the paper's sampling)."""
    c_visit: float = 50.0
    c_scale: float = 0.1

    def __post_init__(self) -> None:
        for name in ("simulations", "worlds", "candidates", "horizon"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"SearchConfig.{name} must be an int >= 1, got {value!r}")
        if self.leaf not in LEAVES:
            raise ValueError(f"SearchConfig.leaf must be one of {LEAVES}, got {self.leaf!r}")
        for name in ("gumbel_scale", "c_visit", "c_scale"):
            value = getattr(self, name)
            if isinstance(value, jax.Array | np.ndarray):
                continue  # traced, or a batch's: checked when it was a number
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"SearchConfig.{name} must be a finite number >= 0, got {value!r}")

    def schedule(self) -> tuple[tuple[int, int], ...]:
        """Sequential halving's rounds as (candidates kept, visits each), the budget split
        evenly between the rounds (each candidate visited at least once a round)."""
        rounds = max(1, math.ceil(math.log2(self.candidates)))
        kept, out = self.candidates, []
        for _ in range(rounds):
            out.append((kept, max(1, self.simulations // (rounds * kept))))
            kept = max(1, (kept + 1) // 2)
        return tuple(out)


jax.tree_util.register_dataclass(
    SearchConfig,
    data_fields=["gumbel_scale", "c_visit", "c_scale"],
    meta_fields=["simulations", "worlds", "candidates", "horizon", "leaf"],
)


class SearchOutput(NamedTuple):
    """One decision's search (a leading batch axis for a batch)."""

    action: Array
    """The chosen action id (int32)."""
    policy: Array
    """float32 (num_actions,): the improved policy, softmax(logits + σ(completed q)), 0 where
    illegal: the teacher's target."""
    q: Array
    """float32 (num_actions,): each visited action's mean value, 0 elsewhere."""
    visits: Array
    """int32 (num_actions,): each action's simulations."""
    value: Array
    """The value head at the root (the seat's own observation)."""


def search(
    env: Env,
    network: CardNetwork,
    params: Params,
    state: State,
    key: Array,
    config: SearchConfig = SearchConfig(),
) -> SearchOutput:
    """Search the decision of the player to act in each state of a batch (a leading axis;
    one key for the batch); see the module docstring. Jit it with `env` and `network` static:
    ``jax.jit(search, static_argnums=(0, 1))``."""
    if state.current_player.ndim != 1:
        raise ValueError(
            "search takes a batch of states (a leading axis), got current_player of shape "
            f"{state.current_player.shape}: add one with tree_map(lambda a: a[None], state)"
        )
    if network.num_actions != env.num_actions or network.features_size != env.observation_shape[0]:
        raise ValueError(
            f"the network is for {network.num_actions} actions and {network.features_size} "
            f"features, the env has {env.num_actions} and {env.observation_shape[0]}: use a "
            "policy made for these rules"
        )
    keys = jax.random.split(key, state.current_player.shape[0])
    one = functools.partial(_search_one, env, network, config, params)
    out: SearchOutput = jax.vmap(one)(state, keys)
    return out


def _search_one(
    env: Env, network: CardNetwork, config: SearchConfig, params: Params, state: State, key: Array
) -> SearchOutput:
    seat = state.current_player
    legal = state.legal_action_mask
    k_gumbel, k_worlds, k_leaves = jax.random.split(key, 3)
    logits, root_value = network.apply(params, state.observation)
    logits = masked_logits(logits, legal)
    gumbel = config.gumbel_scale * jax.random.gumbel(k_gumbel, logits.shape)
    worlds = jax.vmap(lambda k: env.deal_world(state, seat, k))(
        jax.random.split(k_worlds, config.worlds)
    )
    schedule = np.array(config.schedule(), np.int32)  # (rounds, 2): kept, visits each
    m = int(schedule[0, 0])
    pairs = int((schedule[:, 0] * schedule[:, 1]).max())  # every round evaluates this many
    offsets = np.concatenate([[0], np.cumsum(schedule[:-1, 1])]).astype(np.int32)
    _, cands = jax.lax.top_k(jnp.where(legal, gumbel + logits, -jnp.inf), m)
    cand_legal = legal[cands]

    def one_round(carry: tuple[Array, Array, Array], r: Array) -> tuple[Any, None]:
        """Visit each survivor (the first `kept` of `alive`) in the round's next worlds, then
        order the survivors by g + logits + σ(q̂)."""
        value_sum, visits, alive = carry
        kept, each = jnp.asarray(schedule)[r, 0], jnp.asarray(schedule)[r, 1]
        j = jnp.arange(pairs)
        slot = alive[jnp.minimum(j // each, m - 1)]
        world_ids = (jnp.asarray(offsets)[r] + j % each) % config.worlds
        counted = (j < kept * each) & cand_legal[slot]  # padding pairs and candidates: nothing
        keys = jax.random.split(jax.random.fold_in(k_leaves, r), pairs)

        def visit(c: Array, w: Array, k: Array) -> Array:
            world = jax.tree_util.tree_map(lambda a: a[w], worlds)
            return _simulate(env, network, config, params, world, cands[c], seat, k)

        values = jax.vmap(visit)(slot, world_ids, keys)
        value_sum = value_sum.at[slot].add(jnp.where(counted, values, 0.0))
        visits = visits.at[slot].add(counted.astype(jnp.int32))
        sigma = _sigma(config, _q_of(value_sum, visits, cand_legal), visits)
        score = jnp.where(cand_legal, gumbel[cands] + logits[cands] + sigma, -jnp.inf)
        ranked = jnp.where(jnp.arange(m) < kept, score[alive], -jnp.inf)
        return (value_sum, visits, alive[jnp.argsort(-ranked, stable=True)]), None

    start = (jnp.zeros(m, jnp.float32), jnp.zeros(m, jnp.int32), jnp.arange(m))
    (value_sum, visits, alive), _ = jax.lax.scan(one_round, start, jnp.arange(len(schedule)))
    best = cands[alive[0]]
    # the improved policy over every action: visited ones by their q, the rest completed
    visits_all = jnp.zeros(env.num_actions, jnp.int32).at[cands].add(visits)
    sums_all = jnp.zeros(env.num_actions, jnp.float32).at[cands].add(value_sum)
    q = jnp.where(visits_all > 0, sums_all / jnp.maximum(visits_all, 1), 0.0)
    prior = jax.nn.softmax(logits)
    completed = jnp.where(visits_all > 0, q, _mixed_value(root_value, prior, q, visits_all))
    sigma_all = _sigma(config, _rescale(completed, legal), visits_all)
    policy = jax.nn.softmax(jnp.where(legal, logits + sigma_all, -jnp.inf))
    return SearchOutput(best.astype(jnp.int32), policy, q, visits_all, root_value)


def _q_of(value_sum: Array, visits: Array, legal: Array) -> Array:
    """The candidates' mean values rescaled to [0, 1] among the visited (0 unvisited)."""
    mean = jnp.where(visits > 0, value_sum / jnp.maximum(visits, 1), 0.0)
    return jnp.where(visits > 0, _rescale(mean, legal & (visits > 0)), 0.0)


def _rescale(q: Array, where: Array) -> Array:
    """q min-max rescaled to [0, 1] over `where` (mctx's ``_rescale_qvalues``)."""
    lo = jnp.min(jnp.where(where, q, jnp.inf))
    hi = jnp.max(jnp.where(where, q, -jnp.inf))
    lo, hi = jnp.where(jnp.isfinite(lo), lo, 0.0), jnp.where(jnp.isfinite(hi), hi, 0.0)
    return (q - lo) / jnp.maximum(hi - lo, 1e-8)


def _sigma(config: SearchConfig, q: Array, visits: Array) -> Array:
    """σ(q) = (c_visit + max visits) · c_scale · q (the paper's monotone transform)."""
    return (config.c_visit + visits.max()) * config.c_scale * q


def _mixed_value(root_value: Array, prior: Array, q: Array, visits: Array) -> Array:
    """mctx's ``_compute_mixed_value``: the value head mixed with the prior-weighted mean of
    the visited actions' values, the value that completes an unvisited action's q."""
    seen = visits > 0
    total = visits.sum()
    weight = jnp.where(seen, jnp.maximum(prior, np.finfo(np.float32).tiny), 0.0)
    weighted = (weight * q).sum() / jnp.maximum(weight.sum(), np.finfo(np.float32).tiny)
    return (root_value + total * weighted) / (total + 1)


def _simulate(
    env: Env,
    network: CardNetwork,
    config: SearchConfig,
    params: Params,
    world: State,
    action: Array,
    seat: Array,
    key: Array,
) -> Array:
    """The value of `action` in `world` for `seat`: played, then greedy play by the policy
    until `seat` is to act again (``leaf="turn"``) or the episode ends (``"episode"``), at
    most `horizon` steps, then the seat's rewards on the way plus the value head on its own
    observation where the episode goes on. One loop plays the
    candidate and the greedy steps alike (one copy of the step to compile)."""
    keys = jax.random.split(key, config.horizon + 1)

    def over(s: State) -> Array:
        return s.terminated | s.truncated

    def going(carry: tuple[State, Array, Array]) -> Array:
        s, _, i = carry
        others = (s.current_player != seat) | (config.leaf == "episode")
        return (i == 0) | ((i <= config.horizon) & ~over(s) & others)

    def play(carry: tuple[State, Array, Array]) -> tuple[State, Array, Array]:
        s, gained, i = carry
        logits, _ = network.apply(params, s.observation)
        greedy = jnp.argmax(masked_logits(logits, s.legal_action_mask)).astype(jnp.int32)
        s = env.step(s, jnp.where(i == 0, action, greedy), keys[i])
        return s, gained + s.rewards[seat], i + 1

    state, gained, _ = jax.lax.while_loop(going, play, (world, jnp.float32(0.0), jnp.int32(0)))
    _, value = network.apply(params, env.observe(state, seat))
    total: Array = gained + jnp.where(over(state), 0.0, value)
    return total
