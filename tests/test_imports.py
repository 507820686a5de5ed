"""The engine imports only the standard library (DESIGN.md layers)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "gymnasium", "pettingzoo", "torch", "stable_baselines3", "sb3_contrib")


def test_engine_imports_no_rl_library():
    code = (
        "import sys, rummy500_env, rummy500_env.game, rummy500_env.render;"
        "g = rummy500_env.Game.new('standard', seed=1); g.legal_actions(); str(g);"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the engine loaded: {out.stdout.strip()}"


def test_the_check_can_fail():
    """The import probe does see a heavy module when one is loaded."""
    code = f"import sys, json; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", "import numpy;" + code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "numpy"
