"""PettingZoo AEC environment for Rummy 500.

==================  ==============================================================
Import              ``from rummy500_env import env, raw_env`` (or ``rummy500_v0``)
Actions             Discrete(N), N = 310 + deck size − players (360 for standard; more
                    with jokers or calls, see `rummy500_env.rl.actions`)
Parallel API        yes: ``pettingzoo.make("parallel", "rummy500_v0")``, that is
                    ``turn_based_aec_to_parallel(env())`` (one agent acts per step; a turn
                    is several steps by the same agent, so ``aec_to_parallel`` refuses it)
Manual control      no
Agents              ``player_0 … player_{n-1}``, 2 to 8
Action shape        (1,)
Observation shape   dict: ``observation`` Box(float32, (M,)), ``action_mask`` Box(int8, (N,))
Observation values  [-2, 2]
==================  ==============================================================

Observation
    ``observation`` is the seat's view, rotated so that it is seat 0: own hand, the discard pile
    (its top card and every card's place in it), melded cards with their owner and whether they
    sit in a set or a run, what each opponent is known to hold, hand sizes, stock and pile
    sizes, totals, table points, phase, the card under a dig obligation, the card that may not
    be discarded, and the rule flags.
    With jokers, slices for the jokers in hand, in the pile, on the table (the card each
    stands for) and known in opponents' hands; with calls, the call phase and the discarder.
    These features are what a policy reads; an *exact* part follows them (observation
    version 3), a lossless record of the seat's information state that
    `ObservationEncoder.seat_view` decodes. The slice tables are in
    `rummy500_env.rl.observation`. ``action_mask`` marks the legal ids for the agent to act and
    is all zeros for every other agent.

Actions
    Ranges draw, take the pile to depth d, decline, 100 three-card melds, 156 lay-offs
    (card × set / run low end / run high end), 52 discards; with jokers, 300 starts with a
    joker, 156 joker lay-offs and the joker's discard; with calls, a call per pile depth,
    pass and done: `rummy500_env.rl.actions`.
    ``env.unwrapped.action_to_str(a)`` and ``str_to_action(s)`` speak the engine notation.

Turns
    A turn is several steps by one agent: a draw, any melds and lay-offs, then a discard.
    ``agent_selection`` follows the engine after every step. With ``rummy_calls`` the engine
    opens a call window after a discard: each other player who could call is asked in seat
    order from the discarder's left (``call`` or ``pass``, out of turn), and a caller plays
    out of turn until ``done``; then the discarder's left neighbour takes the normal turn
    (docs/rules.md §5).

Rewards
    ``reward="win"`` (default for ``episode="game"``): when the game ends the winner gets +1
    and every other player −1/(n−1); a draw at ``hand_limit`` gives 0. ``reward="score"``
    (default for ``episode="hand"``): when a hand ends each player gets its hand score minus
    the mean of the others' hand scores, divided by 100. Both are zero-sum.

Episode end
    ``episode="game"`` (default) plays hands until a player wins (docs/rules.md §1); hands are dealt
    automatically, and when one ends every agent's ``info`` holds ``hand_scores``, ``totals``
    and ``went_out`` (absolute seat order). Reaching ``hand_limit`` without a winner is a
    truncation. ``episode="hand"`` ends after one hand (a termination). A hand cut short by
    ``turn_limit`` is a normal hand end (docs/rules.md §4).

Arguments
    ``rules``: any text `Rules.parse` reads, as every command's ``--rules`` does (a preset,
    ``"nordic,players=3"``, a JSON object of fields), a dict of `Rules` fields, or `Rules`
    (default ``"standard"``);
    ``episode``: ``"game"`` or ``"hand"``; ``reward``: ``"win"``, ``"score"`` or None (the
    episode's default); ``render_mode``: None, ``"ansi"`` or ``"human"``.
    ``reset(seed=s)`` is deterministic; ``reset(options={"position": d})`` starts from any
    position dict of the engine (its rules must equal the env's).

Errors
    The bare env raises `IllegalActionError` for an illegal action, naming the rule. ``env()``
    follows PettingZoo's classic envs: an action outside the mask ends the game with −1 for
    its player; an action that is no action id at all (wrong type, out of range, None for a
    live agent) raises `IllegalActionError` saying what is allowed; so does stepping after
    every agent is done. Before ``reset()``, ``step``, ``last``, ``observe``, ``render``,
    ``state`` and ``agent_iter`` raise `Rummy500Error` saying to call it, wrapped or bare.

Tests
    PettingZoo's harness passes: ``api_test`` and ``seed_test`` (tests/test_env.py,
    tests/test_jokers_calls_env.py); ``render_test``, ``parallel_api_test``,
    ``parallel_seed_test``, its unwrapped check and its pickle round trip for every preset
    and with jokers and calls (tests/test_pettingzoo_harness.py).

Version History
    v0: first release (package 0.1.0). Jokers and calls (docs/rules.md §5) extend the
    observation and the action ids of the rules that have them; the others are unchanged.
    `last()` and the wrapped `step()` once every agent is done are errors saying the
    episode is over (they were a bare KeyError and a warning); so is using the wrapped env
    before ``reset()`` (it was PettingZoo's AssertionError); what a live episode returns
    is unchanged. The encodings' and the policy file's versions: CHANGELOG.md.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.errors import IllegalActionError, InvalidPositionError, Rummy500Error
from rummy500_env.engine.game import Game
from rummy500_env.engine.positions import LIVE_PHASES
from rummy500_env.engine.render import render
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.observation_incremental import IncrementalEncoder

EPISODES = ("game", "hand")
REWARDS = ("win", "score")
RESET_OPTIONS = ("position",)


def raw_env(**kwargs: Any) -> Rummy500Env:
    """The bare AEC env (see the module docstring); keyword arguments as `Rummy500Env`."""
    return Rummy500Env(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The AEC env with PettingZoo's classic wrappers: an action outside the mask ends the
    game with −1 for the player who made it (TerminateIllegal), an action that is no action id
    raises a clear error (`ActionIdCheck`), and the call order is enforced."""
    e: AECEnv = raw_env(**kwargs)
    e = TerminateIllegal(e, illegal_reward=-1)
    e = ActionIdCheck(e)
    e = OrderEnforcing(e)
    return e


