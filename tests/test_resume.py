"""``--resume`` of a training run: a run folder that was moved or copied resumes with its own
snapshots, and a resume that would change what the run is made of (its rules, episode,
network, critic or encodings) is refused before any work, naming the field and both values."""

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


@pytest.mark.slow
def test_state_names_snapshots_inside_the_run_folder(finished: Path) -> None:
    names = snapshots_named(finished)
    assert names and all(n.startswith("snapshots/snapshot_") for n in names), names
    assert all((finished / n).is_file() for n in names)


@pytest.mark.slow
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


@pytest.mark.slow
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
@pytest.mark.slow
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


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--rules", "nordic,target=100"], ["rules", "scoring='fives'", "scoring='pip'"]),
        (["--rules", "standard,players=3,target=100"], ["rules", "players=3", "players=2"]),
        (["--rules", "standard"], ["rules", "target=500", "target=100"]),
        (["--episode", "game"], ["episode='game'", "episode='hand'"]),
        (["--channels", "16"], ["network", "channels=16", "channels=4"]),
        (["--network", "mlp"], ["network", "network='mlp'", "network='cards'"]),
    ],
)
def test_a_resume_that_changes_what_the_run_is_made_of_is_refused_before_any_work(
    finished: Path, flags: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from rummy500_env.training.ppo import parse_args
    from rummy500_env.training.settings import ConfigError

    with pytest.raises(ConfigError) as refused:  # parsing: before any folder or model
        parse_args(["--resume", str(finished), *flags])
    for word in words:
        assert word in str(refused.value), (word, str(refused.value))
    before = sorted(p.name for p in finished.rglob("*"))
    assert main(["--resume", str(finished), *flags]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1, (out, err)
    assert "unreadable" not in err and "start it again" not in err
    assert sorted(p.name for p in finished.rglob("*")) == before


def test_the_same_rules_written_another_way_and_budgets_and_workers_may_change(
    finished: Path,
) -> None:
    from rummy500_env.training.ppo import parse_args

    flags = ["--rules", '{"target": 100}', "--total-timesteps", "999", "--collect-workers", "2"]
    flags += ["--threads", "2", "--eval-games", "3", "--learning-rate", "0.001", "--n-games", "6"]
    flags += ["--net-arch", "32", "32"]  # the mlp's field: the card network ignores it
    args, resuming = parse_args(["--resume", str(finished), *flags])
    assert resuming and args.total_timesteps == 999 and args.collect_workers == 2


def test_a_run_of_another_encoding_is_refused_naming_it(finished: Path, tmp_path: Path) -> None:
    from rummy500_env.training.ppo import parse_args
    from rummy500_env.training.settings import ConfigError

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    state = json.loads((run / "state.json").read_text())
    assert state["encoding"]["action_size"] == 360  # recorded by the run
    state["encoding"]["action_size"] = 300
    (run / "state.json").write_text(json.dumps(state))
    with pytest.raises(ConfigError, match=r"encoding.*action_size=360.*action_size=300"):
        parse_args(["--resume", str(run)])
    # a state from before runs recorded it: the encoding of the run's own policy files
    del state["encoding"]
    (run / "state.json").write_text(json.dumps(state))
    assert parse_args(["--resume", str(run)])[1]


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("config.json", "truncated"),
        ("config.json", "empty"),
        ("config.json", "not_utf8"),
        ("config.json", "a_list"),
        ("state.json", "truncated"),
        ("state.json", "a_list"),
    ],
)
def test_a_damaged_config_or_state_file_is_one_clear_error(
    finished: Path, tmp_path: Path, name: str, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    path = run / name
    text = path.read_bytes()
    path.write_bytes(
        {
            "truncated": text[: len(text) // 2],
            "empty": b"",
            "not_utf8": b"\xff\xfe{" + text,
            "a_list": b"[1, 2]",
        }[damage]
    )
    assert main(["--resume", str(run)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1, (out, err)
    assert str(path) in err and "damaged" in err
    advice = "restore it" if name == "config.json" else "delete it"
    assert advice in err, err


@pytest.mark.parametrize(("value", "resumes"), [("obs", True), ("full", False)])
def test_a_field_an_earlier_release_wrote_resumes_with_its_kept_value_only(value, resumes):
    """Run folders of 0.1.0 hold ``critic`` in their config.json: ``obs``, the one value still
    trained, is dropped; ``full`` is refused naming the field, not as an unknown one."""
    from rummy500_env.training.ppo import Args
    from rummy500_env.training.settings import ConfigError, args_of, load_yaml

    saved = load_yaml("ppo") | {"critic": value}
    if resumes:
        assert args_of(Args, saved) == args_of(Args, load_yaml("ppo"))
    else:
        with pytest.raises(ConfigError, match=r"critic='full' is no longer trained"):
            args_of(Args, saved)
    with pytest.raises(ConfigError, match="unknown config field"):
        args_of(Args, load_yaml("ppo") | {"critik": "obs"})
