"""Every ```python block of the README runs, each in a fresh interpreter started in the
repository root, as a reader would paste it. Where a block leaves something to the reader (an
observation it does not build) or would take minutes, `STAND_INS` says what the test adds or
shortens and why; a stand-in whose text left the README fails, so none goes stale."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
BLOCKS = [(README[: m.start()].count("\n") + 1, m.group(1)) for m in BLOCK.finditer(README)]
"""(line, code) of each python block."""

STAND_INS: dict[str, tuple[str, str]] = {
    # text of the README: (what the test runs instead, why)
    'MaskablePPO("MlpPolicy", env).learn(10_000)': (
        'MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64).learn(64)',
        "one short rollout and update instead of minutes of training: the same calls",
    ),
    "agent.act(observation, action_mask)": (
        "agent.act(*observation_and_mask())",
        "the block leaves the observation to the reader; the test takes one from the env",
    ),
}
PRELUDE = """
def observation_and_mask():
    import rummy500_env

    e = rummy500_env.env()
    e.reset(seed=0)
    obs = e.last()[0]
    return obs["observation"], obs["action_mask"]
"""


def runnable(code: str) -> str:
    for text, (instead, _why) in STAND_INS.items():
        code = code.replace(text, instead)
    return PRELUDE + code


def test_the_readme_has_python_blocks_and_every_stand_in_is_used():
    assert len(BLOCKS) >= 5
    unused = [text for text in STAND_INS if not any(text in code for _, code in BLOCKS)]
    assert unused == [], "stand-ins whose README text is gone"


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
@pytest.mark.slow
def test_readme_python_block_runs(line: int, code: str):
    for text, module in {"sb3_contrib": "sb3_contrib", "PolicyAgent": "torch"}.items():
        if text in code:
            pytest.importorskip(module)  # the conftest names the extra
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", runnable(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"README.md:{line}\n{out.stderr[-3000:]}"


def test_a_failing_block_fails():
    out = subprocess.run(
        [sys.executable, "-c", runnable("from rummy500_env import Game\nGame.new('nope')")],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert out.returncode != 0 and "nope" in out.stderr
