"""The wheel installs one top-level package, with the training configs as package data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("wheel")
    source = out / "source"  # a copy: building in place would leave build/ in the checkout
    skip = shutil.ignore_patterns(".*", "build", "runs", "*.egg-info", "__pycache__")
    shutil.copytree(ROOT, source, ignore=skip)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("rummy500_env-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def top_level(names: list[str]) -> set[str]:
    return {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}


def test_wheel_adds_no_generic_top_level_name(wheel_names):
    assert top_level(wheel_names) == {"rummy500_env"}


def test_wheel_carries_the_training_configs_and_type_marker(wheel_names):
    for name in ("ppo.yaml", "ppo_long.yaml"):
        assert f"rummy500_env/training/configs/{name}" in wheel_names
    assert "rummy500_env/py.typed" in wheel_names


def test_top_level_check_can_fail():
    assert top_level(["training/ppo.py", "rummy500_env/x.py", "a-1.dist-info/RECORD"]) == {
        "training",
        "rummy500_env",
    }
