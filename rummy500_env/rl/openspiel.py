"""Rummy 500 as an OpenSpiel game: ``pyspiel.load_game("python_rummy500", {...})``.

Importing this module registers the game (``pip install -e ".[openspiel]"``)::

    import pyspiel
    import rummy500_env.rl.openspiel  # registers python_rummy500
    game = pyspiel.load_game("python_rummy500", {"players": 3, "scoring": "fives"})

==================  ==========================================================================
Parameters          every `Rules` field by its name (docs/rules.md §2, §4, §5), where 0 stands
                    for None (``hand_size``/``decks``: the rules' default; ``hand_limit``: no
                    limit), plus ``episode`` and ``returns`` below
Dynamics            sequential, imperfect information, explicit chance nodes
Chance              every card dealt (round the table from the dealer's left, then the card
                    turned up to start the pile) and every card drawn from the stock is a
                    chance outcome: the card id (`cards`; 52 is a joker), with the probability
                    of its copies among the cards not yet dealt, or still in the stock
Actions             the ids of `ActionCodec` (the PettingZoo env's ``Discrete(N)``); legal
                    actions are exactly the engine's legal set, sorted. ``draw`` (id 0) is a
                    player's choice; the card it brings is the chance node that follows it
Information state   the seat's `SeatView` (what it knows of every card's whereabouts: its hand,
                    the pile in order, the table with owners, the cards each player is known to
                    hold, sizes, totals, the turn): the string spells it out, the tensor is the
                    whole `ObservationEncoder` vector (its exact part makes it lossless)
Observation         the same view: the string as above, the tensor the encoder's feature part
                    (``features_size`` floats, what the package's policies read)
Resampling          ``state.resample_from_infostate(player, sampler)`` deals the cards that
                    seat cannot see again at random (`Game.from_seat_view`); IS-MCTS and other
                    determinizing searches call it
Returns             at the end only (terminal reward model); see ``returns``
==================  ==========================================================================

``episode``: ``"hand"`` (the default, as OpenSpiel's card games are: one deal, scored) or
``"game"`` (hands are dealt, by chance nodes again, until a total reaches the target or
`hand_limit` stops the game). ``returns``: ``"margin"`` (the default; zero-sum: a seat's hand
score, or final total with ``episode="game"``, minus the mean of the others'), ``"score"``
(general-sum: the hand score, or final total, itself) or ``"win"`` (zero-sum: 1 to the one seat
with the highest hand score, or to the game's winner, and -1/(n-1) to the others; 0 to all on
a tie or a drawn game).

The information state is the engine's `SeatView`, not the list of the seat's past
observations: it says where every card the seat has seen lies now, which is all that the
hidden cards' distribution depends on (so `resample_from_infostate` is exact), and it counts
the turns, so no two points of a hand share it; two different paths to one view do share it.
OpenSpiel's history (``state.history()``) is the record of every action and chance outcome; a
state from `resample_from_infostate` or `Rummy500Game.state_from_seat_view` starts a new one.

A hand needs an end for OpenSpiel's ``max_game_length``: ``turn_limit`` must be set (it is 200
by default), and with ``episode="game"`` ``hand_limit`` too.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pyspiel

from rummy500_env.engine.cards import JOKER, NUM_CARDS, Card, card_str, cards_str
from rummy500_env.engine.errors import IllegalActionError, RulesError
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import DRAW
from rummy500_env.engine.render import render
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.scoring import HandResult
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder

GAME_NAME = "python_rummy500"
EPISODES = ("hand", "game")
RETURNS = ("margin", "score", "win")
_NONE_AS_ZERO = ("hand_size", "decks", "turn_limit", "hand_limit")
"""`Rules` fields whose None is written 0 (OpenSpiel parameters have no None)."""


def _parameter_defaults() -> dict[str, Any]:
    """The game's parameters with their defaults: the `Rules` fields, then the episode's."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(Rules):
        default = f.default
        out[f.name] = 0 if default is None and f.name in _NONE_AS_ZERO else default
    return out | {"episode": "hand", "returns": "margin"}


