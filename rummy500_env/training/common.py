"""What every trainer of this package shares, so that `training.ppo` and `training.rllib` each
read as a script about its own algorithm.

* Settings: `TrainArgs`, the settings of a run (rules, budget, intervals, evaluation, folders)
  that each trainer's ``Args`` extends with its algorithm's (`SelfPlayArgs` adds the opponent
  pool and the snapshots of training.ppo and training.rllib), and their
  checks (`ConfigError` names the field, its value and what is allowed; `check_ppo` for the
  numbers both PPO trainers take). `command_line` reads them: a packaged YAML config or a
  file (``--config``), a run's own ``config.json`` (``--resume RUN_DIR``), then tyro's flags.
* The run folder (`RunFolder`): ``config.json``, ``state.json`` (the counters at the last
  checkpoint), ``checkpoints/`` (`Checkpoints`: written atomically, named by step count, the
  last K kept, a damaged newest one skipped for the one before), ``tb/`` (TensorBoard),
  ``evaluations.csv``, ``learning_curve.png`` and, at the end, ``policy.pt``.
* The exported policy (`export_policy`): the actor's torch state dict with the same metadata
  from either trainer, so `PolicyAgent.load` and ``training.evaluate`` take both.
* Evaluation during training (`RunFolder.evaluate`: duplicate-deal games against the bots,
  `training.tournament`) and the final report (`RunFolder.finish`).
* `Every`: the one interval scheduler (snapshots, checkpoints and evaluations every N steps).
"""

from __future__ import annotations

import abc
import copy
import csv
import dataclasses
import itertools
import json
import math
import os
import random
import shutil
import stat
import subprocess
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch
import torch.nn as nn

import rummy500_env
from rummy500_env.agents.networks import ACTIVATIONS
from rummy500_env.agents.policy_file import current_encoding, non_finite_weights, save_policy
from rummy500_env.agents.registry import ALLOWED, AgentSpecError, check_spec, make_agent
from rummy500_env.engine import numbers
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.files import disk_full, remove, remove_leftovers, write_atomically
from rummy500_env.engine.numbers import read_int
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import FEATURE_VERSIONS
from rummy500_env.training.tournament import Config, run

SEEDS = 2**32
"""Seeds are ints below this: the trainers seed numpy's global generator, which takes no more."""
BOTS = ("random", "greedy", "expert")
"""The default opponents and evaluation bots; any agent spec is allowed (see `check_spec`)."""


