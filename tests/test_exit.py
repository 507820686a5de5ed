"""training.exit end to end on a tiny network and budget: label, learn, checkpoint, resume,
export; the labels are what the search found; bad settings are refused before any work."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tyro")

import torch

from rummy500_env import Rules
from rummy500_env.agents.networks import build_network
from rummy500_env.agents.policy import PolicyAgent, save_policy
from rummy500_env.training.exit import (
    Args,
    LabelTask,
    label_hands,
    main,
    parse_args,
    value_targets,
)
from rummy500_env.training.settings import ConfigError, load_yaml
from tests.helpers import untrained_policy

RULES = Rules()
SPEC = {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small untrained cards network as a policy file (search and training stay fast)."""
    torch.manual_seed(0)
    return Path(untrained_policy(tmp_path_factory.mktemp("policy") / "tiny.pt", SPEC))


def tiny(policy: Path, run: Path, *more: str) -> list[str]:
    return [
        "--init-policy", str(policy), "--run-dir", str(run),
        "--total-timesteps", "40", "--labels-per-round", "20", "--simulations", "4",
        "--candidates", "2", "--workers", "1", "--minibatch-size", "16",
        "--checkpoint-every", "1", "--eval-every", "1000", "--eval-games", "2",
        "--final-eval-games", "2", "--eval-bots", "random", "--start-hands", "2",
        "--no-progress", *more,
    ]  # fmt: skip


def test_labels_are_the_searchs_improved_policy_over_legal_actions(tiny_policy: Path) -> None:
    task = LabelTask("standard", tiny_policy.read_bytes(), 4, 3, "value", seed=3, labels=12)
    labels = label_hands(task)
    n = len(labels["obs"])
    assert n >= 12
    assert labels["policy"].shape == labels["mask"].shape
    assert np.allclose(labels["policy"].sum(1), 1, atol=1e-5)
    assert not (labels["policy"] * ~labels["mask"]).any(), "mass on an illegal action"
    assert (labels["mask"].sum(1) > 1).all(), "a forced move was labelled"
    assert np.all(np.abs(labels["outcome"]) < 5) and np.all(np.abs(labels["search_value"]) < 5)
    again = label_hands(task)
    for k in labels:
        assert np.array_equal(labels[k], again[k]), f"{k} differs on the same seed"


@pytest.mark.parametrize("evidence", [0, 2])
@pytest.mark.slow
def test_labelling_weighs_worlds_by_the_other_seats_turns_it_saw(
    tiny_policy: Path, monkeypatch: pytest.MonkeyPatch, evidence: int
) -> None:
    """With ``evidence``, each search is given the other seat's last turns as its seat saw
    them, forced moves included: the last ends in the turn searched, and after the first
    turns most positions have some; without it, none (and the labels replay by seed)."""
    from rummy500_env.agents.psearch import PolicySearchAgent

    given: list[tuple[object, list[object]]] = []
    analyse_many = PolicySearchAgent.analyse_many

    def spy(self: PolicySearchAgent, positions: list, evidence: list) -> list:  # type: ignore[type-arg]
        given.extend(
            (view, list(turns)) for (view, _), turns in zip(positions, evidence, strict=True)
        )
        return analyse_many(self, positions, evidence)

    monkeypatch.setattr(PolicySearchAgent, "analyse_many", spy)
    task = LabelTask(
        "standard",
        tiny_policy.read_bytes(),
        4,
        2,
        "value",
        7,
        30,
        gumbel=False,
        evidence=evidence,
    )
    labels = label_hands(task)
    weighed = [(view, turns) for view, turns in given if turns]
    if not evidence:
        assert not weighed
        return
    assert len(weighed) > len(given) / 4
    assert max(len(turns) for _, turns in weighed) == evidence
    for view, turns in weighed:
        last = turns[-1].now  # the seat's draw this turn, before any decision after it
        assert (last.seat, last.turns, last.totals) == (view.seat, view.turns, view.totals)
    given.clear()
    again = label_hands(task)
    assert all(np.array_equal(labels[k], again[k]) for k in labels)


