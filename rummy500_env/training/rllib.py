"""``python -m training.rllib``: multi-agent self-play PPO on Ray RLlib, exported to the same
policy file as `training.ppo`.

Why a second trainer: `training.ppo` plays its games in one process on one machine; RLlib
spreads the sampling over any number of env runners and the learning over any number of
learners, on this machine's local Ray instance (the default) or on a Ray cluster
(``--address``). What it writes is the same kind of file: a policy (the flat ``mlp`` network)
that `PolicyAgent.load` and ``training.evaluate`` take unchanged.

How it is built, on RLlib's new API stack (RLModule, Learner, EnvRunner):

* The env is `rummy500_env.raw_env` in RLlib's `PettingZooEnv` (every seat is an agent, a
  turn is several steps of the same agent), made by `make_env`, a module-level function so it
  pickles to every env runner of a cluster.
* `MaskedActorCritic` is this package's RLModule: an actor (exactly `build_network`'s MLP, so
  the export copies its weights as they are) and a separate critic, both reading the
  ``observation`` entry of the env's observation dict; the actor's logits outside
  ``action_mask`` are set to the lowest float, so no illegal action is ever sampled and PPO's
  ratios and entropy only see legal ones. RLlib's default encoders refuse a Dict observation,
  and its action-masking example expects other keys; this module needs neither.
* Self-play with an opponent pool, as `training.ppo` has: each episode the module ``learner``
  takes one seat at random and every other seat is played by one opponent drawn from the pool
  by weight (`PoolMapping`): a bot (`BotModule` runs any agent spec, ``greedy``, ``expert``, a
  policy file...) or one of ``max_snapshots`` frozen copies of the learner
  (``snapshot_0`` ...), which share the pool weight ``self``. Every ``snapshot_every`` env
  steps the oldest copy is overwritten with the learner's current weights. Only ``learner``
  is trained.
* Checkpoints are RLlib's (``algo.save_to_path``) plus ``state.json``; ``--resume RUN_DIR``
  rebuilds the algorithm from the run's ``config.json`` (any flag given again overrides it, so
  a run can move to a cluster with more env runners) and restores the last checkpoint.
* TensorBoard: the numeric results of every iteration (episode returns per module, losses,
  throughput) under ``tb/``; periodic evaluations against the bots go to
  ``evaluations.csv`` and ``learning_curve.png`` as in `training.ppo`.

    python -m training.rllib                                     # the packaged config "rllib"
    python -m training.rllib --num-env-runners 2 --total-timesteps 200000
    python -m training.rllib --address auto --num-env-runners 32 --num-learners 2   # a cluster
    python -m training.rllib --resume runs/rllib_standard_hand_s0

Env steps (``total_timesteps``, ``snapshot_every`` ...) count every seat's decisions, as RLlib
counts them; the learner makes about 1/players of them. Needs the ``rllib`` extra
(``pip install torch==2.13.0 -e ".[rllib]"``); this module imports without it, and says so
when it is used.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import rummy500_env
from rummy500_env.agents.policy import (
    build_network,
    current_encoding,
    save_policy,
)
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.training import ppo
from rummy500_env.training.arena import parse_rules
from rummy500_env.training.ppo import (
    ConfigError,
    append_evaluation,
    git_commit,
    jsonable,
    learning_curve,
    write_json,
)

try:  # RLlib's classes are the bases of the modules below; without the extra, say so on use
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, ValueFunctionAPI
    from ray.rllib.core.rl_module.rl_module import RLModule
    from ray.rllib.core.rl_module.torch import TorchRLModule

    RAY_MISSING: ModuleNotFoundError | None = None
except ModuleNotFoundError as _missing:
    RAY_MISSING = _missing

DEFAULT_CONFIG = "rllib"
LEARNER = "learner"
"""The module id of the trained policy."""
SNAPSHOT = "snapshot_{}"
"""Module ids of the frozen copies of the learner."""
INSTALL = 'pip install torch==2.13.0 -e ".[rllib]"'


class RayMissingError(Rummy500Error):
    """Ray RLlib is not installed: names the extra that installs it."""


def require_ray() -> None:
    """Raise `RayMissingError` (with the install command) unless RLlib imported."""
    if RAY_MISSING is not None:
        raise RayMissingError(
            f"training.rllib needs Ray RLlib ({RAY_MISSING}); install the rllib extra: {INSTALL}"
        )


@dataclass
class Args:
    """Multi-agent self-play PPO for Rummy 500 on Ray RLlib."""

    rules: str = "standard"
    """Rules the policy plays: a preset name or a JSON object of rules fields."""
    episode: str = "hand"
    """Training episode: "hand" (reward: hand score difference / 100) or "game" (win/loss)."""
    total_timesteps: int = 100_000
    """Env steps to sample (every seat's decisions; a resumed run continues to the same total)."""
    address: str | None = None
    """Ray cluster to join ("auto" on a cluster node, or "ray://HEAD:10001"); None starts a
    local Ray instance with `num_cpus` CPUs."""
    num_cpus: int = 2
    """CPUs of the local Ray instance, raised to what the env runners and learners reserve
    plus one for evaluations (ignored with `address`)."""
    num_env_runners: int = 1
    """Remote env runners (sampling actors); 0 samples in the driver."""
    num_envs_per_env_runner: int = 1
    """Environments each env runner steps as a batch."""
    num_cpus_per_env_runner: float = 1.0
    """CPUs Ray reserves for each env runner."""
    sample_timeout_s: float = 600.0
    """Seconds RLlib waits for an env runner's share of an iteration before it drops that
    share (RLlib's default, 60, drops whole iterations on a busy machine)."""
    num_learners: int = 0
    """Remote learners (data-parallel); 0 learns in the driver."""
    num_cpus_per_learner: float = 1.0
    """CPUs Ray reserves for each remote learner."""
    num_gpus_per_learner: float = 0.0
    """GPUs Ray reserves for each learner (the learner uses a GPU when this is > 0)."""
    train_batch_size: int = 4000
    """Env steps sampled per training iteration and learner (RLlib's
    train_batch_size_per_learner); the learner trains on its own seat's share."""
    batch_size: int = 256
    """Minibatch size (RLlib's minibatch_size)."""
    n_epochs: int = 4
    """Passes over each batch (RLlib's num_epochs)."""
    learning_rate: float = 1e-4
    """Adam step size."""
    gamma: float = 0.995
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda (RLlib's lambda_)."""
    clip_range: float = 0.1
    """PPO clip range (RLlib's clip_param)."""
    ent_coef: float = 0.003
    """Entropy bonus (RLlib's entropy_coeff)."""
    vf_coef: float = 0.5
    """Value loss weight (RLlib's vf_loss_coeff)."""
    kl_coeff: float = 0.2
    """Initial weight of RLlib's adaptive KL penalty (0 turns it off)."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the actor and of the critic (separate networks)."""
    activation: str = "tanh"
    """Hidden activation: tanh or relu."""
    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.4, "expert": 0.3, "self": 0.2}
    )
    """Sampling weights of the opponent pool, by agent spec (see `rummy500_env.agents.registry`);
    "self" is shared by the frozen snapshots of the learner."""
    snapshot_every: int = 50_000
    """Env steps between snapshots (the oldest frozen copy takes the learner's weights)."""
    max_snapshots: int = 3
    """Frozen copies of the learner in the pool (all start as the initial learner)."""
    checkpoint_every: int = 50_000
    """Env steps between checkpoints."""
    keep_checkpoints: int = 3
    """Checkpoints kept (older ones are deleted)."""
    eval_every: int = 50_000
    """Env steps between evaluations against the bots."""
    eval_games: int = 20
    """Games (duplicate deals, both seats) per bot at each periodic evaluation."""
    final_eval_games: int = 100
    """Games per bot in the final evaluation stored with the policy."""
    eval_bots: tuple[str, ...] = ("random", "greedy", "expert")
    """Agent specs to evaluate against."""
    seed: int = 0
    """Seeds Python, numpy, torch and RLlib."""
    run_dir: str | None = None
    """Run folder; default runs/rllib_<rules>_<episode>_s<seed>."""
    export: str | None = None
    """Also copy the final policy here."""

    @property
    def run_path(self) -> Path:
        name = self.rules if not self.rules.lstrip().startswith("{") else "custom"
        return Path(self.run_dir or f"runs/rllib_{name}_{self.episode}_s{self.seed}")

    def game_rules(self) -> Rules:
        return parse_rules(self.rules)

    def network_spec(self) -> dict[str, Any]:
        """The ``network`` entry of the exported policy's metadata (the flat ``mlp``)."""
        return {"kind": "mlp", "net_arch": list(self.net_arch), "activation": self.activation}

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""

        need = ppo.check_common(self)
        for name in (
            "total_timesteps",
            "num_cpus",
            "num_envs_per_env_runner",
            "train_batch_size",
            "batch_size",
            "n_epochs",
            "snapshot_every",
            "max_snapshots",
            "checkpoint_every",
            "keep_checkpoints",
            "eval_every",
            "eval_games",
            "final_eval_games",
        ):
            need(_positive_int(getattr(self, name)), name, "use an int >= 1")
        for name in ("num_env_runners", "num_learners"):
            need(_positive_int(getattr(self, name) + 1), name, "use an int >= 0")
        for name in ("num_cpus_per_env_runner", "num_cpus_per_learner", "num_gpus_per_learner"):
            need(getattr(self, name) >= 0, name, "use a number >= 0")
        need(self.sample_timeout_s > 0, "sample_timeout_s", "use a number of seconds > 0")
        need(self.kl_coeff >= 0, "kl_coeff", "use a number >= 0")
        need(
            self.batch_size <= self.train_batch_size,
            "batch_size",
            f"use at most train_batch_size = {self.train_batch_size}",
        )


