"""A trainer's run: the run folder (`RunFolder`): ``config.json``, ``state.json`` (the
counters at the last checkpoint), ``checkpoints/`` (`Checkpoints`: written atomically, named by
step count, the last K kept, a damaged newest one skipped for the one before), ``snapshots/``
(the self-play trainers' frozen opponents, named inside the run: `run_snapshot`), ``tb/``
(TensorBoard), ``evaluations.csv``, ``learning_curve.png`` and, at the end, ``policy.pt``;
the exported policy (`export_policy`: the actor's state dict with the same metadata from every
trainer, so `PolicyAgent.load` and ``training.evaluate`` take them all); evaluation during
training (`RunFolder.evaluate`, duplicate-deal games against the bots,
`evaluation.tournament`) and the final report (`RunFolder.finish`); `Every`, the one interval
scheduler; `stop_if_diverged`; and `trainer_main`, every trainer's command. Settings are
`training.settings`'.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

import rummy500_env
from rummy500_env.agents.policy_file import current_encoding, non_finite_weights, save_policy
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.files import disk_full, remove, remove_leftovers, write_atomically
from rummy500_env.evaluation.tournament import Config, run
from rummy500_env.training.settings import (
    TRAINER_KEY,
    A,
    ConfigError,
    SelfPlayArgs,
    TrainArgs,
    kind_of,
)


class TrainingDivergedError(Rummy500Error):
    """A training step gave a non-finite loss or gradient: the run stops there, before any
    checkpoint, snapshot or export of the weights it spoiled."""


COEFFICIENTS = ("ent_coef", "vf_coef")
"""The loss's coefficients, which `divergence_cure` names when one is far from PPO's."""
USUAL_COEFFICIENT = 10.0
"""A coefficient above this is far beyond those PPO trains with (an entropy bonus of about
0.01, a value weight of about 0.5): when a run with one diverges, it is the setting to lower."""


def divergence_cure(args: object | None) -> str:
    """The setting a diverged run should change, as a flag with its value: a loss coefficient
    of `args` far beyond PPO's usual ones (`USUAL_COEFFICIENT`), else the learning rate."""
    if args is not None:
        for name in COEFFICIENTS:
            value = getattr(args, name, None)
            if isinstance(value, int | float) and value > USUAL_COEFFICIENT:
                return (
                    f"a lower --{name.replace('_', '-')} (it is {value:g}, far beyond PPO's "
                    "usual ones, below 1)"
                )
        rate = getattr(args, "learning_rate", None)
        if isinstance(rate, int | float):
            return f"a lower --learning-rate (it is {rate:g})"
    return "a lower --learning-rate"


def stop_if_diverged(
    figures: dict[str, float], where: str, run: Path, args: object | None = None
) -> None:
    """Raise `TrainingDivergedError` naming the figure, its value and the step (`where`) when
    any of a step's `figures` (its losses, its gradient norm) is NaN or infinite, and the
    setting to change (`divergence_cure`, from the run's `args`). A trainer calls it after
    each update and before it writes anything, so the run folder keeps its last good
    checkpoint and the diverged weights are never exported."""
    for name, value in figures.items():
        if math.isfinite(value):
            continue
        saved = Checkpoints(run, 1).paths()
        cure = divergence_cure(args)
        advice = (
            f"{str(run)!r} keeps its last checkpoint, {saved[0].name}: resume from it with "
            f"--resume {run} and {cure}"
            if saved
            else f"no checkpoint was written yet: start the run again with {cure}"
        )
        raise TrainingDivergedError(
            f"training diverged at {where}: its {name} is {value}; the weights it spoiled "
            f"were not saved, and {advice}"
        )


def progress_line(timesteps: int, rate: float, mean_return: float, losses: dict[str, float]) -> str:
    """The line a self-play trainer prints every 15 seconds while it learns."""
    return (
        f"{timesteps:>10,} steps  {rate:,.0f}/s  mean return {mean_return:+.3f}  entropy "
        f"{losses.get('entropy', math.nan):.2f}  kl {losses.get('kl', math.nan):.4f}"
    )


