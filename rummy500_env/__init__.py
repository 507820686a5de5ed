"""rummy500_env: a Rummy 500 rules engine with PettingZoo and Gymnasium environments.

The engine (`Game`, `Rules`, `Action`) imports only the standard library. The RL entry points
`env` and `raw_env` are loaded lazily (PEP 562), so importing the engine does not import numpy,
gymnasium or pettingzoo.
"""

from __future__ import annotations

import importlib
from typing import Any

from rummy500_env.cards import card_str, parse_card, parse_cards
from rummy500_env.errors import (
    ActionParseError,
    IllegalActionError,
    InvalidPositionError,
    RulesError,
    Rummy500Error,
)
from rummy500_env.game import Action, Game
from rummy500_env.rules import PRESETS, Rules

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "Action",
    "ActionParseError",
    "Game",
    "IllegalActionError",
    "InvalidPositionError",
    "Rules",
    "RulesError",
    "Rummy500Error",
    "__version__",
    "card_str",
    "env",
    "parse_card",
    "parse_cards",
    "raw_env",
]


def __getattr__(name: str) -> Any:
    """Load the RL layer on first use (PEP 562), keeping `import rummy500_env` light."""
    if name in ("env", "raw_env"):
        module = importlib.import_module("rummy500_env.env")
        # `rummy500_env.env` is both the module env.py and the factory env(): the module is
        # made callable (see the end of env.py), so either one works as `env(**kwargs)`.
        return module if name == "env" else module.raw_env
    raise AttributeError(f"module 'rummy500_env' has no attribute {name!r}")
