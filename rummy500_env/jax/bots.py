"""Opponents for the JAX engine: `random_action`, and `greedy_action`, `GreedyAgent` as arrays.

A training loop that collects thousands of games in ``lax.scan`` needs its opponents inside
the compiled program, so both bots are pure functions of a state (`greedy_action`) or a legal
mask (`random_action`) that ``jax.jit`` and ``jax.vmap``.

`greedy_action` makes the decisions of `rummy500_env.agents.greedy.GreedyAgent`, decision for
decision (tests/test_jax_bots.py plays both on the same positions), for every rule set the JAX
engine plays: one deck, no jokers and no calls, so GreedyAgent's joker and call branches never
apply. It reads only what the seat to act knows, as the engine's `SeatView` does: its own
hand, the pile, the table and the legal mask. Its parts mirror `agents.heuristics`:

- `plan`, the greedy meld-then-lay-off loop of `heuristics.plan`, as two ``while_loop``s
  over a copy of the table that the melds it plans join, so that later cards lay off on them;
- the draw: each legal take and dig planned (a ``vmap``) and valued as
  `GreedyAgent.pickup_value` values it, the stock or decline otherwise;
- the play: the legal meld worth most, else the lay-off worth most, else the discard.

Ties are broken as the Python bot breaks them: its legal actions sorted by id and the first
maximum kept (`Bot.ordered` and ``max``); ``max(options, key=(value, t))`` in the plan's
melds, so the highest template of equal value; ``(face[c], c, value)`` in its lay-offs, then
the lowest meld index (`heuristics.best_layoff` keeps the first of equal keys).

Values are lookup tables built at import by the engine's own functions: `hand_values` (via
`heuristics.face_values`), `heuristics.template_values` (A-2-3 scores its ace low) and
`heuristics.laid_value` per card and end (an ace laid below a run's 2 scores low, above its
king high). Where a card fits is `_rules.table_fits` read for the cards off the table, from
the card next to each, as `_rules._layoff` finds its meld (`held_fits`: slices, no scatter,
since the plan asks every round; tests/test_jax_bots.py checks it against `table_fits`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.agents.heuristics import face_values, laid_value, template_values
from rummy500_env.engine.melds import MELDS_WITH, Meld, make_run, make_set
from rummy500_env.jax._rules import (
    CARDS,
    RUN_HIGH,
    RUN_LOW,
    SET,
    TEMPLATE_RUN,
    TEMPLATES,
    Shape,
    pile_places,
)
from rummy500_env.jax._state import (
    DRAW,
    MAX_MELDS,
    NUM_CARDS,
    Array,
    GameState,
    RuleParams,
    State,
)
from rummy500_env.jax.env import Env

__all__ = ["Planned", "greedy", "greedy_action", "held_fits", "plan", "random_action"]

SCORINGS = ("pip", "fives")
"""Row order of the value tables: `RuleParams.fives` picks the row."""
DEPTHS = 8
"""Pile takes planned at once (`_draw_choice`): random play has under two legal a turn."""
_MELD_SLOTS = 32
"""The room a meld index takes in a lay-off's key (more than `MAX_MELDS`)."""
assert _MELD_SLOTS > MAX_MELDS


# --- tables (numpy, from the engine's own functions) ---------------------------------------------


def _laid_values(scoring: str) -> np.ndarray:
    """int32 (3, 52): what each card scores laid off at each end (`SET`, `RUN_LOW`,
    `RUN_HIGH`), `heuristics.laid_value` on a meld that takes it there; its face value where
    none can (a king below a run)."""
    face = face_values(scoring)
    out = np.array([face[:NUM_CARDS]] * 3, dtype=np.int32)
    for c in range(NUM_CARDS):
        suit, rank = divmod(c, 13)
        o = rank + 1  # the card's ordinal, the ace low
        others = tuple(s * 13 + rank for s in range(4) if s != suit)
        melds: dict[int, Meld] = {SET: make_set(rank, others, (0, 0, 0))}
        if o + 3 <= 14:  # the run just above it
            melds[RUN_LOW] = make_run(suit, o + 1, o + 3, (0, 0, 0))
        high = 14 if rank == 0 else o  # the ace goes above a king
        if high - 3 >= 1:  # the run just below it
            melds[RUN_HIGH] = make_run(suit, high - 3, high - 1, (0, 0, 0))
        for end, m in melds.items():
            out[end, c] = laid_value(m, c, scoring)
    return out