EPISODE_OVER = "every agent is done: the episode is over; call reset()"


class BareAttribute:
    """An attribute of the AEC API (`agents`, `rewards`, ...) that a wrapper reads straight
    from the bare env.

    PettingZoo's wrappers hold none of these: a wrapper that lacks one forwards the lookup to
    the env it wraps through `__getattr__`, after a failed lookup of its own, and so on down
    env()'s three wrappers, for each of the dozen reads a step and a `last()` make. Reading
    them here cut an env() step from 414k to 180k instructions (callgrind,
    benchmarks/env_steps.py). A non-data descriptor, so a value set on a wrapper
    still shadows it, as before; `before_reset` makes reading it before ``reset()`` the
    AttributeError PettingZoo's OrderEnforcing gives.
    """

    def __init__(self, before_reset: bool = True) -> None:
        self.before_reset = before_reset
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, wrapper: Any, owner: type | None = None) -> Any:
        if wrapper is None:
            return self
        if not (self.before_reset or wrapper._has_reset):
            raise AttributeError(f"{self.name} cannot be accessed before reset")
        return getattr(wrapper._bare, self.name)


class BareAttributes:
    """The AEC attributes a step and `last()` read, for env()'s wrappers (`BareAttribute`).
    The wrapper sets ``_bare``, the bare env, when it is made."""

    _bare: Rummy500Env
    agents = BareAttribute()
    agent_selection = BareAttribute()
    rewards = BareAttribute()
    _cumulative_rewards = BareAttribute()
    terminations = BareAttribute()
    truncations = BareAttribute()
    infos = BareAttribute()

    @property
    def unwrapped(self) -> Rummy500Env:
        return self._bare


class TerminateIllegal(
    BareAttributes,
    wrappers.TerminateIllegalWrapper,  # type: ignore[misc]  # pettingzoo is untyped
):
    """PettingZoo's TerminateIllegal, reading the AEC attributes from the bare env."""

    def __init__(self, env: AECEnv, illegal_reward: float) -> None:
        super().__init__(env, illegal_reward)
        self._bare = env.unwrapped


