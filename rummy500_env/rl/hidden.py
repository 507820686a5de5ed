"""What a seat cannot see, encoded for networks that may read it: a critic in training
(``critic: full``) and a search's value in the worlds it deals (`agents.networks.TableValue`).
A policy never reads it."""

from __future__ import annotations

import numpy as np

from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.game import Game
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import FloatArray


def hidden_hands_size(rules: Rules) -> int:
    """The length of `hidden_hands`: 52 card counts (and a joker count) per other seat."""
    return (rules.players - 1) * (52 + (1 if rules.jokers else 0))


def hidden_hands(game: Game, seat: int) -> FloatArray:
    """The hand of every other seat than `seat`, in turn order after it (seat + 1, seat + 2,
    ...; the observation's rotation), each as card counts / decks and, with jokers, jokers /
    jokers in the deck. The env's `state()` encodes the others' hands the same way for seat
    0; this is its form for any seat. The stock's order is left out for the same reason as
    there: nobody can plan on it."""
    r = game.rules
    n, width = r.players, 52 + (1 if r.jokers else 0)
    out = np.zeros(hidden_hands_size(r), np.float32)
    for k in range(1, n):
        row = (k - 1) * width
        for c in game.hand((seat + k) % n):
            if c == JOKER:
                out[row + 52] += 1.0 / r.joker_count
            else:
                out[row + c] += 1.0 / r.deck_count
    return out
