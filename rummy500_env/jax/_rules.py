"""The rules of docs/rules.md §1–4 (one deck, no jokers, no calls) as pure array functions.

The same rules as the engine's `Game`, written over `GameState`: each predicate of the engine
appears once here, vectorised (every pile depth, template, card and meld at once), and the
kind of an action picks its branch with `lax.switch`. Nothing here loops in Python over data:
every function jit-compiles and vmaps. Comments name the engine method each function mirrors.

`Shape` is what fixes the arrays' shapes (static under `jit`); `RuleParams` holds the other rule
fields as traced scalars.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.engine.melds import FIVES_HAND, MELD_TEMPLATES, PIP_HAND, RUN_PARTNERS
from rummy500_env.engine.rules import Rules
from rummy500_env.jax._state import (
    DRAW,
    GAME_OVER,
    HAND_OVER,
    MAX_MELDS,
    NONE,
    NUM_CARDS,
    PLAY,
    Array,
    GameState,
    RuleParams,
)
from rummy500_env.rl.actions import ActionCodec

SET, RUN_LOW, RUN_HIGH = 0, 1, 2
"""Where a lay-off lands (`melds.layoff_end`)."""


class Ids(NamedTuple):
    """The base of each id range and the count of ids (`rl.actions.ActionCodec`, no jokers,
    no calls)."""

    pile: int
    decline: int
    meld: int
    layoff: int
    discard: int
    size: int


@functools.cache
def _ids(players: int) -> Ids:
    codec = ActionCodec(Rules(players=players))
    return Ids(codec.PILE, codec.DECLINE, codec.MELD, codec.LAYOFF, codec.DISCARD, codec.size)


class Shape(NamedTuple):
    """The static part of a configuration: players and cards dealt to each."""

    players: int
    hand_size: int

    @property
    def max_pile(self) -> int:
        """P of the action layout (`ActionCodec.max_pile`): the deepest pile."""
        return NUM_CARDS - self.players

    @property
    def ids(self) -> Ids:
        """The action layout (the action ids depend only on the players here)."""
        return _ids(self.players)

    @property
    def num_actions(self) -> int:
        return self.ids.size


# --- tables (numpy, from the engine's own tables) ------------------------------------------------

CARDS = np.arange(NUM_CARDS, dtype=np.int32)
RANK = CARDS % 13
TEMPLATES = np.array(MELD_TEMPLATES, dtype=np.int32)
"""(templates, 3): every three-card meld in table order, in the action codec's order."""
TEMPLATE_RUN = RANK[TEMPLATES[:, 0]] != RANK[TEMPLATES[:, 1]]
"""bool (templates,): the template is a run (else a set)."""
TEMPLATE_SUIT = np.where(TEMPLATE_RUN, TEMPLATES[:, 0] // 13, 0).astype(np.int32)
"""A run template's suit (0 for a set, as `GameState.meld_suit`)."""
TEMPLATE_LO = np.where(TEMPLATE_RUN, RANK[TEMPLATES[:, 0]] + 1, RANK[TEMPLATES[:, 0]])
TEMPLATE_LO = TEMPLATE_LO.astype(np.int32)
"""A run template's low ordinal (its first card, ace low 1), a set's rank (`meld_lo`)."""
TEMPLATE_HI = np.where(TEMPLATE_RUN, TEMPLATE_LO + 2, TEMPLATE_LO).astype(np.int32)
"""A run template's high ordinal, a set's rank (`meld_hi`)."""
RANK_MATES = np.array(
    [[s * 13 + c % 13 for s in range(4) if s * 13 + c % 13 != c] for c in range(NUM_CARDS)],
    dtype=np.int32,
)
"""(52, 3): the other cards of each card's rank."""


def _run_pairs() -> np.ndarray:
    """(52, 3, 2): the pairs of cards that make a three-card run with each card
    (`melds.RUN_PARTNERS`), padded with card 52, which no hand holds."""
    out = np.full((NUM_CARDS, 3, 2), NUM_CARDS, dtype=np.int32)
    for c in range(NUM_CARDS):
        for k, pair in enumerate(RUN_PARTNERS[c]):
            out[c, k] = [b for b in range(NUM_CARDS) if pair >> b & 1]
    return out


RUN_PAIRS = _run_pairs()
PIP_VALUES = np.array([PIP_HAND[r] for r in RANK], dtype=np.int32)
FIVES_VALUES = np.array([FIVES_HAND[r] for r in RANK], dtype=np.int32)


def card_values(params: RuleParams) -> Array:
    """Each card's value in hand, and on the table unless it is an ace low in a run."""
    return jnp.where(params.fives, FIVES_VALUES, PIP_VALUES)


# --- reading the position ------------------------------------------------------------------------


def counts(x: GameState) -> Array:
    """Cards in each hand (`Game.count`)."""
    return x.hands.sum(axis=1, dtype=jnp.int32)


def pile_places(x: GameState) -> Array:
    """int32 (52,): each card's place in the pile from the bottom (0), or -1."""
    places = jnp.arange(NUM_CARDS, dtype=jnp.int32)
    cards = jnp.where(places < x.pile_size, x.pile, NUM_CARDS)
    return jnp.full(NUM_CARDS + 1, NONE, jnp.int32).at[cards].set(places)[:NUM_CARDS]


def table_fits(x: GameState) -> Array:
    """Where each card can be laid off (`Game._table_fits`, `melds.layoff_end`): bool (3, 52)
    by `SET`, `RUN_LOW`, `RUN_HIGH` (one deck: at most one meld takes a card at one place;
    `_layoff` finds it)."""
    i = jnp.arange(MAX_MELDS)
    valid = i < x.meld_count
    run, lo, hi, suit = x.meld_run, x.meld_lo, x.meld_hi, x.meld_suit
    # a set: its rank is lo; each suit's card of that rank fits unless it sits in this meld
    set_cards = jnp.clip(jnp.arange(4)[None, :] * 13 + lo[:, None], 0, NUM_CARDS - 1)  # (17, 4)
    present = x.meld_of[set_cards] == i[:, None]
    open_set = valid & ~run & (present.sum(axis=1) < 4)
    short = valid & run & (hi - lo + 1 < 13)  # a run of all thirteen ranks takes nothing
    # below the low end: ordinal lo - 1 (rank lo - 2); the ace on 2..K goes high (layoff_end)
    low_ok = short & (lo > 1) & ~((lo == 2) & (hi == 13))
    high_ok = short & (hi < 14)  # above the high end: ordinal hi + 1, the ace after the king
    # every (where, card) a meld takes, card 52 where it takes nothing, scattered at once
    cards = jnp.concatenate(
        [
            jnp.where(open_set[:, None] & ~present, set_cards, NUM_CARDS),
            jnp.where(low_ok, suit * 13 + lo - 2, NUM_CARDS)[:, None],
            jnp.where(high_ok, suit * 13 + hi % 13, NUM_CARDS)[:, None],
        ],
        axis=1,
    )  # (17, 6)
    where = jnp.array([SET] * 4 + [RUN_LOW, RUN_HIGH])[None, :].repeat(MAX_MELDS, axis=0)
    fits = jnp.zeros((3, NUM_CARDS + 1), bool).at[where, cards].set(True)
    return fits[:, :NUM_CARDS]


def table_points(x: GameState, params: RuleParams, players: int) -> Array:
    """int32 (players,): the value of the cards each player put on the table, read from the
    melds' shapes now (`scoring.table_points`: an ace low in a run that is not all thirteen
    ranks scores 1, or 5 under fives)."""
    on = x.meld_of >= 0
    m = jnp.clip(x.meld_of, 0, MAX_MELDS - 1)
    lo, hi = x.meld_lo[m], x.meld_hi[m]
    low_ace = on & (RANK == 0) & x.meld_run[m] & (lo == 1) & (hi - lo + 1 < 13)
    value = jnp.where(low_ace, jnp.where(params.fives, 5, 1), card_values(params))
    value = jnp.where(on, value, 0)
    mine = x.owner[None, :] == jnp.arange(players)[:, None]
    return jnp.where(mine, value[None, :], 0).sum(axis=1, dtype=jnp.int32)


def hand_scores(x: GameState, params: RuleParams, players: int) -> Array:
    """int32 (players,): table points minus the value of the hand (`Game.hand_scores`)."""
    in_hand = jnp.where(x.hands, card_values(params)[None, :], 0).sum(axis=1, dtype=jnp.int32)
    return table_points(x, params, players) - in_hand


def top_take_obligated(x: GameState, params: RuleParams) -> Array:
    """Taking the top card carries the dig obligation now (`Game.top_take_obligated`)."""
    return params.top_card_must_meld | ((x.stock_size == 0) & (params.stock_out == 2))


def _leaves_a_card(params: RuleParams, size: Array, played: int) -> Array:
    """`Game._leaves_a_card`: with discard_to_go_out a card must stay for the discard."""
    return ~params.discard_to_go_out | (size > played)


# --- legal actions -------------------------------------------------------------------------------


def legal_mask(shape: Shape, params: RuleParams, x: GameState) -> Array:
    """bool (num_actions,): the legal ids now, exactly `ActionCodec.legal_ids` of the engine
    (`Game.draw_options`, `Game.play_options`); all False once the hand is over."""
    big_p = shape.max_pile
    i = shape.ids
    p = x.turn
    hand = x.hands[p]
    count = hand.sum(dtype=jnp.int32)
    fits = table_fits(x)
    fit_any = fits.any(axis=0)

    # The draw (`Game.draw_options`, `_pile_takes`): taking the pile down to a card puts it
    # and every card above it into the hand, and that card must then be able to go down first
    # (§1 dig, §3); the top card only when the take carries the obligation. Worked out for
    # every pile card at once: a card of the meld it would start is held, or lies above it.
    places = pile_places(x)
    above = jnp.concatenate([places, jnp.array([NONE], jnp.int32)])
    held = jnp.concatenate([hand, jnp.zeros(1, bool)])  # card 52: the tables' padding

    def at_hand(cards: Array) -> Array:  # held after taking down to each pile card
        shape = (NUM_CARDS,) + (1,) * (cards.ndim - 1)
        return held[cards] | (above[cards] > places.reshape(shape))

    starts = (at_hand(jnp.asarray(RANK_MATES)).sum(axis=1) >= 2) | at_hand(
        jnp.asarray(RUN_PAIRS)
    ).all(axis=2).any(axis=1)
    size = count + x.pile_size - places  # the hand after the take
    can = (starts & _leaves_a_card(params, size, 3)) | (fit_any & _leaves_a_card(params, size, 1))
    depth = jnp.arange(big_p, dtype=jnp.int32)
    place = x.pile_size - 1 - depth
    in_pile = place >= 0
    can_here = can[jnp.clip(x.pile[jnp.clip(place, 0, NUM_CARDS - 1)], 0, NUM_CARDS - 1)]
    take = in_pile[0] & (~top_take_obligated(x, params) | can_here[0])
    pile_ids = in_pile & jnp.where(depth == 0, take, can_here)
    draw = jnp.concatenate(
        [
            (x.stock_size > 0)[None],
            pile_ids,
            (x.stock_size == 0)[None],
            jnp.zeros(shape.num_actions - i.meld, bool),
        ]
    )

    # The play (`Game.play_options`): melds, lay-offs, discards, under an open obligation only
    # those that put the owed card down, and no discard.
    owed_all = x.must_play == NONE
    melds = (
        hand[TEMPLATES].all(axis=1)
        & _leaves_a_card(params, count, 3)
        & (owed_all | (TEMPLATES == x.must_play).any(axis=1))
    )
    layoffs = (
        hand[:, None]
        & fits.T
        & (owed_all | (CARDS == x.must_play))[:, None]
        & _leaves_a_card(params, count, 1)
    )
    # the card taken from the top may not be discarded, unless it is the last card (§1, §3)
    discards = owed_all & hand & ~((CARDS == x.taken_top) & (count != 1))
    play = jnp.concatenate([jnp.zeros(i.meld, bool), melds, layoffs.reshape(-1), discards])
    return jnp.where(x.phase == DRAW, draw, jnp.where(x.phase == PLAY, play, False))


# --- applying an action --------------------------------------------------------------------------


def _remove(x: GameState, p: Array, cards: Array) -> GameState:
    """Cards leave player p's hand, in view of the table: no longer known (`Game._remove`)."""
    return x.replace(hands=x.hands.at[p, cards].set(False), known=x.known.at[p, cards].set(False))


def _draw(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_draw`: the top of the stock joins the hand."""
    c = x.stock[jnp.clip(x.stock_size - 1, 0, NUM_CARDS - 1)]
    x = x.replace(
        hands=x.hands.at[x.turn, c].set(True), stock_size=x.stock_size - 1, phase=jnp.int32(PLAY)
    )
    return x, jnp.bool_(False)


def _take(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_take` and `_apply_dig`: the pile down to depth d joins the hand in view of
    everyone; the top card may then not be discarded (and is owed under the obligation), a dug
    card is owed to the table."""
    d = a - shape.ids.pile
    obligated = top_take_obligated(x, params)
    place = x.pile_size - 1 - d
    card = x.pile[jnp.clip(place, 0, NUM_CARDS - 1)]
    places = pile_places(x)
    taken = (places >= place) & (places >= 0)
    p = x.turn
    top = d == 0
    x = x.replace(
        hands=x.hands.at[p].set(x.hands[p] | taken),
        known=x.known.at[p].set(x.known[p] | taken),
        pile_size=place,
        taken_top=jnp.where(top, card, x.taken_top),
        must_play=jnp.where(~top | obligated, card, x.must_play),
        phase=jnp.int32(PLAY),
    )
    return x, jnp.bool_(False)


def _decline(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_decline`: the stock is empty and the player takes nothing (§1)."""
    return x, jnp.bool_(True)


def _meld(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_meld`: a three-card meld goes down as the next meld on the table."""
    t = a - shape.ids.meld
    cards = jnp.asarray(TEMPLATES)[t]
    p, k = x.turn, x.meld_count
    x = _remove(x, p, cards)
    x = x.replace(
        meld_of=x.meld_of.at[cards].set(k),
        owner=x.owner.at[cards].set(p),
        slot=x.slot.at[cards].set(jnp.arange(3, dtype=jnp.int32)),
        meld_count=k + 1,
        meld_run=x.meld_run.at[k].set(jnp.asarray(TEMPLATE_RUN)[t]),
        meld_suit=x.meld_suit.at[k].set(jnp.asarray(TEMPLATE_SUIT)[t]),
        meld_lo=x.meld_lo.at[k].set(jnp.asarray(TEMPLATE_LO)[t]),
        meld_hi=x.meld_hi.at[k].set(jnp.asarray(TEMPLATE_HI)[t]),
    )
    return _put_down(x)


def _layoff(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_layoff`: card c onto the lowest-numbered meld that takes it at that end."""
    c, end = jnp.divmod(a - shape.ids.layoff, 3)
    # The meld that takes c there holds the card next to it (one deck: that meld is unique,
    # as `table_fits` finds it): below it for the high end (the king below a high ace), above
    # it for the low end, or for a set one of its rank that sits in a set.
    rank = c % 13
    below = c - 1 + jnp.where(rank == 0, 13, 0)
    mates = jnp.asarray(RANK_MATES)[c]
    mate_melds = x.meld_of[mates]
    in_set = (mate_melds >= 0) & ~x.meld_run[jnp.clip(mate_melds, 0)]
    set_meld = mate_melds[jnp.argmax(in_set)]
    m = jnp.where(
        end == SET, set_meld, jnp.where(end == RUN_HIGH, x.meld_of[below], x.meld_of[c + 1])
    )
    p = x.turn
    x = _remove(x, p, c)
    x = x.replace(
        slot=x.slot.at[c].set((x.meld_of == m).sum(dtype=jnp.int32)),
        meld_of=x.meld_of.at[c].set(m),
        owner=x.owner.at[c].set(p),
        meld_lo=x.meld_lo.at[m].add(jnp.where(end == RUN_LOW, -1, 0)),
        meld_hi=x.meld_hi.at[m].add(jnp.where(end == RUN_HIGH, 1, 0)),
    )
    return _put_down(x)


def _put_down(x: GameState) -> tuple[GameState, Array]:
    """`Game._put_down`: the obligation is met; an empty hand goes out (§1)."""
    x = x.replace(must_play=jnp.int32(NONE))
    return x, ~x.hands[x.turn].any()


def _discard(shape: Shape, params: RuleParams, x: GameState, a: Array) -> tuple[GameState, Array]:
    """`Game._apply_discard` and `_next_turn`: the card goes on the pile; the last card goes
    out, else the turn passes, and the hand ends at `turn_limit` (§4) or when the next turn
    cannot begin (§2 ends_hand, §1 stock and pile empty)."""
    c = a - shape.ids.discard
    p = x.turn
    x = _remove(x, p, c)
    x = x.replace(
        pile=x.pile.at[x.pile_size].set(c), pile_size=x.pile_size + 1, taken_top=jnp.int32(NONE)
    )
    out = ~x.hands[p].any()
    turns = x.turns + 1
    nxt = x.replace(
        turns=turns,
        turn=(p + 1) % shape.players,
        phase=jnp.int32(DRAW),
        must_play=jnp.int32(NONE),
    )
    limit = (params.turn_limit > 0) & (turns >= params.turn_limit)
    blocked = (x.stock_size == 0) & ((params.stock_out == 1) | (x.pile_size == 0))
    x = jax.tree_util.tree_map(lambda a, b: jnp.where(out, a, b), x, nxt)
    return x, out | limit | blocked


BRANCHES = (_draw, _take, _decline, _meld, _layoff, _discard)


def apply(shape: Shape, params: RuleParams, x: GameState, action: Array) -> tuple[GameState, Array]:
    """Play a legal action id; returns the position and whether the hand has ended (not yet
    scored: `end_hand`). An illegal id leaves a position of no meaning (pgx's step ends the
    episode then)."""
    i = shape.ids
    a = jnp.asarray(action, jnp.int32)
    kind = jnp.select(
        [a == 0, a < i.decline, a == i.decline, a < i.layoff, a < i.discard], [0, 1, 2, 3, 4], 5
    )
    branches = [lambda x, a, f=f: f(shape, params, x, a) for f in BRANCHES]
    moved: tuple[GameState, Array] = jax.lax.switch(kind, branches, x, a)
    return moved


# --- the end of a hand ---------------------------------------------------------------------------


class HandEnd(NamedTuple):
    """`scoring.HandResult` as arrays."""

    scores: Array
    totals: Array
    game_over: Array
    winner: Array
    """-1: none (play on, or a draw at hand_limit)."""
    truncated: Array


def _game_winner(params: RuleParams, totals: Array, went_out: Array, limit_reached: Array) -> Array:
    """`scoring.game_winner`: -1 for None."""
    best = totals.max()
    leaders = totals == best
    single = leaders.sum() == 1
    leader = jnp.argmax(leaders).astype(jnp.int32)
    out_wins = (went_out >= 0) & (totals[jnp.clip(went_out, 0)] >= params.target)
    by_target = jnp.where(
        params.winner_must_go_out,
        jnp.where(out_wins, went_out, NONE),
        jnp.where((best >= params.target) & single, leader, NONE),
    )
    return jnp.where(
        by_target >= 0, by_target, jnp.where(limit_reached & single, leader, NONE)
    ).astype(jnp.int32)


def end_hand(shape: Shape, params: RuleParams, x: GameState) -> tuple[GameState, HandEnd]:
    """`Game._end_hand` and `scoring.result_of_scores`: score the hand and decide whether the
    game is over (§1, §2 winner_must_go_out, §4 hand_limit)."""
    n = shape.players
    scores = hand_scores(x, params, n)
    empty = ~x.hands.any(axis=1)
    went_out = jnp.where(empty.any(), jnp.argmax(empty), NONE).astype(jnp.int32)
    totals = x.totals + scores
    hands_played = x.hands_played + 1
    by_target = _game_winner(params, totals, went_out, jnp.bool_(False))
    limit = (params.hand_limit > 0) & (hands_played >= params.hand_limit)
    over = (by_target >= 0) | limit
    winner = jnp.where(over, _game_winner(params, totals, went_out, jnp.bool_(True)), NONE)
    x = x.replace(
        taken_top=jnp.int32(NONE),
        must_play=jnp.int32(NONE),
        hands_played=hands_played,
        phase=jnp.where(over, GAME_OVER, HAND_OVER).astype(jnp.int32),
        scores=scores,
    )
    return x, HandEnd(scores, totals, over, winner.astype(jnp.int32), over & (by_target < 0))


# --- the deal ------------------------------------------------------------------------------------


def deal(shape: Shape, x: GameState, key: Array) -> GameState:
    """`Game._deal`: shuffle with `key` and deal a hand, one card at a time from the dealer's
    left; the next card starts the pile, the rest is the stock. The table, the known cards and
    the turn counters start afresh; the dealer, totals, hand count and seed are `x`'s."""
    return x.replace(**fresh_hand(shape, x.dealer, key))


def fresh_hand(shape: Shape, dealer: Array, key: Array) -> dict[str, Array]:
    """The fields a deal sets (`deal`): the hands dealt by `dealer`, the pile's first card,
    the stock, an empty table and no known cards."""
    n, size = shape
    deck = shuffled_deck(key)
    dealt = n * size
    who = (dealer + 1 + jnp.arange(dealt)) % n
    hands = jnp.zeros((n, NUM_CARDS), bool).at[who, deck[:dealt]].set(True)
    return dict(
        turn=(dealer + 1) % n,
        phase=jnp.int32(DRAW),
        hands=hands,
        known=jnp.zeros((n, NUM_CARDS), bool),
        stock=deck[::-1],  # stock[j] = deck[51 - j]: the card after the pile's is drawn first
        stock_size=jnp.int32(NUM_CARDS - 1 - dealt),
        pile=jnp.full(NUM_CARDS, NONE, jnp.int32).at[0].set(deck[dealt]),
        pile_size=jnp.int32(1),
        meld_of=jnp.full(NUM_CARDS, NONE, jnp.int32),
        owner=jnp.full(NUM_CARDS, NONE, jnp.int32),
        slot=jnp.zeros(NUM_CARDS, jnp.int32),
        meld_count=jnp.int32(0),
        meld_run=jnp.zeros(MAX_MELDS, bool),
        meld_suit=jnp.zeros(MAX_MELDS, jnp.int32),
        meld_lo=jnp.zeros(MAX_MELDS, jnp.int32),
        meld_hi=jnp.zeros(MAX_MELDS, jnp.int32),
        taken_top=jnp.int32(NONE),
        must_play=jnp.int32(NONE),
        turns=jnp.int32(0),
    )


def shuffled_deck(key: Array) -> Array:
    """A uniformly random order of the 52 cards: each card's place is the rank of a random
    32-bit number among the 52 drawn (ties broken by card id). A step computes a deal whether
    or not the hand ended (vmapped branches both run), and counting 52 x 52 comparisons costs
    a fraction of a sort (`jax.random.permutation`) on a CPU."""
    bits = jax.random.bits(key, (NUM_CARDS,), jnp.uint32)
    before = (bits[None, :] < bits[:, None]) | (
        (bits[None, :] == bits[:, None]) & (CARDS[None, :] < CARDS[:, None])
    )
    place = before.sum(axis=1, dtype=jnp.int32)  # how many cards go before each card
    return jnp.zeros(NUM_CARDS, jnp.int32).at[place].set(jnp.asarray(CARDS))


def new_game(shape: Shape, key: Array) -> GameState:
    """`Game.new`: the first hand dealt, the last player dealing (so player 0 leads)."""
    n = shape.players
    dealer = jnp.int32(n - 1)
    return GameState(
        dealer=dealer,
        totals=jnp.zeros(n, jnp.int32),
        scores=jnp.zeros(n, jnp.int32),
        hands_played=jnp.int32(0),
        seed=jnp.zeros(2, jnp.uint32),
        **fresh_hand(shape, dealer, key),
    )


# --- exact quotients -----------------------------------------------------------------------------

QUOTIENT_LIMIT = 2**22
"""Numerators and denominators of `exact_div` stay below this (make checks the rule fields)."""


def exact_div(a: Array, d: Array) -> Array:
    """float32 a / d for int32 `a` and `d` >= 1 with |a|, d < 2**23, correctly rounded: the
    float32 of the env's float64 quotient (a division rounds the same either way, as 53 >=
    2 * 24 + 2 bits). XLA's float division is not correctly rounded on every backend (on CPU
    it multiplies by an approximate reciprocal), so this is integer long division, up to 8
    bits a round: 27 significant bits of the quotient, a sticky bit for the rest, one rounding
    int -> float, and an exact scaling by a power of two."""
    a = jnp.asarray(a, jnp.int32)
    d = jnp.asarray(d, jnp.int32)
    magnitude = jnp.abs(a)
    q, r = magnitude // d, magnitude % d

    def digits(_: int, carry: tuple[Array, Array, Array]) -> tuple[Array, Array, Array]:
        q, r, shift = carry
        bits = 32 - jax.lax.clz(q)  # 0 for q = 0
        k = jnp.clip(27 - bits, 0, 8)  # r << 8 stays below 2**31 as r < d < 2**23
        wide = r << k
        return (q << k) + wide // d, wide % d, shift + k

    q, r, shift = jax.lax.fori_loop(0, 8, digits, (q, r, jnp.zeros_like(q)))
    q = q | (r > 0).astype(jnp.int32)  # sticky: below the rounding bit
    scale = jax.lax.bitcast_convert_type((127 - shift) << 23, jnp.float32)  # 2 ** -shift
    value = q.astype(jnp.float32) * scale
    return jnp.where(a < 0, -value, value)
