"""rummy500_env: a Rummy 500 rules engine with PettingZoo and Gymnasium environments.

Layers, each importing only the ones before it: `engine` (the rules; standard library only)
← `rl` (the action codec, observation encoders, the PettingZoo env `rl.rummy500_v0`, the
Gymnasium view `rl.single_agent`) ← `agents` ← `training` (torch) and `play`.

The RL entry points `env`, `raw_env` and `Rummy500SingleAgentEnv` load lazily (PEP 562), so
``import rummy500_env`` for the engine imports neither numpy nor PettingZoo.
"""

from __future__ import annotations

import importlib
from typing import Any

# _build first (it sorts first too): it decides whether the compiled core or its sources load.
from rummy500_env import _build, engine
from rummy500_env.engine import *  # noqa: F403 - the engine's public names, listed in its __all__
from rummy500_env.rl.registration import install

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)
COMPILED: bool = _build.COMPILED
"""Whether the engine and the RL hot path run compiled with mypyc (README "Speed"): False for
a pure Python build, under ``RUMMY500_PURE=1``, or when a compiled source was edited since."""

# env, raw_env and rummy500_v0 come from __getattr__ below (hence the noqa).
__all__ = [  # noqa: F405
    *engine.__all__,
    "COMPILED",
    "Rummy500SingleAgentEnv",
    "__version__",
    "env",
    "raw_env",
    "rummy500_v0",
]

install()  # gymnasium.make("Rummy500-v0"), pettingzoo.make("aec", "rummy500_v0")


def __getattr__(name: str) -> Any:
    """Load the RL layer on first use (PEP 562), keeping `import rummy500_env` light."""
    if name in ("env", "raw_env", "rummy500_v0"):
        module = importlib.import_module("rummy500_env.rl.rummy500_v0")
        return module if name == "rummy500_v0" else getattr(module, name)
    if name == "Rummy500SingleAgentEnv":
        return importlib.import_module("rummy500_env.rl.single_agent").Rummy500SingleAgentEnv
    raise AttributeError(f"module 'rummy500_env' has no attribute {name!r}")
