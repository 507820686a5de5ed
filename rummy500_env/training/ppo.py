"""``python -m training.ppo``: self-play MaskablePPO that exports a policy anyone can load.

Reads top to bottom: the arguments (a dataclass; the packaged config `ppo` is the default and
every field can be overridden on the command line), then the pieces (environments, opponents,
behaviour-cloning warm start, callbacks, export), then `train`, which puts them together.

    python -m training.ppo                                # the packaged config "ppo"
    python -m training.ppo --config ppo_long --run-dir runs/long   # or a YAML file's path
    python -m training.ppo --total-timesteps 200000 --opponents.self 0.5
    python -m training.ppo --resume runs/ppo_standard_hand_s0    # after an interruption

A run folder holds ``config.json``, ``checkpoints/`` (written atomically, the last K kept),
``snapshots/`` (frozen opponents), ``tb/`` (TensorBoard), ``evaluations.csv``,
``learning_curve.png`` and, at the end, ``policy.pt`` (see `rummy500_env.agents.policy`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import rummy500_env
from rummy500_env.agents.base import Agent
from rummy500_env.agents.policy import (
    ACTIVATIONS,
    PolicyAgent,
    build_network,
    current_encoding,
    save_policy,
)
from rummy500_env.agents.registry import ALLOWED, AgentSpecError, check_spec, make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.rules import PRESETS, Rules

CONFIGS = Path(__file__).resolve().parent / "configs"
"""The packaged configs (YAML files of `Args` fields), installed with the package."""
DEFAULT_CONFIG = "ppo"
BOTS = ("random", "greedy", "expert")
"""The default opponents and evaluation bots; any agent spec is allowed (see `check_spec`)."""


class ConfigError(Rummy500Error):
    """A bad training configuration value: names the field, the value and what is allowed."""


@dataclass
class Args:
    """Self-play MaskablePPO for Rummy 500."""

    rules: str = "standard"
    """Rules preset the policy plays."""
    episode: str = "hand"
    """Training episode: "hand" (reward: hand score difference / 100) or "game" (win/loss)."""
    total_timesteps: int = 40_000
    """Learner decisions to train for (a resumed run continues to the same total)."""
    n_envs: int = 2
    """Parallel environments."""
    subproc: bool = True
    """Run the environments in subprocesses (SubprocVecEnv); False keeps them in-process."""
    learning_rate: float = 1e-4
    """Adam step size."""
    n_steps: int = 1024
    """Steps per environment per rollout."""
    batch_size: int = 256
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    gamma: float = 0.995
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.1
    """PPO clip range."""
    ent_coef: float = 0.003
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    net_arch: tuple[int, ...] = (256, 256)
    """Hidden layer widths of the policy and of the value network (separate networks)."""
    activation: str = "tanh"
    """Hidden activation: tanh or relu."""
    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.4, "expert": 0.3, "self": 0.2}
    )
    """Sampling weights of the opponent pool, by agent spec (see `rummy500_env.agents.registry`);
    "self" is shared by the frozen snapshots."""
    snapshot_every: int = 20_000
    """Timesteps between frozen snapshots of the learner added to the pool."""
    max_snapshots: int = 5
    """Snapshots kept in the pool (the oldest leave first)."""
    bc_decisions: int = 40_000
    """ExpertAgent decisions imitated before PPO (behaviour cloning; 0 skips it)."""
    bc_epochs: int = 6
    """Passes over the imitation data."""
    checkpoint_every: int = 10_000
    """Timesteps between checkpoints."""
    keep_checkpoints: int = 3
    """Checkpoints kept (older ones are deleted)."""
    eval_every: int = 20_000
    """Timesteps between evaluations against the bots."""
    eval_games: int = 20
    """Games (duplicate deals, both seats) per bot at each periodic evaluation."""
    final_eval_games: int = 100
    """Games per bot in the final evaluation stored with the policy."""
    eval_bots: tuple[str, ...] = BOTS
    """Agent specs to evaluate against."""
    seed: int = 0
    """Seeds Python, numpy, torch and the environments."""
    run_dir: str | None = None
    """Run folder; default runs/ppo_<rules>_<episode>_s<seed>."""
    export: str | None = None
    """Also copy the final policy here (e.g. models/rummy500-ppo-standard.pt)."""
    progress: bool = True
    """Show a progress bar."""

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir or f"runs/ppo_{self.rules}_{self.episode}_s{self.seed}")

    @property
    def rollout_size(self) -> int:
        """Timesteps collected per PPO update."""
        return self.n_steps * self.n_envs

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""

        def need(ok: bool, name: str, allowed: str) -> None:
            if not ok:
                raise ConfigError(f"{name}={getattr(self, name)!r} is not allowed: {allowed}")

        need(self.rules in PRESETS, "rules", f"use one of {', '.join(PRESETS)}")
        need(self.episode in ("hand", "game"), "episode", "use 'hand' or 'game'")
        for name in (
            "total_timesteps",
            "n_envs",
            "n_steps",
            "batch_size",
            "n_epochs",
            "snapshot_every",
            "max_snapshots",
            "checkpoint_every",
            "keep_checkpoints",
            "eval_every",
            "eval_games",
            "final_eval_games",
            "bc_epochs",
        ):
            need(
                type(getattr(self, name)) is int and getattr(self, name) >= 1,
                name,
                "use an int >= 1",
            )
        need(
            type(self.bc_decisions) is int and self.bc_decisions >= 0,
            "bc_decisions",
            "use an int >= 0",
        )
        need(0 < self.learning_rate < 1, "learning_rate", "use a number in (0, 1)")
        need(0 < self.gamma <= 1, "gamma", "use a number in (0, 1]")
        need(0 < self.gae_lambda <= 1, "gae_lambda", "use a number in (0, 1]")
        need(0 < self.clip_range < 1, "clip_range", "use a number in (0, 1)")
        need(self.ent_coef >= 0, "ent_coef", "use a number >= 0")
        need(self.vf_coef >= 0, "vf_coef", "use a number >= 0")
        need(
            len(self.net_arch) >= 1 and all(w >= 1 for w in self.net_arch),
            "net_arch",
            "give one or more positive layer widths",
        )
        need(self.activation in ACTIVATIONS, "activation", f"use one of {ACTIVATIONS}")
        need(
            all(name == "self" or _is_spec(name) for name in self.opponents)
            and all(w >= 0 for w in self.opponents.values())
            and sum(self.opponents.values()) > 0,
            "opponents",
            f"give weights >= 0, not all zero, to self (the snapshots) or agents: {ALLOWED}",
        )
        need(
            all(_is_spec(name) for name in self.eval_bots) and len(self.eval_bots) >= 1,
            "eval_bots",
            f"give one or more agents: {ALLOWED}",
        )
        need(
            self.batch_size <= self.rollout_size,
            "batch_size",
            f"use at most n_steps * n_envs = {self.rollout_size}",
        )


def _is_spec(name: str) -> bool:
    try:
        check_spec(name)
    except AgentSpecError:
        return False
    return True


# --- configuration


def config_path(name_or_path: str | Path) -> Path:
    """A packaged config by name (``ppo``, ``ppo_long``), or a YAML file by path."""
    packaged = CONFIGS / f"{name_or_path}.yaml"
    if packaged.is_file():
        return packaged
    path = Path(name_or_path)
    if not path.is_file():
        names = sorted(p.stem for p in CONFIGS.glob("*.yaml"))
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


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    known = {f.name for f in dataclasses.fields(Args)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s) {unknown}; known: {sorted(known)}")
    data = dict(data)
    for key in ("net_arch", "eval_bots"):
        if key in data and isinstance(data[key], list):
            data[key] = tuple(data[key])
    try:
        return Args(**data)
    except TypeError as e:
        raise ConfigError(str(e)) from None


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line: ``--config PATH`` picks the YAML defaults,
    ``--resume RUN_DIR`` reloads a run's config; other flags override fields (tyro)."""
    import tyro

    argv = list(argv)
    resume = _pop_option(argv, "--resume")
    config = _pop_option(argv, "--config")
    if resume is not None:
        saved = Path(resume) / "config.json"
        if not saved.is_file():
            raise ConfigError(f"--resume {resume!r}: no run there (no config.json)")
        base = args_from_dict(json.loads(saved.read_text()))
    else:
        base = args_from_dict(load_yaml(config or DEFAULT_CONFIG))
    args = tyro.cli(
        Args, default=base, args=argv, prog="python -m training.ppo", description=__doc__
    )
    if resume is not None:
        args.run_dir = resume
    args.validate()
    return args, resume is not None


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