def configs_folder() -> Path:
    """Where the packaged configs (YAML files of ``Args`` fields) are: in a checkout (or an
    editable install) the repository's top-level ``configs/``, the one copy; in an installed
    wheel ``rummy500_env/configs/``, where setup.py puts that folder."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "configs"
    if (package.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    return package / "configs"


class ConfigError(Rummy500Error):
    """A bad training configuration value: names the field, the value and what is allowed."""


# --- settings


@dataclass
class TrainArgs(abc.ABC):
    """The settings every trainer's run has; a trainer's ``Args`` adds its algorithm's."""

    TRAINER: ClassVar[str]
    """The trainer's name: its packaged config, its run folders' prefix, ``training.trainer`` in
    the policy's metadata, ``python -m training.<TRAINER>``."""
    STEPS: ClassVar[str] = "timesteps"
    """What `total_timesteps` counts, in messages."""
    RESUME_KEEPS: ClassVar[tuple[str, ...]] = ()
    """More fields a resumed run must keep (its checkpoints or its results were made with
    them), beside its rules, episode and network, which every trainer keeps (`check_resume`)."""
    RETIRED: ClassVar[dict[str, object]] = {"critic": "obs"}
    """Fields an earlier release wrote into every ``config.json``, each with the one value
    today's code still trains: a run folder holding that value resumes (the field is dropped),
    any other value is refused, naming the field (`args_of`)."""

    rules: str = "standard"
    """Rules the policy plays: a preset, a preset and field=value overrides
    (standard,target=300) or a JSON object of rules fields."""
    episode: str = "hand"
    """Training episode: "hand" (reward: hand score difference / 100) or "game" (win/loss)."""
    total_timesteps: int = 300_000
    """Steps to train for: the learner's decisions (training.ppo) or every seat's env steps
    (training.rllib); a resumed run continues to the same total."""
    checkpoint_every: int = 50_000
    """Steps between checkpoints."""
    keep_checkpoints: int = 3
    """Checkpoints kept (older ones are deleted)."""
    eval_every: int = 100_000
    """Steps between evaluations against the bots."""
    eval_games: int = 40
    """Games (duplicate deals, both seats) per bot at each periodic evaluation."""
    final_eval_games: int = 100
    """Games per bot in the final evaluation stored with the policy."""
    eval_bots: tuple[str, ...] = BOTS
    """Agent specs to evaluate against."""
    seed: int = 0
    """Seeds Python, numpy, torch and the games (training.rllib: and RLlib)."""
    run_dir: str | None = None
    """Run folder; default runs/<trainer>_<rules>_<episode>_s<seed>."""
    export: str | None = None
    """Also copy the final policy here (e.g. models/rummy500-ppo-standard.pt)."""

    @property
    def run_path(self) -> Path:
        name = self.rules.strip() if self.rules.strip().isidentifier() else "custom"
        return Path(self.run_dir or f"runs/{self.TRAINER}_{name}_{self.episode}_s{self.seed}")

    def game_rules(self) -> Rules:
        return Rules.parse(self.rules)

    @abc.abstractmethod
    def network_spec(self) -> dict[str, Any]:
        """The ``network`` entry of the exported policy's metadata."""

    def evaluation_backend(self, final: bool) -> dict[str, Any]:
        """Where evaluation games run (`tournament.Config` fields): one process while training,
        up to two for the final evaluation."""
        return {"workers": min(2, os.cpu_count() or 1) if final else 1}

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed; a
        trainer's ``Args`` adds the checks of its own fields."""
        try:
            self.game_rules()
        except RulesError as e:
            raise ConfigError(str(e)) from None
        require(self, self.episode in ("hand", "game"), "episode", "use 'hand' or 'game'")
        require_positive_ints(
            self,
            "total_timesteps",
            "checkpoint_every",
            "keep_checkpoints",
            "eval_every",
            "eval_games",
            "final_eval_games",
        )
        require(
            self,
            type(self.seed) is int and 0 <= self.seed < SEEDS,
            "seed",
            f"use an int from 0 to {SEEDS - 1} (numpy's seeds)",
        )
        require(
            self,
            len(self.eval_bots) >= 1 and all(is_spec(name) for name in self.eval_bots),
            "eval_bots",
            f"give one or more agents: {ALLOWED}",
        )


@dataclass
class SelfPlayArgs(TrainArgs):
    """The settings of a trainer whose learner plays a pool of agents and frozen snapshots of
    itself (training.ppo, training.rllib)."""

    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.4, "expert": 0.2, "self": 0.3}
    )
    """Sampling weights of the opponent pool, by agent spec (see `rummy500_env.agents.registry`);
    "self" is shared by the frozen snapshots of the learner."""
    snapshot_every: int = 50_000
    """Steps between frozen snapshots of the learner added to the pool (training.rllib: the
    oldest frozen copy takes the learner's weights)."""
    max_snapshots: int = 5
    """Snapshots kept in the pool (the oldest leave first)."""

    def validate(self) -> None:
        """`TrainArgs.validate`, and the pool's settings."""
        super().validate()
        require_positive_ints(self, "snapshot_every", "max_snapshots")
        require_pool(self, "self (the snapshots)")


def require_pool(args: Any, self_is: str) -> None:
    """Raise `ConfigError` unless ``args.opponents`` weighs "self" and agent specs with finite
    weights >= 0, not all zero."""
    pool: dict[str, float] = args.opponents
    require(
        args,
        all(name == "self" or is_spec(name) for name in pool)
        and all(0 <= w < math.inf for w in pool.values())
        and sum(pool.values()) > 0,
        "opponents",
        f"give finite weights >= 0, not all zero, to {self_is} or agents: {ALLOWED}",
    )


class PPONumbers(Protocol):
    """The hyperparameters both PPO trainers take, under the same names."""

    learning_rate: float
    gamma: float
    gae_lambda: float
    clip_range: float
    ent_coef: float
    vf_coef: float
    n_epochs: int
    net_arch: tuple[int, ...]
    activation: str