def _positive_int(value: Any) -> bool:
    return type(value) is int and value >= 1


# --- configuration (the YAML and command line conventions of training.ppo)


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return ppo.args_of(Args, data)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line, as `training.ppo` reads its own."""
    return ppo.command_line(Args, argv, DEFAULT_CONFIG, "python -m training.rllib", __doc__)


# --- the opponent pool


def bot_module_id(spec: str) -> str:
    """A module id for a bot spec that is also a safe folder name in checkpoints."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in spec)
    return f"bot_{safe}"


def opponent_pool(args: Args) -> dict[str, tuple[str | None, float]]:
    """Opponent module id -> (agent spec, or None for a snapshot of the learner; weight)."""
    pool: dict[str, tuple[str | None, float]] = {}
    for name, weight in args.opponents.items():
        if weight <= 0:
            continue
        if name == "self":
            for k in range(args.max_snapshots):
                pool[SNAPSHOT.format(k)] = (None, weight / args.max_snapshots)
        else:
            pool[bot_module_id(name)] = (name, weight)
    return pool


class PoolMapping:
    """RLlib's agent-to-module mapping for self-play: per episode, ``learner`` takes one seat
    at random and one opponent drawn from the pool by weight takes every other seat.

    RLlib asks once per agent and episode, each agent on its own, so every answer derives from
    the episode's id alone: all the seats of one episode agree on who is who.
    """

    def __init__(self, players: int, opponents: list[str], weights: list[float]) -> None:
        self.players = players
        self.opponents = list(opponents)
        self.weights = list(weights)

    def draw(self, episode_id: str) -> tuple[int, str]:
        """(the learner's seat, the opponents' module id) of an episode."""
        rng = random.Random(zlib.crc32(episode_id.encode()))
        seat = rng.randrange(self.players)
        return seat, rng.choices(self.opponents, weights=self.weights)[0]

    def __call__(self, agent_id: str, episode: Any, **kwargs: Any) -> str:
        seat, opponent = self.draw(str(episode.id_))  # a MultiAgentEpisode's unique id
        return LEARNER if agent_id == f"player_{seat}" else opponent


