"""What a run does when its disk fills up or its training diverges: one error line naming the
disk and the path, no temporary file left behind, no half file under a real name; a step with
a non-finite loss or gradient stops the trainer, naming the step, before it saves anything, so
the last good checkpoint stays and the diverged weights are never exported."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tyro")

from rummy500_env import Rules  # noqa: E402 - after the torch check
from rummy500_env.agents.networks import build_network  # noqa: E402
from rummy500_env.agents.policy import PolicyAgent, current_encoding, save_policy  # noqa: E402
from rummy500_env.engine import files  # noqa: E402
from rummy500_env.engine.files import DiskFullError, write_atomically  # noqa: E402
from rummy500_env.engine.records import Record  # noqa: E402
from rummy500_env.training import run as training_run  # noqa: E402
from rummy500_env.training.run import Checkpoints, TrainingDivergedError  # noqa: E402

RULES = Rules()
SPEC = {"kind": "cards", "channels": 4, "blocks": 1, "hidden": 8}


def full_disk(monkeypatch: pytest.MonkeyPatch, free: int = 4096) -> None:
    """The disk as a full one looks: `free` bytes left."""
    monkeypatch.setattr(files, "free_space", lambda path: free)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_failed_write_removes_its_temporary_file_and_leaves_the_old_contents(
    tmp_path: Path,
) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")

    def half(tmp: Path) -> None:
        tmp.write_text("half a fi")
        raise OSError("the cable came loose")

    with pytest.raises(OSError, match="cable"):  # not a full disk: raised as it was
        write_atomically(target, half)
    assert leftovers(tmp_path) == ["state.json"] and target.read_text() == "old"
    write_atomically(target, lambda tmp: tmp.write_text("new"))
    assert leftovers(tmp_path) == ["state.json"] and target.read_text() == "new"


def test_the_temporary_name_matches_no_pattern_a_reader_globs(tmp_path: Path) -> None:
    tmp = files.temporary_name(tmp_path / "round_00001.npz")
    assert tmp.name.startswith(".") and tmp.name.endswith(".tmp")
    tmp.write_bytes(b"")
    assert not list(tmp_path.glob("round_*.npz")) and not list(tmp_path.glob("*.json"))
    assert files.remove_leftovers(tmp_path) == [tmp] and not tmp.exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_is_one_error_naming_the_path_and_the_space_left(
    tmp_path: Path, code: int
) -> None:
    def fill(tmp: Path) -> None:
        tmp.write_text("part")
        raise OSError(code, "No space left on device")

    with pytest.raises(DiskFullError) as caught:
        write_atomically(tmp_path / "out" / "record.json", fill)
    message = str(caught.value)
    assert "disk is full" in message and str(tmp_path / "out" / "record.json") in message
    assert " free on its disk" in message and "\n" not in message
    assert leftovers(tmp_path / "out") == []


def test_torchs_silent_write_failure_on_a_full_disk_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.save on a full disk raises a RuntimeError about "unexpected pos"; with next to no
    space left, a policy file's write says the disk is full; with space left it is raised as
    it was (a bug is not a full disk)."""

    def torch_on_a_full_disk(obj: Any, path: Any) -> None:
        Path(path).write_bytes(b"PK\x03\x04 part of a zip")
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 50")

    monkeypatch.setattr(torch, "save", torch_on_a_full_disk)
    network = build_network(RULES, SPEC)
    meta = {"rules": RULES.to_dict(), "encoding": current_encoding(RULES), "network": SPEC}
    full_disk(monkeypatch, free=0)
    with pytest.raises(DiskFullError, match=r"policy\.pt.*\(0 bytes free on its disk\)"):
        save_policy(tmp_path / "policy.pt", network, meta)
    assert leftovers(tmp_path) == []
    full_disk(monkeypatch, free=50 << 30)
    with pytest.raises(RuntimeError, match="unexpected pos"):
        save_policy(tmp_path / "policy.pt", network, meta)
    assert leftovers(tmp_path) == []


def test_a_record_on_a_full_disk_is_one_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--record`` and the play page write records through `Record.save`."""
    record = Record(RULES, seed=1, players=["a", "b"])
    real_write = Path.write_text

    def write_text(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        real_write(self, text[:10], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", write_text)
    with pytest.raises(DiskFullError, match=r"game\.json"):
        record.save(tmp_path / "records" / "game.json")
    assert leftovers(tmp_path / "records") == []


def test_evaluate_record_on_a_full_disk_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``training.evaluate --record DIR`` on a full disk: one ``error:`` line naming the disk
    and the record, not a traceback, and no temporary file in DIR."""
    from rummy500_env.evaluation import evaluate

    records = tmp_path / "records"
    real_replace = os.replace

    def replace(source: Any, target: Any) -> None:  # a rename that needs a block it lacks
        if Path(target).parent == records:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    argv = ["greedy", "random", "--games", "1", "--workers", "1", "--episode", "hand"]
    argv += ["--out", str(tmp_path / "out"), "--record", str(records)]
    assert evaluate.main(argv) == 2
    err = capsys.readouterr().err  # the progress bar's lines, then the error's
    assert "Traceback" not in err and err.count("error:") == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the disk is full: cannot write") and str(records) in last
    assert leftovers(records) == []