def check_ppo(args: PPONumbers) -> None:
    """Raise `ConfigError` for PPO hyperparameters that cannot train."""
    require(args, 0 < args.learning_rate < 1, "learning_rate", "use a number in (0, 1)")
    require(args, 0 < args.gamma <= 1, "gamma", "use a number in (0, 1]")
    require(args, 0 < args.gae_lambda <= 1, "gae_lambda", "use a number in (0, 1]")
    require(args, 0 < args.clip_range < 1, "clip_range", "use a number in (0, 1)")
    for name in ("ent_coef", "vf_coef"):
        require(args, 0 <= getattr(args, name) < math.inf, name, "use a finite number >= 0")
    require_positive_ints(args, "n_epochs")
    require(
        args,
        len(args.net_arch) >= 1 and all(w >= 1 for w in args.net_arch),
        "net_arch",
        "give one or more positive layer widths",
    )
    require(args, args.activation in ACTIVATIONS, "activation", f"use one of {tuple(ACTIVATIONS)}")


def require(args: object, ok: bool, name: str, allowed: str) -> None:
    """Raise `ConfigError` naming field `name`, its value and what is `allowed`, unless `ok`."""
    if not ok:
        raise ConfigError(f"{name}={getattr(args, name)!r} is not allowed: {allowed}")


def require_positive_ints(args: object, *names: str) -> None:
    for name in names:
        value = getattr(args, name)
        require(args, type(value) is int and value >= 1, name, "use an int >= 1")


def is_spec(name: str) -> bool:
    try:
        check_spec(name)
    except AgentSpecError:
        return False
    return True


# --- configuration files and the command line


def kind_of(path: Path, what: str) -> str | None:
    """``"file"``, ``"folder"`` or None (nothing there, or a part of the path is a file) for
    `path`; a `ConfigError` naming `what` when the system cannot even look (a name too long)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise ConfigError(f"{what} {str(path)[:100]!r}: {e.strerror or e}") from None
    return "folder" if stat.S_ISDIR(mode) else "file"


def config_path(name_or_path: str | Path) -> Path:
    """A packaged config by name (``ppo``, ``ppo_long``, ``rllib``), or a YAML file by path."""
    packaged = configs_folder() / f"{name_or_path}.yaml"
    if kind_of(packaged, "--config") == "file":
        return packaged
    path = Path(name_or_path)
    if kind_of(path, "--config") != "file":
        names = sorted(p.stem for p in configs_folder().glob("*.yaml"))
        raise ConfigError(
            f"no config file {str(name_or_path)!r}: give a packaged config ({', '.join(names)}) "
            "or the path of a YAML file"
        )
    return path


def load_yaml(name_or_path: str | Path) -> dict[str, Any]:
    import yaml

    path = config_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{str(path)!r} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{str(path)!r} must hold a mapping of Args fields")
    return data


A = TypeVar("A", bound=TrainArgs)


def args_of(cls: type[A], data: dict[str, Any]) -> A:
    """A trainer's ``Args`` from a dict (YAML, ``config.json``), rejecting unknown fields with
    the list of known ones."""
    known = {f.name for f in dataclasses.fields(cls)}
    retired = getattr(cls, "RETIRED", {})
    for key in sorted(set(data) & set(retired) - known):
        if data[key] != retired[key]:
            raise ConfigError(
                f"config field {key}={data[key]!r} is no longer trained (only {retired[key]!r} "
                f"was kept): a run made with it resumes with the release that made it"
            )
        data = {k: v for k, v in data.items() if k != key}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s) {unknown}; known: {sorted(known)}")
    data = dict(data)
    for key in ("net_arch", "eval_bots"):
        if key in data and isinstance(data[key], list):
            data[key] = tuple(data[key])
    if isinstance(data.get("rules"), dict):
        data["rules"] = json.dumps(data["rules"])
    hints = typing.get_type_hints(cls)
    for key, value in data.items():
        if not fits(value, hints[key]):
            raise ConfigError(
                f"config field {key}={value!r:.80} is not allowed: give {type_name(hints[key])}"
            )
        if hints[key] is float and type(value) is int:
            data[key] = float(value)
    try:
        return cls(**data)
    except TypeError as e:
        raise ConfigError(str(e)) from None


def fits(value: Any, hint: Any) -> bool:
    """Whether a config value (from YAML or JSON) has the type of its ``Args`` field, so that
    a wrong one is a `ConfigError` naming it rather than a crash in the command-line parser
    or in the checks."""
    origin, arms = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arm) for arm in arms)
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float)
    if hint is str:
        return type(value) is str
    if origin is dict:
        return isinstance(value, dict) and all(
            fits(k, arms[0]) and fits(v, arms[1]) for k, v in value.items()
        )
    if origin is tuple:
        return isinstance(value, (list, tuple)) and all(fits(v, arms[0]) for v in value)
    return True


def type_name(hint: Any) -> str:
    """A field's type in the words of a config file."""
    origin, arms = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(arm) for arm in arms)
    if origin is dict:
        return f"a mapping of {type_name(arms[0])} to {type_name(arms[1])}"
    if origin is tuple:
        return f"a list of {type_name(arms[0])}"
    names = {bool: "true or false", int: "an int", float: "a number", str: "a string"}
    return names.get(hint, "null" if hint is type(None) else str(hint))