# --- the environment and the modules


def make_env(config: dict[str, Any]) -> Any:
    """RLlib's env creator: the bare AEC env (a masked policy never plays an illegal action,
    and one would raise) as an RLlib multi-agent env. A plain module-level function, so it
    pickles by reference to every env runner."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    return PettingZooEnv(
        rummy500_env.raw_env(rules=config.get("rules", "standard"), episode=config["episode"])
    )


if RAY_MISSING is None:

    class MaskedActorCritic(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI):  # type: ignore[misc]  # ray is untyped
        """PPO's actor and critic for the env's observation dict, with the action mask.

        ``pi`` is `build_network`'s actor (the export copies its weights unchanged), ``vf`` a
        critic of the same widths; model_config: ``{"net_arch": [...], "activation": ...}``.
        Env runners build it without the critic (inference only).
        """

        def setup(self) -> None:
            size = int(self.observation_space["observation"].shape[0])
            arch = list(self.model_config["net_arch"])
            act = str(self.model_config["activation"])
            self.pi = build_network(size, arch, int(self.action_space.n), act)
            self.vf = build_network(size, arch, 1, act)

        def get_non_inference_attributes(self) -> list[str]:
            return ["vf"]

        def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            logits = self.pi(obs["observation"])
            illegal = obs["action_mask"] == 0
            return {
                Columns.ACTION_DIST_INPUTS: logits.masked_fill(
                    illegal, torch.finfo(logits.dtype).min
                )
            }

        def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
            return self.vf(batch[Columns.OBS]["observation"]).squeeze(-1)

    class BotModule(RLModule):  # type: ignore[misc]  # ray is untyped
        """A fixed opponent: any agent spec (``greedy``, ``expert``, a policy file...) playing
        its seats, never trained. model_config: ``{"spec": ..., "rules": <Rules dict>,
        "seed": int}``."""

        def setup(self) -> None:
            cfg = self.model_config
            self.agent = make_agent(cfg["spec"], Rules.from_dict(cfg["rules"]), cfg["seed"])

        def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            obs = batch[Columns.OBS]
            observations = np.asarray(obs["observation"])
            masks = np.asarray(obs["action_mask"])
            actions = [self.agent.act(o, m) for o, m in zip(observations, masks, strict=True)]
            return {Columns.ACTIONS: np.asarray(actions, dtype=np.int64)}

        def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            return self._forward_inference(batch)

        def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            raise NotImplementedError(
                f"{self.model_config['spec']} is a fixed opponent: it is never trained "
                "(policies_to_train holds only the learner)"
            )


# --- the algorithm


def build_config(args: Args) -> Any:
    """The PPOConfig: env, modules, opponent pool and every scale knob of `args`."""
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    rules = args.game_rules()
    probe = rummy500_env.raw_env(rules=rules)
    obs_space = probe.observation_space(probe.possible_agents[0])
    act_space = probe.action_space(probe.possible_agents[0])
    model = {"net_arch": list(args.net_arch), "activation": args.activation}
    pool = opponent_pool(args)

    def spec(module: Any, model_config: dict[str, Any]) -> Any:
        return RLModuleSpec(
            module_class=module,
            observation_space=obs_space,
            action_space=act_space,
            model_config=model_config,
        )

    specs = {LEARNER: spec(MaskedActorCritic, model)}
    for k, (mid, (bot, _)) in enumerate(pool.items()):
        specs[mid] = (
            spec(MaskedActorCritic, model)
            if bot is None
            else spec(BotModule, {"spec": bot, "rules": rules.to_dict(), "seed": args.seed + k})
        )
    mapping = PoolMapping(rules.players, list(pool), [w for _, w in pool.values()])
    return (
        PPOConfig()
        .environment(
            "rummy500_v0",
            env_config={"rules": rules.to_dict(), "episode": args.episode},
            # RLlib's checker steps random, unmasked actions, which the bare env refuses.
            disable_env_checking=True,
        )
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            num_cpus_per_env_runner=args.num_cpus_per_env_runner,
            sample_timeout_s=args.sample_timeout_s,
        )
        .learners(
            num_learners=args.num_learners,
            num_cpus_per_learner=args.num_cpus_per_learner,
            num_gpus_per_learner=args.num_gpus_per_learner,
        )
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.batch_size,
            num_epochs=args.n_epochs,
            lr=args.learning_rate,
            gamma=args.gamma,
            lambda_=args.gae_lambda,
            clip_param=args.clip_range,
            entropy_coeff=args.ent_coef,
            vf_loss_coeff=args.vf_coef,
            kl_coeff=args.kl_coeff,
            use_kl_loss=args.kl_coeff > 0,
        )
        .multi_agent(
            policies=set(specs),
            policy_mapping_fn=mapping,
            policies_to_train=[LEARNER],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .debugging(seed=args.seed, log_level="WARN")
    )


def local_cpus(args: Args) -> int:
    """The CPUs of a local Ray instance: ``num_cpus``, or more if the env runners and learners
    reserve them all, so that one is always left for the evaluation tasks (Ray would queue
    them for ever). Ray's CPUs are slots for scheduling, not cores."""
    reserved = (
        args.num_env_runners * args.num_cpus_per_env_runner
        + args.num_learners * args.num_cpus_per_learner
    )
    return max(args.num_cpus, math.ceil(reserved) + 1)


