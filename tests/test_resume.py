"""``--resume`` of a training run: a run folder that was moved or copied resumes with its own
snapshots, and a resume that would change what the run is made of (its rules, episode,
network or encodings) is refused before any work, naming the field and both values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tyro")

from rummy500_env.training.ppo import main

TINY = [
    "--rules",
    "standard,target=100",
    "--n-games",
    "4",
    "--n-steps",
    "16",
    "--minibatch-size",
    "64",
    "--checkpoint-every",
    "64",
    "--snapshot-every",
    "64",
    "--eval-every",
    "100000",
    "--eval-games",
    "1",
    "--final-eval-games",
    "1",
    "--eval-bots",
    "random",
    "--channels",
    "4",
    "--blocks",
    "1",
    "--hidden",
    "8",
    "--threads",
    "1",
    "--collect-workers",
    "1",
    "--no-progress",
]
"""A run of two rollouts of 64 learner steps, a snapshot and a checkpoint after each."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny run, trained from its parent folder as ``runs/a`` (a relative
    --run-dir, as users give it)."""
    home = tmp_path_factory.mktemp("resume")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(home)
        assert main([*TINY, "--total-timesteps", "128", "--run-dir", "runs/a"]) == 0
    return home / "runs" / "a"


def snapshots_named(run: Path) -> list[str]:
    return list(json.loads((run / "state.json").read_text())["snapshots"])


def test_state_names_snapshots_inside_the_run_folder(finished: Path) -> None:
    names = snapshots_named(finished)
    assert names and all(n.startswith("snapshots/snapshot_") for n in names), names
    assert all((finished / n).is_file() for n in names)


def test_a_moved_run_resumes_from_another_directory_with_its_own_snapshots(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "elsewhere" / "b"
    shutil.copytree(finished, moved)
    monkeypatch.chdir(tmp_path)  # neither the first run's directory nor the run's parent
    assert main(["--resume", str(moved), "--total-timesteps", "192"]) == 0
    state = json.loads((moved / "state.json").read_text())
    assert state["timesteps"] == 192
    assert all(n.startswith("snapshots/") for n in state["snapshots"])
    assert (moved / state["snapshots"][-1]).is_file()


def test_a_copied_run_uses_its_own_snapshots_not_those_of_the_folder_it_came_from(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rummy500_env.training import ppo

    copy = tmp_path / "runs" / "copy"
    shutil.copytree(finished, copy)
    monkeypatch.chdir(finished.parent.parent)  # where runs/a, the original, still is
    loaded: list[str] = []
    load = ppo.PolicyAgent.load

    def recording(path: str, *args: object, **kwargs: object) -> ppo.PolicyAgent:
        loaded.append(str(Path(path).resolve()))
        return load(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ppo.PolicyAgent, "load", recording)
    assert main(["--resume", str(copy), "--total-timesteps", "192"]) == 0
    pool = [p for p in loaded if "/snapshots/" in p]
    assert pool and all(p.startswith(str(copy.resolve())) for p in pool), pool


@pytest.mark.parametrize("old_form", ["relative", "absolute"])
def test_an_older_state_with_working_directory_paths_maps_them_into_the_run(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_form: str
) -> None:
    """State files written before snapshots were named inside the run hold the path the
    trainer wrote each at: relative to that session's working directory (``runs/a/...``) or
    absolute. A resume of the moved run reads them from its own snapshots/."""
    import torch

    moved = tmp_path / "b"
    shutil.copytree(finished, moved)
    old_root = "runs/a" if old_form == "relative" else "/somewhere/gone/runs/a"
    for ckpt in (moved / "checkpoints").glob("step_*.pt"):
        blob = torch.load(ckpt, weights_only=True)
        blob["state"]["snapshots"] = [f"{old_root}/{n}" for n in blob["state"]["snapshots"]]
        torch.save(blob, ckpt)
    monkeypatch.chdir(tmp_path)
    assert main(["--resume", str(moved), "--total-timesteps", "192"]) == 0
    names = snapshots_named(moved)
    assert all(n.startswith("snapshots/snapshot_") for n in names), names


def test_a_run_whose_snapshot_file_is_gone_says_which(
    finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    gone = snapshots_named(run)[-1]
    (run / gone).unlink()
    assert main(["--resume", str(run), "--total-timesteps", "192"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert gone in err and "missing" in err