class OrderEnforcing(
    BareAttributes,
    wrappers.OrderEnforcingWrapper,  # type: ignore[misc]  # pettingzoo is untyped
):
    """PettingZoo's OrderEnforcing, where a `step` once every agent is done is an error, as
    the README promises (PettingZoo only logs a warning and ignores it), and so is `last`
    (PettingZoo's reads the reward of an agent already removed: a bare KeyError). Before
    ``reset()`` its methods raise the bare env's `Rummy500Error` saying to call it
    (PettingZoo's are an `AssertionError`, or an `AttributeError` for `last`); reading an
    attribute such as `agent_selection` is still PettingZoo's `AttributeError`."""

    agents = BareAttribute(before_reset=False)
    agent_selection = BareAttribute(before_reset=False)
    rewards = BareAttribute(before_reset=False)
    terminations = BareAttribute(before_reset=False)
    truncations = BareAttribute(before_reset=False)
    infos = BareAttribute(before_reset=False)

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._bare = env.unwrapped

    def _require_reset(self) -> None:
        if not self._has_reset:
            raise Rummy500Error("call reset() before using the env")

    def step(self, action: Any) -> None:
        self._require_reset()
        if not self.agents:
            raise IllegalActionError(EPISODE_OVER)
        super().step(action)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._require_reset()
        if not self.agents:
            raise Rummy500Error(f"last(): {EPISODE_OVER}")
        return super().last(observe)  # type: ignore[no-any-return]  # pettingzoo is untyped

    def observe(self, agent: str) -> Any:
        self._require_reset()
        return super().observe(agent)

    def render(self) -> Any:
        self._require_reset()
        return super().render()

    def state(self) -> Any:
        self._require_reset()
        return super().state()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self._require_reset()
        return super().agent_iter(max_iter)


