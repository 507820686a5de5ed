"""The no-silent-skips policy of tests/conftest.py, run on a scratch suite: a skip is listed
with its reason in any run, and under RUMMY500_NO_SKIPS=1 (as .ci/run sets it) a skip or a
deselection fails the run while a clean run still passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest

pytestmark = pytest.mark.slow  # the whole module: see docs/contributing.md

SUITE = """
import pytest

def test_passes():
    assert True

def test_needs_an_extra():
    pytest.importorskip("rummy500_no_such_module", reason="the play extra is not installed")
"""


def run(tmp_path: Path, *args: str, no_skips: bool) -> subprocess.CompletedProcess[str]:
    shutil.copy(Path(conftest.__file__), tmp_path / "conftest.py")
    (tmp_path / "test_scratch.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k not in ("RUMMY500_NO_SKIPS", "PYTEST_ADDOPTS")}
    env |= {"RUMMY500_NO_SKIPS": "1"} if no_skips else {}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plain_run_lists_each_skip_with_its_reason_and_passes(tmp_path):
    done = run(tmp_path, no_skips=False)
    assert done.returncode == 0, done.stdout
    assert "SKIPPED test_scratch.py::test_needs_an_extra: the play extra is not installed" in (
        done.stdout
    )


def test_under_no_skips_a_skip_or_a_deselection_fails_the_run(tmp_path):
    skipped = run(tmp_path, no_skips=True)
    assert skipped.returncode == 1, skipped.stdout
    assert "unexpected skip: test_scratch.py::test_needs_an_extra" in skipped.stdout
    deselected = run(tmp_path, "-k", "passes", no_skips=True)
    assert deselected.returncode == 1, deselected.stdout
    assert "deselected: test_scratch.py::test_needs_an_extra" in deselected.stdout
    clean = run(tmp_path, "test_scratch.py::test_passes", no_skips=True)
    assert clean.returncode == 0, clean.stdout


def test_allowed_skips_are_explained_and_bare_import_skips_name_their_extra():
    assert all(why.strip() for why in conftest.ALLOWED_SKIPS.values())
    reason = conftest._with_extra("could not import 'torchrl': No module named 'torchrl'")
    assert reason.endswith("(the frameworks extra: pip install -e '.[frameworks]')")
