"""A trainer's settings: `TrainArgs`, the settings of a run (rules, budget, intervals,
evaluation, folders) that each trainer's ``Args`` extends with its algorithm's (`SelfPlayArgs`
adds the opponent pool and the snapshots of the self-play trainers), and their checks
(`ConfigError` names the field, its value and what is allowed; `check_ppo` for the numbers
the PPO trainers take), and the network's fields (`NetworkArgs`, with `NetworkKindArgs` for
the trainers that also build the flat network) and their check (`require_network`).
`command_line` reads them: a packaged YAML config or a file (``--config``), a run's own
``config.json`` (``--resume RUN_DIR``), then tyro's flags; and `check_resume` says whether a
run may go on with them. The run itself (its folder, checkpoints, export) is
`training.run`'s.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import itertools
import json
import os
import stat
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from rummy500_env.agents.networks import ACTIVATIONS, KINDS
from rummy500_env.agents.policy_file import current_encoding, file_digest
from rummy500_env.agents.registry import ALLOWED, AgentSpecError, check_spec
from rummy500_env.engine import numbers
from rummy500_env.engine.errors import RulesError, Rummy500Error
from rummy500_env.engine.numbers import read_int, shown
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.observation import FEATURE_VERSIONS

FLOAT32_MAX = 3.4028234663852886e38
"""float32's largest finite number (numpy's ``finfo(float32).max``): the networks and their
losses compute in float32, so a weight or coefficient above it is infinity there."""
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


try:  # flags are read by tyro (the train extra); without it nothing reads the marker
    from tyro.conf import Suppress
except ImportError:  # pragma: no cover - tested with the train extra
    Suppress = None  # type: ignore[misc]  # a marker no one reads without tyro


class ConfigError(Rummy500Error):
    """A bad training configuration value: names the field, the value and what is allowed."""


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
    UNWRITTEN: ClassVar[dict[str, object]] = {}
    """Fields an earlier release did not write into ``config.json``, each with the value its
    runs were made with where today's default differs: a run's ``config.json`` without the
    field resumes with that value (`command_line`)."""
    NOT_MINE: ClassVar[frozenset[str]] = frozenset()
    """Fields of the packaged config this class skips, keeping its own defaults for those it
    has (a config that two classes share: `training.exploit`'s engines); any other unknown
    field is an error."""

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


@dataclass
class PlaysFiles:
    """The settings of a run that plays policy files (an opponent, a target, a warm start):
    it keeps their SHA-256 as it started (`file_digests`, in ``config.json``), and a resumed
    run whose file changed on disk since is refused (`check_files`, which `command_line`
    calls), as ``training.evaluate --resume`` refuses one: the run's figures are against the
    file it started with."""

    file_digests: Annotated[dict[str, str], Suppress] = field(default_factory=dict)
    """Not a flag: the SHA-256 of each policy file the run plays, by path, as it started."""

    def policy_files(self) -> list[str]:
        """The paths of the policy files the run plays (after ``validate`` resolved them)."""
        raise NotImplementedError

    def record_files(self) -> None:
        """Keep the digest of each policy file played, the run's first one where it has one
        (``validate`` calls this)."""
        now = {p: file_digest(p) for p in self.policy_files() if Path(p).is_file()}
        self.file_digests = now | self.file_digests

    def check_files(self, run: Path) -> None:
        """Raise `ConfigError` if a policy file the run still plays changed since it started."""
        played = self.policy_files()
        for path, digest in self.file_digests.items():
            if path not in played:
                continue  # no longer played: its figures are not this run's any more
            found = file_digest(path) if Path(path).is_file() else None
            if found != digest:
                raise ConfigError(
                    f"--resume {str(run)!r}: the policy file {path!r} changed since the run "
                    f"started (sha256 {digest[:12]}... then, "
                    f"{'no file' if found is None else found[:12] + '...'} now); the run's "
                    "figures are against the file it started with: put that file back, or "
                    "start a new run"
                )


def require_pool(args: Any, self_is: str) -> None:
    """Raise `ConfigError` unless ``args.opponents`` weighs "self" and agent specs with weights
    >= 0, not all zero, whose sum is a float32 number (`FLOAT32_MAX`): every share of the pool
    (a weight over the sum, times the games) is then a number, never an overflow or NaN."""
    pool: dict[str, float] = args.opponents
    require(
        args,
        all(name == "self" or is_spec(name) for name in pool)
        and all(0 <= w <= FLOAT32_MAX for w in pool.values())
        and 0 < sum(pool.values()) <= FLOAT32_MAX,
        "opponents",
        f"give finite weights >= 0, not all zero, adding up to at most {FLOAT32_MAX:.4g} "
        f"(float32's largest), to {self_is} or agents: {ALLOWED}",
    )


@dataclass
class PPOArgs(SelfPlayArgs):
    """The PPO hyperparameters of the self-play trainers that share training.ppo's update
    (training.ppo and training.jax_ppo), with their defaults; each ``validate`` checks them."""

    minibatch_size: int = 1024
    """Learner decisions per gradient step."""
    n_epochs: int = 3
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam step size."""
    anneal_lr: bool = False
    """Lower the step size linearly to 0 at total_timesteps."""
    gamma: float = 0.995
    """Discount factor (per learner decision)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""

    def validate(self) -> None:
        """`SelfPlayArgs.validate`, and a minibatch no larger than a rollout
        (`check_minibatch`; each trainer's ``Args`` has the rollout's shape)."""
        super().validate()
        if isinstance(self, RolloutShape):
            check_minibatch(self)


@runtime_checkable
class RolloutShape(Protocol):
    """The rollout's shape and the minibatch of a trainer that collects ``n_steps`` steps of
    ``n_games`` games per update (training.ppo, training.jax_ppo)."""

    n_games: int
    n_steps: int
    minibatch_size: int


def check_minibatch(args: RolloutShape) -> None:
    """Raise `ConfigError` for a minibatch larger than a rollout (``n_steps * n_games``): no
    gradient step could fill it. Left to the trainer's own checks when a size is no int >= 1,
    so that they name it."""
    sizes = (args.n_games, args.n_steps, args.minibatch_size)
    if not all(type(size) is int and size >= 1 for size in sizes):
        return
    rollout = args.n_steps * args.n_games
    require(
        args,
        args.minibatch_size <= rollout,
        "minibatch_size",
        f"use at most n_steps * n_games = {rollout}",
    )


ROLLOUT_SCALARS = 9
"""The numbers of float32 size a device rollout holds per env step beside the observation and
the mask (`training.jax_ppo.Trajectory`'s action, log-probability, value, learner flag,
reward, done and finished return, and the update's advantage and return)."""


def rollout_bytes(n_games: int, n_steps: int, obs_size: int, num_actions: int) -> int:
    """The bytes of one rollout of `n_steps` env steps of `n_games` games held on the device
    at once (training.jax_ppo's jitted rollout and update): per step, the observation of
    `obs_size` float32 numbers, the mask of `num_actions` one-byte flags and `ROLLOUT_SCALARS`
    float32 numbers. A lower bound of what the jitted call needs (its games, the network's
    activations and XLA's buffers come on top), so a rollout refused by it cannot fit."""
    per_step = 4 * obs_size + num_actions + 4 * ROLLOUT_SCALARS
    return n_games * n_steps * per_step


def physical_memory() -> int | None:
    """This machine's memory in bytes, where the system says (None elsewhere)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        return None


def check_rollout_memory(
    n_games: int,
    n_steps: int,
    obs_size: int,
    num_actions: int,
    limit: int | None = None,
    where: str = "this machine's memory",
) -> int:
    """Raise `ConfigError` naming the sizes when a rollout (`rollout_bytes`) exceeds `limit`
    bytes (None: `physical_memory`; give a device's memory, e.g. JAX's
    ``device.memory_stats()["bytes_limit"]`` on a GPU, with `where` naming it), before any
    work: XLA would fail later with RESOURCE_EXHAUSTED or abort on ``bad_alloc``. Returns the
    estimate."""
    need = rollout_bytes(n_games, n_steps, obs_size, num_actions)
    limit = physical_memory() if limit is None else limit
    if limit is not None and need > limit:
        raise ConfigError(
            f"n_games={n_games} x n_steps={n_steps} is a rollout of at least "
            f"{need / 2**30:,.1f} GiB (observations of {obs_size} float32 numbers, masks of "
            f"{num_actions} actions), more than the {limit / 2**30:,.1f} GiB of {where}: "
            "lower n_games or n_steps"
        )
    return need


class PPONumbers(Protocol):
    """The hyperparameters the PPO trainers take, under the same names."""

    learning_rate: float
    gamma: float
    gae_lambda: float
    clip_range: float
    ent_coef: float
    vf_coef: float
    n_epochs: int


def check_ppo(args: PPONumbers) -> None:
    """Raise `ConfigError` for PPO hyperparameters that cannot train."""
    require(args, 0 < args.learning_rate < 1, "learning_rate", "use a number in (0, 1)")
    require(args, 0 < args.gamma <= 1, "gamma", "use a number in (0, 1]")
    require(args, 0 < args.gae_lambda <= 1, "gae_lambda", "use a number in (0, 1]")
    require(args, 0 < args.clip_range < 1, "clip_range", "use a number in (0, 1)")
    for name in ("ent_coef", "vf_coef"):
        require(
            args,
            0 <= getattr(args, name) <= FLOAT32_MAX,
            name,
            f"use a number from 0 to {FLOAT32_MAX:.4g} (float32's largest: the loss is float32)",
        )
    require_positive_ints(args, "n_epochs")


@dataclass
class NetworkArgs:
    """The card network's sizes (`rummy500_env.agents.networks.CardPolicy`), the fields of
    every trainer that builds one from them (training.ppo, training.rllib, training.jax_ppo),
    and the ``network`` entry its policy files and checkpoints hold (`network_spec`); a
    trainer's ``validate`` calls `require_network`."""

    channels: int = 32
    """The card network's features per card."""
    blocks: int = 2
    """The card network's residual blocks."""
    hidden: int = 128
    """The width of the card network's position summary."""

    def network_spec(self) -> dict[str, Any]:
        """The ``network`` entry of the exported policy's metadata and of the checkpoints."""
        return {
            "kind": "cards",
            "channels": self.channels,
            "blocks": self.blocks,
            "hidden": self.hidden,
        }


@dataclass
class NetworkKindArgs(NetworkArgs):
    """`NetworkArgs` and the flat network beside the card one (training.ppo, training.rllib):
    `network` picks, `net_arch` and `activation` shape the ``mlp``."""

    network: str = "cards"
    """Policy network: "cards" (card-structured, see `rummy500_env.agents.networks`) or "mlp"
    (deprecated: it warns; the card network replaces it)."""
    net_arch: tuple[int, ...] = (256, 256)
    """mlp: hidden layer widths of the actor and of its separate critic."""
    activation: str = "tanh"
    """mlp: hidden activation, tanh or relu."""

    def network_spec(self) -> dict[str, Any]:
        """`NetworkArgs.network_spec` for the card network; the ``mlp``'s widths and
        activation for the flat one."""
        if self.network == "cards":
            return super().network_spec()
        return {"kind": "mlp", "net_arch": list(self.net_arch), "activation": self.activation}


def require_network(args: NetworkArgs) -> None:
    """Raise `ConfigError` for a network that cannot be built: card network sizes below 1;
    with a choice of network (`NetworkKindArgs`), an unknown kind or an ``mlp`` shape of no
    layer, a width below 1 or an unknown activation."""
    require_positive_ints(args, "channels", "blocks", "hidden")
    if not isinstance(args, NetworkKindArgs):
        return
    require(args, args.network in KINDS, "network", f"use one of {KINDS}")
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

TRAINER_KEY = "trainer"
"""The key of ``config.json`` that names the trainer whose run it is (`TrainArgs.TRAINER`),
beside the ``Args`` fields; `args_of` takes it off."""


def args_of(cls: type[A], data: dict[str, Any]) -> A:
    """A trainer's ``Args`` from a dict (YAML, ``config.json``), rejecting unknown fields with
    the list of known ones, and a `TRAINER_KEY` that names another trainer."""
    trainer = data.get(TRAINER_KEY, cls.TRAINER)
    if trainer != cls.TRAINER:
        raise ConfigError(
            f"config field {TRAINER_KEY}={shown(trainer, 40)} names another trainer than "
            f"training.{cls.TRAINER}: give the config to that trainer's command"
        )
    data = {k: v for k, v in data.items() if k != TRAINER_KEY}
    known = {f.name for f in dataclasses.fields(cls)}
    retired = cls.RETIRED
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
    resume = pop_option(argv, "--resume")
    config = pop_option(argv, "--config")
    if resume is not None:
        config_file = Path(resume) / "config.json"
        if kind_of(config_file, "--resume") != "file":
            raise ConfigError(f"--resume {resume!r}: no run there (no config.json)")
        recorded = read_json(config_file)
        check_trainer(cls, recorded, resume)  # first: another trainer's run fails anything else
        base = args_of(cls, cls.UNWRITTEN | recorded)
    else:
        packaged = load_yaml(config or cls.TRAINER)
        base = args_of(cls, {k: v for k, v in packaged.items() if k not in cls.NOT_MINE})
    prog = f"python -m training.{cls.TRAINER}"
    saved = copy.deepcopy(base)
    check_int_flags(cls, argv)
    args = tyro.cli(cls, default=base, args=argv, prog=prog, description=description)
    if resume is not None:  # first: a flag that changes the run is refused for that, not for
        args.run_dir = resume  # what a check of the changed settings would find
        check_resume(saved, args, Path(resume))
    args.validate()
    if resume is not None and isinstance(args, PlaysFiles):
        args.check_files(Path(resume))
    return args, resume is not None


def int_fields(cls: type[TrainArgs]) -> dict[str, tuple[bool, bool]]:
    """The fields of `cls` that hold ints (``int``, ``int | None``, ``int | str``,
    ``tuple[int, ...]``), each with whether it takes several values on the command line and
    whether it takes a word too (``collect_workers auto``)."""
    found: dict[str, tuple[bool, bool]] = {}
    for name, hint in typing.get_type_hints(cls).items():
        arms = typing.get_args(hint)
        if hint is int or (
            typing.get_origin(hint) in (typing.Union, types.UnionType) and int in arms
        ):
            found[name] = (False, str in arms)
        elif typing.get_origin(hint) is tuple and arms[:1] == (int,):
            found[name] = (True, False)
    return found


def reads_as_int(text: str) -> bool:
    """Whether Python's ``int`` (tyro's reader) takes `text`."""
    try:
        int(text)
    except ValueError:
        return False
    return True


def check_trainer(cls: type[TrainArgs], config: dict[str, Any], run: str) -> None:
    """Raise `ConfigError` when `run` (its ``config.json`` read as `config`) is another
    trainer's run, naming it and the command that resumes it: the trainer its ``config.json``
    records (`TRAINER_KEY`), or for a run from before that record, the one its policy files
    name (`run_trainer`). Called before anything else reads the run, so nothing is written."""
    theirs = config.get(TRAINER_KEY) if TRAINER_KEY in config else run_trainer(Path(run))
    if theirs is None or theirs == cls.TRAINER:
        return
    if not isinstance(theirs, str) or not theirs.isidentifier():
        raise ConfigError(
            f"--resume {run!r}: its config.json names the trainer {shown(theirs, 40)}, which is "
            f"none; {DAMAGED_ADVICE['config.json']}"
        )
    raise ConfigError(
        f"{run} is a training.{theirs} run: resume it with python -m training.{theirs} "
        f"--resume {run}"
    )


def run_trainer(run: Path) -> str | None:
    """The trainer that made a run whose ``config.json`` does not say (written before it
    did), as its policy files' metadata records it (``training.trainer``); None when none
    says."""
    from rummy500_env.agents.policy_file import load_policy_file

    for path in [*sorted(run.glob("snapshots/*.pt"), reverse=True), run / "eval_policy.pt"]:
        try:
            training = load_policy_file(path)["metadata"].get("training")
        except Rummy500Error:
            continue
        if isinstance(training, dict) and isinstance(training.get("trainer"), str):
            return str(training["trainer"])
    return None


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
            texts = following if ints[name][0] else following[:1]
        for text in texts:
            if text == "None" or (ints[name][1] and not reads_as_int(text)):
                continue  # tyro's word for an optional field's None, or a word (auto)
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


def pop_option(argv: list[str], name: str) -> str | None:
    """The value of option `name` (``NAME VALUE`` or ``NAME=VALUE``), removed from `argv`."""
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
