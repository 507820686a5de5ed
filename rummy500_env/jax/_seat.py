"""What one seat knows, as arrays: `deal_world`, the twin of `SeatView.sample_position`.

A seat sees its own hand, the pile in order, the table with the owner of every card, the
cards each other player is known to hold (taken from the pile in view of everyone, not played
since), every hand's size and the stock's size. Everything else, the stock's order and the
others' cards not known to it, it cannot tell apart: a world deals those unseen cards again,
uniformly among the deals that agree with what it knows. A search that only ever reads worlds
of its own seat decides from what that seat knows (docs/jax.md, "A fair search").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rummy500_env.jax._rules import Shape, shuffled_deck
from rummy500_env.jax._state import NONE, NUM_CARDS, Array, GameState


def unseen_cards(shape: Shape, x: GameState, player: Array) -> Array:
    """bool (52,): the cards `player` cannot see: the stock, and the other hands' cards that
    are not known to be there."""
    places = jnp.arange(NUM_CARDS)
    cards = jnp.where(places < x.stock_size, x.stock, NUM_CARDS)  # card 52: padding
    in_stock = jnp.zeros(NUM_CARDS + 1, bool).at[cards].set(True)[:NUM_CARDS]
    others = jnp.arange(shape.players) != player
    return in_stock | (x.hands & ~x.known & others[:, None]).any(axis=0)


def deal_world(shape: Shape, x: GameState, player: Array, key: Array) -> GameState:
    """A position `player` cannot tell from `x`: its unseen cards (`unseen_cards`) shuffled
    with `key` and dealt again, to each other hand as many as it holds beside its known cards
    (seat order), the rest to the stock in the shuffled order. Uniform over the consistent
    deals: every order of the unseen cards is equally likely and fills the same places. The
    engine game's seed is drawn afresh (a world does not know the next hands' deals);
    everything else is `x`'s. Two positions the seat cannot tell apart give the same world
    for the same key, array for array (a search over worlds is then blind to the hidden cards
    by construction: tests/test_jax_search.py)."""
    deck_key, seed_key = jax.random.split(key)
    unseen = unseen_cards(shape, x, player)
    others = jnp.arange(shape.players) != player
    hidden = jnp.where(others, (x.hands & ~x.known).sum(axis=1, dtype=jnp.int32), 0)
    # the unseen cards in a uniformly random order, first: sorted by their place in a shuffle
    rank = jnp.arange(NUM_CARDS, dtype=jnp.int32)
    place = jnp.zeros(NUM_CARDS, jnp.int32).at[shuffled_deck(deck_key)].set(rank)
    order = jnp.argsort(jnp.where(unseen, place, NUM_CARDS + place)).astype(jnp.int32)
    ends = jnp.cumsum(hidden)
    dealt = ends[-1]
    # the seat of each of the first `dealt` cards; the others write to card 52, dropped
    seat = jnp.minimum((rank[:, None] >= ends[None, :]).sum(axis=1), shape.players - 1)
    to_hands = jnp.where(rank < dealt, order, NUM_CARDS)
    hands = jnp.zeros((shape.players, NUM_CARDS + 1), bool).at[seat, to_hands].set(True)
    hands = jnp.where(others[:, None], x.known | hands[:, :NUM_CARDS], x.hands)
    stock = order[jnp.clip(dealt + rank, 0, NUM_CARDS - 1)]
    stock = jnp.where(rank < x.stock_size, stock, NONE)  # past the stock: nothing, in any world
    seed = jax.random.bits(seed_key, (2,), jnp.uint32)
    return x.replace(hands=hands, stock=stock, seed=seed)
