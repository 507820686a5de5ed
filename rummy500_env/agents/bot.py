"""`Bot`: what the hand-written bots share. A bot decides on the engine's information state
(`decide(seat_view, legal_actions) -> Action`), the path the package's own loops take; `act`
serves a plain PettingZoo loop by decoding the observation into the same `SeatView` once and
the mask's ids into the same engine actions, so both paths choose alike."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from rummy500_env.engine.cards import Card
from rummy500_env.engine.melds import hand_values, template_index
from rummy500_env.engine.notation import Action, pile_depth
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder


class Bot(abc.ABC):
    """What the hand-written bots share: they decide on the engine's information state
    (`decide(view, legal)`, the path the package's own loops take) and, for a plain
    PettingZoo loop, on an observation and its mask (`act`), which decodes the observation
    into the same `SeatView` once and the ids into the same engine actions, so both paths
    choose alike."""

    def __init__(self, rules: Rules | str | dict[str, Any] = "standard") -> None:
        self.rules = Rules.coerce(rules)
        self.codec = ActionCodec(self.rules)
        self.encoder = ObservationEncoder(self.rules)
        self.values = hand_values(self.rules.scoring)

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        view = self.encoder.seat_view(observation)
        ids = np.flatnonzero(action_mask)
        if not ids.size:
            raise ValueError("the action mask has no legal action: is this agent to act?")
        legal = [self.codec.decode(view, int(i)) for i in ids]
        return self.codec.encode(view, self.decide(view, legal))

    @abc.abstractmethod
    def decide(self, view: SeatView, legal: Sequence[Action]) -> Action:
        """One of `legal` (the actions of the seat of `view`, which is to act)."""

    def ordered(self, view: SeatView, legal: Sequence[Action]) -> list[Action]:
        """`legal` in action-id order (stable), the order every tie is broken by."""
        if not legal:
            raise ValueError("no legal action given: is this seat to act?")
        encode = self.codec.encode
        return sorted(legal, key=lambda a: encode(view, a))

    def taken(self, view: SeatView, a: Action) -> tuple[Card, ...]:
        """The cards a take, dig or call puts in the hand, top card first."""
        depth = pile_depth(view.pile, a)
        assert depth is not None, f"{a} takes nothing from this pile"
        return view.pile[len(view.pile) - 1 - depth :][::-1]


def joker_of(a: Action) -> Card:
    """The card a joker of a meld or lay-off stands for; -1 without one."""
    return a.jokers.bit_length() - 1 if a.jokers else -1


def template(a: Action) -> int:
    """The three-card template of a meld action (`MELD_TEMPLATES` order)."""
    t = template_index(a.cards)
    assert t is not None, f"{a} is not a three-card meld"
    return t