FACE = np.array([face_values(s)[:NUM_CARDS] for s in SCORINGS], dtype=np.int32)
"""(2, 52): what each card costs left in hand."""
TEMPLATE_VALUE = np.array([template_values(s) for s in SCORINGS], dtype=np.int32)
"""(2, 100): the table value of each three-card template."""
LAID_VALUE = np.stack([_laid_values(s) for s in SCORINGS])
"""(2, 3, 52): what a card laid off at each end scores."""
TEMPLATE_CARDS = np.zeros((len(TEMPLATES), NUM_CARDS), dtype=bool)
TEMPLATE_CARDS[np.arange(len(TEMPLATES))[:, None], TEMPLATES] = True
"""(100, 52): the cards of each template."""
TEMPLATES_OF_CARD = np.array(
    [[*MELDS_WITH[c], *[len(TEMPLATES)] * (6 - len(MELDS_WITH[c]))] for c in range(NUM_CARDS)],
    dtype=np.int32,
)
"""(52, 6): the templates that hold each card (`melds.MELDS_WITH`), padded with 100, a
template of no cards (`partial`)."""


def _row(params: RuleParams) -> Array:
    return params.fives.astype(jnp.int32)


def _by_suit(cards: Array) -> Array:
    """A card array (52,) as the (4 suits, 13 ranks) grid of the ids ``suit * 13 + rank``."""
    return cards.reshape(4, 13)


# --- the plan (heuristics.plan) ------------------------------------------------------------------


class Planned(NamedTuple):
    """What `plan` returns."""

    value: Array
    """int32: the points the plan puts on the table (each card valued as it goes down)."""
    used: Array
    """bool (52,): the cards it puts down."""


class _Table(NamedTuple):
    """`plan`'s loop state: the cards left, the table the plan grows (each card's meld and
    whether that meld is a run), the points so far, whether the last round put one down."""

    left: Array
    meld_of: Array
    in_run: Array
    meld_count: Array
    total: Array
    going: Array


def held_templates(left: Array) -> Array:
    """bool (100,): the three-card templates all of whose cards are in `left`
    (`melds.meld_templates_in`), from slices of the (suit, rank) grid."""
    h = _by_suit(left)
    count = h.sum(axis=0, dtype=jnp.int32)  # (13,): suits held of each rank
    sets = (count[:, None] - h[::-1].T.astype(jnp.int32)) == 3  # set 4 r + j leaves out 3 - j
    g = jnp.concatenate([h, h[:, :1]], axis=1)  # ordinals 1..14: the ace at both ends
    runs = g[:, :12] & g[:, 1:13] & g[:, 2:14]  # (4, 12): the run from ordinal i + 1
    return jnp.concatenate([sets.reshape(-1), runs.reshape(-1)])


def held_fits(meld_of: Array, in_run: Array) -> tuple[Array, Array]:
    """Where each card off the table can be laid off now, and on which meld: bool and int32
    (3, 52) by `SET`, `RUN_LOW`, `RUN_HIGH`, from each card's meld (-1: none) and whether
    that meld is a run.

    `_rules.table_fits` for the cards off the table, read from the card next to each one as
    `_rules._layoff` finds the meld (one deck): a card fits the set of its rank if one lies
    on the table (a set without it has room); below a run that holds the card above it (its
    low end, or the card would be in the run too), but the ace below 2..K goes high
    (`melds.layoff_end`); above a run that holds the card below it (the ace above a king;
    nothing above an ace high)."""
    m, r = _by_suit(meld_of), _by_suit(in_run)
    in_set = (m >= 0) & ~r
    set_meld = jnp.where(in_set, m, -1).max(axis=0)  # one deck: one set of a rank at most
    m_above, r_above = jnp.roll(m, -1, axis=1), jnp.roll(r, -1, axis=1)  # a king's: the ace
    m_below, r_below = jnp.roll(m, 1, axis=1), jnp.roll(r, 1, axis=1)  # an ace's: the king
    rank = jnp.arange(13)
    two_to_king = (rank == 0) & (m[:, 12:13] == m_above)
    fits = jnp.stack(
        [
            jnp.broadcast_to(in_set.any(axis=0), (4, 13)),
            r_above & (rank != 12) & ~two_to_king,
            r_below & (rank != 1),
        ]
    )
    target = jnp.stack([jnp.broadcast_to(set_meld, (4, 13)), m_above, m_below])
    return fits.reshape(3, NUM_CARDS), target.reshape(3, NUM_CARDS)