# --- environments and opponents


def make_env(args: Args, rank: int) -> Any:
    def thunk() -> Any:
        from stable_baselines3.common.monitor import Monitor

        from rummy500_env.single_agent import Rummy500SingleAgentEnv

        env = Rummy500SingleAgentEnv(seat="random", rules=args.rules, episode=args.episode)
        env.reset(seed=args.seed * 1000 + rank)
        return Monitor(env)

    return thunk


def opponent_pool(args: Args, snapshots: list[str]) -> tuple[list[Agent], list[float]]:
    """The pool and its weights: the agents named, and the snapshots sharing the "self"
    weight."""
    rules = Rules.preset(args.rules)
    pool: list[Agent] = []
    weights: list[float] = []
    for name, w in args.opponents.items():
        if w <= 0:
            continue
        if name == "self":
            for path in snapshots:
                pool.append(PolicyAgent.load(path, deterministic=False))
                weights.append(w / len(snapshots))
        else:
            pool.append(make_agent(name, rules, seed=args.seed + len(pool)))
            weights.append(w)
    if not pool:  # only "self" is weighted and no snapshot exists yet
        pool, weights = [make_agent("random", rules, seed=args.seed)], [1.0]
    return pool, weights


def new_model(args: Args, venv: Any, tensorboard_log: str | None = None) -> Any:
    """A fresh MaskablePPO model with the hyperparameters of `args`."""
    import torch
    from sb3_contrib import MaskablePPO

    act = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[args.activation]
    return MaskablePPO(
        "MlpPolicy",
        venv,
        learning_rate=args.learning_rate,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        clip_range=args.clip_range,
        ent_coef=args.ent_coef,
        vf_coef=args.vf_coef,
        seed=args.seed,
        device="cpu",
        policy_kwargs={"net_arch": list(args.net_arch), "activation_fn": act},
        tensorboard_log=tensorboard_log,
    )


