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
from rummy500_env.engine.game import Game
from rummy500_env.engine.rules import Rules
from rummy500_env.jax import _rules
from rummy500_env.jax._observe import features_size, observe
from rummy500_env.jax._rules import Shape
from rummy500_env.jax._seat import deal_world
from rummy500_env.jax._state import (
    GAME_OVER,
    HAND_OVER,
    NUM_CARDS,
    Array,
    GameState,
    RuleParams,
    State,
    rule_params,
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
    other player n-1; +1/(n-1) keeps it zero-sum, like the env's rewards). The position stays
    the one the action was tried in, and `to_game` refuses the state: no game of the engine
    ends that way. An id outside 0..num_actions-1 is illegal whatever its width (concrete ids
    are checked before they are narrowed to int32); an action that is not an integer is a
    `TypeError`. Stepping a state whose episode has ended changes nothing and gives zero
    rewards; its legal mask is all True (pgx: so that a policy's masked distribution stays
    defined).

    Every method takes only this env's states: a state of another player count is a
    `ValueError` (`check_state`), as is an `observe` of a player outside 0..n-1.

    The env is hashable by its rules, episode and reward, so a jitted function can take it
    as a static argument: ``jax.jit(f, static_argnums=0)(env, ...)``.
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
        self.rule_params = rule_params(rules, episode, reward)

    def _key(self) -> tuple[Rules, str, str]:
        return (self.rules, self.episode, self.reward_mode)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Env) and self._key() == other._key()

    def __hash__(self) -> int:
        """Hashable by its configuration, so an env can be a static argument of `jax.jit`."""
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Env({self.rules!r}, episode={self.episode!r}, reward={self.reward_mode!r})"

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
        out: State = init_core(self.shape, self.rule_params, key)
        return out

    def step(self, state: State, action: Any, key: Array | None = None) -> State:
        """Play `action` (an integer id) for the player to act; see the class docstring."""
        self.check_state(state)
        if key is None:
            if self.episode == "game":
                raise TypeError(
                    "step(state, action, key): a game episode needs a key to deal the next "
                    "hand when this action ends one"
                )
            key = jax.random.PRNGKey(0)  # unused: a hand episode deals no second hand
        action = action_id(action, self.num_actions)
        out: State = step_core(self.shape, self.rule_params, state, action, key)
        return out

    def observe(self, state: State, player: Any = None) -> Array:
        """The observation of `player` (default: the player to act), rotated so that it is
        seat 0: `raw_env`'s feature part."""
        self.check_state(state)
        seat = state.current_player if player is None else self._player(player)
        obs: Array = observe_core(self.shape, self.rule_params, state, seat)
        return obs

    def deal_world(self, state: State, player: Any, key: Array) -> State:
        """A state that `player` cannot tell from `state` (the twin of
        `Game.from_seat_view`): every card it cannot see, the stock in order and the other
        hands' cards not known to it, dealt again with `key`, uniformly among the deals
        consistent with what it knows (its hand, the pile in order, the table with owners,
        the cards others are known to hold, every count). The player to act, the phase,
        scores, rewards and step count are `state`'s; the observation and legal mask are the
        new position's (the same as `state`'s for `player` itself). Jit-compiles and vmaps."""
        self.check_state(state)
        out: State = world_core(self.shape, self.rule_params, state, self._player(player), key)
        return out

    def _player(self, player: Any) -> Array:
        """`player` as an int32 seat, a concrete one checked to be 0..n-1."""
        if not isinstance(player, jax.core.Tracer):
            seats = np.asarray(player)
            if (
                not np.issubdtype(seats.dtype, np.integer)
                or ((seats < 0) | (seats >= self.num_players)).any()
            ):
                raise ValueError(
                    f"player {player!r} is not a player of this env: use an int "
                    f"0..{self.num_players - 1}"
                )
        return jnp.asarray(player, jnp.int32)

    def check_state(self, state: State) -> None:
        """Raise `ValueError` for a state whose arrays cannot be this env's (another player
        count or hand size). Works on shapes, under `jit` and `vmap` too; a state of other
        rules with the same shapes cannot be told apart (the state holds arrays only)."""
        hands = state._x.hands.shape[-2:]
        obs = state.observation.shape[-1:]
        mask = state.legal_action_mask.shape[-1:]
        if (
            hands != (self.num_players, NUM_CARDS)
            or obs != self.observation_shape
            or mask != (self.num_actions,)
        ):
            raise ValueError(
                f"this state is not one of this env's: its arrays are for {hands[0]} players "
                f"({mask[0]} actions, {obs[0]} features), and this env plays {self.rules} "
                f"({self.num_actions} actions, {self.observation_shape[0]} features)"
            )

    def to_game(self, state: State, index: int | None = None) -> Game:
        """The engine `Game` of a state's position; `index` picks one game of a batch (a state
        with a leading batch axis needs it). Raises `ValueError` for a state ended by an illegal
        action (the engine has no such end: docs/jax.md) and `InvalidPositionError` if the
        arrays hold no valid position (the engine checks it as `Game.from_dict` does)."""
        from rummy500_env.jax.convert import to_game

        self.check_state(state)
        return to_game(self.rules, state, index)

    def from_game(self, game: Game) -> State:
        """The state of an engine `Game`'s position, stock order included: stepping it plays on
        from the same deal. The game's rules must be this env's (`ValueError` otherwise). A
        game whose hand is over gives an ended state (``terminated``, or ``truncated`` at
        `hand_limit`)."""
        from rummy500_env.jax.convert import game_state

        if game.rules != self.rules:
            raise ValueError(
                f"from_game: the game's rules {game.rules} are not this env's {self.rules}"
            )
        out: State = finish_core(self.shape, self.rule_params, game_state(game))
        return out


