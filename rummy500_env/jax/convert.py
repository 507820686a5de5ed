"""`to_game` and `from_game`: a JAX state as an engine `Game` and back, stock order included, so
both engines can play on from the same deal (tests, debugging, golden positions)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import Meld, make_run, make_set
from rummy500_env.engine.positions import Position
from rummy500_env.jax._state import NONE, NUM_CARDS, PHASE_NAMES, GameState, State
from rummy500_env.jax.env import Env, _wrap, finish_core


def _leaf(a: Any, index: int | None) -> np.ndarray:
    arr = np.asarray(a)
    return arr if index is None else arr[index]


def to_game(state: State, index: int | None = None) -> Game:
    """The engine `Game` of a state's position; `index` picks one game of a batch (a state
    with a leading batch axis needs it). Raises `InvalidPositionError` if the arrays hold no
    valid position (the engine checks it as `Game.from_dict` does)."""
    x: GameState = jax.tree_util.tree_map(lambda a: _leaf(a, index), state._x)
    if x.hands.ndim != 2:
        raise ValueError(
            f"to_game: this state holds a batch of shape {x.hands.shape[:-2]}: give index="
        )
    rules = state._rules
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


def from_game(game: Game, env: Env | None = None) -> State:
    """The state of an engine `Game`'s position, stock order included: stepping it plays on
    from the same deal. Its rules must be ones the JAX engine plays (`RulesError` otherwise).

    The legal mask and observation are computed for `env`'s episode and reward (default:
    `make(game.rules)`; neither depends on them). A game whose hand is over gives an ended
    state (``terminated``, or ``truncated`` at `hand_limit`)."""
    rules = game.rules
    if env is None:
        env = Env(rules)
    elif env.rules != rules:
        raise ValueError(f"from_game: the game's rules {rules} are not the env's {env.rules}")
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
    shape17 = np.zeros(17, np.int32)
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
    x = GameState(
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
    return _wrap(rules, finish_core(env.shape, env.params, x))
