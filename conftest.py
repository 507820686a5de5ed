"""Doctests on a compiled build (setup.py; README "Speed").

``--doctest-modules`` imports each source file to read its examples; with the compiled core
loaded, the module behind ``engine/game.py`` is its extension, which pytest refuses as a file
mismatch, and whose functions doctest could not read anyway. So a compiled run leaves those
files to the pure run that `tests/test_compiled.py` starts, which runs their doctests on the
``.py`` sources. Without the jax extra, the JAX engine's package and the trainer on it are not
collected (their imports say which extra to install).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import rummy500_env
from rummy500_env import _build

PACKAGE = Path(__file__).resolve().parent / "rummy500_env"
NEEDS_JAX = (PACKAGE / "jax", PACKAGE / "training" / "jax_ppo.py")
"""The JAX engine and its trainer (the jax extra): read only where JAX is installed."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if rummy500_env.COMPILED and collection_path in _build.compiled_sources().values():
        return True
    if collection_path in NEEDS_JAX and importlib.util.find_spec("jax") is None:
        return True
    return None