def command_line(cls: type[A], argv: list[str], description: str | None) -> tuple[A, bool]:
    """(args, resuming) from the command line: ``--config PATH`` picks the YAML defaults (the
    trainer's packaged config by default), ``--resume RUN_DIR`` reloads a run's config; other
    flags override fields (tyro). The result is validated."""
    import tyro

    argv = list(argv)
    resume = _pop_option(argv, "--resume")
    config = _pop_option(argv, "--config")
    if resume is not None:
        config_file = Path(resume) / "config.json"
        if kind_of(config_file, "--resume") != "file":
            raise ConfigError(f"--resume {resume!r}: no run there (no config.json)")
        base = args_of(cls, read_json(config_file))
    else:
        base = args_of(cls, load_yaml(config or cls.TRAINER))
    prog = f"python -m training.{cls.TRAINER}"
    saved = copy.deepcopy(base)
    check_int_flags(cls, argv)
    args = tyro.cli(cls, default=base, args=argv, prog=prog, description=description)
    if resume is not None:  # first: a flag that changes the run is refused for that, not for
        args.run_dir = resume  # what a check of the changed settings would find
        check_resume(saved, args, Path(resume))
    args.validate()
    return args, resume is not None


def int_fields(cls: type[TrainArgs]) -> dict[str, bool]:
    """The fields of `cls` that hold ints (``int``, ``int | None``, ``tuple[int, ...]``), each
    with whether it takes several values on the command line."""
    found: dict[str, bool] = {}
    for name, hint in typing.get_type_hints(cls).items():
        arms = typing.get_args(hint)
        if hint is int or (
            typing.get_origin(hint) in (typing.Union, types.UnionType) and int in arms
        ):
            found[name] = False
        elif typing.get_origin(hint) is tuple and arms[:1] == (int,):
            found[name] = True
    return found


def check_int_flags(cls: type[TrainArgs], argv: list[str]) -> None:
    """Raise `ConfigError` naming the flag for an int flag's value that is not ASCII digits
    (`numbers.read_int`): tyro reads ints with Python's ``int``, which takes any script's
    digits (``--total-timesteps ٣٠٠`` would train for 300 steps)."""
    ints = int_fields(cls)
    for i, arg in enumerate(argv):
        flag, given, value = arg.partition("=")
        name = flag[2:].replace("-", "_")
        if not flag.startswith("--") or name not in ints:
            continue
        if given:
            texts = [value]
        else:
            following = list(itertools.takewhile(lambda a: not a.startswith("--"), argv[i + 1 :]))
            texts = following if ints[name] else following[:1]
        for text in texts:
            if text != "None":  # tyro's word for an optional field's None
                read_int(text, flag, error=ConfigError)


NETWORK_FLAGS = "--network, --channels, --blocks, --hidden, --net-arch or --activation"
"""The flags of the network's shape, which a resumed run keeps."""