# --- behaviour cloning warm start


def collect_expert(args: Args, decisions: int) -> dict[str, np.ndarray]:
    """Observations, masks, actions and discounted returns of ExpertAgent's decisions, playing
    from both seats against the bots."""
    rules = Rules.preset(args.rules)
    env = rummy500_env.raw_env(rules=rules, episode="hand")
    expert = make_agent("expert", rules, seed=args.seed)
    opponents = [make_agent(name, rules, seed=args.seed) for name in ("greedy", "expert", "random")]
    obs_l: list[np.ndarray[Any, Any]] = []
    mask_l: list[np.ndarray[Any, Any]] = []
    act_l: list[int] = []
    ret_l: list[float] = []
    game = 0
    while len(act_l) < decisions:
        env.reset(seed=args.seed * 100_003 + game)
        me = game % rules.players
        opponent = opponents[game % len(opponents)]
        start = len(act_l)
        reward = 0.0
        while not all(env.terminations.values()):
            agent = env.agent_selection
            o = env.observe(agent)
            if env.agent_name_mapping[agent] == me:
                a = expert.act(o["observation"], o["action_mask"])
                obs_l.append(o["observation"])
                mask_l.append(o["action_mask"].astype(bool))
                act_l.append(a)
            else:
                a = opponent.act(o["observation"], o["action_mask"])
            env.step(a)
            reward += env.rewards[f"player_{me}"]
        steps = len(act_l) - start
        ret_l += [reward * args.gamma ** (steps - 1 - k) for k in range(steps)]
        game += 1
    return {
        "obs": np.array(obs_l, dtype=np.float32),
        "mask": np.array(mask_l),
        "action": np.array(act_l),
        "return": np.array(ret_l, dtype=np.float32),
    }


def behaviour_clone(
    model: Any, data: dict[str, np.ndarray], epochs: int, seed: int
) -> dict[str, float]:
    """Train the actor to imitate the expert (masked cross-entropy) and the critic on the
    returns, so PPO starts from a sensible policy and value."""
    import torch

    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    n = len(data["action"])
    gen = np.random.default_rng(seed)
    obs = torch.as_tensor(data["obs"])
    mask = torch.as_tensor(data["mask"])
    act = torch.as_tensor(data["action"])
    ret = torch.as_tensor(data["return"])
    stats = {}
    for epoch in range(epochs):
        order = gen.permutation(n)
        total, correct = 0.0, 0
        for i in range(0, n, 256):
            idx = torch.as_tensor(order[i : i + 256])
            features = policy.extract_features(obs[idx], policy.pi_features_extractor)
            latent_pi, latent_vf = policy.mlp_extractor(features)
            logits = policy.action_net(latent_pi).masked_fill(~mask[idx], -1e9)
            values = policy.value_net(latent_vf).squeeze(-1)
            loss = torch.nn.functional.cross_entropy(logits, act[idx])
            loss = loss + 0.5 * torch.nn.functional.mse_loss(values, ret[idx])
            opt.zero_grad()
            torch.autograd.backward(loss)  # loss.backward(), which torch leaves unannotated
            opt.step()
            total += loss.item() * len(idx)
            correct += int((logits.argmax(-1) == act[idx]).sum())
        stats = {"epoch": epoch + 1, "loss": total / n, "agreement": correct / n}
        print(
            f"behaviour cloning epoch {epoch + 1}/{epochs}: loss {stats['loss']:.3f}, "
            f"agrees with the expert on {stats['agreement']:.1%} of decisions",
            flush=True,
        )
    return stats


