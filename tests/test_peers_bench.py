"""The peers' benchmark lives in the repository, where `python -m rummy500_env.bench` finds it
by default, and it names the peers bench compares with. No peers' environment is needed: these
run its command line without measuring anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rummy500_env import bench

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "peers" / "peers_bench.py"


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    """The peers' script under this interpreter (its listing and help import no peer)."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_the_default_script_is_the_checkouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEERS_SCRIPT", raising=False)
    assert bench.peers_script() == SCRIPT
    assert SCRIPT.is_file()
    assert ROOT in bench.peers_script().resolve().parents  # nothing outside the repository
    assert (SCRIPT.parent / "setup.sh").is_file()


def test_help_runs() -> None:
    done = run_script("--help")
    assert done.returncode == 0, done.stderr
    assert "--only" in done.stdout and "--json" in done.stdout


def test_it_lists_every_peer_bench_compares_with() -> None:
    done = run_script("--list")
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    wanted = {name for name, _metric, _target in bench.PEERS.values()}
    assert wanted | set(bench.MORE_PEERS.values()) == listed


def test_an_unknown_peer_is_refused() -> None:
    done = run_script("--only", "os_gin_obs_np,no_such_peer")
    assert done.returncode == 2
    assert "no_such_peer" in done.stderr


def test_without_the_venv_bench_says_how_to_build_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PEERS_SCRIPT", raising=False)
    monkeypatch.setenv("PEERS_VENV", str(tmp_path / "none"))
    assert bench.run_peers(["os_gin_obs_np"], 0.1) == {}
    assert "setup.sh" in capsys.readouterr().err


def test_without_the_script_bench_says_it_is_in_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PEERS_SCRIPT", str(tmp_path / "peers_bench.py"))
    assert bench.run_peers(["os_gin_obs_np"], 0.1) == {}
    assert "checkout" in capsys.readouterr().err
