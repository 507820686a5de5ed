"""Every recipe in examples/ runs for a few steps, each in its own interpreter, and says
what it checked (legal actions only, hands finished, updates made). A recipe whose framework
is not installed is skipped, naming the extra that installs it (the test extra installs
stable-baselines3, PettingZoo and mctx; ``frameworks`` adds TorchRL and Tianshou, ``rllib`` adds
Ray RLlib, ``openspiel`` OpenSpiel)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the whole module: see docs/contributing.md

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

RECIPES = {
    # file: (modules it needs, extra that installs them, arguments, what its last line says)
    "pettingzoo_parallel.py": (["pettingzoo"], "core", ["--steps", "300"], "turn_based_aec"),
    "sb3_maskable_ppo.py": (["sb3_contrib"], "sb3", ["--steps", "128"], "sb3: MaskablePPO"),
    "cleanrl_ppo.py": (["torch"], "train", ["--steps", "256", "--envs", "2"], "cleanrl:"),
    "torchrl_rollout.py": (["torchrl"], "frameworks", ["--steps", "150"], "torchrl:"),
    "tianshou_dqn.py": (["tianshou"], "frameworks", ["--steps", "200"], "tianshou:"),
    "rllib_selfplay.py": (["ray.rllib"], "rllib", ["--iterations", "1"], "rllib: exported"),
    "mctx_alphazero.py": (
        ["mctx"],
        "test",
        ["--hands", "2", "--simulations", "8", "--max-steps", "30"],
        "mctx: Gumbel MuZero",
    ),
    "openspiel_ismcts.py": (
        ["pyspiel"],
        "openspiel",
        ["--hands", "2", "--simulations", "10"],
        "openspiel: IS-MCTS",
    ),
}


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(RECIPES)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_runs(name):
    run_recipe(name, RECIPES[name][2])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cleanrl_recipe_runs_on_gymnasium_vector_envs(mode):
    """The default run above takes the package's vector env; Gymnasium's own serve too."""
    args = [*RECIPES["cleanrl_ppo.py"][2], "--vectorization", mode]
    assert f"({mode} vector env)" in run_recipe("cleanrl_ppo.py", args)


def run_recipe(name: str, args: list[str]) -> str:
    """Run a recipe in its own interpreter; its last line, checked for what it says."""
    modules, extra, _, says = RECIPES[name]
    missing = [m for m in modules if not installed(m)]
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}: pip install -e '.[{extra}]'")
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    last = out.stdout.strip().splitlines()[-1]
    assert says in last, out.stdout[-2000:]
    return last


def test_a_failing_recipe_fails_the_test(tmp_path):
    """The runner sees a recipe's failure: a masked-policy check that trips exits non-zero."""
    script = tmp_path / "bad.py"
    script.write_text("raise SystemExit('the policy chose an action outside the mask')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode != 0 and "outside the mask" in out.stderr
