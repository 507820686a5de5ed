"""The Rummy 500 rules engine: standard library only, readable next to docs/rules.md.

Layers, each importing only those above it: `errors`, `cards` → `rules` → `melds` →
`scoring`, `notation` → `positions` → `seat_view`, `render` → `game` → `records`.
"""

from rummy500_env.engine.cards import card_str, parse_card, parse_cards
from rummy500_env.engine.errors import (
    ActionParseError,
    IllegalActionError,
    InvalidPositionError,
    RulesError,
    Rummy500Error,
)
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.positions import Position
from rummy500_env.engine.rules import PRESETS, Rules
from rummy500_env.engine.scoring import HandResult
from rummy500_env.engine.seat_view import SeatView

__all__ = [
    "PRESETS",
    "Action",
    "ActionParseError",
    "Game",
    "HandResult",
    "IllegalActionError",
    "InvalidPositionError",
    "Position",
    "Rules",
    "RulesError",
    "Rummy500Error",
    "SeatView",
    "card_str",
    "parse_card",
    "parse_cards",
]