def plan(params: RuleParams, x: GameState, hand: Array) -> Planned:
    """`heuristics.plan` of the cards `hand` (bool (52,)) on the table of `x`: while the
    hand holds a three-card meld, the most valuable goes down (ties: the highest template)
    and joins the table; then, while a held card fits, the lay-off of the hand's most
    valuable card (ties: the highest card, then where it scores most, then the lowest meld),
    so later cards lay off on the melds and lay-offs it planned.

    Two ``while_loop``s, a meld or a card a round: the melds, then the lay-offs (the hand
    only shrinks, so once it holds no meld it never will), each round asking only its own
    question."""
    row = _row(params)
    template_value = jnp.asarray(TEMPLATE_VALUE)[row]
    laid = jnp.asarray(LAID_VALUE)[row]
    meld_key = template_value * 128 + jnp.arange(len(TEMPLATES))  # (value, t)
    face_card = jnp.asarray(FACE)[row] * 64 + jnp.asarray(CARDS)
    card_key = ((face_card[None, :] * 16 + laid) * _MELD_SLOTS).reshape(-1)  # (face, c, value)
    laid = laid.reshape(-1)  # end * 52 + card, as the keys

    def meld(s: _Table) -> _Table:
        """The most valuable three-card meld in hand goes down as the next meld."""
        held = held_templates(s.left)
        t = jnp.argmax(jnp.where(held, meld_key, -1))
        going = held.any()
        cards = jnp.asarray(TEMPLATE_CARDS)[t] & going
        return _Table(
            left=s.left & ~cards,
            meld_of=jnp.where(cards, s.meld_count, s.meld_of),
            in_run=jnp.where(cards, jnp.asarray(TEMPLATE_RUN)[t], s.in_run),
            meld_count=s.meld_count + going,
            total=s.total + jnp.where(going, template_value[t], 0),
            going=going,
        )

    def lay_off(s: _Table) -> _Table:
        """The lay-off of the most valuable held card that fits (`heuristics.best_layoff`)."""
        fits, target = held_fits(s.meld_of, s.in_run)
        fits = (fits & s.left[None, :]).reshape(-1)
        target = target.reshape(-1)
        best = jnp.argmax(jnp.where(fits, card_key + (_MELD_SLOTS - 1 - target), -1))
        end, c = jnp.divmod(best, NUM_CARDS)
        going = fits.any()
        card = (jnp.asarray(CARDS) == c) & going
        return _Table(
            left=s.left & ~card,
            meld_of=jnp.where(card, target[best], s.meld_of),
            in_run=jnp.where(card, end != SET, s.in_run),
            meld_count=s.meld_count,
            total=s.total + jnp.where(going, laid[best], 0),
            going=going,
        )

    start = _Table(
        left=hand,
        meld_of=x.meld_of,
        in_run=(x.meld_of >= 0) & x.meld_run[jnp.clip(x.meld_of, 0)],
        meld_count=x.meld_count,
        total=jnp.int32(0),
        going=jnp.bool_(True),
    )
    melded = jax.lax.while_loop(lambda s: s.going, meld, start)
    end = jax.lax.while_loop(lambda s: s.going, lay_off, melded._replace(going=jnp.bool_(True)))
    return Planned(end.total, hand & ~end.left)


# --- the decisions (GreedyAgent) -----------------------------------------------------------------


def _first_max(key: Array, ok: Array) -> Array:
    """The first index of the largest `key` where `ok`: ``max`` over id-ordered actions."""
    return jnp.argmax(jnp.where(ok, key, np.iinfo(np.int32).min)).astype(jnp.int32)


def partial(hand: Array) -> Array:
    """bool (52,): the held cards in a partial meld (`heuristics.partial_cards`): a
    three-card template holds the card and another held card."""
    held = hand[jnp.asarray(TEMPLATES)].sum(axis=1, dtype=jnp.int32)
    held = jnp.concatenate([held, jnp.zeros(1, jnp.int32)])  # template 100 holds none
    return hand & (held[jnp.asarray(TEMPLATES_OF_CARD)] >= 2).any(axis=1)