def action_id(action: Any, num_actions: int) -> Array:
    """An action as an int32 id: a non-integer is refused (`TypeError`); a concrete id outside
    0..num_actions-1, of any width, becomes -1 (illegal), before int32 could wrap it. A traced
    id is int32 already (with JAX's default 32-bit types, as `vmap` passes it)."""
    dtype = jnp.result_type(action)
    if not jnp.issubdtype(dtype, jnp.integer) or jnp.issubdtype(dtype, jnp.bool_):
        raise TypeError(
            f"an action is an integer id 0..{num_actions - 1}, got {action!r} of type {dtype}"
        )
    if isinstance(action, jax.core.Tracer):
        return action.astype(jnp.int32)
    ids = np.asarray(action)
    inside = (ids >= 0) & (ids < num_actions)
    return jnp.asarray(np.where(inside, ids, -1).astype(np.int32))


# --- the compiled core: shared by every env with the same players and hand size ------------------


def _finish(
    shape: Shape,
    params: RuleParams,
    x: GameState,
    rewards: Array,
    term: Array,
    trunc: Array,
    steps: Array,
) -> State:
    """A state's mask and observation for its position (all True once the episode is over)."""
    return State(
        current_player=x.turn,
        observation=observe(shape, params, x, x.turn),
        rewards=rewards,
        terminated=term,
        truncated=trunc,
        legal_action_mask=_rules.legal_mask(shape, params, x) | term | trunc,
        _step_count=steps,
        _x=x,
    )


@functools.partial(jax.jit, static_argnums=0)
def init_core(shape: Shape, params: RuleParams, key: Array) -> State:
    x = _rules.new_game(shape, key)
    zero = jnp.bool_(False)
    return _finish(
        shape, params, x, jnp.zeros(shape.players, jnp.float32), zero, zero, jnp.int32(0)
    )


@functools.partial(jax.jit, static_argnums=0)
def observe_core(shape: Shape, params: RuleParams, state: State, player: Array) -> Array:
    return observe(shape, params, state._x, player)