# --- export


def policy_network(model: Any, args: Args) -> Any:
    """The actor of an SB3 MaskablePPO model as a plain torch module."""
    rules = Rules.preset(args.rules)
    enc = current_encoding(rules)
    net = build_network(
        enc["observation_size"], list(args.net_arch), enc["action_size"], args.activation
    )
    net[0].load_state_dict(model.policy.mlp_extractor.policy_net.state_dict())
    net[1].load_state_dict(model.policy.action_net.state_dict())
    return net


def export_policy(
    model: Any, args: Args, path: str | Path, extra: dict[str, Any] | None = None
) -> None:
    """Write the exported policy file (torch state dict + JSON metadata)."""
    rules = Rules.preset(args.rules)
    meta = {
        "package_version": rummy500_env.__version__,
        "commit": _git_commit(),
        "encoding": current_encoding(rules),
        "rules": rules.to_dict(),
        "network": {"net_arch": list(args.net_arch), "activation": args.activation},
        "training": {**_jsonable(args), "timesteps": int(model.num_timesteps)},
    }
    meta.update(extra or {})
    save_policy(path, policy_network(model, args), meta)


def _git_commit() -> str | None:
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


def _jsonable(args: Args) -> dict[str, Any]:
    d = dataclasses.asdict(args)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


# --- evaluation


def evaluate_policy_file(path: Path, args: Args, games: int, workers: int) -> dict[str, Any]:
    """Duplicate-deal games to the target against each bot (training.evaluate)."""
    from rummy500_env.training.evaluate import Config, run

    cfg = Config(
        [str(path), *args.eval_bots],
        games=games,
        rules=args.rules,
        episode="game",
        workers=workers,
        seed=args.seed + 1,
        out=str(path.parent / "evaluate"),
    )
    summary = run(cfg, progress=False)
    label = summary["pairs"][0]["a"]
    out = {}
    for row in summary["pairs"]:
        if row["a"] == label:
            out[row["b"]] = {
                k: row[k]
                for k in (
                    "games",
                    "wins_a",
                    "wins_b",
                    "draws",
                    "win_rate_a",
                    "win_rate_a_ci95",
                    "margin_a",
                    "margin_a_ci95",
                )
            }
    return out


# --- callbacks


