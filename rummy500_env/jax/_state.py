"""The array state of one game, the rule parameters an `Env` holds, and pgx's `State`.

Everything here is a JAX pytree of fixed-shape arrays, so a batch of games is the same classes
with a leading batch axis (``jax.vmap``). The card ids, suits and ranks are the engine's
(`rummy500_env.engine.cards`): ``card = suit * 13 + rank``, suits C D H S, the ace rank 0.

How a position is held (one deck, so every card lies in exactly one place):

- hands and the cards each player is known to hold: a boolean row of 52 per player;
- the stock: ``stock[:stock_size]``, the card drawn next last (the engine's own order);
- the discard pile as places: ``pile[:pile_size]``, bottom first, top last;
- the table: for every card, the meld it sits in (``meld_of``, -1 off the table), the player
  who put it there (``owner``) and, in a set, its place in the set's card list (``slot``);
  per meld, in table order, whether it is a run and its suit and end ordinals (a set's rank
  in ``meld_lo``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from rummy500_env.engine.rules import Rules

Array = jax.Array

NUM_CARDS = 52
MAX_MELDS = NUM_CARDS // 3
"""Melds the table can hold: every meld has three cards or more, and one deck has 52."""
DRAW, PLAY, HAND_OVER, GAME_OVER = 0, 1, 2, 3
"""`GameState.phase` values, the engine's phases of the same names."""
PHASE_NAMES = ("draw", "play", "hand_over", "game_over")
NONE = -1
"""No card (``taken_top``, ``must_play``), no meld, no owner."""


@dataclasses.dataclass(frozen=True)
class GameState:
    """The position of one game (module docstring); the engine's `Game` slots as arrays."""

    dealer: Array
    turn: Array
    """The player to act (after the hand: as `Game.current_player` says)."""
    phase: Array
    """`DRAW`, `PLAY`, `HAND_OVER` or `GAME_OVER`."""
    hands: Array
    """bool (players, 52)."""
    known: Array
    """bool (players, 52): cards everyone saw the player take from the pile, not played since."""
    stock: Array
    """int32 (52,): ``stock[:stock_size]``, the card drawn next last."""
    stock_size: Array
    pile: Array
    """int32 (52,): ``pile[:pile_size]``, bottom first."""
    pile_size: Array
    meld_of: Array
    """int32 (52,): the meld (table order) each card sits in, or -1."""
    owner: Array
    """int32 (52,): the player who put each card on the table, or -1."""
    slot: Array
    """int32 (52,): a set's card's place in the set's list (the order they went down)."""
    meld_count: Array
    meld_run: Array
    """bool (17,): the meld is a run (else a set)."""
    meld_suit: Array
    """int32 (17,): a run's suit (0 for a set)."""
    meld_lo: Array
    """int32 (17,): a run's low ordinal (ace low 1 .. ace high 14); a set's rank."""
    meld_hi: Array
    """int32 (17,): a run's high ordinal; a set's rank."""
    totals: Array
    """int32 (players,): running totals before this hand (the engine's ``totals_before``)."""
    scores: Array
    """int32 (players,): the scores of the last hand that ended (0 before the first)."""
    taken_top: Array
    """The card taken from the top this turn (may not be discarded), or -1."""
    must_play: Array
    """The card owed to the table (dig obligation), or -1."""
    turns: Array
    hands_played: Array
    seed: Array
    """uint32 (2,): the engine game's seed as a signed 64-bit int, low word first (kept so
    `to_game` gives back the same `Game`; the JAX engine deals with its keys, not the seed)."""

    def replace(self, **changes: Any) -> GameState:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class RuleParams:
    """The rule fields and env options that do not change array shapes, as arrays that `Env`
    holds (pgx keeps its configuration on the env): the compiled core takes them traced, so
    one compiled step serves every rules configuration with the same players and hand size."""

    fives: Array
    """scoring is "fives"."""
    stock_out: Array
    """0 pile_only, 1 ends_hand, 2 pile_must_use."""
    discard_to_go_out: Array
    top_card_must_meld: Array
    winner_must_go_out: Array
    target: Array
    turn_limit: Array
    """0: none."""
    hand_limit: Array
    """0: none."""
    game_episode: Array
    """The episode is a game (else one hand)."""
    win_reward: Array
    """reward="win" (else "score")."""

    def replace(self, **changes: Any) -> RuleParams:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class State:
    """pgx's `State`: what `Env.init` and `Env.step` return, for one game or a batch. Arrays
    only (the rules live on the `Env`), so `jit` keys on shapes and `vmap` batches every field.

    Attributes:
        current_player: the player to act (int32).
        observation: the observation of `current_player` (float32, the feature part of
            `raw_env`'s observation, float for float).
        rewards: float32 (players,): each player's reward for this step.
        terminated: the episode ended (the game, or the hand in hand episodes, or an illegal
            action).
        truncated: the game stopped at `hand_limit` without a winner by the target.
        legal_action_mask: bool (num_actions,): the legal action ids (all True once the
            episode has ended, as in pgx).
        _step_count: steps taken in this episode.
        _x: the position (`GameState`). After an illegal action it stays the position the
            action was tried in.
    """

    current_player: Array
    observation: Array
    rewards: Array
    terminated: Array
    truncated: Array
    legal_action_mask: Array
    _step_count: Array
    _x: GameState

    @property
    def env_id(self) -> str:
        return "rummy500"

    def replace(self, **changes: Any) -> State:
        return dataclasses.replace(self, **changes)


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


jax.tree_util.register_dataclass(GameState, data_fields=_fields(GameState), meta_fields=[])
jax.tree_util.register_dataclass(RuleParams, data_fields=_fields(RuleParams), meta_fields=[])
jax.tree_util.register_dataclass(State, data_fields=_fields(State), meta_fields=[])


def rule_params(rules: Rules, episode: str, reward: str) -> RuleParams:
    """The array parameters of a rules configuration and the env's options."""
    return RuleParams(
        fives=jnp.bool_(rules.scoring == "fives"),
        stock_out=jnp.int32(("pile_only", "ends_hand", "pile_must_use").index(rules.stock_out)),
        discard_to_go_out=jnp.bool_(rules.discard_to_go_out),
        top_card_must_meld=jnp.bool_(rules.top_card_must_meld),
        winner_must_go_out=jnp.bool_(rules.winner_must_go_out),
        target=jnp.int32(rules.target),
        turn_limit=jnp.int32(rules.turn_limit or 0),
        hand_limit=jnp.int32(rules.hand_limit or 0),
        game_episode=jnp.bool_(episode == "game"),
        win_reward=jnp.bool_(reward == "win"),
    )
