"""The JAX bots (`rummy500_env.jax.bots`): `greedy_action` decides as `GreedyAgent` does.

Random legal play (mixed with the greedy bot's own moves, so hands go out and obligations,
empty stocks and near-empty hands come up) drives a batch of games through the JAX env; at
every position the jitted, vmapped `greedy_action` must choose the very id that
`GreedyAgent(rules).decide` chooses on the engine's position (`to_game`), for the seat to act
and its legal actions. The counts of what it chose (takes, digs worth it, melds, lay-offs,
discards) are checked so that no test passes on positions that never ask the hard questions.

`plan` is also compared with `heuristics.plan` on random tables with long runs and sets (the
ace below 2..Q and above J..K, 2..K runs, cards fitting two melds), and its scatter-free fits
(`held_fits`) with `_rules.table_fits`.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import rummy500_env.jax as rj  # noqa: E402
from rummy500_env.agents.greedy import GreedyAgent  # noqa: E402
from rummy500_env.agents.heuristics import plan as py_plan  # noqa: E402
from rummy500_env.engine.melds import Meld, layoff_end, make_run, make_set  # noqa: E402
from rummy500_env.jax import bots  # noqa: E402
from rummy500_env.jax._rules import Shape, table_fits  # noqa: E402
from rummy500_env.jax._state import (  # noqa: E402
    DRAW,
    MAX_MELDS,
    NUM_CARDS,
    PLAY,
    Array,
    GameState,
    RuleParams,
)
from rummy500_env.jax.env import init_core, step_core  # noqa: E402

QUICK = [
    "standard",
    "fives",
    "standard,discard_to_go_out=true",
    "standard,top_card_must_meld=true",
]
"""One shape (2 players, 13 cards): one compile of init, step and `greedy_action` serves
them all (the other rule fields are traced)."""
LONG_ONLY = [
    "standard,players=3",
    "fives,players=4,discard_to_go_out=true,top_card_must_meld=true",
    "standard,players=4,stock_out=pile_must_use",
]
"""Two more shapes, 10 to 20 s of compiling each: the slow run's (the quick ones play 4,096
decisions each in the quick test)."""


@functools.cache
def compiled(shape: Shape) -> tuple[Any, Any, Any]:
    """Jitted batched init, step and greedy_action for one shape (params traced)."""

    def init(params: RuleParams, keys: Array) -> Any:
        return jax.vmap(lambda k: init_core(shape, params, k))(keys)

    def step(params: RuleParams, state: Any, actions: Array, keys: Array) -> Any:
        return jax.vmap(lambda s, a, k: step_core(shape, params, s, a, k))(state, actions, keys)

    def greedy(params: RuleParams, x: GameState, mask: Array) -> Any:
        return jax.vmap(bots.greedy, in_axes=(None, None, 0, 0))(shape, params, x, mask)

    return jax.jit(init), jax.jit(step), jax.jit(greedy)


def kind_of(i: int, shape: Shape) -> str:
    """The kind of action id `i` (the ranges of `rl.actions`)."""
    p = shape.max_pile
    if i == 0:
        return "draw"
    if i == 1:
        return "take"
    if i <= p:
        return "dig"
    return ["decline", "meld", "layoff", "discard"][
        int(np.searchsorted([shape.ids.meld, shape.ids.layoff, shape.ids.discard], i, "right"))
    ]


def restart(core: Any, fresh: Any, ended: np.ndarray) -> Any:
    """`fresh`'s games where `ended`, `core`'s elsewhere."""
    return jax.tree_util.tree_map(
        lambda f, c: jnp.where(ended.reshape((-1,) + (1,) * (c.ndim - 1)), f, c), fresh, core
    )


def compare(text: str, decisions: int, batch: int = 16, seed: int = 0) -> Counter[str]:
    """Play `batch` games of `text` until `decisions` positions are compared; returns counts of
    what the bot chose and of the positions seen."""
    env = rj.make(text, episode="hand")
    rules, shape, params = env.rules, env.shape, env.rule_params
    init, step, greedy = compiled(shape)
    agent = GreedyAgent(rules)
    rng = np.random.default_rng(seed)
    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    core = init(params, jax.random.split(sub, batch))
    seen: Counter[str] = Counter()
    p = shape.max_pile
    while seen["decisions"] < decisions:
        ours = np.asarray(greedy(params, core._x, core.legal_action_mask))
        host = jax.device_get(core)
        actions = np.zeros(batch, np.int32)
        for b in range(batch):
            game = env.to_game(host, b)
            view = game.seat_view(game.current_player)
            legal = game.legal_actions()
            chosen = agent.decide(view, legal)
            theirs = agent.codec.encode(view, chosen)
            assert ours[b] == theirs, (text, game.to_dict(), str(chosen), int(ours[b]))
            seen["decisions"] += 1
            seen[kind_of(theirs, shape)] += 1
            mask = host.legal_action_mask[b]
            if game.phase == "draw" and mask[1 : 1 + p].any():
                seen["take declined" if theirs in (0, p + 1) else "take worth it"] += 1
                if mask[2 : 1 + p].any() and kind_of(theirs, shape) != "dig":
                    seen["dig declined"] += 1
            if game.phase == "play" and len(view.hand) <= 3:
                seen["near out"] += 1
            if game.must_play is not None:
                seen["owed"] += 1
            if not view.stock_size:
                seen["stock empty"] += 1
            legal_ids = np.flatnonzero(mask)
            actions[b] = theirs if rng.random() < 0.5 else rng.choice(legal_ids)
        key, sub, deal = jax.random.split(key, 3)
        core = step(params, core, jnp.asarray(actions), jax.random.split(sub, batch))
        ended = np.asarray(core.terminated | core.truncated)
        if ended.any():  # a new deal where the hand is over
            core = restart(core, init(params, jax.random.split(deal, batch)), ended)
            seen["hands"] += int(ended.sum())
    return seen


def check_counts(seen: Counter[str], decisions: int) -> None:
    """Enough of every kind of decision that a disagreement would have shown: takes and digs
    chosen (worth it) and declined (legal, not worth it), melds, lay-offs, discards, hands
    played to their end and hands down to their last cards."""
    assert seen["decisions"] >= decisions
    for kind in ("take", "dig", "take declined", "dig declined"):
        assert seen[kind] >= decisions // 40, (kind, seen)
    for kind in ("draw", "meld", "layoff", "discard", "near out"):
        assert seen[kind] >= decisions // 20, (kind, seen)
    assert seen["take"] + seen["dig"] == seen["take worth it"]
    assert seen["hands"] >= decisions // 500


@pytest.mark.parametrize("text", QUICK)
def test_greedy_matches_the_python_bot(text: str) -> None:
    check_counts(compare(text, decisions=4096, seed=len(text)), 4096)


@pytest.mark.slow
@pytest.mark.parametrize("text", LONG_ONLY)
def test_greedy_matches_the_python_bot_long(text: str) -> None:
    seen = compare(text, decisions=12_288, seed=100 + len(text))
    check_counts(seen, 12_288)
    assert seen["stock empty"] > 0 and seen["decline"] > 0  # more players empty the stock


# --- plan on random tables -----------------------------------------------------------------------


def random_table(rng: random.Random) -> tuple[list[Meld], list[int]]:
    """Random melds of one deck (long runs, 2..K, runs to the ace high, runs a card apart,
    sets of 3 and 4) and a hand from the cards left."""
    free = set(range(NUM_CARDS))
    melds: list[Meld] = []
    if rng.random() < 0.5:  # two runs of a suit with a gap of one card: it fits both
        suit, gap = rng.randrange(4), rng.randint(4, 11)
        for lo, hi in ((rng.randint(1, gap - 3), gap - 1), (gap + 1, rng.randint(gap + 3, 14))):
            cards = [suit * 13 + (o - 1) % 13 for o in range(lo, hi + 1)]
            if free.issuperset(cards):  # not the ace of a run from it twice
                melds.append(make_run(suit, lo, hi, (0,) * len(cards)))
                free -= set(cards)
    for _ in range(rng.randint(0, 8)):
        if rng.random() < 0.6:
            suit = rng.randrange(4)
            lo = rng.choice([1, 2, 2, 3, rng.randint(1, 12)])
            hi = rng.choice([lo + 2, 13, 14, rng.randint(lo + 2, min(lo + 12, 14))])
            hi = min(max(hi, lo + 2), lo + 12, 14)
            cards = [suit * 13 + (o - 1) % 13 for o in range(lo, hi + 1)]
            if free.issuperset(cards):
                melds.append(make_run(suit, lo, hi, (0,) * len(cards)))
                free -= set(cards)
        else:
            rank = rng.randrange(13)
            suits = [s for s in range(4) if s * 13 + rank in free]
            if len(suits) >= 3:
                chosen = rng.sample(suits, rng.choice([3, 3, len(suits)]))
                cards = [s * 13 + rank for s in chosen]
                melds.append(make_set(rank, tuple(cards), (0,) * len(cards)))
                free -= set(cards)
    hand = rng.sample(sorted(free), min(len(free), rng.randint(3, 30)))
    return melds, sorted(hand)


def table_arrays(melds: list[Meld]) -> dict[str, np.ndarray]:
    """The table fields of `GameState` for engine melds (as `from_game` writes them)."""
    meld_of = np.full(NUM_CARDS, -1, np.int32)
    run = np.zeros(MAX_MELDS, bool)
    suit, lo, hi = (np.zeros(MAX_MELDS, np.int32) for _ in range(3))
    for k, m in enumerate(melds):
        run[k], lo[k], hi[k] = m.is_run, m.lo, m.hi
        suit[k] = m.suit if m.is_run else 0
        meld_of[list(m.cards)] = k
    return {
        "meld_of": meld_of,
        "meld_count": np.array(len(melds), np.int32),
        "meld_run": run,
        "meld_suit": suit,
        "meld_lo": lo,
        "meld_hi": hi,
    }


def test_plan_matches_heuristics_on_random_tables() -> None:
    env = rj.make("standard")
    x0 = jax.device_get(jax.jit(env.init)(jax.random.PRNGKey(0))._x)
    rng = random.Random(5)
    cases = [random_table(rng) for _ in range(1500)]
    tables = [table_arrays(melds) for melds, _ in cases]
    hands = np.zeros((len(cases), NUM_CARDS), bool)
    for i, (_, hand) in enumerate(cases):
        hands[i, hand] = True
    table = {k: jnp.asarray(np.stack([t[k] for t in tables])) for k in tables[0]}

    @jax.jit  # type: ignore[untyped-decorator]  # jax is pytest.importorskip's Any
    def run(params: RuleParams, table: dict[str, Array], hands: Array) -> Any:
        def one(table: dict[str, Array], hand: Array) -> Any:
            x = x0.replace(**table)
            fits, target = bots.held_fits(x.meld_of, (x.meld_of >= 0) & x.meld_run[x.meld_of])
            return bots.plan(params, x, hand), fits, target, table_fits(x)

        return jax.vmap(one)(table, hands)

    ends = two_places = 0
    for text in ("standard", "fives"):
        params = rj.make(text).rule_params
        scoring = "fives" if text == "fives" else "pip"
        (value, used), fits, target, expected_fits = jax.device_get(run(params, table, hands))
        off_table = np.stack([t["meld_of"] for t in tables]) < 0
        np.testing.assert_array_equal(fits & off_table[:, None], expected_fits & off_table[:, None])
        for i, (melds, hand) in enumerate(cases):
            total, counts = py_plan(hand, melds, scoring)
            assert int(value[i]) == total, i
            assert np.flatnonzero(used[i]).tolist() == sorted(counts), i
            two_places += int(((fits[i] & off_table[i]).sum(axis=0) > 1).sum())
            for end, c in np.argwhere(fits[i] & off_table[i]).tolist():
                first = next(
                    k for k, m in enumerate(melds) if c in m.fits and layoff_end(m, c) == end
                )
                assert target[i, end, c] == first
                ends += 1
    assert ends > 3000 and two_places > 500, (ends, two_places)


# --- random_action; jit and vmap -----------------------------------------------------------------


def test_random_action_is_legal_and_uniform() -> None:
    mask = np.zeros(360, bool)
    legal = [0, 3, 17, 200, 359]
    mask[legal] = True
    keys = jax.random.split(jax.random.PRNGKey(3), 5000)
    picks = np.asarray(jax.jit(jax.vmap(bots.random_action, in_axes=(0, None)))(keys, mask))
    assert picks.dtype == np.int32
    counts = Counter(picks.tolist())
    assert set(counts) == set(legal)
    assert all(abs(n - 1000) < 150 for n in counts.values()), counts  # about 6 sigma
    one = bots.random_action(jax.random.PRNGKey(0), jnp.asarray(mask))
    assert one.shape == () and int(one) in legal


def test_greedy_jits_alone_and_in_a_batch() -> None:
    """One position jitted alone gives the batch's answer (vmap and jit both hold)."""
    env = rj.make("standard")
    init, step, greedy = compiled(env.shape)
    batch = 16  # the differential test's: its compiles serve
    core = init(env.rule_params, jax.random.split(jax.random.PRNGKey(1), batch))
    for i in range(6):  # a few moves in, so the pile has depth
        actions = greedy(env.rule_params, core._x, core.legal_action_mask)
        core = step(env.rule_params, core, actions, jax.random.split(jax.random.PRNGKey(i), batch))
    batched = np.asarray(greedy(env.rule_params, core._x, core.legal_action_mask))
    alone = jax.jit(bots.greedy_action, static_argnums=0)
    phases = np.asarray(core._x.phase).tolist()
    for b in (phases.index(DRAW), phases.index(PLAY)):
        a = alone(env, jax.tree_util.tree_map(lambda a, b=b: a[b], core))
        assert a.shape == () and a.dtype == jnp.int32 and int(a) == batched[b]