PARAMETERS: dict[str, Any] = _parameter_defaults()
"""Every parameter of ``python_rummy500`` and its default."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """One game's checked parameters, with the codec and encoder its states share."""

    rules: Rules
    episode: str
    returns: str

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Settings:
        """Read OpenSpiel parameters (any left out take their defaults); `RulesError` names a
        bad value and what is allowed."""
        unknown = sorted(set(params) - set(PARAMETERS))
        if unknown:
            raise RulesError(f"unknown parameter(s) {unknown}: use {sorted(PARAMETERS)}")
        p = PARAMETERS | dict(params)
        fields = {f.name: p[f.name] for f in dataclasses.fields(Rules)}
        for name in _NONE_AS_ZERO:
            if fields[name] == 0:
                fields[name] = None
        rules = Rules(**fields)
        if p["episode"] not in EPISODES:
            raise RulesError(f"episode={p['episode']!r} is not allowed: use one of {EPISODES}")
        if p["returns"] not in RETURNS:
            raise RulesError(f"returns={p['returns']!r} is not allowed: use one of {RETURNS}")
        if rules.turn_limit is None:
            raise RulesError(
                "turn_limit=0 (no limit) is not allowed here: an OpenSpiel game needs a longest "
                "game (max_game_length), so give a positive turn_limit (default 200)"
            )
        if p["episode"] == "game" and rules.hand_limit is None:
            raise RulesError(
                "hand_limit=0 (no limit) is not allowed with episode='game': an OpenSpiel game "
                "needs a longest game, so give a positive hand_limit (default 100)"
            )
        return _settings(rules, p["episode"], p["returns"])

    @functools.cached_property
    def codec(self) -> ActionCodec:
        return ActionCodec(self.rules)

    @functools.cached_property
    def encoder(self) -> ObservationEncoder:
        return ObservationEncoder(self.rules)

    @property
    def deal_size(self) -> int:
        """Chance outcomes in a deal: every hand, and the card that starts the pile."""
        return self.rules.players * self.rules.cards_per_hand + 1

    def params(self) -> dict[str, Any]:
        """The OpenSpiel parameters of these settings."""
        fields = dataclasses.asdict(self.rules)
        for name in _NONE_AS_ZERO:
            if fields[name] is None:
                fields[name] = 0
        return fields | {"episode": self.episode, "returns": self.returns}

    def max_hand_length(self) -> int:
        """Player decisions in one hand at most: each turn (at most ``turn_limit`` + 1 are
        started) has a take and a discard, and with calls a call, a done and a pass from each
        other player; melds and lay-offs put cards on the table for good, so at most the
        deck's size of them."""
        r = self.rules
        assert r.turn_limit is not None  # `from_params` refuses None
        per_turn = 2 + (r.players + 1 if r.rummy_calls else 0)
        return (r.turn_limit + 1) * per_turn + r.deck_size

    def utility_bound(self) -> float:
        """The largest |return|: a hand moves at most the deck's value (15 a card at most)
        between the players; a game has at most ``hand_limit`` hands."""
        if self.returns == "win":
            return 1.0
        hands = 1 if self.episode == "hand" else (self.rules.hand_limit or 1)
        return float(15 * self.rules.deck_size * hands)

    def game_type(self) -> pyspiel.GameType:
        """The game's type; its utility follows ``returns`` (general-sum for ``score``)."""
        utility = (
            pyspiel.GameType.Utility.GENERAL_SUM
            if self.returns == "score"
            else pyspiel.GameType.Utility.ZERO_SUM
        )
        return _game_type(utility)

    def game_info(self) -> pyspiel.GameInfo:
        bound = self.utility_bound()
        hands = 1 if self.episode == "hand" else (self.rules.hand_limit or 1)
        return pyspiel.GameInfo(
            num_distinct_actions=self.codec.size,
            max_chance_outcomes=NUM_CARDS + (1 if self.rules.jokers else 0),
            num_players=self.rules.players,
            min_utility=-bound,
            max_utility=bound,
            utility_sum=None if self.returns == "score" else 0.0,
            max_game_length=self.max_hand_length() * hands,
        )

    def returns_of(self, result: HandResult) -> list[float]:
        """Each seat's return for an episode ending with `result` (the module docstring)."""
        n = self.rules.players
        points = result.scores if self.episode == "hand" else result.totals
        if self.returns == "score":
            return [float(x) for x in points]
        if self.returns == "margin":
            total = sum(points)
            return [x - (total - x) / (n - 1) for x in points]
        if self.episode == "hand":
            best = max(points)
            winner = points.index(best) if points.count(best) == 1 else None
        else:
            winner = result.winner
        if winner is None:
            return [0.0] * n
        return [1.0 if s == winner else -1.0 / (n - 1) for s in range(n)]

    def __deepcopy__(self, memo: dict[int, Any]) -> Settings:
        return self  # immutable, and shared by every state of a game

    def __reduce__(self) -> tuple[Callable[..., Settings], tuple[Any, ...]]:
        return (_settings, (self.rules, self.episode, self.returns))