class ActionIdCheck(BareAttributes, wrappers.BaseWrapper):  # type: ignore[misc]  # untyped
    """PettingZoo's AssertOutOfBounds, with errors that say what was wrong and what is
    allowed (an `assert` says neither, and vanishes under ``python -O``)."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._bare = env.unwrapped

    def step(self, action: Any) -> None:
        self._bare.check_action_id(action)
        super().step(action)

    def __str__(self) -> str:
        return str(self.env)


class Rummy500Env(AECEnv, EzPickle):  # type: ignore[misc]  # pettingzoo is untyped
    """The bare AEC env: an illegal action raises `IllegalActionError` (see module docstring).

    Args:
        rules: rules text (`Rules.parse`: ``"nordic"``, ``"nordic,players=3"``, JSON), a dict
            of `Rules` fields, or `Rules`.
        episode: ``"game"`` or ``"hand"``.
        reward: ``"win"``, ``"score"`` or None (the episode's default).
        render_mode: None, ``"ansi"`` or ``"human"``.
    """

    metadata = {  # noqa: RUF012 - the PettingZoo convention
        "name": "rummy500_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        rules: Rules | str | dict[str, Any] = "standard",
        episode: str = "game",
        reward: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        EzPickle.__init__(self, rules, episode, reward, render_mode)
        super().__init__()
        self.rules = Rules.parse(rules) if isinstance(rules, str) else Rules.coerce(rules)
        if episode not in EPISODES:
            raise Rummy500Error(f"episode={episode!r} is not allowed: use one of {EPISODES}")
        reward = reward or ("win" if episode == "game" else "score")
        if reward not in REWARDS:
            raise Rummy500Error(f"reward={reward!r} is not allowed: use one of {REWARDS} or None")
        if render_mode not in (None, "ansi", "human"):
            raise Rummy500Error(
                f"render_mode={render_mode!r} is not allowed: use None, 'ansi' or 'human'"
            )
        self.episode, self.reward_mode, self.render_mode = episode, reward, render_mode
        n = self.rules.players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self.codec = ActionCodec(self.rules)
        self._n_actions = self.codec.size
        self.encoder = IncrementalEncoder(self.rules)
        obs_space = gymnasium.spaces.Dict(
            {
                "observation": gymnasium.spaces.Box(-2.0, 2.0, (self.encoder.size,), np.float32),
                "action_mask": gymnasium.spaces.Box(0, 1, (self.codec.size,), np.int8),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        self.action_spaces = {
            a: gymnasium.spaces.Discrete(self.codec.size) for a in self.possible_agents
        }
        self._seeder = random.Random()
        self.game: Game | None = None
        self.hand_result: HandResult | None = None
        """The engine's result of the last hand that ended (`Game.result`), kept after the
        next hand is dealt."""
        self._legal: list[int] | None = None
        self._obs_cache: dict[int, dict[str, np.ndarray]] = {}

    @property
    def state_space(self) -> gymnasium.spaces.Box:
        """The space of `state()`."""
        return gymnasium.spaces.Box(-2.0, 2.0, (self._state_size(),), np.float32)

    def _state_size(self) -> int:
        n = self.rules.players
        return self.encoder.features_size + (n - 1) * (52 + (1 if self.rules.jokers else 0))

    def state(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """A full-information vector FOR TRAINING CENTRALISED CRITICS ONLY (never give it to a
        policy: it holds every hand). Player 0's feature part of the observation (the public
        position and player 0's hand), then the hand of every other player in seat order
        (card counts / D; with jokers then each one's jokers / K). The stock's order is left
        out: no player can know it, and a critic that saw it would value positions by draws
        nobody can plan for; the stock's cards are what the hands, pile and table leave."""
        game, r = self._require_game(), self.rules
        enc = ObservationEncoder(r)
        parts = [enc.encode(game, 0)[: enc.features_size]]
        for p in range(1, r.players):
            hand = np.zeros(52 + (1 if r.jokers else 0), np.float32)
            for c in game.hand(p):
                if c == JOKER:
                    hand[52] += 1.0 / r.joker_count
                else:
                    hand[c] += 1.0 / r.deck_count
            parts.append(hand)
        return np.concatenate(parts)

    def seat_view(self, agent: str) -> SeatView:
        """What `agent` knows now: the engine's information state (`Game.seat_view`), in the
        game's own seat numbers (the observation's frame is `SeatView.relative()`)."""
        return self._require_game().seat_view(self._seat_of(agent))

    def _seat_of(self, agent: str) -> int:
        """The seat of an agent name; a clear error for a name that is none."""
        try:
            return self.agent_name_mapping[agent]
        except KeyError:
            raise Rummy500Error(
                f"unknown agent {agent!r}; agents are {self.possible_agents}"
            ) from None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle (and `copy.deepcopy`) the live env, game and seeder included, so a copy
        goes on with the same seeded game step for step (EzPickle alone rebuilds a fresh env
        from the constructor's arguments)."""
        state = self.__dict__.copy()
        state["_obs_cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def observation_space(self, agent: str) -> gymnasium.spaces.Dict:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Discrete:
        return self.action_spaces[agent]

    # --- episode control -----------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Deal a new game (or hand); ``seed`` makes it replay exactly, ``options={"position":
        d}`` starts from an engine position dict (its rules must equal the env's)."""
        if seed is not None:
            if type(seed) is not int and not isinstance(seed, np.integer):
                raise Rummy500Error(f"seed must be an int or None, got {seed!r}")
            self._seeder = random.Random(int(seed))
        if options is not None and not isinstance(options, dict):
            raise Rummy500Error(
                f"options must be a dict (allowed keys: {RESET_OPTIONS}) or None, got {options!r}"
            )
        unknown = sorted(set(options or {}) - set(RESET_OPTIONS), key=str)
        if unknown:  # a warning, not an error: PettingZoo's api_test passes {"options": 1}
            warnings.warn(
                f"reset ignores the unknown option(s) {unknown}; it reads: {RESET_OPTIONS}",
                stacklevel=2,
            )
        position = (options or {}).get("position")
        if position is None:
            self.game = Game.new(self.rules, seed=self._seeder.getrandbits(63))
        else:
            self.game = self._game_from_position(position)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.hand_result = None
        self._hand_results_out = False
        self._after_move(self.game)

    def _game_from_position(self, position: dict[str, Any] | Game) -> Game:
        g = position if isinstance(position, Game) else Game.from_dict(position)
        if g.rules != self.rules:
            raise InvalidPositionError(
                [
                    f"the position's rules {g.rules} differ from the env's rules {self.rules}; "
                    "make the env with the same rules"
                ]
            )
        if g.is_hand_over:
            raise InvalidPositionError(
                [f"the position's phase is {g.phase!r}: start from a position in play"]
            )
        return g.copy()

    def _after_move(self, game: Game) -> None:
        """Refresh the caches and point `agent_selection` at the engine's player to act."""
        self._legal = None
        self._obs_cache.clear()
        self.agent_selection = self.possible_agents[game.turn]

    # --- observation -----------------------------------------------------------------------

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of(agent)
        cached = self._obs_cache.get(seat)
        if cached is not None:
            return cached
        game = self._require_game()
        mask = bytearray(self._n_actions)  # filled byte by byte: cheaper than numpy indexing
        if agent == self.agent_selection and not (
            self.terminations[agent] or self.truncations[agent]
        ):
            for i in self._legal if self._legal is not None else self.legal_ids():
                mask[i] = 1
        out: dict[str, np.ndarray] = {
            "observation": self.encoder.encode_update(game, seat),
            "action_mask": np.frombuffer(mask, np.int8),
        }
        self._obs_cache[seat] = out
        return out

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's `last`, with errors before `reset` and after the episode."""
        self._require_game()
        if not self.agents:  # each agent's final reward came from last() before its step(None)
            raise Rummy500Error(f"last(): {EPISODE_OVER}")
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def legal_ids(self) -> list[int]:
        """Legal action ids of the agent to act."""
        if self._legal is None:
            self._legal = self.codec.legal_ids(self._require_game())
        return self._legal

    def _require_game(self) -> Game:
        if self.game is None:
            raise Rummy500Error("call reset() before using the env")
        return self.game

    def check_action_id(self, action: Any) -> None:
        """Raise `IllegalActionError` unless `action` is an action id (an int 0..N-1) or None
        for an agent that is done; says what is allowed. Whether the id is legal now is the
        mask's to say."""
        self._require_game()
        if not self.agents:
            raise IllegalActionError(EPISODE_OVER)
        agent = self.agent_selection
        done = self.terminations[agent] or self.truncations[agent]
        if action is None:
            if not done:
                raise IllegalActionError(
                    f"{agent} is to act: step(None) is only for an agent that is done; give an "
                    f"action id 0..{self._n_actions - 1} where the action mask is 1"
                )
            return
        if (type(action) is not int and not isinstance(action, np.integer)) or isinstance(
            action, bool
        ):
            hint = (
                f"; for notation use env.unwrapped.str_to_action({action!r})"
                if isinstance(action, str)
                else ""
            )
            raise IllegalActionError(
                f"an action must be an int id 0..{self._n_actions - 1}, got {action!r} "
                f"({type(action).__name__}){hint}"
            )
        if not 0 <= action < self._n_actions:
            raise IllegalActionError(
                f"action id {action} is out of range: ids are 0..{self._n_actions - 1} "
                f"(rules: {self.rules.preset_name() or self.rules})"
            )

    # --- stepping ----------------------------------------------------------------------------

    def step(self, action: int | None) -> None:
        game = self._require_game()
        if not self.agents:
            raise IllegalActionError(EPISODE_OVER)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        legal = self._legal if self._legal is not None else self.legal_ids()
        if action not in legal:
            self.check_action_id(action)
            assert action is not None  # check_action_id refuses None for a live agent
            engine_action = self.codec.decode(game, action)  # raises for ids that name nothing
            why = game.why_illegal(engine_action) or "its id is not in the action mask"
            raise IllegalActionError(
                f"{agent}: action {action} ({engine_action}) is illegal: {why}"
            )
        if self._hand_results_out:  # the previous step ended a hand: clear what it handed out
            self._hand_results_out = False
            self._clear_rewards()
            for a in self.agents:
                self.infos[a] = {}
        self._cumulative_rewards[agent] = 0.0
        game.play_unchecked(self.codec.decode(game, action))  # legal: it is in the mask
        if game.phase not in LIVE_PHASES:  # the hand is over
            self._hand_over(game)
            self._accumulate_rewards()
        self._after_move(game)
        if self.render_mode == "human":
            self.render()

    def _hand_over(self, game: Game) -> None:
        """Hand the results out, then end the episode or deal the next hand."""
        self._hand_results_out = True
        n = self.rules.players
        result = self.hand_result = game.result()
        scores = list(result.scores)
        info = {
            "hand_scores": scores,
            "totals": list(result.totals),
            "went_out": result.went_out,
            "hands_played": game.hands_played,
        }
        for a in self.agents:
            self.infos[a] = dict(info)
        if self.reward_mode == "score":
            total = sum(scores)
            for i, a in enumerate(self.possible_agents):
                others = (total - scores[i]) / (n - 1)
                self.rewards[a] = (scores[i] - others) / 100.0
        if result.game_over:
            winner = result.winner
            if self.reward_mode == "win" and winner is not None:
                for i, a in enumerate(self.possible_agents):
                    self.rewards[a] = 1.0 if i == winner else -1.0 / (n - 1)
            for a in self.agents:
                self.infos[a]["winner"] = winner
            done = self.truncations if result.truncated else self.terminations
            for a in self.agents:
                done[a] = True
        elif self.episode == "hand":
            for a in self.agents:
                self.terminations[a] = True
        else:
            game.next_hand()

    # --- notation and rendering -------------------------------------------------------------

    def action_to_str(self, action: int) -> str:
        """The engine notation of an action id in the current position."""
        return self.codec.action_to_str(self._require_game(), action)

    def str_to_action(self, text: str) -> int:
        """The action id of an action in the engine notation, in the current position."""
        return self.codec.str_to_action(self._require_game(), text)

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; use 'ansi' or 'human'")
            return None
        text = render(self._require_game().position())
        if self.render_mode == "human":
            print(text, end="\n\n")
            return None
        return text

    def close(self) -> None:
        pass