def check_resume(saved: TrainArgs, args: TrainArgs, run: Path) -> None:
    """Raise `ConfigError` unless `args` (the run's ``config.json`` with the flags given again)
    keep what the run's checkpoints and snapshots are made of: its rules, its episode (the
    returns its value head learned), its network's shape and the encodings of observations
    and actions. Called while parsing, before any folder, model or game is made, and before
    `TrainArgs.validate`, whose checks of a changed setting would give another reason. Budgets,
    intervals, workers, opponents, evaluations and hyperparameters may change on a resume;
    the trainer's `TrainArgs.RESUME_KEEPS` may not (training.exploit's warm start: its
    result measures it as the baseline)."""
    where = f"--resume {str(run)!r}"
    try:
        theirs = saved.game_rules()
    except RulesError as e:
        raise ConfigError(f"{where}: the rules in its config.json are unreadable: {e}") from None
    try:
        given = args.game_rules()
    except RulesError as e:
        raise ConfigError(str(e)) from None
    changed = differences(given.to_dict(), theirs.to_dict())
    if changed:
        raise ConfigError(
            f"{where}: rules differ from the run's: {changed}; a run resumes with its own rules "
            "(drop --rules); to train for other rules, start a new run"
        )
    if args.episode != saved.episode:
        raise ConfigError(
            f"{where}: {differences({'episode': args.episode}, {'episode': saved.episode})}; "
            "its value head learned that episode's returns: drop --episode, or start a new run "
            "from its policy (--init-policy RUN/policy.pt)"
        )

    for name in type(args).RESUME_KEEPS:
        ours, run_value = getattr(args, name), getattr(saved, name)
        if ours != run_value:
            raise ConfigError(
                f"{where}: {differences({name: ours}, {name: run_value})}; the run is made "
                f"with its own {name}: drop --{name.replace('_', '-')}, or start a new run"
            )

    def shape(spec: dict[str, Any]) -> dict[str, Any]:
        return {("network" if k == "kind" else k): v for k, v in spec.items()}

    changed = differences(shape(args.network_spec()), shape(saved.network_spec()))
    if changed:
        raise ConfigError(
            f"{where}: network differs from the run's: {changed}; its checkpoints hold that "
            f"network's weights: drop the {NETWORK_FLAGS} given"
        )
    stored = run_encoding(run)
    if stored is not None:
        now = current_encoding(args.game_rules())
        if stored.get("observation_version") in FEATURE_VERSIONS:  # the same features
            stored = stored | {"observation_version": now["observation_version"]}
        changed = differences(now, {k: stored.get(k) for k in now}, given="in this package")
        if changed:
            raise ConfigError(
                f"{where}: the encoding of observations and actions differs from the run's: "
                f"{changed}; this package cannot continue it: resume it with the package version "
                "that started it, or start a new run"
            )


def differences(ours: dict[str, Any], run: dict[str, Any], given: str = "given") -> str:
    """The fields whose values differ, each with both values: "players=3 given, players=2 in
    the run; ..." (empty when none)."""
    return "; ".join(
        f"{k}={ours.get(k)!r} {given}, {k}={run.get(k)!r} in the run"
        for k in sorted(set(ours) | set(run))
        if ours.get(k) != run.get(k)
    )


def run_encoding(run: Path) -> dict[str, Any] | None:
    """The observation and action encoding a run was trained with: its ``state.json`` says
    (runs record it), or, for a run from before, the metadata of a policy file it wrote (its
    snapshots, its evaluation policy); None when neither says."""
    from rummy500_env.agents.policy_file import load_policy_file

    state = run / "state.json"
    if state.is_file():
        recorded = read_json(state).get("encoding")
        if isinstance(recorded, dict):
            return recorded
    for path in [*sorted(run.glob("snapshots/*.pt"), reverse=True), run / "eval_policy.pt"]:
        try:
            encoding = load_policy_file(path)["metadata"].get("encoding")
        except Rummy500Error:
            continue
        if isinstance(encoding, dict):
            return encoding
    return None


DAMAGED_ADVICE = {
    "config.json": "it holds the run's settings: restore it from a copy of the run, or write it "
    "again from the 'training' entry of the metadata of one of the run's policy files (the same "
    "settings)",
    "state.json": "it only repeats the counters of the newest checkpoint: delete it and resume "
    "again",
}
"""What to do about each of a run's JSON files when it is damaged."""


def read_json(path: Path) -> dict[str, Any]:
    """A run's JSON file (``config.json``, ``state.json``) as a dict; a `ConfigError` naming
    the file and what to do when it is cut short, not JSON or not an object (a disk that
    filled up, a copy that stopped half way)."""
    try:
        data = numbers.read_json(path.read_bytes().decode("utf-8"), "its text", ConfigError)
    except (OSError, UnicodeDecodeError) as e:
        reason = f"{type(e).__name__}: {e}"
    except ConfigError as e:  # not JSON, nested too deeply, a number too long to read
        reason = str(e)
    else:
        if isinstance(data, dict):
            return data
        reason = f"it holds a {type(data).__name__}, not a JSON object"
    advice = DAMAGED_ADVICE.get(path.name, "restore it from a copy of the run")
    raise ConfigError(f"{str(path)!r} is damaged ({reason[:200]}); {advice}")