def seed_and_threads(seed: int, threads: int) -> None:
    """Seed Python's, numpy's and torch's global generators and set torch's threads, as a
    trainer does before it builds anything."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


def trainer_main(
    parse: Callable[[list[str]], tuple[A, bool]],
    train: Callable[[A, bool], object],
    argv: list[str] | None,
) -> int:
    """A trainer's command (``python -m training.<name>``): read the arguments (`argv`, or the
    process's), train or resume; a `Rummy500Error`, or a full disk met by a write outside
    `write_atomically` (TensorBoard's, a CSV row's), is one ``error:`` line and exit 2; Ctrl+C
    is one line saying where the run goes on from (`stopped`) and exit 130, as a shell
    reports a process ended by SIGINT."""
    args: A | None = None
    try:
        args, resume = parse(sys.argv[1:] if argv is None else argv)
        train(args, resume)
    except KeyboardInterrupt:
        print(stopped(args), file=sys.stderr)
        return 130
    except Rummy500Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        full = disk_full(e, e.filename or ".")
        if full is None:
            raise
        print(f"error: {full}", file=sys.stderr)
        return 2
    return 0


def stopped(args: TrainArgs | None) -> str:
    """The line a trainer's command ends with on Ctrl+C: its run goes on from the last
    checkpoint with ``--resume``, or, stopped before the first, starts again."""
    if args is None:
        return "stopped"
    run = args.run_path
    saved = Checkpoints(run, 1).paths() if run.is_dir() else []
    if saved:
        return f"stopped; --resume {run} goes on from the last checkpoint ({saved[0].name})"
    return f"stopped before the first checkpoint of {run}: run the same command to start again"


class Every:
    """True each time the step count passes a multiple of `interval` (counted from where a
    resumed run starts); once however many multiples one step passed."""

    def __init__(self, interval: int, start: int) -> None:
        self.interval = interval
        self.next = (start // interval + 1) * interval

    def due(self, steps: int) -> bool:
        if steps < self.next:
            return False
        self.next = (steps // self.interval + 1) * self.interval
        return True


class Checkpoints:
    """A run's ``checkpoints/``: one file or folder per checkpoint, ``step_<steps>``, and
    ``state.json`` beside them naming the last one with the run's counters.

    Every trainer saves one after the evaluation due at the same step: a run stopped during
    that evaluation resumes from the checkpoint before it and evaluates the step again
    (`RunFolder.append_row` keeps one row a step), where the other order would lose the point."""

    def __init__(self, run: Path, keep: int) -> None:
        self.run, self.folder, self.keep = run, run / "checkpoints", keep

    def paths(self) -> list[Path]:
        """The checkpoints, newest first."""
        return sorted(self.folder.glob("step_*"), reverse=True)

    def require(self) -> list[Path]:
        """`paths`, or a `ConfigError` for a run without a checkpoint to resume from."""
        paths = self.paths()
        if not paths:
            raise ConfigError(f"--resume {str(self.run)!r}: no checkpoint yet; start it again")
        return paths

    def save(self, state: dict[str, Any], write: Callable[[Path], None], suffix: str = "") -> Path:
        """A checkpoint of `state["timesteps"]`, written atomically (`write_atomically`:
        `write` fills a temporary path, a file or a folder, renamed once complete), so a run
        killed meanwhile keeps its previous checkpoint; then ``state.json`` names it and the
        oldest beyond `keep` go."""
        remove_leftovers(self.folder)  # of a write a killed run left
        path = write_atomically(self.folder / f"step_{state['timesteps']:010d}{suffix}", write)
        state["checkpoint"] = path.name
        write_json(self.run / "state.json", state)
        for old in self.paths()[self.keep :]:
            remove(old)
        return path

    def load(self, read: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """The counters `read` restores from the newest checkpoint it can read. A damaged newest
        one (the machine died while it was written elsewhere, or its bytes were cut) is
        skipped, saying so, for the one before; a `ConfigError` from `read` (a checkpoint of
        another configuration) stops at once."""
        for path in self.require():
            try:
                state = read(path)
            except ConfigError:
                raise
            except Exception as e:  # torch and RLlib raise many types for damaged bytes
                print(f"warning: skipping unreadable checkpoint {path.name}: {e}", file=sys.stderr)
                continue
            state["checkpoint"] = path.name
            return state
        raise ConfigError(
            f"--resume {str(self.run)!r}: every checkpoint is unreadable; start it again"
        )


def save_checkpoint(
    checkpoints: Checkpoints,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    args: TrainArgs,
) -> Path:
    """A torch trainer's checkpoint (`Checkpoints.save`): the model's and the optimizer's
    state, the run's counters `state`, the network it trains, and torch's random state."""
    blob = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "state": state,
        "network": args.network_spec(),
        "torch_rng": torch.get_rng_state(),
    }
    return checkpoints.save(state, lambda tmp: torch.save(blob, tmp), suffix=".pt")


def check_checkpoint(blob: dict[str, Any], path: Path, args: TrainArgs) -> None:
    """Refuse a checkpoint read from `path` (its ``model`` weights and the ``network`` they
    are, as `save_checkpoint` and training.jax_ppo write them) that cannot continue `args`'s
    run: non-finite weights, written before divergence stopped a run, raise `ValueError`, so
    `Checkpoints.load` skips the checkpoint as damaged for the one before; another network
    than the run's config asks for raises `ConfigError`."""
    bad = non_finite_weights(blob["model"])
    if bad is not None:
        raise ValueError(f"non-finite weights in {bad!r} (the run had diverged)")
    if blob.get("network") != args.network_spec():
        raise ConfigError(
            f"checkpoint {path} holds network {blob.get('network')} but the run's config asks "
            f"for {args.network_spec()}: resume with the run's own config.json"
        )