def _draw_choice(shape: Shape, params: RuleParams, x: GameState, mask: Array) -> Array:
    """`GreedyAgent.choose_draw`: the pile take worth most if it is worth more than 0
    (`pickup_value`; ties: the shallowest), else the stock, else decline.

    Only the legal takes are planned, `DEPTHS` at a time beside the hand's own plan (a
    ``while_loop`` over them in depth order, each batch a ``vmap``): there are few, while the
    pile has up to `Shape.max_pile` depths."""
    i = shape.ids
    big_p = shape.max_pile
    hand = x.hands[x.turn]
    face = jnp.asarray(FACE)[_row(params)]
    places = pile_places(x)
    top = jnp.asarray(CARDS) == x.pile[jnp.clip(x.pile_size - 1, 0, NUM_CARDS - 1)]
    k = min(DEPTHS, big_p)
    legal = mask[i.pile : i.pile + big_p] & (x.phase == DRAW)  # an ended state's is all True
    count = legal.sum(dtype=jnp.int32)
    order = jnp.argsort(~legal, stable=True).astype(jnp.int32)  # the legal depths first
    order = jnp.concatenate([order, jnp.zeros(-big_p % k, jnp.int32)])

    def net(planned: Planned, base: Array, taken: Array, depth: Array) -> Array:
        """`GreedyAgent.pickup_value`: a top card only if the plan uses it and gains; a dig
        if what the plan gains exceeds the value of the taken cards it leaves in hand."""
        value, used = planned
        gain = value - base
        take = jnp.where((used & top).any() & (gain > 0), gain, 0)
        dig = gain - jnp.where(taken & ~used, face, 0).sum(dtype=jnp.int32)
        return jnp.where(depth == 0, take, dig)

    def more(carry: tuple[Array, Array, Array]) -> Array:
        return carry[0] * k < count

    def batch(carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        r, best, best_net = carry
        depths = jax.lax.dynamic_slice(order, (r * k,), (k,))
        taken = (places[None, :] >= (x.pile_size - 1 - depths)[:, None]) & (places >= 0)
        hands = jnp.concatenate([hand[None, :], hand | taken])  # the hand's own plan first
        planned = jax.vmap(lambda h: plan(params, x, h))(hands)
        tail = Planned(planned.value[1:], planned.used[1:])
        nets = jax.vmap(net, in_axes=(0, None, 0, 0))(tail, planned.value[0], taken, depths)
        nets = jnp.where(r * k + jnp.arange(k) < count, nets, 0)
        j = jnp.argmax(nets)  # the first of the largest: the shallowest
        better = nets[j] > best_net  # earlier batches were shallower
        return r + 1, jnp.where(better, depths[j], best), jnp.where(better, nets[j], best_net)

    start = (jnp.int32(0), jnp.int32(-1), jnp.int32(0))  # only a net above 0 is taken
    _, best, _ = jax.lax.while_loop(more, batch, start)
    fallback = jnp.where(mask[0], 0, jnp.where(mask[i.decline], i.decline, jnp.argmax(mask)))
    return jnp.where(best >= 0, i.pile + best, fallback).astype(jnp.int32)


def _play_choice(shape: Shape, params: RuleParams, x: GameState, mask: Array) -> Array:
    """`GreedyAgent.choose_play`: the meld worth most, else the lay-off worth most, else the
    discard of highest value (ties: the highest card) among those in no partial meld, or
    among all if each is in one."""
    i = shape.ids
    row = _row(params)
    melds = mask[i.meld : i.layoff]
    layoffs = mask[i.layoff : i.discard]
    discards = mask[i.discard : i.discard + NUM_CARDS]
    meld = i.meld + _first_max(jnp.asarray(TEMPLATE_VALUE)[row], melds)
    laid = jnp.asarray(LAID_VALUE)[row].T.reshape(-1)  # by id: 3 c + end
    layoff = i.layoff + _first_max(laid, layoffs)
    loose = discards & ~partial(x.hands[x.turn])
    loose = jnp.where(loose.any(), loose, discards)
    discard = i.discard + _first_max(jnp.asarray(FACE)[row] * 64 + jnp.asarray(CARDS), loose)
    choice = jnp.where(melds.any(), meld, jnp.where(layoffs.any(), layoff, discard))
    return choice.astype(jnp.int32)


def greedy_action(env: Env, state: State) -> Array:
    """GreedyAgent's action id (int32 scalar) for the player to act in `state`, one of
    `env`'s (``jax.vmap(lambda s: greedy_action(env, s))`` for a batch)."""
    return greedy(env.shape, env.rule_params, state._x, state.legal_action_mask)


def greedy(shape: Shape, params: RuleParams, x: GameState, mask: Array) -> Array:
    """`greedy_action` on the core's arrays: the rule parameters traced, so one compile
    serves every rules configuration of one shape."""
    draw = _draw_choice(shape, params, x, mask)
    return jnp.where(x.phase == DRAW, draw, _play_choice(shape, params, x, mask))


def random_action(key: Array, mask: Array) -> Array:
    """A uniformly random legal action id (int32 scalar) from a bool mask of num_actions."""
    noise = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, noise, -1.0)).astype(jnp.int32)