@functools.partial(jax.jit, static_argnums=0)
def finish_core(shape: Shape, params: RuleParams, x: GameState) -> State:
    """The state of a position set from outside (`Env.from_game`): over once the hand is over."""
    over = x.phase >= HAND_OVER
    _, end = _rules.end_hand(shape, params, x.replace(hands_played=x.hands_played - 1))
    trunc = (x.phase == GAME_OVER) & end.truncated
    zero = jnp.zeros(shape.players, jnp.float32)
    return _finish(shape, params, x, zero, over & ~trunc, trunc, jnp.int32(0))


@functools.partial(jax.jit, static_argnums=0)
def world_core(shape: Shape, params: RuleParams, state: State, player: Array, key: Array) -> State:
    """`Env.deal_world`: the position dealt again for `player`, its mask and observation."""
    x = deal_world(shape, state._x, player, key)
    done = state.terminated | state.truncated
    return state.replace(
        observation=observe(shape, params, x, x.turn),
        legal_action_mask=_rules.legal_mask(shape, params, x) | done,
        _x=x,
    )


def _rewards(shape: Shape, params: RuleParams, end: _rules.HandEnd) -> Array:
    """`Rummy500Env._hand_over`'s rewards for a hand that has ended."""
    n = shape.players
    s = end.scores
    # (s_i - mean of the others) / 100 = (n s_i - sum) / (100 (n - 1)): one rounding
    score = _rules.exact_div(n * s - s.sum(), jnp.int32(100 * (n - 1)))
    seats = jnp.arange(n)
    win = jnp.where(seats == end.winner, np.float32(1.0), np.float32(-1.0 / (n - 1)))
    won = params.win_reward & end.game_over & (end.winner >= 0)
    return jnp.where(won, win, jnp.where(params.win_reward, np.float32(0.0), score))


def _select(flag: Array, a: Any, b: Any) -> Any:
    """`a` where `flag`, else `b`, for every array of two pytrees of one structure."""
    return jax.tree_util.tree_map(lambda u, v: jnp.where(flag, u, v), a, b)


def _play(shape: Shape, params: RuleParams, state: State, action: Array, key: Array) -> State:
    """One legal step (pgx's ``Env._step``): apply, then end the hand, hand out the rewards,
    end the episode or deal the next hand."""
    x, ended = _rules.apply(shape, params, state._x, action)
    scored, end = _rules.end_hand(shape, params, x)
    x = _select(ended, scored, x)
    rewards = jnp.where(ended, _rewards(shape, params, end), np.float32(0.0))
    trunc = ended & end.game_over & end.truncated
    term = ended & ((end.game_over & ~end.truncated) | (~end.game_over & ~params.game_episode))
    again = ended & ~end.game_over & params.game_episode
    following = x.replace(totals=end.totals, dealer=(x.dealer + 1) % shape.players)
    x = _select(again, _rules.deal(shape, following, key), x)
    return _finish(shape, params, x, rewards, term, trunc, state._step_count + 1)


@functools.partial(jax.jit, static_argnums=0)
def step_core(shape: Shape, params: RuleParams, state: State, action: Array, key: Array) -> State:
    """pgx's ``Env.step``: a step of an ended episode gives zero rewards and changes nothing;
    an illegal action ends the episode with the penalty and leaves the position where it was
    (the class docstring)."""
    action = jnp.asarray(action, jnp.int32)
    n = shape.players
    inside = (action >= 0) & (action < shape.num_actions)
    legal = inside & state.legal_action_mask[jnp.clip(action, 0, shape.num_actions - 1)]
    done = state.terminated | state.truncated
    bad = ~legal & ~done
    played = _play(shape, params, state, action, key)
    out: State = _select(done | bad, state, played)
    penalty = jnp.where(
        jnp.arange(n) == state.current_player,
        np.float32(ILLEGAL_ACTION_PENALTY),
        np.float32(-ILLEGAL_ACTION_PENALTY / (n - 1)),
    )
    zero = jnp.zeros(n, jnp.float32)
    return out.replace(
        rewards=jnp.where(bad, penalty, jnp.where(done, zero, played.rewards)),
        terminated=out.terminated | bad,
        legal_action_mask=out.legal_action_mask | bad,
    )