def load_checkpoint(
    run: Path, model: nn.Module, optimizer: torch.optim.Optimizer, args: TrainArgs
) -> dict[str, Any]:
    """Restore the newest readable checkpoint `save_checkpoint` wrote in `run`
    (`Checkpoints.load`: a damaged newest one falls back to the one before) and return its
    counters; a checkpoint of another network is refused."""

    def read(path: Path) -> dict[str, Any]:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        check_checkpoint(blob, path, args)
        model.load_state_dict(blob["model"])
        optimizer.load_state_dict(blob["optimizer"])
        torch.set_rng_state(blob["torch_rng"])
        state: dict[str, Any] = blob["state"]
        return state

    return Checkpoints(run, args.keep_checkpoints).load(read)


SNAPSHOTS = "snapshots"
"""The run's folder of frozen snapshots; ``state["snapshots"]`` names each file inside the run
folder (``snapshots/snapshot_<steps>.pt``), so a run folder can be moved or copied."""


def run_snapshot(stored: str, run: Path) -> str:
    """A snapshot as ``state["snapshots"]`` names it, inside the run folder, from what a
    checkpoint holds; `ConfigError` if that is no snapshot of this run or its file is gone.

    State written before snapshots were named inside the run holds the path each was written
    at: relative to the working directory of the session that wrote it (``runs/a/snapshots/
    snapshot_0000050000.pt``), or absolute. The trainer only ever wrote snapshots into its run
    folder's ``snapshots/``, so such a path points under the run's old name, and its last two
    parts are the same file in this folder: mapped here, a moved run finds its snapshots and a
    copied one uses its own, never those of the folder it was copied from."""
    path = Path(stored)
    if path.parent.name != SNAPSHOTS:
        raise ConfigError(
            f"--resume {str(run)!r}: its checkpoint names the snapshot {stored!r}, which is not "
            f"in a run's {SNAPSHOTS}/ folder; the checkpoint is not this trainer's"
        )
    path = Path(SNAPSHOTS, path.name)  # an older state's path: its place in this folder
    if not (run / path).is_file():
        raise ConfigError(
            f"--resume {str(run)!r}: the snapshot {path.as_posix()} is missing from the run "
            "folder (its last checkpoint plays against it); copy the run folder whole, "
            f"{SNAPSHOTS}/ included"
        )
    return path.as_posix()


def check_before_work(args: TrainArgs, resume: bool) -> None:
    """Raise `ConfigError` for what would otherwise fail once training is under way, perhaps
    hours later: a run folder that cannot be one (`check_run_folder`), an ``export`` path that
    cannot be written, an opponent or evaluation agent that cannot be built (a policy file
    that is missing, damaged or made for other rules; a bot whose extra is not installed).
    Writes nothing; the trainers call it first."""
    check_run_folder(args.run_path, resume, args.keep_checkpoints)
    if args.export is not None:
        export = Path(args.export)
        if args.export.endswith(("/", os.sep)) or kind_of(export, "export") == "folder":
            raise ConfigError(
                f"export={args.export!r} is a folder: give the path of a file to copy the "
                "policy to, e.g. models/rummy500-ppo-standard.pt"
            )
        check_writable(export.parent, "export", args.export)
    rules = args.game_rules()
    pool = args.opponents if isinstance(args, SelfPlayArgs) else {}
    bots = [name for name, weight in pool.items() if name != "self" and weight > 0]
    for name, specs in (("opponents", bots), ("eval_bots", list(args.eval_bots))):
        for spec in specs:
            try:
                make_agent(spec, rules, seed=args.seed)
            except (Rummy500Error, ModuleNotFoundError) as e:
                raise ConfigError(f"{name}: {spec!r} cannot play these rules: {e}") from None