@pytest.mark.slow
def test_without_a_scale_the_labels_are_the_networks_own_policy(tiny_policy: Path) -> None:
    """c_scale 0: the values move nothing, so the improved policy is the prior; a positive
    scale moves it (the knob that keeps a few noisy simulations from writing confident
    targets)."""
    network = PolicyAgent.load(tiny_policy, rules=RULES).network

    def prior(labels: dict[str, np.ndarray]) -> np.ndarray:
        with torch.inference_mode():
            logits = network(torch.from_numpy(labels["obs"])).numpy().astype(np.float64)
        z = np.exp(np.where(labels["mask"], logits - logits.max(1, keepdims=True), -np.inf))
        return z / z.sum(1, keepdims=True)

    def labels(c_scale: float) -> dict[str, np.ndarray]:
        task = LabelTask("standard", tiny_policy.read_bytes(), 8, 4, "value", 5, 6, c_scale)
        return label_hands(task)

    flat, sharp = labels(0.0), labels(5.0)
    assert np.allclose(flat["policy"], prior(flat), atol=1e-5)
    assert not np.allclose(sharp["policy"], prior(sharp), atol=1e-3)


def test_value_targets_mix_search_and_outcome() -> None:
    labels = {"search_value": np.array([1.0, 0.0]), "outcome": np.array([0.0, 2.0])}
    assert value_targets(labels, 0.25).tolist() == [0.25, 1.5]


@pytest.mark.slow
@dataclass
class TwoRounds:
    """A tiny `training.exit` run of one round, then resumed for a second with another rate:
    what the first round left, and the run."""

    run: Path
    first: dict[str, Any]
    """``state.json`` after the first round."""
    first_checkpoint: Path
    """The checkpoint after the first round (a copy: the second's may replace it)."""
    first_weights: dict[str, torch.Tensor]
    first_margins: list[str]


@pytest.fixture(scope="module")
def two_rounds(tiny_policy: Path, tmp_path_factory: pytest.TempPathFactory) -> TwoRounds:
    """One run shared by the tests of a run's rounds, resume and labels (a minute each)."""
    run = tmp_path_factory.mktemp("exit") / "run"
    assert main(tiny(tiny_policy, run, "--total-timesteps", "20")) == 0
    first = json.loads((run / "state.json").read_text())
    [checkpoint] = (run / "checkpoints").glob("step_*.pt")
    (run / "round_0").mkdir()  # beside checkpoints/: the run's config.json is the parent's
    kept = shutil.copy(checkpoint, run / "round_0" / checkpoint.name)
    weights = PolicyAgent.load(run / "policy.pt").network.state_dict()
    margins = (run / "start_margins.csv").read_text().splitlines()
    more = ["--total-timesteps", str(first["timesteps"] + 1), "--learning-rate", "3e-4"]
    assert main(["--resume", str(run), *more]) == 0
    return TwoRounds(run, first, Path(kept), weights, margins)