def test_a_checkpoint_on_a_full_disk_keeps_the_previous_one_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints = Checkpoints(tmp_path, keep=3)
    checkpoints.save({"timesteps": 1}, lambda tmp: tmp.write_text("{}"), suffix=".json")
    (checkpoints.folder / ".step_0000000000.json.tmp").write_text("a killed run's")

    def torch_on_a_full_disk(tmp: Path) -> None:
        tmp.write_text("part")
        raise RuntimeError("unexpected pos 64 vs 50")

    full_disk(monkeypatch)
    with pytest.raises(DiskFullError, match="step_0000000002"):
        checkpoints.save({"timesteps": 2}, torch_on_a_full_disk, suffix=".json")
    assert leftovers(checkpoints.folder) == ["step_0000000001.json"]
    assert (
        json.loads((tmp_path / "state.json").read_text())["checkpoint"]
        == leftovers(checkpoints.folder)[0]
    )


def test_a_full_disk_met_outside_the_atomic_writes_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trainer's command turns a full disk met by any write (TensorBoard's, a CSV row's) into
    one ``error:`` line naming the file; another OSError stays a traceback."""
    events = str(tmp_path / "tb" / "events")

    def train(args: object, resume: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", events)

    assert training_run.trainer_main(lambda argv: (object(), False), train, []) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the disk is full") and events in err and "\n" not in err

    def broken(args: object, resume: bool) -> None:
        raise OSError(errno.EACCES, "Permission denied", events)

    with pytest.raises(PermissionError):
        training_run.trainer_main(lambda argv: (object(), False), broken, [])


# --- training that diverges


def test_a_non_finite_figure_stops_the_run_naming_it_and_the_step(tmp_path: Path) -> None:
    training_run.stop_if_diverged({"policy": 1.5, "grad_norm": 0.3}, "update 3", tmp_path)
    with pytest.raises(TrainingDivergedError) as caught:
        training_run.stop_if_diverged({"policy": 1.5, "value": float("inf")}, "update 3", tmp_path)
    message = str(caught.value)
    assert "diverged at update 3" in message and "value is inf" in message
    assert "no checkpoint was written yet" in message
    Checkpoints(tmp_path, 1).save({"timesteps": 9}, lambda tmp: tmp.write_text("{}"))
    with pytest.raises(TrainingDivergedError, match=r"keeps its last checkpoint, step_00000000"):
        training_run.stop_if_diverged({"grad_norm": float("nan")}, "round 2", tmp_path)


PPO_TINY = ["--rules", "standard,target=100", "--n-games", "4", "--n-steps", "16"]
PPO_TINY += ["--minibatch-size", "64", "--checkpoint-every", "64", "--snapshot-every", "64"]
PPO_TINY += ["--eval-every", "100000", "--eval-games", "1", "--final-eval-games", "1"]
PPO_TINY += ["--eval-bots", "random", "--channels", "4", "--blocks", "1", "--hidden", "8"]
PPO_TINY += ["--threads", "1", "--collect-workers", "1", "--no-progress"]
"""Rollouts of 64 learner steps, a snapshot and a checkpoint after each (tests/test_resume.py's)."""


@pytest.mark.slow
def test_ppo_stops_at_a_nan_loss_keeping_its_last_good_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second update's loss is NaN: the run ends with one error line naming update 2, its
    checkpoint of update 1 is the newest, holds finite weights and resumes; no policy is
    exported."""
    from rummy500_env.training import ppo

    real_loss, calls = ppo.ppo_loss, []

    def diverging(*args: Any, **kwargs: Any) -> dict[str, Any]:
        out = real_loss(*args, **kwargs)
        calls.append(1)
        if len(calls) > 1:  # one minibatch an update: the second update diverges
            out["loss"], out["policy"] = out["loss"] * math.nan, out["policy"] * math.nan
        return out

    monkeypatch.setattr(ppo, "ppo_loss", diverging)
    run = tmp_path / "run"
    argv = [*PPO_TINY, "--n-epochs", "1", "--total-timesteps", "256", "--run-dir", str(run)]
    assert ppo.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: training diverged at update 2 (128 timesteps)"), err
    assert "policy is nan" in err and "step_0000000064.pt" in err and "\n" not in err
    assert [p.name for p in Checkpoints(run, 3).paths()] == ["step_0000000064.pt"]
    weights = torch.load(run / "checkpoints" / "step_0000000064.pt", weights_only=True)["model"]
    assert all(torch.isfinite(w).all() for w in weights.values())
    assert not (run / "policy.pt").exists(), "the diverged weights were exported"


def test_exit_stops_at_a_non_finite_gradient_before_its_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finite loss whose gradient is NaN (the step that would spoil the weights) stops
    training.exit at that round, naming it, before the round's checkpoint."""
    from rummy500_env.training import exit as exit_module

    policy = tmp_path / "tiny.pt"
    meta = {"rules": RULES.to_dict(), "encoding": current_encoding(RULES), "network": SPEC}
    save_policy(policy, build_network(RULES, SPEC), meta)
    task = exit_module.LabelTask("standard", policy.read_bytes(), 2, 2, "value", 1, 4)
    labels = exit_module.label_hands(task)
    monkeypatch.setattr(exit_module.Workers, "label", lambda self, tasks: iter([labels]))
    real_losses, rounds = exit_module.label_losses, []

    def spoiled(network: Any, *args: Any) -> tuple[Any, Any]:
        cross_entropy, value_loss = real_losses(network, *args)
        if len(rounds) > 0:  # from the second round: finite, with a NaN gradient
            zero = next(network.parameters()).sum() * 0
            value_loss = value_loss + zero.abs().sqrt()
        return cross_entropy, value_loss

    monkeypatch.setattr(exit_module, "label_losses", spoiled)
    real_round = exit_module.Trainer.round

    def counted(self: Any) -> dict[str, float]:
        figures = real_round(self)
        rounds.append(figures)
        return figures

    monkeypatch.setattr(exit_module.Trainer, "round", counted)
    run = tmp_path / "run"
    argv = ["--init-policy", str(policy), "--run-dir", str(run), "--total-timesteps", "1000"]
    argv += ["--labels-per-round", "4", "--workers", "1", "--checkpoint-every", "1"]
    argv += ["--eval-every", "100000", "--minibatch-size", "1000", "--n-epochs", "1"]
    argv += ["--no-progress"]
    assert exit_module.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: training diverged at round 2 ({2 * len(labels['obs']):,}")
    assert "grad_norm is nan" in err and "\n" not in err
    assert math.isfinite(rounds[0]["grad_norm"]) and math.isnan(rounds[1]["grad_norm"])
    assert all(math.isfinite(rounds[1][k]) for k in ("policy", "kl", "value"))
    [newest] = Checkpoints(run, 3).paths()
    assert json.loads((run / "state.json").read_text())["rounds"] == 1
    assert PolicyAgent.load(run / "current.pt").network is not None  # round 2's start: finite
    assert not (run / "policy.pt").exists()
    assert newest.name == json.loads((run / "state.json").read_text())["checkpoint"]


def test_a_checkpoint_with_non_finite_weights_is_skipped_for_the_one_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checkpoint a run wrote before divergence stopped it (older versions wrote them) is
    damaged for a resume: the one before is used, saying why."""
    from rummy500_env.training import ppo

    args, _ = ppo.parse_args([*PPO_TINY, "--run-dir", str(tmp_path)])
    model = ppo.new_model(args)
    optimizer = torch.optim.Adam(model.parameters())
    checkpoints = Checkpoints(tmp_path, 3)
    training_run.save_checkpoint(checkpoints, model, optimizer, {"timesteps": 64}, args)
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    training_run.save_checkpoint(checkpoints, model, optimizer, {"timesteps": 128}, args)
    state = training_run.load_checkpoint(tmp_path, model, optimizer, args)
    assert state["checkpoint"] == "step_0000000064.pt"
    assert (
        "skipping unreadable checkpoint step_0000000128.pt: non-finite" in capsys.readouterr().err
    )
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_rllib_stops_at_an_iteration_whose_learner_loss_is_not_finite(tmp_path: Path) -> None:
    """RLlib's learner reports its losses in each iteration's results; a non-finite one stops
    the run before that iteration's snapshot or checkpoint (no Ray needed: the algorithm is a
    stand-in)."""
    from rummy500_env.training import rllib

    class Algorithm:
        def __init__(self) -> None:
            self.losses = [1.0, float("nan")]

        def train(self) -> dict[str, Any]:
            runners = {"num_env_steps_sampled": 10, "num_module_steps_sampled": {}}
            loss = self.losses.pop(0)
            learner = {"total_loss": loss, "policy_loss": 0.5, "num_module_steps_trained": 5}
            return {"env_runners": runners, "learners": {rllib.LEARNER: learner}}

    class Writer:
        def add_scalar(self, *args: object) -> None:
            pass

    class Run:
        path, writer = tmp_path, Writer()

    args = rllib.Args(total_timesteps=100, checkpoint_every=1000, snapshot_every=1000)
    state = {"timesteps": 0, "iterations": 0, "learner_steps": 0}
    with pytest.raises(TrainingDivergedError, match=r"iteration 2 \(20 env steps\).*total_loss"):
        rllib.iterate(Algorithm(), args, Run(), state)  # type: ignore[arg-type]
    assert rllib.learner_losses({"learners": {rllib.LEARNER: {"vf_loss": 2, "entropy": 1}}}) == {
        "vf_loss": 2.0
    }