def check_run_folder(path: Path, resume: bool, keep: int) -> None:
    """Raise `ConfigError` unless `path` can be this run's folder: a folder (or a path where one
    can be made) that holds no run yet, or, to resume, one with a checkpoint."""
    if kind_of(path, "run folder") == "file":
        raise ConfigError(f"run folder {str(path)!r} is a file: choose another --run-dir")
    check_writable(path, "run folder", str(path))
    checkpoints = Checkpoints(path, keep)
    if resume:
        checkpoints.require()
    elif checkpoints.paths():
        raise ConfigError(
            f"{str(path)!r} already holds a run: pass --resume {path} to continue it, or choose "
            "another --run-dir"
        )


def check_writable(folder: Path, name: str, given: str) -> None:
    """Raise `ConfigError` unless `folder` is, or can be made as, a folder this process can
    write in: its nearest existing ancestor must be a writable folder."""
    for place in (folder, *folder.parents):
        kind = kind_of(place, name)
        if kind is not None:
            if kind == "file":
                raise ConfigError(
                    f"{name} {given!r} lies under {str(place)!r}, which is a file, not a folder"
                )
            if not os.access(place, os.W_OK | os.X_OK):
                raise ConfigError(f"{name} {given!r}: cannot write in {str(place)!r}")
            return