def start_ray(args: Args) -> None:
    """Join the cluster at ``args.address``, or start a local Ray instance (`local_cpus`)."""
    require_ray()
    import ray
    from ray.tune.registry import register_env

    if not ray.is_initialized():
        if args.address:
            ray.init(address=args.address, log_to_driver=True)
        else:
            ray.init(
                num_cpus=local_cpus(args),
                include_dashboard=False,
                object_store_memory=256 * 2**20,
                log_to_driver=True,
            )
    register_env("rummy500_v0", make_env)


# --- weights: snapshots and export


def learner_weights(algo: Any) -> dict[str, Any]:
    """The learner module's state (numpy arrays by parameter name), from the learner group."""
    weights: dict[str, Any] = algo.learner_group.get_weights(module_ids=[LEARNER])[LEARNER]
    return weights


def policy_network(weights: dict[str, Any], args: Args) -> Any:
    """The learner's actor as the torch module `PolicyAgent` loads (`build_network`)."""
    import torch

    enc = current_encoding(args.game_rules())
    net = build_network(
        enc["observation_size"], list(args.net_arch), enc["action_size"], args.activation
    )
    actor = {k.removeprefix("pi."): torch.as_tensor(v) for k, v in weights.items()}
    net.load_state_dict({k: v for k, v in actor.items() if not k.startswith("vf.")})
    return net