@functools.cache
def _settings(rules: Rules, episode: str, returns: str) -> Settings:
    """One `Settings` per configuration, so states share their codec and encoder."""
    return Settings(rules, episode, returns)


def _game_type(utility: pyspiel.GameType.Utility) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=GAME_NAME,
        long_name="Python Rummy 500",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=8,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=PARAMETERS,
    )


GAME_TYPE = _game_type(pyspiel.GameType.Utility.ZERO_SUM)
"""The registered type (the default ``returns="margin"`` is zero-sum)."""


class Rummy500Game(pyspiel.Game):
    """``python_rummy500``: one `Rules` configuration, its episode and its returns."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        settings = Settings.from_params(params or {})
        super().__init__(settings.game_type(), settings.game_info(), settings.params())
        self.settings = settings

    def new_initial_state(self) -> Rummy500State:
        """The state before the deal: a chance node for the first card dealt."""
        return Rummy500State(self)

    def state_from_seat_view(self, view: SeatView, seed: int | random.Random) -> Rummy500State:
        """A state that `view`'s seat cannot tell from the real one, the hidden cards dealt at
        random (`Game.from_seat_view`): how a bot that is handed the engine's view searches
        it in OpenSpiel. Its history starts here."""
        if view.rules != self.settings.rules:
            raise RulesError(f"the view's rules {view.rules} are not this game's rules")
        state = Rummy500State(self)
        state.engine = Game.from_seat_view(view, seed)
        return state

    def max_chance_nodes_in_history(self) -> int:
        hands = 1 if self.settings.episode == "hand" else (self.settings.rules.hand_limit or 1)
        return hands * self.settings.rules.deck_size

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Any = None
    ) -> Rummy500Observer:
        """The observer of one seat: the information state when `iig_obs_type` asks for
        perfect recall, the observation otherwise (module docstring)."""
        return Rummy500Observer(self.settings, iig_obs_type, params)


class Rummy500State(pyspiel.State):
    """A point of a ``python_rummy500`` episode: the engine's `Game` once a hand is dealt,
    the cards dealt so far during a deal, and whether a drawn card is still to be chosen."""

    def __init__(self, game: Rummy500Game) -> None:
        super().__init__(game)
        self.settings = game.settings
        self.engine: Game | None = None
        """The hand being played (after a hand with ``episode="game"``: the last one, until
        the next is dealt)."""
        self.dealt: list[Card] = []
        """The cards of the deal in progress, in dealing order."""
        self.drawing = False
        """A player chose ``draw``: the chance node picks the card."""

    # --- where the episode is ---------------------------------------------------------------

    def _dealing(self) -> bool:
        g = self.engine
        return g is None or (g.phase == "hand_over" and self.settings.episode == "game")

    def current_player(self) -> int:
        if self.is_terminal():
            return int(pyspiel.PlayerId.TERMINAL)
        if self.drawing or self._dealing():
            return int(pyspiel.PlayerId.CHANCE)
        assert self.engine is not None
        return self.engine.current_player

    def is_terminal(self) -> bool:
        g = self.engine
        return g is not None and g.is_hand_over and not self._dealing()

    def returns(self) -> list[float]:
        if not self.is_terminal():
            return [0.0] * self.settings.rules.players
        assert self.engine is not None
        return self.settings.returns_of(self.engine.result())

    # --- chance ------------------------------------------------------------------------------

    def _undealt(self) -> Counter[Card]:
        """The cards a chance node picks from: those not dealt yet, or the stock's."""
        if self.drawing:
            assert self.engine is not None
            return Counter(self.engine.stock_cards)
        r = self.settings.rules
        left = Counter({c: r.deck_count for c in range(NUM_CARDS)})
        if r.joker_count:
            left[JOKER] = r.joker_count
        left.subtract(self.dealt)
        return +left

    def chance_outcomes(self) -> list[tuple[int, float]]:
        left = self._undealt()
        total = sum(left.values())
        return [(c, k / total) for c, k in sorted(left.items())]

    # --- actions -----------------------------------------------------------------------------

    def _legal_actions(self, player: int) -> list[int]:
        assert self.engine is not None and player == self.engine.current_player
        return sorted(set(self.settings.codec.legal_ids(self.engine)))

    def _apply_action(self, action: int) -> None:
        if self._dealing():
            self._deal(action)
            return
        g = self.engine
        assert g is not None
        if self.drawing:
            g.set_next_draw(action)  # IllegalActionError if the stock holds no such card
            g.play_unchecked(DRAW)
            self.drawing = False
            return
        a = self.settings.codec.decode(g, action)
        if a != DRAW:
            g.apply(a)  # IllegalActionError names the rule an illegal action breaks
        elif g.is_legal(a):
            self.drawing = True
        else:
            raise IllegalActionError(f"draw is illegal now: {g.why_illegal(a)}")

    def _deal(self, card: int) -> None:
        """One card of the deal; the last one deals the hand in the engine (the stock's order
        stays open: each draw's chance node picks its card)."""
        left = self._undealt()
        if left[card] <= 0:
            raise IllegalActionError(f"chance outcome {card} is no card left to deal")
        self.dealt.append(card)
        if len(self.dealt) < self.settings.deal_size:
            return
        left[card] -= 1
        deck = self.dealt + sorted(left.elements())
        self.dealt = []
        if self.engine is None:
            self.engine = Game.new(self.settings.rules, seed=0, deck=deck)
        else:
            self.engine.next_hand(deck)

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self.drawing:
                return f"draws {card_str(action)}"
            i = len(self.dealt)
            if i == self.settings.deal_size - 1:
                return f"turn up {card_str(action)}"
            # Dealt from the dealer's left: the first hand's dealer is the last seat, and
            # the next hand's is the seat after this one's.
            first = 0 if self.engine is None else self.engine.dealer + 2
            seat = (first + i) % self.settings.rules.players
            return f"deal {card_str(action)} to player {seat}"
        assert self.engine is not None
        try:
            return str(self.settings.codec.decode(self.engine, action))
        except IllegalActionError:
            return f"action {action} (names nothing here)"

    # --- information ---------------------------------------------------------------------------

    def seat_view(self, player: int) -> SeatView:
        """What `player` knows now (the engine's information state)."""
        if self.engine is None:
            raise IllegalActionError("no hand is dealt yet: the state is in the first deal")
        return self.engine.seat_view(player)

    def resample_from_infostate(
        self, player_id: int, probability_sampler: Callable[[], float]
    ) -> Rummy500State:
        """A state `player_id` cannot tell from this one: the cards it cannot see dealt again
        (`Game.from_seat_view`), seeded by one draw of `probability_sampler`."""
        if self.engine is None or self._dealing():
            raise IllegalActionError("resample_from_infostate needs a dealt hand, not a deal")
        seed = int(probability_sampler() * 2**53)
        state = Rummy500State(self.get_game())
        state.engine = Game.from_seat_view(self.engine.seat_view(player_id), seed, check=False)
        state.drawing = self.drawing
        return state

    def __str__(self) -> str:
        if self.engine is None:
            return f"dealing: {cards_str(self.dealt) or 'no card'} dealt"
        text = render(self.engine.position())
        if self._dealing():
            text += f"\ndealing the next hand: {cards_str(self.dealt) or 'no card'} dealt"
        elif self.drawing:
            text += f"\nplayer {self.engine.current_player} draws from the stock"
        return text