class RunFolder:
    """A run's folder (see the module docstring), its TensorBoard writer, its evaluations and
    its final report. A new run writes ``config.json`` and refuses a folder that already holds
    a run; a resumed one needs a checkpoint (`check_run_folder`)."""

    def __init__(self, args: TrainArgs, resume: bool) -> None:
        self.args, self.path = args, args.run_path
        self.checkpoints = Checkpoints(self.path, args.keep_checkpoints)
        check_run_folder(self.path, resume, args.keep_checkpoints)
        if resume:
            remove_leftovers(self.path)  # of writes a killed run left (`write_atomically`)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            config = {TRAINER_KEY: args.TRAINER, **jsonable(args)}  # whose run (`check_trainer`)
            write_json(self.path / "config.json", config)
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(self.path / "tb"))
        self.writer.add_text("config", json.dumps(jsonable(args), indent=1))

    def announce(self) -> None:
        """Print the folder and the settings, as a run starts."""
        print(f"run folder: {self.path}\nconfig: {json.dumps(jsonable(self.args))}", flush=True)

    def evaluate(
        self,
        actor: nn.Module,
        timesteps: int,
        games: int,
        final: bool = False,
        learner_steps: int | None = None,
    ) -> dict[str, Any]:
        """Export the learner to ``eval_policy.pt`` and play `games` duplicate-deal games to the
        target against a field of each of `eval_bots` (`tournament.Config.field`: at two
        players, one against one); the win rates go to TensorBoard and ``evaluations.csv``
        (with a ``learner_steps`` column when the run counts env steps as its timesteps, so
        that its curve compares with `training.ppo`'s). Returns the results by bot (games,
        wins, win rate with its interval, mean final margin with its interval)."""
        args = self.args
        path = self.path / "eval_policy.pt"
        export_policy(actor, args, path, timesteps)
        cfg = Config(
            [str(path), *args.eval_bots],
            games=games,
            rules=args.rules,
            episode="game",
            seed=args.seed + 1,
            out=str(self.path / "evaluate"),
            field=True,
            **args.evaluation_backend(final),
        )
        summary = run(cfg, progress=False)
        label = summary["pairs"][0]["a"]
        keys = ["games", "wins_a", "wins_b", "draws", "win_rate_a", "win_rate_a_ci95"]
        keys += ["margin_a", "margin_a_ci95"]
        results: dict[str, Any] = {
            r["b"]: {k: r[k] for k in keys} for r in summary["pairs"] if r["a"] == label
        }
        row: dict[str, Any] = {"timesteps": timesteps}
        if learner_steps is not None:
            row["learner_steps"] = learner_steps
        for bot, r in results.items():
            self.writer.add_scalar(f"eval/win_rate_vs_{bot}", r["win_rate_a"], timesteps)
            self.writer.add_scalar(f"eval/margin_vs_{bot}", r["margin_a"], timesteps)
            row[f"win_rate_vs_{bot}"] = r["win_rate_a"]
        self.append_row("evaluations.csv", row)
        print("evaluation at", timesteps, {k: v for k, v in row.items() if k != "timesteps"})
        return results

    def finish(self, actor: nn.Module, state: dict[str, Any], evaluate: bool = True) -> Path:
        """The end of a run: the final evaluation (unless not `evaluate`: a distributed run's
        other processes, whose weights are process 0's), ``policy.pt`` with its results, the
        learning curve, the results printed and the ``--export`` copy. Returns the policy's
        path."""
        args, steps = self.args, state["timesteps"]
        extra: dict[str, Any] = {"wall_s": state["wall_s"]}
        results: dict[str, Any] = {}
        if evaluate:
            print(
                f"evaluating against {', '.join(args.eval_bots)} "
                f"({args.final_eval_games} games each, duplicate deals)...",
                flush=True,
            )
            learner_steps = state.get("learner_steps")
            results = self.evaluate(actor, steps, args.final_eval_games, True, learner_steps)
            extra["evaluation"] = {
                "games_per_bot": args.final_eval_games,
                "episode": "game",
                "results": results,
            }
        policy = self.path / "policy.pt"
        export_policy(actor, args, policy, steps, extra)
        self.writer.close()
        self.learning_curve()
        for bot, r in results.items():
            lo, hi = r["win_rate_a_ci95"]
            print(
                f"  vs {bot:<7} win rate {r['win_rate_a']:.1%} (95% CI {lo:.1%}-{hi:.1%}), "
                f"mean final margin {r['margin_a']:+.0f}"
            )
        if args.export:
            write_atomically(args.export, lambda tmp: shutil.copyfile(policy, tmp))
            print(f"copied the policy to {args.export}")
        print(
            f"saved {policy} ({steps} {args.STEPS}, {state['wall_s']:.0f}s of training); "
            f"evaluate it with: python -m training.evaluate {policy} greedy expert"
        )
        return policy

    def append_row(self, name: str, row: dict[str, Any]) -> None:
        """Add `row` to the run folder's CSV file `name` (its header first, when new), in place
        of any row of the same step (its first column): a resumed run that measures a step
        again (a finished run resumed, a step after its last checkpoint) keeps one row of it.
        The file is rewritten atomically."""
        path = self.path / name
        step = next(iter(row))
        rows: list[dict[str, Any]] = []
        if path.exists():
            with open(path, newline="") as f:
                rows = [r for r in csv.DictReader(f) if r.get(step) != str(row[step])]

        def write(tmp: Path) -> None:
            with open(tmp, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(row), extrasaction="ignore")
                w.writeheader()
                w.writerows([*rows, row])

        write_atomically(path, write)

    def learning_curve(self, title: str = "learning curve") -> Path | None:
        """PNG of the evaluations (win rate against each bot over timesteps)."""
        path = self.path / "evaluations.csv"
        if not path.exists():
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = list(csv.DictReader(open(path)))
        steps = [int(r["timesteps"]) for r in rows]
        fig, ax = plt.subplots(figsize=(7, 4))
        for key in rows[0]:
            if key.startswith("win_rate_vs_"):
                ax.plot(steps, [float(r[key]) for r in rows], marker="o", label=key[12:])
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(self.args.STEPS)
        ax.set_ylabel("win rate (games to the target)")
        ax.set_ylim(0, 1)
        ax.legend()
        ax.set_title(title)
        fig.tight_layout()
        out = self.path / "learning_curve.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        return out


def export_policy(
    actor: nn.Module,
    args: TrainArgs,
    path: str | Path,
    timesteps: int,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write the exported policy file: the actor's torch state dict + JSON metadata (package
    version, commit, encodings, rules, network, the training settings)."""
    rules = args.game_rules()
    meta = {
        "package_version": rummy500_env.__version__,
        "commit": git_commit(),
        "encoding": current_encoding(rules),
        "rules": rules.to_dict(),
        "network": args.network_spec(),
        "training": {**jsonable(args), "trainer": args.TRAINER, "timesteps": timesteps},
    }
    meta.update(extra or {})
    save_policy(path, actor, meta)


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def jsonable(args: Any) -> dict[str, Any]:
    """A dataclass of arguments as JSON-compatible values (tuples as lists)."""
    d = dataclasses.asdict(args)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (`write_atomically`: a temporary file, then a rename)."""
    text = json.dumps(data, indent=1)
    write_atomically(path, lambda tmp: tmp.write_text(text))