def export_policy(
    algo: Any, args: Args, path: str | Path, timesteps: int, extra: dict[str, Any] | None = None
) -> None:
    """Write the learner as an exported policy file, with the metadata `training.ppo` writes."""
    rules = args.game_rules()
    meta = {
        "package_version": rummy500_env.__version__,
        "commit": git_commit(),
        "encoding": current_encoding(rules),
        "rules": rules.to_dict(),
        "network": args.network_spec(),
        "training": {**jsonable(args), "trainer": "rllib", "timesteps": timesteps},
    }
    meta.update(extra or {})
    save_policy(path, policy_network(learner_weights(algo), args), meta)


def take_snapshot(algo: Any, state: dict[str, Any], args: Args) -> str | None:
    """Copy the learner's weights into the oldest frozen copy (on the learners and every env
    runner); returns its module id, or None when the pool has no snapshots."""
    if opponent_pool(args).get(SNAPSHOT.format(0)) is None:
        return None
    slot = SNAPSHOT.format(state["next_snapshot"] % args.max_snapshots)
    weights = learner_weights(algo)
    algo.learner_group.set_weights({slot: weights})  # where checkpoints read it
    # To the env runners without a weights sequence number: RLlib's own sync numbers the
    # weights by learner update, and a runner that has seen this update's number would keep
    # its old copy; a state without one is always applied.
    actor = {"rl_module": {slot: {k: v for k, v in weights.items() if k.startswith("pi.")}}}
    algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.set_state(actor), local_env_runner=True
    )
    state["next_snapshot"] += 1
    state["snapshots"][slot] = state["timesteps"]
    return slot


# --- checkpoints, evaluation, TensorBoard


def save_checkpoint(algo: Any, args: Args, run: Path, state: dict[str, Any]) -> Path:
    """Save the algorithm atomically (a temporary folder, then a rename); keep the last K."""
    ckpt_dir = run / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    name = f"step_{state['timesteps']:010d}"
    tmp = ckpt_dir / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp.resolve()))
    shutil.rmtree(ckpt_dir / name, ignore_errors=True)
    tmp.replace(ckpt_dir / name)
    state["checkpoint"] = name
    write_json(run / "state.json", state)
    for old in sorted(ckpt_dir.glob("step_*"))[: -args.keep_checkpoints]:
        shutil.rmtree(old)
    return ckpt_dir / name


