"""A JAX state as an engine `Game` and back (`Env.to_game`, `Env.from_game`), stock order
included, so both engines can play on from the same deal (tests, debugging, golden positions)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, make_run, make_set
from rummy500_env.engine.positions import Position
from rummy500_env.engine.rules import Rules
from rummy500_env.jax._state import (
    HAND_OVER,
    MAX_MELDS,
    NONE,
    NUM_CARDS,
    PHASE_NAMES,
    GameState,
    State,
)


def _leaf(a: Any, index: int | None) -> np.ndarray:
    arr = np.asarray(a)
    return arr if index is None else arr[index]


def to_game(rules: Rules, state: State, index: int | None = None) -> Game:
    """`Env.to_game`: the engine `Game` of a state's position under `rules`."""
    x: GameState = jax.tree_util.tree_map(lambda a: _leaf(a, index), state._x)
    if x.hands.ndim != 2:
        raise ValueError(
            f"to_game: this state holds a batch of shape {x.hands.shape[:-2]}: give index="
        )
    ended = bool(_leaf(state.terminated, index)) or bool(_leaf(state.truncated, index))
    if ended and int(x.phase) < HAND_OVER:
        raise ValueError(
            "to_game: this episode was ended by an illegal action, which no engine game can "
            "end with (docs/jax.md, Illegal actions); its position is the one the action was "
            "tried in: to_game the state before that step"
        )
    n = rules.players

    def cards(row: Any) -> tuple[int, ...]:
        return tuple(int(c) for c in np.flatnonzero(row))

    melds: list[Meld] = []
    for k in range(int(x.meld_count)):
        members = np.flatnonzero(x.meld_of == k)
        if x.meld_run[k]:
            lo, hi = int(x.meld_lo[k]), int(x.meld_hi[k])
            order = sorted(members, key=lambda c: (c % 13 + 1) if c % 13 or lo == 1 else 14)
            owners = tuple(int(x.owner[c]) for c in order)
            melds.append(make_run(int(x.meld_suit[k]), lo, hi, owners))
        else:
            order = sorted(members, key=lambda c: int(x.slot[c]))
            set_cards = tuple(int(c) for c in order)
            owners = tuple(int(x.owner[c]) for c in order)
            melds.append(make_set(int(x.meld_lo[k]), set_cards, owners))
    stock = tuple(int(c) for c in x.stock[: int(x.stock_size)][::-1])  # top first
    seed = int(np.asarray(x.seed, np.uint32).view(np.int64)[0]) if x.seed.size == 2 else 0
    position = Position(
        rules=rules,
        hands=tuple(cards(x.hands[q]) for q in range(n)),
        stock=stock,
        pile=tuple(int(c) for c in x.pile[: int(x.pile_size)]),
        melds=tuple(melds),
        known=tuple(cards(x.known[q]) for q in range(n)),
        dealer=int(x.dealer),
        turn=int(x.turn),
        phase=PHASE_NAMES[int(x.phase)],  # type: ignore[arg-type]  # one of the Phase names
        totals=tuple(int(t) for t in x.totals),
        taken_top=None if int(x.taken_top) == NONE else int(x.taken_top),
        must_play=None if int(x.must_play) == NONE else int(x.must_play),
        turns=int(x.turns),
        hands_played=int(x.hands_played),
        seed=seed,
    )
    return Game.from_position(position)


def game_state(game: Game) -> GameState:
    """The arrays of an engine `Game`'s position (`Env.from_game` checks the rules)."""
    rules = game.rules
    n = rules.players
    hands = np.zeros((n, NUM_CARDS), bool)
    known = np.zeros((n, NUM_CARDS), bool)
    for q in range(n):
        hands[q, game.hand(q)] = True
        known[q, game.known(q)] = True
    stock = np.full(NUM_CARDS, NONE, np.int32)
    stock[: len(game.stock)] = game.stock_cards[::-1]  # the card drawn next last
    pile = np.full(NUM_CARDS, NONE, np.int32)
    pile[: len(game.pile)] = game.pile
    meld_of = np.full(NUM_CARDS, NONE, np.int32)
    owner = np.full(NUM_CARDS, NONE, np.int32)
    slot = np.zeros(NUM_CARDS, np.int32)
    shape17 = np.zeros(MAX_MELDS, np.int32)
    run, suit, lo, hi = shape17.astype(bool), shape17.copy(), shape17.copy(), shape17.copy()
    for k, m in enumerate(game.melds):
        run[k], lo[k], hi[k] = m.is_run, m.lo, m.hi
        suit[k] = m.suit if m.is_run else 0
        for i, (c, o) in enumerate(zip(m.cards, m.owners, strict=True)):
            meld_of[c], owner[c], slot[c] = k, o, i
    seed = game.seed
    if not -(2**63) <= seed < 2**63:
        raise ValueError(f"from_game: the game's seed {seed} is not a signed 64-bit int")
    scores = game.result().scores if game.is_hand_over else (0,) * n
    i32 = jnp.int32
    return GameState(
        dealer=i32(game.dealer),
        turn=i32(game.turn),
        phase=i32(PHASE_NAMES.index(game.phase)),
        hands=jnp.asarray(hands),
        known=jnp.asarray(known),
        stock=jnp.asarray(stock),
        stock_size=i32(len(game.stock)),
        pile=jnp.asarray(pile),
        pile_size=i32(len(game.pile)),
        meld_of=jnp.asarray(meld_of),
        owner=jnp.asarray(owner),
        slot=jnp.asarray(slot),
        meld_count=i32(len(game.melds)),
        meld_run=jnp.asarray(run),
        meld_suit=jnp.asarray(suit),
        meld_lo=jnp.asarray(lo),
        meld_hi=jnp.asarray(hi),
        totals=jnp.asarray(np.array(game.totals_before, np.int32)),
        scores=jnp.asarray(np.array(scores, np.int32)),
        taken_top=i32(NONE if game.taken_top is None else game.taken_top),
        must_play=i32(NONE if game.must_play is None else game.must_play),
        turns=i32(game.turns),
        hands_played=i32(game.hands_played),
        seed=jnp.asarray(np.array([seed], np.int64).view(np.uint32)),
    )
