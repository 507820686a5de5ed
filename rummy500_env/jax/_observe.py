"""The observation's feature part (`rl.observation`, one deck, no jokers, no calls) as arrays.

The slices and their order are `ObservationEncoder`'s (its module docstring is the table);
this writes the same floats, bit for bit (tests/test_jax_differential.py): each quotient of
integers is rounded once to float32, as numpy's float64 quotient stored into float32 is
(a table for those over 52, `exact_div` for the others).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from rummy500_env.jax._rules import (
    CARDS,
    Shape,
    counts,
    exact_div,
    pile_places,
    table_fits,
    table_points,
    top_take_obligated,
)
from rummy500_env.jax._state import DRAW, NUM_CARDS, PLAY, Array, GameState, RuleParams


def features_size(shape: Shape) -> int:
    """52 (D + 2n + 9) + 3n + 14 with D = 1 (`ObservationEncoder.features_size`)."""
    n = shape.players
    return 52 * (1 + 2 * n + 9) + 3 * n + 14


BY_52 = np.array([i / NUM_CARDS for i in range(NUM_CARDS + 1)], dtype=np.float32)
"""i / 52 for i = 0..52, rounded once to float32 as numpy rounds the env's float64 quotient.
XLA turns a division by a constant into a multiplication by its reciprocal, which can differ
in the last bit; a table cannot."""


def _clip(x: Array) -> Array:
    return jnp.clip(x, -2.0, 2.0)


def observe(shape: Shape, params: RuleParams, x: GameState, player: Array) -> Array:
    """float32 (features_size,): what `player` sees, rotated so that it is seat 0."""
    n = shape.players
    f32 = jnp.float32
    by_52 = jnp.asarray(BY_52)
    seats = (player + jnp.arange(n)) % n  # relative seat k is absolute seat seats[k]
    places = pile_places(x)
    in_pile = places >= 0
    top = x.pile[jnp.clip(x.pile_size - 1, 0, NUM_CARDS - 1)]
    pile_top = (x.pile_size > 0) & (CARDS == top)
    on_table = x.meld_of >= 0
    run = x.meld_run[jnp.clip(x.meld_of, 0)] & on_table
    owner_rows = x.owner[None, :] == seats[:, None]
    fits = table_fits(x)
    size = counts(x)[seats]
    points = table_points(x, params, n)[seats]
    phase_draw, phase_play = x.phase == DRAW, x.phase == PLAY
    must = phase_play & (CARDS == x.must_play)
    no_discard = phase_play & (CARDS == x.taken_top)
    flags = jnp.stack(
        [
            phase_draw & top_take_obligated(x, params),
            params.discard_to_go_out,
            params.top_card_must_meld,
            params.winner_must_go_out,
            params.stock_out == 1,
            params.stock_out == 2,
            params.fives,
            jnp.bool_(False),  # two decks
        ]
    ).astype(f32)
    # totals / target and table points / target clipped to ±2, turns / turn_limit and hands
    # played / hand_limit (0 without a limit): exact quotients, one call
    bound = 2 * params.target + 1  # beyond it the quotient clips to ±2 anyway
    limits = jnp.stack([params.turn_limit, params.hand_limit])
    quotients = exact_div(
        jnp.concatenate(
            [
                jnp.clip(x.totals[seats], -bound, bound),
                jnp.clip(points, -bound, bound),
                jnp.stack([x.turns, x.hands_played]),
            ]
        ),
        jnp.concatenate([jnp.full(2 * n, params.target), jnp.maximum(limits, 1)]),
    )
    progress = jnp.where(limits > 0, quotients[2 * n :], 0.0)
    parts = [
        x.hands[player].astype(f32),  # hand
        pile_top.astype(f32),  # pile_top
        by_52[places + 1],  # pile_place
        in_pile.astype(f32),  # pile_cards
        (owner_rows & on_table[None, :]).astype(f32).reshape(-1),  # table_owner
        (on_table & ~run).astype(f32),  # table_set
        run.astype(f32),  # table_run
        fits.astype(f32).reshape(-1),  # layoff_fits
        x.known[seats[1:]].astype(f32).reshape(-1),  # known
        by_52[size],  # hand_sizes
        by_52[jnp.stack([x.stock_size, x.pile_size])],  # stock_pile
        _clip(quotients[:n]),  # totals
        _clip(quotients[n : 2 * n]),  # table_points
        jnp.stack([phase_draw, phase_play]).astype(f32),  # phase
        must.astype(f32),  # must_play
        no_discard.astype(f32),  # no_discard
        flags,  # flags
        progress,  # progress
    ]
    return jnp.concatenate(parts)