class Rummy500Observer:
    """OpenSpiel's observer of one seat (the `PyObserver` interface): `tensor` and its named
    views `dict` are the `ObservationEncoder` vector (the information state: all of it, the
    observation: its feature part)."""

    def __init__(
        self,
        settings: Settings,
        iig_obs_type: pyspiel.IIGObservationType | None,
        params: Any,
    ) -> None:
        if params:
            raise ValueError(f"python_rummy500 observers take no parameters, got {params!r}")
        if iig_obs_type is not None and (
            not iig_obs_type.public_info
            or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER
        ):
            raise ValueError(
                "python_rummy500 observes one seat: the public information and that seat's "
                "private cards (public_info=True, private_info=SINGLE_PLAYER), got "
                f"{iig_obs_type}"
            )
        self.encoder = settings.encoder
        self.full = iig_obs_type is not None and iig_obs_type.perfect_recall
        size = self.encoder.size if self.full else self.encoder.features_size
        self.tensor = np.zeros(size, np.float32)
        slices = self.encoder.slices if self.full else self.encoder.feature_slices
        self.dict = {name: self.tensor[s] for name, s in slices.items()}

    def set_from(self, state: Rummy500State, player: int) -> None:
        """The tensor of `player` in `state` (zeros before the first hand is dealt)."""
        if state.engine is None:
            self.tensor.fill(0.0)
            return
        self.tensor[:] = self.encoder.encode(state.engine, player)[: self.tensor.size]

    def string_from(self, state: Rummy500State, player: int) -> str:
        """`player`'s `SeatView` in words (during the first deal: the cards dealt to it)."""
        if state.engine is None:
            n = state.settings.rules.players
            mine = state.dealt[player::n][: state.settings.rules.cards_per_hand]
            return f"p{player} dealing: {cards_str(mine) or '-'}"
        text = view_string(state.engine.seat_view(player))
        if state._dealing():
            text += " | dealing"
        elif state.drawing:
            text += " | drawing"
        return text