def test_a_run_labels_learns_resumes_and_exports(tiny_policy: Path, two_rounds: TwoRounds) -> None:
    run, state = two_rounds.run, two_rounds.first
    assert state["rounds"] == 1 and state["timesteps"] >= 20
    start = PolicyAgent.load(tiny_policy).network.state_dict()
    before = two_rounds.first_weights
    assert any(not torch.equal(before[k], start[k]) for k in start), "nothing was learned"
    margins = two_rounds.first_margins
    assert margins[0] == "labels,hands,margin,low,high" and len(margins) == 2
    assert margins[1].split(",")[:2] == [str(state["timesteps"]), "2"]
    first = state["timesteps"]  # whole hands are labelled: a round may pass its share
    state = json.loads((run / "state.json").read_text())
    assert state["rounds"] == 2 and state["timesteps"] > first
    newest = max((run / "checkpoints").glob("*.pt"), key=lambda p: p.stat().st_mtime_ns)
    optimizer = torch.load(newest, weights_only=True)["optimizer"]
    assert {g["lr"] for g in optimizer["param_groups"]} == {3e-4}, "the rate given on resume"
    assert len(list((run / "labels").glob("round_*.npz"))) == 2
    meta = PolicyAgent.load(run / "policy.pt").metadata
    assert meta["training"]["trainer"] == "exit" and meta["network"] == SPEC
    assert "evaluation" in meta


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--episode", "game", "episode"),
        ("--simulations", "0", "simulations"),
        ("--leaf", "oracle", "leaf"),
        ("--value-mix", "1.5", "value_mix"),
        ("--c-scale", "-1", "c_scale"),
        ("--start-hands", "-1", "start_hands"),
        ("--address", "auto", "address"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(
    tiny_policy: Path, tmp_path: Path, flag: str, value: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_args(tiny(tiny_policy, tmp_path / "r", flag, value))
    assert not (tmp_path / "r").exists(), "work started before the settings were checked"


def test_a_policy_without_a_value_head_is_refused(tmp_path: Path) -> None:
    spec = {"kind": "mlp", "net_arch": [8], "activation": "tanh"}
    untrained_policy(tmp_path / "mlp.pt", spec)
    with pytest.raises(ConfigError, match="value head"):
        parse_args(tiny(tmp_path / "mlp.pt", tmp_path / "r"))


def test_the_default_config_starts_from_the_shipped_policy() -> None:
    args, resume = parse_args([])
    assert not resume and isinstance(args, Args)
    assert args.policy_name() == "standard" and args.network_spec()["kind"] == "cards"


def test_a_config_file_without_search_settings_searches_as_the_packaged_one() -> None:
    """A user's config that leaves the search's fields out gets the measured setting (the
    packaged config's, `for_play`'s), not the paper's defaults that made the policy worse."""
    packaged, defaults = load_yaml("exit"), Args()
    for name in ("simulations", "candidates", "leaf", "c_scale", "gumbel", "evidence"):
        assert getattr(defaults, name) == packaged[name], name


def test_labels_on_ray_are_those_of_the_local_workers(tiny_policy: Path, tmp_path: Path) -> None:
    """The Ray backend (``--ray``) labels the same positions as local processes: a task's
    labels depend on its seed alone."""
    pytest.importorskip("ray", reason="Ray is in the rllib extra")
    from rummy500_env.training.exit import Workers

    args, _ = parse_args([*tiny(tiny_policy, tmp_path / "r"), "--ray", "--workers", "2"])
    tasks = [LabelTask("standard", tiny_policy.read_bytes(), 2, 2, "value", s, 4) for s in (1, 2)]
    workers = Workers(args)
    try:
        on_ray = list(workers.label(tasks))
    finally:
        workers.close()
    local = [label_hands(t) for t in tasks]
    assert len(on_ray) == 2
    for mine in local:
        assert any(all(np.array_equal(mine[k], theirs[k]) for k in mine) for theirs in on_ray), (
            "a task labelled on Ray differs from the same task labelled here"
        )


def test_a_round_is_split_between_the_workers_with_a_seed_each(tiny_policy: Path) -> None:
    from rummy500_env.training.exit import round_tasks

    args, _ = parse_args(["--labels-per-round", "101", "--workers", "4", "--seed", "3"])
    policy = tiny_policy.read_bytes()
    first, second = round_tasks(args, policy, 0), round_tasks(args, policy, 1)
    assert [t.labels for t in first] == [26] * 4  # every worker's share, rounded up
    seeds = [t.seed for t in first + second]
    assert len(set(seeds)) == 8, "a worker of a round repeats another's deals"
    assert all(t.policy == policy and t.simulations == args.simulations for t in first)


def test_the_labelling_benchmark_times_the_trainers_workers(
    tiny_policy: Path, tmp_path: Path
) -> None:
    """``benchmarks/studies/exit_labels.py``: its timed work goes through `Workers` and returns the
    labels with their CPU time and node; a backend it does not know is refused, saying what
    is."""
    import sys

    from rummy500_env.training.exit import Workers

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks" / "studies"))
    from exit_labels import backend_flags, timed_labels

    args, _ = parse_args(tiny(tiny_policy, tmp_path / "r"))
    task = LabelTask("standard", tiny_policy.read_bytes(), 2, 2, "value", 1, 4)
    workers = Workers(args)
    [timed] = list(workers.label([task], timed_labels))
    workers.close()
    plain = label_hands(task)
    assert all(np.array_equal(timed[k], plain[k]) for k in plain)
    assert float(timed["cpu_s"]) > 0 and str(timed["node"])
    assert backend_flags("pool:2", None) == ["--workers", "2"]
    assert backend_flags("cluster:3", "auto") == ["--workers", "3", "--ray", "--address", "auto"]
    for bad in ("pool", "ray:0", "gpu:2", "cluster:2"):  # cluster:2 without an address
        with pytest.raises(SystemExit, match="cluster"):
            backend_flags(bad, None)


@pytest.mark.slow
def test_the_fit_benchmark_trains_from_a_checkpoint_and_scores_held_out_labels(
    two_rounds: TwoRounds, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmarks/studies/exit_fit.py``: from a run's first checkpoint, training on its first
    round's labels lowers their cross entropy; the next round's are scored as held out."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks" / "studies"))
    from exit_fit import main as fit_main

    rounds = sorted((two_rounds.run / "labels").glob("round_*.npz"))
    capsys.readouterr()
    argv = [str(two_rounds.first_checkpoint), "--train", str(rounds[0]), "--test", str(rounds[1])]
    assert fit_main([*argv, "--settings", "20x1e-2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    untrained, trained = out["rows"]
    assert out["train"] >= 20 and out["test"] >= 20 and trained["epochs"] == 20
    assert trained["train"]["ce"] < untrained["train"]["ce"] - 0.05
    assert all(np.isfinite(row[k]["kl"]) for row in out["rows"] for k in ("train", "test"))
    with pytest.raises(SystemExit):
        fit_main([*argv, "--settings", "eight"])
    assert "EPOCHSxRATE" in capsys.readouterr().err


def test_hands_against_an_agent_label_only_the_searching_seat(
    tiny_policy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an agent in the pool, a hand drawn against it seats the agent in one seat, playing
    its own moves, and labels only the other seat, whose search plays its simulations against
    a copy of the agent; "self" hands label every seat. Labels replay by seed."""
    from rummy500_env.agents.greedy import GreedyAgent
    from rummy500_env.training import exit as exit_module

    hands: list[exit_module._Hand] = []

    class Seen(exit_module._Hand):
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, **k)  # type: ignore[arg-type]
            hands.append(self)

    monkeypatch.setattr(exit_module, "_Hand", Seen)
    pool = (("self", 1.0), ("greedy", 3.0))
    task = LabelTask("standard", tiny_policy.read_bytes(), 4, 2, "value", 5, 60, opponents=pool)
    labels = label_hands(task)
    assert len(labels["obs"]) == sum(len(h.seats) for h in hands) >= 60
    against = [h for h in hands if h.opponent == "greedy"]
    selfplay = [h for h in hands if h.opponent == "self"]
    assert against and selfplay
    for h in against:
        assert h.bot is not None and isinstance(h.bot[1], GreedyAgent)
        assert h.seats and h.bot[0] not in h.seats  # the agent's moves are never labelled
    assert any(len(set(h.seats)) == 2 for h in selfplay)
    again = label_hands(task)
    assert all(np.array_equal(labels[k], again[k]) for k in labels)


def test_the_opponents_pool_is_checked_before_any_work(tiny_policy: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    base = tiny(tiny_policy, tmp_path / "r")
    args, _ = parse_args([*base, "--opponents.greedy", "2"])
    assert args.opponents == {"self": 1.0, "greedy": 2.0, "expert": 0.0}
    for bad, says in (({"nobody": 1.0}, "opponents="), ({"self": 0.0}, "not all zero")):
        with pytest.raises(ConfigError, match=says):
            replace(args, opponents=bad).validate()


# --- a run's labels, --resume and lost work


def new_run(policy: Path, run: Path, rounds: int) -> list[str]:
    """A run folder as one that labelled and learned `rounds` rounds would be (a checkpoint
    after the last, each round's labels), made without labelling; returns its argv."""
    from rummy500_env.training.exit import Trainer, save_labels

    argv = tiny(policy, run, "--replay-rounds", "3")
    args, _ = parse_args(argv)
    trainer = Trainer(args, resume=False)
    labels = label_hands(LabelTask("standard", policy.read_bytes(), 2, 2, "value", 1, 4))
    for number in range(rounds):
        save_labels(trainer.labels_dir / f"round_{number:05d}.npz", labels)
    trainer.state |= {"rounds": rounds, "timesteps": rounds * len(labels["obs"])}
    trainer.checkpoint()
    trainer.run.writer.close()
    trainer.close()
    return argv


def test_a_resume_clears_what_a_killed_write_left_and_checks_every_labels_file_at_once(
    tiny_policy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed while it wrote round 3's labels left a temporary file (this version's
    hidden name, or an older version's ``round_00003.tmp.npz``, which ended every resume in a
    traceback); one killed after, round 3's file, which is labelled again. Both are removed as
    the run starts, and a labels file damaged since it was written (cut short) is found then,
    not a round later: removed with a warning naming it, the other rounds kept."""
    from rummy500_env.training.exit import Trainer

    run = tmp_path / "run"
    new_run(tiny_policy, run, rounds=3)
    labels = run / "labels"
    (labels / "round_00003.tmp.npz").write_bytes(b"PK\x03\x04 cut")
    (labels / ".round_00003.npz.0123456789ab.tmp").write_bytes(b"PK\x03\x04 cut")
    (labels / "round_00003.npz").write_bytes((labels / "round_00002.npz").read_bytes())
    whole = (labels / "round_00001.npz").read_bytes()
    (labels / "round_00001.npz").write_bytes(whole[: len(whole) // 2])
    capsys.readouterr()
    args, resume = parse_args(["--resume", str(run)])
    trainer = Trainer(args, resume)
    trainer.run.writer.close()
    trainer.close()
    assert sorted(p.name for p in labels.iterdir()) == ["round_00000.npz", "round_00002.npz"]
    err = capsys.readouterr().err
    assert f"warning: removed the damaged labels file {labels / 'round_00001.npz'}" in err


def test_a_round_whose_labels_meet_a_full_disk_is_one_error_leaving_no_file(
    tiny_policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The labels are written whole or not at all, under a name no resume reads as a round."""
    import errno

    from rummy500_env.engine.files import DiskFullError
    from rummy500_env.training import exit as exit_module

    run = tmp_path / "run"
    argv = new_run(tiny_policy, run, rounds=1)
    labels = label_hands(LabelTask("standard", tiny_policy.read_bytes(), 2, 2, "value", 2, 4))
    monkeypatch.setattr(exit_module.Workers, "label", lambda self, tasks: iter([labels]))

    def savez_on_a_full_disk(file: Any, *args: Any, **kwargs: Any) -> None:
        file.write(b"PK\x03\x04 part")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", savez_on_a_full_disk)
    args, _ = parse_args(["--resume", str(run), *argv[argv.index("--total-timesteps") :]])
    trainer = exit_module.Trainer(args, resume=True)
    try:
        with pytest.raises(DiskFullError, match=r"round_00001\.npz"):
            trainer.round()
    finally:
        trainer.run.writer.close()
        trainer.close()
    assert sorted(p.name for p in (run / "labels").iterdir()) == ["round_00000.npz"]


def test_a_resume_with_other_rules_is_refused_for_that(tiny_policy: Path, tmp_path: Path) -> None:
    """The run's rules are checked first, as training.ppo's are: not the starting policy
    against rules it was not made for."""
    run = tmp_path / "run"
    new_run(tiny_policy, run, rounds=1)
    with pytest.raises(ConfigError, match="rules differ from the run's") as caught:
        parse_args(["--resume", str(run), "--rules", "nordic"])
    assert "init_policy" not in str(caught.value)


def test_a_policy_with_non_finite_weights_is_refused_as_the_start(
    tiny_policy: Path, tmp_path: Path
) -> None:
    """A diverged run's policy (NaN weights, a valid checksum) is no start: it "trained" for
    minutes and exported NaN again."""
    from rummy500_env.agents.policy import load_policy_file

    blob = load_policy_file(tiny_policy)
    state = {k: torch.full_like(v, float("nan")) for k, v in blob["state_dict"].items()}
    network = build_network(RULES, SPEC)
    network.load_state_dict(state)
    save_policy(tmp_path / "nan.pt", network, blob["metadata"])
    with pytest.raises(ConfigError, match="corrupt: non-finite weights in"):
        parse_args(tiny(tmp_path / "nan.pt", tmp_path / "r"))


class FakeRay:
    """A stand-in for ``ray`` (which is in the rllib extra): tasks run here when asked for
    their result; those in `crashed` raise Ray's error for a worker that died more often than
    Ray retries."""

    class exceptions:  # the module it stands for
        class WorkerCrashedError(Exception):
            pass

    def __init__(self, crashed: set[int]) -> None:
        self.crashed, self.cancelled, self.shut = crashed, [], False
        self.initialized = False

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        self.initialized = True

    def shutdown(self) -> None:
        self.shut = True

    def remote(self, work: Any) -> Any:
        class Remote:
            def remote(self, task: LabelTask) -> tuple[Any, LabelTask]:
                return (work, task)

        return Remote()

    def wait(self, pending: list[Any], num_returns: int) -> tuple[list[Any], list[Any]]:
        return pending[:num_returns], pending[num_returns:]

    def get(self, ref: tuple[Any, LabelTask]) -> Any:
        work, task = ref
        if task.seed in self.crashed:
            raise self.exceptions.WorkerCrashedError(
                "The worker died unexpectedly while executing this task.\nCheck python-core-"
                "worker-*.log files for more information."
            )
        return work(task)

    def cancel(self, ref: Any, force: bool = False) -> None:
        self.cancelled.append(ref[1].seed)


def test_a_ray_worker_lost_for_good_is_one_error_and_the_rest_cancelled(
    tiny_policy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A labelling task whose Ray worker was killed more often than Ray retries ends the round
    with `WorkerDied`, one line saying what was lost and to resume (as a local worker's death
    does); the tasks not yet done are cancelled, and Ray is shut down."""
    import sys

    from rummy500_env.engine.errors import Rummy500Error
    from rummy500_env.training.exit import Workers

    ray = FakeRay(crashed={2})
    monkeypatch.setitem(sys.modules, "ray", ray)
    args, _ = parse_args([*tiny(tiny_policy, tmp_path / "r"), "--ray", "--workers", "3"])
    policy = tiny_policy.read_bytes()
    tasks = [LabelTask("standard", policy, 2, 2, "value", seed, 4) for seed in (1, 2, 3)]
    workers = Workers(args)
    got = []
    with pytest.raises(Rummy500Error) as caught:
        for labels in workers.label(tasks):
            got.append(labels)
    workers.close()
    message = str(caught.value)
    assert type(caught.value).__name__ == "WorkerDied" and "\n" not in message
    assert "WorkerCrashedError: The worker died unexpectedly" in message
    assert "2 of 3 labelling tasks unfinished" in message and "--resume" in message
    assert len(got) == 1 and ray.cancelled == [3] and ray.shut