def evaluate_policy_file(path: Path, args: Args, games: int) -> dict[str, Any]:
    """Duplicate-deal games to the target against each bot (training.evaluate), spread over
    the same Ray instance or cluster as the training."""
    from rummy500_env.training.evaluate import Config, run

    cfg = Config(
        [str(path), *args.eval_bots],
        games=games,
        rules=args.rules,
        episode="game",
        workers=max(1, int(args.num_cpus)),
        seed=args.seed + 1,
        out=str(path.parent / "evaluate"),
        ray=True,
        address=args.address,
    )
    summary = run(cfg, progress=False)
    label = summary["pairs"][0]["a"]
    keys = ("games", "wins_a", "wins_b", "draws", "win_rate_a", "win_rate_a_ci95", "margin_a")
    return {row["b"]: {k: row[k] for k in keys} for row in summary["pairs"] if row["a"] == label}


def scalars(result: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of an RLlib result under ``env_runners`` and ``learners``, by
    slash-joined path (TensorBoard tags)."""
    out: dict[str, float] = {}
    for key, value in result.items():
        tag = f"{prefix}{key}"
        if isinstance(value, dict) and (prefix or key in ("env_runners", "learners")):
            out.update(scalars(value, tag + "/"))
        elif prefix and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            out[tag] = float(value)
    return out


def sampled(result: dict[str, Any]) -> int:
    """Env steps sampled in one training iteration; an iteration without any (every env
    runner failed) is an error rather than a loop that never ends."""
    steps = int(result.get("env_runners", {}).get("num_env_steps_sampled", 0))
    if steps <= 0:
        raise Rummy500Error(
            "a training iteration sampled no env steps: every env runner failed (see its errors "
            "above) or took longer than sample_timeout_s; raise --sample-timeout-s or lower "
            "--train-batch-size on a busy machine"
        )
    return steps


# --- training


class Every:
    """True each time the step count passes a multiple of `interval` (counted from where a
    resumed run starts)."""

    def __init__(self, interval: int, start: int) -> None:
        self.interval = interval
        self.next = (start // interval + 1) * interval

    def due(self, steps: int) -> bool:
        if steps < self.next:
            return False
        self.next = (steps // self.interval + 1) * self.interval
        return True


def _prepare_run(args: Args, resume: bool) -> tuple[Path, dict[str, Any]]:
    """The run folder and its state: a new run writes ``config.json``; a resumed one needs a
    checkpoint."""
    run = args.run_path
    if resume:
        path = run / "state.json"
        state = json.loads(path.read_text()) if path.exists() else None
        if not state or not state.get("checkpoint"):
            raise ConfigError(f"--resume {str(run)!r}: no checkpoint yet; start it again")
        return run, state
    if (run / "checkpoints").exists() and any((run / "checkpoints").glob("step_*")):
        raise ConfigError(
            f"{str(run)!r} already holds a run: pass --resume {run} to continue it, or choose "
            "another --run-dir"
        )
    run.mkdir(parents=True, exist_ok=True)
    write_json(run / "config.json", jsonable(args))
    state = {
        "timesteps": 0,
        "iterations": 0,
        "checkpoint": None,
        "next_snapshot": 0,
        "snapshots": {},
        "wall_s": 0.0,
    }
    return run, state


def _iterate(algo: Any, args: Args, run: Path, state: dict[str, Any], writer: Any) -> None:
    """Train until ``total_timesteps``: snapshots, checkpoints and evaluations on the way."""
    start = state["timesteps"]
    snap = Every(args.snapshot_every, start)
    ckpt = Every(args.checkpoint_every, start)
    evaluate = Every(args.eval_every, start)
    while state["timesteps"] < args.total_timesteps:
        t = time.time()
        result = algo.train()
        new = sampled(result)
        state["timesteps"] += new
        state["iterations"] += 1
        steps = state["timesteps"]
        for tag, value in scalars(result).items():
            writer.add_scalar(tag, value, steps)
        returns = result["env_runners"].get("module_episode_returns_mean", {})
        shown = f"{returns[LEARNER]:+.3f}" if LEARNER in returns else "n/a"
        print(
            f"iteration {state['iterations']}: {steps} env steps ({new / (time.time() - t):.0f}"
            f"/s), learner mean episode return {shown}",
            flush=True,
        )
        if snap.due(steps):
            take_snapshot(algo, state, args)
        if ckpt.due(steps):
            save_checkpoint(algo, args, run, state)
        if evaluate.due(steps):
            path = run / "eval_policy.pt"
            export_policy(algo, args, path, steps)
            row: dict[str, Any] = {"timesteps": steps}
            for bot, r in evaluate_policy_file(path, args, args.eval_games).items():
                writer.add_scalar(f"eval/win_rate_vs_{bot}", r["win_rate_a"], steps)
                row[f"win_rate_vs_{bot}"] = r["win_rate_a"]
            append_evaluation(run, row)


def _run_training(
    algo: Any, args: Args, run: Path, state: dict[str, Any], resume: bool, began: float
) -> tuple[Path, dict[str, Any]]:
    """Restore or start, train, checkpoint, export, evaluate, export with the evaluation."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(run / "tb"))
    writer.add_text("config", json.dumps(jsonable(args), indent=1))
    try:
        if resume:
            algo.restore_from_path(str((run / "checkpoints" / state["checkpoint"]).resolve()))
            print(f"resumed from {state['checkpoint']} at {state['timesteps']} env steps")
        else:
            take_snapshot(algo, state, args)  # every frozen copy starts as the initial learner
        _iterate(algo, args, run, state, writer)
    finally:
        writer.close()
    save_checkpoint(algo, args, run, state)
    state["wall_s"] = state.get("wall_s", 0.0) + time.time() - began
    write_json(run / "state.json", state)
    policy = run / "policy.pt"
    export_policy(algo, args, policy, state["timesteps"])
    print(
        f"evaluating against {', '.join(args.eval_bots)} "
        f"({args.final_eval_games} games each, duplicate deals)...",
        flush=True,
    )
    results = evaluate_policy_file(policy, args, args.final_eval_games)
    append_evaluation(
        run,
        {
            "timesteps": state["timesteps"],
            **{f"win_rate_vs_{b}": r["win_rate_a"] for b, r in results.items()},
        },
    )
    evaluation = {"games_per_bot": args.final_eval_games, "episode": "game", "results": results}
    extra = {"evaluation": evaluation, "wall_s": state["wall_s"]}
    export_policy(algo, args, policy, state["timesteps"], extra)
    return policy, results


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy."""
    require_ray()
    import ray

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    run, state = _prepare_run(args, resume)
    began = time.time()
    print(f"run folder: {run}\nconfig: {json.dumps(jsonable(args))}", flush=True)
    owns_ray = not ray.is_initialized()
    start_ray(args)
    try:
        algo = build_config(args).build_algo()
        try:
            policy, results = _run_training(algo, args, run, state, resume, began)
        finally:
            algo.stop()
    finally:
        if owns_ray:
            ray.shutdown()
    learning_curve(run)
    _report(args, policy, results, state)
    return policy


def _report(args: Args, policy: Path, results: dict[str, Any], state: dict[str, Any]) -> None:
    for bot, r in results.items():
        lo, hi = r["win_rate_a_ci95"]
        print(
            f"  vs {bot:<7} win rate {r['win_rate_a']:.1%} (95% CI {lo:.1%}-{hi:.1%}), "
            f"mean final margin {r['margin_a']:+.0f}"
        )
    if args.export:
        Path(args.export).parent.mkdir(parents=True, exist_ok=True)
        Path(args.export).write_bytes(policy.read_bytes())
        print(f"copied the policy to {args.export}")
    print(
        f"saved {policy} ({state['timesteps']} env steps, {state['wall_s']:.0f}s); evaluate it "
        f"with: python -m training.evaluate {policy} greedy expert"
    )


def main(argv: list[str] | None = None) -> int:
    try:
        args, resume = parse_args(sys.argv[1:] if argv is None else argv)
        train(args, resume)
    except Rummy500Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