def _callbacks(args: Args, run: Path, state: dict[str, Any], venv: Any) -> list[Any]:
    """Checkpoints, snapshots and evaluations, each every so many timesteps."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Every(BaseCallback):
        """Calls `action(model)` each time the timestep count passes a multiple of `interval`
        (counted from where a resumed run starts)."""

        def __init__(self, interval: int, action: Any) -> None:
            super().__init__()
            self.interval, self.action = interval, action
            self.next = (state["timesteps"] // interval + 1) * interval

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next += self.interval
                self.action(self.model, self.logger)
            return True

    def evaluate(model: Any, logger: Any) -> None:
        path = run / "eval_policy.pt"
        export_policy(model, args, path)
        results = evaluate_policy_file(path, args, args.eval_games, workers=1)
        row = {"timesteps": model.num_timesteps}
        for bot, r in results.items():
            logger.record(f"eval/win_rate_vs_{bot}", r["win_rate_a"])
            logger.record(f"eval/margin_vs_{bot}", r["margin_a"])
            row[f"win_rate_vs_{bot}"] = r["win_rate_a"]
        append_evaluation(run, row)

    return [  # snapshots first, so a checkpoint at the same step records the new pool
        Every(args.snapshot_every, lambda m, _: add_snapshot(m, args, run, state, venv)),
        Every(args.checkpoint_every, lambda m, _: save_checkpoint(m, args, run, state)),
        Every(args.eval_every, evaluate),
    ]


def save_checkpoint(model: Any, args: Args, run: Path, state: dict[str, Any]) -> Path:
    """Save model and state atomically (temporary file, then rename); keep the last K."""
    ckpt_dir = run / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    steps = int(model.num_timesteps)
    path = ckpt_dir / f"step_{steps:010d}.zip"
    tmp = ckpt_dir / f".step_{steps:010d}.zip.tmp"
    model.save(tmp)
    if not tmp.exists() and Path(str(tmp) + ".zip").exists():  # SB3 appends .zip to odd names
        Path(str(tmp) + ".zip").replace(tmp)
    tmp.replace(path)
    state["timesteps"] = steps
    state["checkpoint"] = path.name
    _write_json(run / "state.json", state)
    for old in sorted(ckpt_dir.glob("step_*.zip"))[: -args.keep_checkpoints]:
        old.unlink()
    return path


def add_snapshot(model: Any, args: Args, run: Path, state: dict[str, Any], venv: Any) -> None:
    path = run / "snapshots" / f"snapshot_{int(model.num_timesteps):010d}.pt"
    export_policy(model, args, path)
    state["snapshots"] = (state["snapshots"] + [str(path)])[-args.max_snapshots :]
    pool, weights = opponent_pool(args, state["snapshots"])
    venv.env_method("set_opponent_pool", pool, weights)


def append_evaluation(run: Path, row: dict[str, Any]) -> None:
    path = run / "evaluations.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def learning_curve(run: Path) -> Path | None:
    """PNG of the periodic evaluations (win rate against each bot over timesteps)."""
    path = run / "evaluations.csv"
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
    ax.set_xlabel("timesteps")
    ax.set_ylabel("win rate (games to the target)")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("learning curve")
    fig.tight_layout()
    out = run / "learning_curve.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


# --- training


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    seed_everything(args.seed)
    torch.set_num_threads(os.cpu_count() or 1)  # updates use the cores the envs leave idle
    run = args.run_path
    start = time.time()
    if resume:
        state = (
            json.loads((run / "state.json").read_text()) if (run / "state.json").exists() else None
        )
        if not state or not state.get("checkpoint"):
            raise ConfigError(f"--resume {str(run)!r}: no checkpoint yet; start it again")
    else:
        if (run / "checkpoints").exists() and any((run / "checkpoints").glob("step_*.zip")):
            raise ConfigError(
                f"{str(run)!r} already holds a run: pass --resume {run} to continue it, or "
                "choose another --run-dir"
            )
        run.mkdir(parents=True, exist_ok=True)
        _write_json(run / "config.json", _jsonable(args))
        state = {"timesteps": 0, "checkpoint": None, "snapshots": [], "wall_s": 0.0}
    print(f"run folder: {run}\nconfig: {json.dumps(_jsonable(args))}", flush=True)

    vec = SubprocVecEnv if args.subproc and args.n_envs > 1 else DummyVecEnv
    venv = vec([make_env(args, i) for i in range(args.n_envs)])
    try:
        if resume:
            ckpt = run / "checkpoints" / state["checkpoint"]
            model = MaskablePPO.load(ckpt, env=venv, device="cpu")
            print(f"resumed from {ckpt.name} at {model.num_timesteps} timesteps", flush=True)
        else:
            model = new_model(args, venv, tensorboard_log=str(run / "tb"))
            if args.bc_decisions:
                t = time.time()
                data = collect_expert(args, args.bc_decisions)
                state["behaviour_cloning"] = behaviour_clone(model, data, args.bc_epochs, args.seed)
                state["behaviour_cloning"]["seconds"] = time.time() - t
            add_snapshot(model, args, run, state, venv)
        pool, weights = opponent_pool(args, state["snapshots"])
        venv.env_method("set_opponent_pool", pool, weights)
        remaining = args.total_timesteps - int(model.num_timesteps)
        if remaining > 0:
            model.learn(
                remaining,
                callback=_callbacks(args, run, state, venv),
                reset_num_timesteps=False,
                tb_log_name="ppo",
                progress_bar=args.progress,
            )
        save_checkpoint(model, args, run, state)
    finally:
        venv.close()
    state["wall_s"] = state.get("wall_s", 0.0) + time.time() - start
    _write_json(run / "state.json", state)

    policy = run / "policy.pt"
    export_policy(model, args, policy)
    print(
        f"evaluating against {', '.join(args.eval_bots)} "
        f"({args.final_eval_games} games each, duplicate deals)...",
        flush=True,
    )
    results = evaluate_policy_file(
        policy, args, args.final_eval_games, workers=min(2, os.cpu_count() or 1)
    )
    append_evaluation(
        run,
        {
            "timesteps": int(model.num_timesteps),
            **{f"win_rate_vs_{b}": r["win_rate_a"] for b, r in results.items()},
        },
    )
    export_policy(
        model,
        args,
        policy,
        {
            "evaluation": {
                "games_per_bot": args.final_eval_games,
                "episode": "game",
                "results": results,
            },
            "wall_s": state["wall_s"],
        },
    )
    learning_curve(run)
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
        f"saved {policy} ({model.num_timesteps} timesteps, {state['wall_s']:.0f}s); "
        f"evaluate it with: python -m rummy500_env.training.evaluate {policy} greedy expert"
    )
    return policy


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