class TrainingDivergedError(Rummy500Error):
    """A training step gave a non-finite loss or gradient: the run stops there, before any
    checkpoint, snapshot or export of the weights it spoiled."""


def stop_if_diverged(figures: dict[str, float], where: str, run: Path) -> None:
    """Raise `TrainingDivergedError` naming the figure, its value and the step (`where`) when
    any of a step's `figures` (its losses, its gradient norm) is NaN or infinite. A trainer
    calls it after each update and before it writes anything, so the run folder keeps its
    last good checkpoint and the diverged weights are never exported."""
    for name, value in figures.items():
        if math.isfinite(value):
            continue
        saved = Checkpoints(run, 1).paths()
        advice = (
            f"{str(run)!r} keeps its last checkpoint, {saved[0].name}: resume from it with "
            f"--resume {run} and a lower --learning-rate"
            if saved
            else "no checkpoint was written yet: start the run again with a lower --learning-rate"
        )
        raise TrainingDivergedError(
            f"training diverged at {where}: its {name} is {value}; the weights it spoiled "
            f"were not saved, and {advice}"
        )


def _pop_option(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name:
            if i + 1 >= len(argv):
                raise ConfigError(f"{name} needs a value")
            value = argv[i + 1]
            del argv[i : i + 2]
            return value
        if a.startswith(name + "="):
            del argv[i]
            return a.split("=", 1)[1]
    return None


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
    `write_atomically` (TensorBoard's, a CSV row's), is one ``error:`` line and exit 2."""
    try:
        args, resume = parse(sys.argv[1:] if argv is None else argv)
        train(args, resume)
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


# --- the interval scheduler


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


# --- checkpoints and the run folder


class Checkpoints:
    """A run's ``checkpoints/``: one file or folder per checkpoint, ``step_<steps>``, and
    ``state.json`` beside them naming the last one with the run's counters."""

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


def load_checkpoint(
    run: Path, model: nn.Module, optimizer: torch.optim.Optimizer, args: TrainArgs
) -> dict[str, Any]:
    """Restore the newest readable checkpoint `save_checkpoint` wrote in `run`
    (`Checkpoints.load`: a damaged newest one falls back to the one before) and return its
    counters; a checkpoint of another network is refused."""

    def read(path: Path) -> dict[str, Any]:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        bad = non_finite_weights(blob["model"])
        if bad is not None:  # written before divergence stopped a run: skipped as damaged
            raise ValueError(f"non-finite weights in {bad!r} (the run had diverged)")
        if blob.get("network") != args.network_spec():
            raise ConfigError(
                f"checkpoint {path} holds network {blob.get('network')} but the run's config "
                f"asks for {args.network_spec()}: resume with the run's own config.json"
            )
        model.load_state_dict(blob["model"])
        optimizer.load_state_dict(blob["optimizer"])
        torch.set_rng_state(blob["torch_rng"])
        state: dict[str, Any] = blob["state"]
        return state

    return Checkpoints(run, args.keep_checkpoints).load(read)


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
            write_json(self.path / "config.json", jsonable(args))
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

    def finish(self, actor: nn.Module, state: dict[str, Any]) -> Path:
        """The end of a run: the final evaluation, ``policy.pt`` with its results, the learning
        curve, the results printed and the ``--export`` copy. Returns the policy's path."""
        args, steps = self.args, state["timesteps"]
        print(
            f"evaluating against {', '.join(args.eval_bots)} "
            f"({args.final_eval_games} games each, duplicate deals)...",
            flush=True,
        )
        learner_steps = state.get("learner_steps")
        results = self.evaluate(actor, steps, args.final_eval_games, True, learner_steps)
        evaluation = {"games_per_bot": args.final_eval_games, "episode": "game", "results": results}
        policy = self.path / "policy.pt"
        extra = {"evaluation": evaluation, "wall_s": state["wall_s"]}
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


# --- the exported policy


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


def network_spec(args: Any) -> dict[str, Any]:
    """The ``network`` entry of an exported policy's metadata, from a trainer's network fields
    (``network``, ``channels``, ``blocks``, ``hidden``; ``net_arch``, ``activation``): one
    description for `training.ppo`'s and `training.rllib`'s files."""
    if args.network == "cards":
        return {
            "kind": "cards",
            "channels": args.channels,
            "blocks": args.blocks,
            "hidden": args.hidden,
        }
    return {"kind": "mlp", "net_arch": list(args.net_arch), "activation": args.activation}