def view_string(v: SeatView) -> str:
    """A `SeatView` in one line: every field, in a fixed order (so equal views give equal
    strings, and different views different strings)."""
    melds = " ".join(
        f"#{i}{m.kind[0]}:"
        + ",".join(f"{c}/{o}" for c, o in zip(m.labels(), m.owners, strict=True))
        for i, m in enumerate(v.melds)
    )
    known = " ".join(f"{q}:{cards_str(k)}" for q, k in enumerate(v.known) if k)
    opt = {"must": v.must_play, "top": v.taken_top}
    flags = " ".join(f"{k} {card_str(c)}" for k, c in opt.items() if c is not None)
    parts = [
        f"p{v.seat} hand {cards_str(v.hand) or '-'}",
        f"pile {cards_str(v.pile) or '-'}",
        f"melds {melds or '-'}",
        f"known {known or '-'}",
        "sizes " + " ".join(map(str, v.hand_sizes)),
        f"stock {v.stock_size}",
        "totals " + " ".join(map(str, v.totals)),
        f"dealer {v.dealer} turn {v.turn} {v.phase} turns {v.turns} hands {v.hands_played}",
    ]
    if flags:
        parts.append(flags)
    if v.discarder is not None:
        parts.append(f"after {v.discarder}'s discard")
    if v.result is not None:
        parts.append("scores " + " ".join(map(str, v.result.scores)))
    return " | ".join(parts)


def load(rules: Rules | str | dict[str, Any] = "standard", **params: Any) -> Rummy500Game:
    """``pyspiel.load_game("python_rummy500", ...)`` for a `Rules` (or preset name), with any
    of ``episode`` and ``returns``: the way from the package's rules to the game."""
    fields = Settings(Rules.coerce(rules), "hand", "margin").params()
    game = pyspiel.load_game(GAME_NAME, fields | params)
    assert isinstance(game, Rummy500Game)
    return game


pyspiel.register_game(GAME_TYPE, Rummy500Game)
