"""`make` and `Env`: Rummy 500 with pgx's `Env` interface (``init``, ``step``, ``observe``).

The env is a thin shell over `_rules` and `_observe`, as pgx's `core.Env` is over its
`_src/games`: ``init(key)`` deals, ``step(state, action, key)`` plays one action id, and the
state carries the legal mask and the observation of the player to act. Ids and observation
features are those of `raw_env` for the same rules (`rummy500_env.rl.actions`,
`rummy500_env.rl.observation`); the rewards, hand ends and episode ends are `raw_env`'s too.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rummy500_env.engine.errors import RulesError
from rummy500_env.engine.rules import Rules
from rummy500_env.jax import _rules
from rummy500_env.jax._observe import features_size, observe
from rummy500_env.jax._rules import Shape
from rummy500_env.jax._state import (
    GAME_OVER,
    HAND_OVER,
    Array,
    GameState,
    Params,
    State,
    params_of,
)

EPISODES = ("game", "hand")
REWARDS = ("win", "score")
SUPPORTED = (
    "one deck (decks=1 or None) with 2 to 4 players and any hand_size (under "
    "stock_out='ends_hand' one that leaves a stock); "
    "no jokers (jokers=0) and no Rummy! calls (rummy_calls=False); every other field of "
    "docs/rules.md §2 and §4: scoring pip or fives, stock_out pile_only, ends_hand or "
    "pile_must_use, discard_to_go_out, top_card_must_meld, winner_must_go_out, target, "
    "turn_limit and hand_limit (each below 2**22)"
)
"""What the JAX engine plays; `make` refuses anything else naming this."""
ILLEGAL_ACTION_PENALTY = -1.0


def check_rules(rules: Rules) -> None:
    """Raise `RulesError` for rules the JAX engine does not play, saying what it plays."""
    problems = []
    if rules.jokers:
        problems.append(f"jokers={rules.jokers}")
    if rules.rummy_calls:
        problems.append("rummy_calls=True")
    if rules.deck_count != 1:
        problems.append(f"{rules.deck_count} decks")
    if not 2 <= rules.players <= 4:
        problems.append(f"players={rules.players}")
    if (
        not problems
        and rules.stock_out == "ends_hand"
        and rules.players * rules.cards_per_hand == 51
    ):
        # the hand would end at the deal (§2), before anyone acts
        problems.append(f"stock_out='ends_hand' with hand_size={rules.cards_per_hand}, no stock")
    for name in ("target", "turn_limit", "hand_limit"):
        value = getattr(rules, name)
        if value is not None and value >= _rules.QUOTIENT_LIMIT:
            problems.append(f"{name}={value}")
    if problems:
        raise RulesError(
            f"the JAX engine does not play {', '.join(problems)}: it plays {SUPPORTED}; "
            "use the engine (rummy500_env.Game, raw_env) for these rules"
        )


def make(
    rules: Rules | str | dict[str, Any] = "standard",
    episode: str = "game",
    reward: str | None = None,
) -> Env:
    """The env for `rules` (a `Rules`, a dict of fields, or any text `Rules.parse` reads, such
    as ``"standard"`` or ``"nordic,players=3,target=300"``).

    `episode` and `reward` are `raw_env`'s: ``"game"`` (hands until a winner; the default) or
    ``"hand"``; ``"win"`` or ``"score"``, None choosing the episode's default. Rules the JAX
    engine does not play raise `RulesError` (see `SUPPORTED`).
    """
    if isinstance(rules, str):
        rules = Rules.parse(rules)
    else:
        rules = Rules.coerce(rules)
    return Env(rules, episode, reward)


class Env:
    """Rummy 500 as a pgx `Env` (use `make`).

    - ``init(key)``: a new game (or hand), dealt with `key`.
    - ``step(state, action, key)``: play one action id of the player to act; in game episodes
      `key` deals the next hand when this action ends one (it is needed there, and unused
      otherwise).
    - ``observe(state, player)``: the observation of any player (default: the player to act).

    Rewards (`State.rewards`, one float32 per player, on the step that earns them): as
    `raw_env`'s reward modes. ``"score"`` gives each player, when a hand ends, its hand score
    minus the mean of the others', over 100; ``"win"`` gives, when the game ends, +1 to the
    winner and -1/(n-1) to each other player (0 for a draw at `hand_limit`).

    Episode end: ``terminated`` when the game (``episode="game"``) or the hand
    (``episode="hand"``) ends; ``truncated`` when `hand_limit` stops the game without a winner
    by the target (docs/rules.md §4). A hand cut short by `turn_limit` is a normal hand end.

    Illegal actions, as pgx does: an action outside `State.legal_action_mask` ends the episode
    at once (``terminated``) with -1 for the player who made it and +1/(n-1) for each other
    player: pgx's penalty with two players (pgx's ``Env._step_with_illegal_action`` gives each
    other player n-1; +1/(n-1) keeps it zero-sum, like the env's rewards). Stepping a state
    whose episode has ended changes nothing and gives zero rewards; its legal mask is all True
    (pgx: so that a policy's masked distribution stays defined).
    """

    def __init__(self, rules: Rules, episode: str = "game", reward: str | None = None) -> None:
        check_rules(rules)
        if episode not in EPISODES:
            raise RulesError(f"episode={episode!r} is not allowed: use one of {EPISODES}")
        reward = reward or ("win" if episode == "game" else "score")
        if reward not in REWARDS:
            raise RulesError(f"reward={reward!r} is not allowed: use one of {REWARDS} or None")
        self.rules = rules
        self.episode = episode
        self.reward_mode = reward
        self.shape = Shape(rules.players, rules.cards_per_hand)
        self.params = params_of(rules, episode, reward)

    @property
    def id(self) -> str:
        return "rummy500"

    @property
    def version(self) -> str:
        return "v0"

    @property
    def num_players(self) -> int:
        return self.rules.players

    @property
    def num_actions(self) -> int:
        return self.shape.num_actions

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (features_size(self.shape),)

    def init(self, key: Array) -> State:
        """A new game dealt with `key` (a hand episode is the game's first hand)."""
        return _wrap(self.rules, init_core(self.shape, self.params, key))

    def step(self, state: State, action: Array, key: Array | None = None) -> State:
        """Play `action` (an id) for the player to act; see the class docstring."""
        if key is None:
            if self.episode == "game":
                raise TypeError(
                    "step(state, action, key): a game episode needs a key to deal the next "
                    "hand when this action ends one"
                )
            key = jax.random.PRNGKey(0)  # unused: a hand episode deals no second hand
        return _wrap(self.rules, step_core(self.shape, self.params, _unwrap(state), action, key))

    def observe(self, state: State, player: Array | None = None) -> Array:
        """The observation of `player` (default: the player to act), rotated so that it is
        seat 0: `raw_env`'s feature part."""
        if player is None:
            player = state.current_player
        obs: Array = observe_core(self.shape, self.params, state._x, jnp.asarray(player, jnp.int32))
        return obs


# --- the compiled core: shared by every env with the same players and hand size ------------------

Core = tuple[Array, Array, Array, Array, Array, Array, Array, GameState]
"""State's arrays in field order: current_player, observation, rewards, terminated, truncated,
legal_action_mask, _step_count, _x."""


def _wrap(rules: Rules, core: Core) -> State:
    return State(*core, _rules=rules)


def _unwrap(s: State) -> Core:
    return (
        s.current_player,
        s.observation,
        s.rewards,
        s.terminated,
        s.truncated,
        s.legal_action_mask,
        s._step_count,
        s._x,
    )


def _finish(
    shape: Shape,
    params: Params,
    x: GameState,
    rewards: Array,
    term: Array,
    trunc: Array,
    steps: Array,
) -> Core:
    """A state's mask and observation for its position (all True once the episode is over)."""
    mask = _rules.legal_mask(shape, params, x) | term | trunc
    obs = observe(shape, params, x, x.turn)
    return (x.turn, obs, rewards, term, trunc, mask, steps, x)


@functools.partial(jax.jit, static_argnums=0)
def init_core(shape: Shape, params: Params, key: Array) -> Core:
    x = _rules.new_game(shape, key)
    zero = jnp.bool_(False)
    return _finish(
        shape, params, x, jnp.zeros(shape.players, jnp.float32), zero, zero, jnp.int32(0)
    )


@functools.partial(jax.jit, static_argnums=0)
def observe_core(shape: Shape, params: Params, x: GameState, player: Array) -> Array:
    return observe(shape, params, x, player)


@functools.partial(jax.jit, static_argnums=0)
def finish_core(shape: Shape, params: Params, x: GameState) -> Core:
    """The state of a position set from outside (`from_game`): over once the hand is over."""
    over = x.phase >= HAND_OVER
    _, end = _rules.end_hand(shape, params, x.replace(hands_played=x.hands_played - 1))
    trunc = (x.phase == GAME_OVER) & end.truncated
    zero = jnp.zeros(shape.players, jnp.float32)
    return _finish(shape, params, x, zero, over & ~trunc, trunc, jnp.int32(0))


def _rewards(shape: Shape, params: Params, end: _rules.HandEnd) -> Array:
    """`Rummy500Env._hand_over`'s rewards for a hand that has ended."""
    n = shape.players
    s = end.scores
    # (s_i - mean of the others) / 100 = (n s_i - sum) / (100 (n - 1)): one rounding
    score = _rules.exact_div(n * s - s.sum(), jnp.int32(100 * (n - 1)))
    seats = jnp.arange(n)
    win = jnp.where(seats == end.winner, np.float32(1.0), np.float32(-1.0 / (n - 1)))
    won = params.win_reward & end.game_over & (end.winner >= 0)
    return jnp.where(won, win, jnp.where(params.win_reward, np.float32(0.0), score))


def _select(flag: Array, a: GameState, b: GameState) -> GameState:
    return jax.tree_util.tree_map(lambda u, v: jnp.where(flag, u, v), a, b)  # type: ignore[no-any-return]


def _play(shape: Shape, params: Params, core: Core, action: Array, key: Array) -> Core:
    """One legal step (pgx's ``Env._step``): apply, then end the hand, hand out the rewards,
    end the episode or deal the next hand."""
    x = core[7]
    steps = core[6] + 1
    x, ended = _rules.apply(shape, params, x, action)
    scored, end = _rules.end_hand(shape, params, x)
    x = _select(ended, scored, x)
    rewards = jnp.where(ended, _rewards(shape, params, end), np.float32(0.0))
    trunc = ended & end.game_over & end.truncated
    term = ended & ((end.game_over & ~end.truncated) | (~end.game_over & ~params.game_episode))
    again = ended & ~end.game_over & params.game_episode
    following = x.replace(totals=end.totals, dealer=(x.dealer + 1) % shape.players)
    x = _select(again, _rules.deal(shape, following, key), x)
    return _finish(shape, params, x, rewards, term, trunc, steps)


@functools.partial(jax.jit, static_argnums=0)
def step_core(shape: Shape, params: Params, core: Core, action: Array, key: Array) -> Core:
    """pgx's ``Env.step``: a step of an ended episode gives zero rewards and changes nothing;
    an illegal action ends the episode with the penalty (the class docstring)."""
    action = jnp.asarray(action, jnp.int32)
    player, mask, term, trunc = core[0], core[5], core[3], core[4]
    illegal = ~mask[jnp.clip(action, 0, shape.num_actions - 1)] | (action < 0)
    illegal = illegal | (action >= shape.num_actions)
    done = term | trunc
    played = _play(shape, params, core, action, key)
    zero = jnp.zeros(shape.players, jnp.float32)
    stay = (*core[:2], zero, *core[3:])
    out: Core = jax.tree_util.tree_map(lambda u, v: jnp.where(done, u, v), stay, played)
    n = shape.players
    penalty = jnp.where(
        jnp.arange(n) == player,
        np.float32(ILLEGAL_ACTION_PENALTY),
        np.float32(-ILLEGAL_ACTION_PENALTY / (n - 1)),
    )
    bad = illegal & ~done
    rewards = jnp.where(bad, penalty, out[2])
    term_out = out[3] | bad
    trunc_out = out[4] & ~bad
    mask_out = out[5] | term_out | trunc_out
    return (out[0], out[1], rewards, term_out, trunc_out, mask_out, out[6], out[7])
