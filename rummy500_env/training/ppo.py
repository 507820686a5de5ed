"""``python -m training.ppo``: self-play PPO that exports a policy anyone can load.

One readable loop in the style of CleanRL, over `SelfPlayGames`: many games in one process,
the learner's decisions of all of them in one forward pass per step, frozen snapshots of the
learner (and bots) as opponents. It reads top to bottom: the arguments (a dataclass; the
packaged config ``ppo`` is the default and every field can be overridden on the command line),
the pieces (model, opponents, behaviour-cloning warm start, rollouts, the PPO update,
checkpoints, export, evaluation), then `train`, which puts them together.

    python -m training.ppo                                # the packaged config "ppo"
    python -m training.ppo --config ppo_long --run-dir runs/long   # or a YAML file's path
    python -m training.ppo --total-timesteps 200000 --opponents.self 0.5
    python -m training.ppo --rules '{"players": 3}'       # a preset or JSON rules fields
    python -m training.ppo --resume runs/ppo_standard_hand_s0    # after an interruption

A run folder holds ``config.json``, ``state.json``, ``checkpoints/`` (model, optimizer and
counters, written atomically, the last K kept), ``snapshots/`` (frozen opponents), ``tb/``
(TensorBoard), ``evaluations.csv``, ``learning_curve.png`` and, at the end, ``policy.pt``
(see `rummy500_env.agents.policy`).

Why not stable-baselines3 here: its MaskablePPO asks the policy one environment at a time
(a batch of one per step, where building the masked distribution costs more than the
network), which held training to about 600 learner steps/s on two cores. The single-agent
view still works with MaskablePPO for those who want it (tested; see the README).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
import torch.nn as nn

import rummy500_env
from rummy500_env.agents.base import Agent
from rummy500_env.agents.networks import ACTIVATIONS, KINDS, build_network, mlp
from rummy500_env.agents.policy import PolicyAgent, current_encoding, save_policy
from rummy500_env.agents.registry import ALLOWED, AgentSpecError, check_spec, make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.engine.rules import Rules
from rummy500_env.training.arena import parse_rules
from rummy500_env.training.selfplay import SelfPlayGames

CONFIGS = Path(__file__).resolve().parent / "configs"
"""The packaged configs (YAML files of `Args` fields), installed with the package."""
DEFAULT_CONFIG = "ppo"
BOTS = ("random", "greedy", "expert")
"""The default opponents and evaluation bots; any agent spec is allowed (see `check_spec`)."""
MASKED = -1e9
"""The logit of an illegal action (finite, so entropies stay finite)."""


class ConfigError(Rummy500Error):
    """A bad training configuration value: names the field, the value and what is allowed."""


@dataclass
class Args:
    """Self-play PPO for Rummy 500."""

    rules: str = "standard"
    """Rules the policy plays: a preset name or a JSON object of rules fields."""
    episode: str = "hand"
    """Training episode: "hand" (reward: hand score difference / 100) or "game" (win/loss)."""
    total_timesteps: int = 300_000
    """Learner decisions to train for (a resumed run continues to the same total)."""
    n_games: int = 64
    """Games played side by side; the learner's decisions of all of them are one batch."""
    n_steps: int = 64
    """Learner decisions per game per rollout (a rollout is n_games * n_steps)."""
    minibatch_size: int = 1024
    """Decisions per gradient step."""
    n_epochs: int = 3
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam step size."""
    anneal_lr: bool = False
    """Lower the step size linearly to 0 at total_timesteps."""
    gamma: float = 0.995
    """Discount factor."""
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
    network: str = "cards"
    """Policy network: "cards" (card-structured, see `rummy500_env.agents.networks`) or "mlp"."""
    channels: int = 32
    """cards: features per card."""
    blocks: int = 2
    """cards: residual blocks."""
    hidden: int = 128
    """cards: width of the position summary."""
    net_arch: tuple[int, ...] = (256, 256)
    """mlp: hidden layer widths of the actor and of its separate critic."""
    activation: str = "tanh"
    """mlp: hidden activation, tanh or relu."""
    opponents: dict[str, float] = field(
        default_factory=lambda: {"random": 0.1, "greedy": 0.4, "expert": 0.2, "self": 0.3}
    )
    """Sampling weights of the opponent pool, by agent spec (see `rummy500_env.agents.registry`);
    "self" is shared by the frozen snapshots."""
    snapshot_every: int = 50_000
    """Timesteps between frozen snapshots of the learner added to the pool."""
    max_snapshots: int = 5
    """Snapshots kept in the pool (the oldest leave first)."""
    bc_decisions: int = 0
    """ExpertAgent decisions imitated before PPO (behaviour cloning; 0 trains from scratch)."""
    bc_epochs: int = 6
    """Passes over the imitation data."""
    init_policy: str | None = None
    """Start from this exported policy file's weights instead (same network and rules)."""
    checkpoint_every: int = 50_000
    """Timesteps between checkpoints."""
    keep_checkpoints: int = 3
    """Checkpoints kept (older ones are deleted)."""
    eval_every: int = 100_000
    """Timesteps between evaluations against the bots."""
    eval_games: int = 40
    """Games (duplicate deals, both seats) per bot at each periodic evaluation."""
    final_eval_games: int = 100
    """Games per bot in the final evaluation stored with the policy."""
    eval_bots: tuple[str, ...] = BOTS
    """Agent specs to evaluate against."""
    threads: int = 2
    """Torch threads of the PPO update (the games step in one thread either way)."""
    seed: int = 0
    """Seeds Python, numpy, torch and the games."""
    run_dir: str | None = None
    """Run folder; default runs/ppo_<rules>_<episode>_s<seed>."""
    export: str | None = None
    """Also copy the final policy here (e.g. models/rummy500-ppo-standard.pt)."""
    progress: bool = True
    """Print a progress line every 15 seconds."""

    @property
    def run_path(self) -> Path:
        name = self.rules if not self.rules.lstrip().startswith("{") else "custom"
        return Path(self.run_dir or f"runs/ppo_{name}_{self.episode}_s{self.seed}")

    @property
    def rollout_size(self) -> int:
        """Timesteps collected per PPO update."""
        return self.n_steps * self.n_games

    def game_rules(self) -> Rules:
        return parse_rules(self.rules)

    def network_spec(self) -> dict[str, Any]:
        """The ``network`` entry of the exported policy's metadata."""
        if self.network == "cards":
            return {
                "kind": "cards",
                "channels": self.channels,
                "blocks": self.blocks,
                "hidden": self.hidden,
            }
        return {"kind": "mlp", "net_arch": list(self.net_arch), "activation": self.activation}

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""

        need = check_common(self)
        for name in (
            "total_timesteps",
            "n_games",
            "n_steps",
            "minibatch_size",
            "n_epochs",
            "snapshot_every",
            "max_snapshots",
            "checkpoint_every",
            "keep_checkpoints",
            "eval_every",
            "eval_games",
            "final_eval_games",
            "bc_epochs",
            "channels",
            "blocks",
            "hidden",
            "threads",
        ):
            value = getattr(self, name)
            need(type(value) is int and value >= 1, name, "use an int >= 1")
        need(
            type(self.bc_decisions) is int and self.bc_decisions >= 0,
            "bc_decisions",
            "use an int >= 0",
        )
        need(self.max_grad_norm > 0, "max_grad_norm", "use a number > 0")
        need(self.network in KINDS, "network", f"use one of {KINDS}")
        need(
            self.minibatch_size <= self.rollout_size,
            "minibatch_size",
            f"use at most n_steps * n_games = {self.rollout_size}",
        )
        need(
            self.init_policy is None or Path(self.init_policy).is_file(),
            "init_policy",
            "give the path of an exported policy file",
        )


def check_common(args: Any) -> Callable[[bool, str, str], None]:
    """The checks `Args` shares with `training.rllib`'s Args (rules, episode, optimiser
    numbers, the MLP, opponents, evaluation bots); returns the `need(ok, field, allowed)`
    each script uses for its own fields. Raises `ConfigError` naming the field, its value and
    what is allowed."""

    def need(ok: bool, name: str, allowed: str) -> None:
        if not ok:
            raise ConfigError(f"{name}={getattr(args, name)!r} is not allowed: {allowed}")

    try:
        args.game_rules()
    except Rummy500Error as e:
        raise ConfigError(f"rules={args.rules!r} is not allowed: {e}") from None
    need(args.episode in ("hand", "game"), "episode", "use 'hand' or 'game'")
    need(0 < args.learning_rate < 1, "learning_rate", "use a number in (0, 1)")
    need(0 < args.gamma <= 1, "gamma", "use a number in (0, 1]")
    need(0 < args.gae_lambda <= 1, "gae_lambda", "use a number in (0, 1]")
    need(0 < args.clip_range < 1, "clip_range", "use a number in (0, 1)")
    for name in ("ent_coef", "vf_coef"):
        need(getattr(args, name) >= 0, name, "use a number >= 0")
    need(
        len(args.net_arch) >= 1 and all(w >= 1 for w in args.net_arch),
        "net_arch",
        "give one or more positive layer widths",
    )
    need(args.activation in ACTIVATIONS, "activation", f"use one of {tuple(ACTIVATIONS)}")
    need(
        all(name == "self" or is_spec(name) for name in args.opponents)
        and all(w >= 0 for w in args.opponents.values())
        and sum(args.opponents.values()) > 0,
        "opponents",
        f"give weights >= 0, not all zero, to self (the snapshots) or agents: {ALLOWED}",
    )
    need(
        len(args.eval_bots) >= 1 and all(is_spec(name) for name in args.eval_bots),
        "eval_bots",
        f"give one or more agents: {ALLOWED}",
    )
    return need


def is_spec(name: str) -> bool:
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


class RunArgs(Protocol):
    """What the config functions need of a training script's argument dataclass."""

    run_dir: str | None

    def validate(self) -> None: ...


A = TypeVar("A", bound=RunArgs)


def args_of(cls: type[A], data: dict[str, Any]) -> A:
    """A training script's argument dataclass `cls` from a dict, rejecting unknown fields with
    the list of known ones (this script's and `training.rllib`'s)."""
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s) {unknown}; known: {sorted(known)}")
    data = dict(data)
    for key in ("net_arch", "eval_bots"):
        if key in data and isinstance(data[key], list):
            data[key] = tuple(data[key])
    if isinstance(data.get("rules"), dict):
        data["rules"] = json.dumps(data["rules"])
    try:
        return cls(**data)
    except TypeError as e:
        raise ConfigError(str(e)) from None


def command_line(
    cls: type[A], argv: list[str], default_config: str, prog: str, description: str | None
) -> tuple[A, bool]:
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
        base = args_of(cls, json.loads(saved.read_text()))
    else:
        base = args_of(cls, load_yaml(config or default_config))
    args = tyro.cli(cls, default=base, args=argv, prog=prog, description=description)
    if resume is not None:
        args.run_dir = resume
    args.validate()
    return args, resume is not None


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return args_of(Args, data)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line (see `command_line`)."""
    return command_line(Args, argv, DEFAULT_CONFIG, "python -m training.ppo", __doc__)


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


# --- the model


class ActorCritic(nn.Module):
    """The exported actor plus what training needs: values. The card network has its own
    value head; the flat MLP trains with a separate critic of the same shape."""

    def __init__(self, actor: nn.Module, critic: nn.Module | None) -> None:
        super().__init__()
        self.actor = actor
        self.critic = critic

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(action logits, values)."""
        if self.critic is None:
            return self.actor.forward_with_value(obs)  # type: ignore[no-any-return,operator]
        return self.actor(obs), self.critic(obs).squeeze(-1)


def new_model(args: Args) -> ActorCritic:
    rules = args.game_rules()
    spec = args.network_spec()
    actor = build_network(rules, spec)
    if spec["kind"] == "mlp":
        obs_size = current_encoding(rules)["observation_size"]
        return ActorCritic(actor, mlp(obs_size, list(args.net_arch), 1, args.activation))
    return ActorCritic(actor, None)


def masked_logits(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~masks, MASKED)


# --- opponents


def opponent_pool(args: Args, snapshots: list[str]) -> tuple[list[Agent], list[float]]:
    """The pool and its weights: the agents named, and the snapshots sharing the "self"
    weight."""
    rules = args.game_rules()
    pool: list[Agent] = []
    weights: list[float] = []
    for name, w in args.opponents.items():
        if w <= 0:
            continue
        if name == "self":
            for path in snapshots:
                pool.append(PolicyAgent.load(path, deterministic=False, seed=args.seed))
                weights.append(w / len(snapshots))
        else:
            pool.append(make_agent(name, rules, seed=args.seed + len(pool)))
            weights.append(w)
    if not pool:  # only "self" is weighted and no snapshot exists yet
        pool, weights = [make_agent("random", rules, seed=args.seed)], [1.0]
    return pool, weights


# --- behaviour cloning warm start


def collect_expert(args: Args, decisions: int) -> dict[str, np.ndarray]:
    """Observations, masks, actions and discounted returns of ExpertAgent's decisions, playing
    from every seat against the bots."""
    rules = args.game_rules()
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
            reward += env.rewards[env.possible_agents[me]]
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
    model: ActorCritic, data: dict[str, np.ndarray], epochs: int, seed: int
) -> dict[str, float]:
    """Train the actor to imitate the expert (masked cross-entropy) and the critic on the
    returns, so PPO starts from a sensible policy and value."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = len(data["action"])
    gen = np.random.default_rng(seed)
    obs, mask = torch.as_tensor(data["obs"]), torch.as_tensor(data["mask"])
    act, ret = torch.as_tensor(data["action"]), torch.as_tensor(data["return"])
    stats: dict[str, float] = {}
    for epoch in range(epochs):
        order = gen.permutation(n)
        total, correct = 0.0, 0
        for i in range(0, n, 256):
            idx = torch.as_tensor(order[i : i + 256])
            logits, values = model(obs[idx])
            logits = masked_logits(logits, mask[idx])
            loss = nn.functional.cross_entropy(logits, act[idx])
            loss = loss + 0.5 * nn.functional.mse_loss(values, ret[idx])
            opt.zero_grad()
            torch.autograd.backward(loss)
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


# --- rollouts and the PPO update


@dataclass
class Rollout:
    """One rollout: `n_steps` rows of the learner's decisions in every game."""

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


def sample(logp: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row from log-probabilities, by the Gumbel-max trick (argmax of logp
    plus Gumbel noise): the same distribution as `torch.multinomial`, twice as fast on
    these rows of 360."""
    u = torch.rand(logp.shape, generator=generator).clamp_(1e-20, 1.0)
    return torch.argmax(logp - torch.log(-torch.log(u)), dim=-1)


class Collector:
    """Plays the learner in `games` and keeps the observations between rollouts."""

    def __init__(self, games: SelfPlayGames, seed: int) -> None:
        self.games = games
        obs, masks = games.reset()
        self.obs, self.masks = torch.as_tensor(obs), torch.as_tensor(masks)
        self.generator = torch.Generator().manual_seed(seed)
        self.episode_returns: list[float] = []

    def collect(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> Rollout:
        n = len(self.games.envs)
        obs = torch.zeros((n_steps, n, self.obs.shape[1]))
        masks = torch.zeros((n_steps, n, self.masks.shape[1]), dtype=torch.bool)
        actions = torch.zeros((n_steps, n), dtype=torch.long)
        logprobs, values = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        rewards, dones = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        with torch.no_grad():
            for t in range(n_steps):
                obs[t], masks[t] = self.obs, self.masks
                logits, value = model(self.obs)
                logp = torch.log_softmax(masked_logits(logits, self.masks), -1)
                action = sample(logp, self.generator)
                actions[t], values[t] = action, value
                logprobs[t] = logp.gather(1, action[:, None]).squeeze(1)
                step = self.games.step(action.numpy())
                rewards[t] = torch.as_tensor(step.rewards)
                dones[t] = torch.as_tensor(step.terminated | step.truncated, dtype=torch.float32)
                self.obs = torch.as_tensor(step.observations)
                self.masks = torch.as_tensor(step.action_masks)
                self.episode_returns += [r for r in step.episode_returns if r is not None]
            next_value = model(self.obs)[1]
        advantages = torch.zeros_like(rewards)
        last = torch.zeros(n)
        for t in reversed(range(n_steps)):
            following = next_value if t == n_steps - 1 else values[t + 1]
            alive = 1.0 - dones[t]
            delta = rewards[t] + gamma * following * alive - values[t]
            last = delta + gamma * lam * alive * last
            advantages[t] = last
        return Rollout(
            obs, masks, actions, logprobs, values, rewards, dones, advantages, advantages + values
        )


def ppo_update(
    model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Rollout, args: Args, seed: int
) -> dict[str, float]:
    """Clipped PPO epochs over one rollout; returns the last epoch's mean losses."""
    flat = {
        k: getattr(batch, k).flatten(0, 1)
        for k in ("obs", "masks", "actions", "logprobs", "advantages", "returns")
    }
    size = flat["actions"].shape[0]
    gen = np.random.default_rng(seed)
    stats: dict[str, list[float]] = {k: [] for k in ("policy", "value", "entropy", "kl", "clip")}
    for _epoch in range(args.n_epochs):
        stats = {k: [] for k in stats}
        order = torch.as_tensor(gen.permutation(size))
        for start in range(0, size, args.minibatch_size):
            idx = order[start : start + args.minibatch_size]
            logits, values = model(flat["obs"][idx])
            logp_all = torch.log_softmax(masked_logits(logits, flat["masks"][idx]), -1)
            logp = logp_all.gather(1, flat["actions"][idx, None]).squeeze(1)
            entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
            log_ratio = logp - flat["logprobs"][idx]
            ratio = log_ratio.exp()
            adv = flat["advantages"][idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            clipped = torch.clamp(ratio, 1 - args.clip_range, 1 + args.clip_range)
            policy_loss = -torch.min(ratio * adv, clipped * adv).mean()
            value_loss = 0.5 * ((values - flat["returns"][idx]) ** 2).mean()
            loss = policy_loss + args.vf_coef * value_loss - args.ent_coef * entropy
            optimizer.zero_grad()
            torch.autograd.backward(loss)
            nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                stats["kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clip"].append(float(((ratio - 1).abs() > args.clip_range).float().mean()))
            stats["policy"].append(policy_loss.item())
            stats["value"].append(value_loss.item())
            stats["entropy"].append(entropy.item())
    return {k: float(np.mean(v)) for k, v in stats.items()}


# --- checkpoints


def save_checkpoint(
    model: ActorCritic,
    optimizer: torch.optim.Optimizer,
    args: Args,
    run: Path,
    state: dict[str, Any],
) -> Path:
    """Model, optimizer and counters, atomically (a temporary file, then a rename); the last
    `keep_checkpoints` are kept."""
    ckpt_dir = run / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    path = ckpt_dir / f"step_{state['timesteps']:010d}.pt"
    tmp = ckpt_dir / f".{path.name}.tmp"
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "state": state,
            "network": args.network_spec(),
            "torch_rng": torch.get_rng_state(),
        },
        tmp,
    )
    tmp.replace(path)
    state["checkpoint"] = path.name
    write_json(run / "state.json", state)
    for old in sorted(ckpt_dir.glob("step_*.pt"))[: -args.keep_checkpoints]:
        old.unlink()
    return path


def load_checkpoint(
    run: Path, model: ActorCritic, optimizer: torch.optim.Optimizer, args: Args
) -> dict[str, Any]:
    """Restore the newest readable checkpoint of `run` and return its counters. A damaged
    newest file (the machine died while it was written elsewhere) falls back to the one
    before, saying so; a checkpoint of another network is refused."""
    paths = sorted((run / "checkpoints").glob("step_*.pt"), reverse=True)
    if not paths:
        raise ConfigError(f"--resume {str(run)!r}: no checkpoint yet; start it again")
    for path in paths:
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises many types for damaged bytes
            print(f"warning: skipping unreadable checkpoint {path.name}: {e}", file=sys.stderr)
            continue
        if blob.get("network") != args.network_spec():
            raise ConfigError(
                f"checkpoint {path} holds network {blob.get('network')} but the run's config "
                f"asks for {args.network_spec()}: resume with the run's own config.json"
            )
        model.load_state_dict(blob["model"])
        optimizer.load_state_dict(blob["optimizer"])
        torch.set_rng_state(blob["torch_rng"])
        state: dict[str, Any] = blob["state"]
        state["checkpoint"] = path.name
        return state
    raise ConfigError(f"--resume {str(run)!r}: every checkpoint is unreadable; start it again")


# --- export


def export_policy(
    model: ActorCritic,
    args: Args,
    path: str | Path,
    timesteps: int,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write the exported policy file (the actor's torch state dict + JSON metadata)."""
    rules = args.game_rules()
    meta = {
        "package_version": rummy500_env.__version__,
        "commit": git_commit(),
        "encoding": current_encoding(rules),
        "rules": rules.to_dict(),
        "network": args.network_spec(),
        "training": {**jsonable(args), "timesteps": timesteps},
    }
    meta.update(extra or {})
    save_policy(path, model.actor, meta)


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
    keys = ["games", "wins_a", "wins_b", "draws", "win_rate_a", "win_rate_a_ci95", "margin_a"]
    keys += ["margin_a_ci95"]
    return {row["b"]: {k: row[k] for k in keys} for row in summary["pairs"] if row["a"] == label}


def append_evaluation(run: Path, row: dict[str, Any]) -> None:
    path = run / "evaluations.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def learning_curve(run: Path, title: str = "learning curve") -> Path | None:
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
    ax.set_xlabel("learner decisions (timesteps)")
    ax.set_ylabel("win rate (games to the target)")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    out = run / "learning_curve.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


# --- training


class Trainer:
    """A run: its model, optimizer, games, counters and folder. `train` drives it."""

    def __init__(self, args: Args, resume: bool) -> None:
        self.args, self.run = args, args.run_path
        random.seed(args.seed)
        np.random.seed(args.seed)
        torch.manual_seed(args.seed)
        torch.set_num_threads(args.threads)
        self.model = new_model(args)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.learning_rate, eps=1e-5)
        if resume:
            self.state = load_checkpoint(self.run, self.model, self.optimizer, args)
            print(f"resumed from {self.state['checkpoint']} at {self.state['timesteps']} timesteps")
        else:
            ckpts = self.run / "checkpoints"
            if ckpts.exists() and any(ckpts.glob("step_*.pt")):
                raise ConfigError(
                    f"{str(self.run)!r} already holds a run: pass --resume {self.run} to "
                    "continue it, or choose another --run-dir"
                )
            self.run.mkdir(parents=True, exist_ok=True)
            write_json(self.run / "config.json", jsonable(args))
            self.state = {"timesteps": 0, "updates": 0, "snapshots": [], "wall_s": 0.0}
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(self.run / "tb"))
        pool, weights = opponent_pool(args, self.state["snapshots"])
        self.games = SelfPlayGames(
            args.game_rules(),
            args.n_games,
            pool,
            weights,
            episode=args.episode,
            seed=args.seed * 7919 + self.state["updates"],  # fresh deals after a resume
        )
        self.collector = Collector(self.games, args.seed + self.state["updates"])

    @property
    def timesteps(self) -> int:
        return int(self.state["timesteps"])

    def warm_start(self) -> None:
        """Copy an exported policy's weights, or imitate ExpertAgent, before any PPO."""
        args = self.args
        if args.init_policy:
            agent = PolicyAgent.load(args.init_policy, rules=args.game_rules())
            if agent.metadata.get("network") != args.network_spec():
                raise ConfigError(
                    f"init_policy {args.init_policy!r} holds network "
                    f"{agent.metadata.get('network')}, but this run trains {args.network_spec()}"
                )
            self.model.actor.load_state_dict(agent.network.state_dict())
            self.state["init_policy"] = args.init_policy
        elif args.bc_decisions:
            t = time.time()
            data = collect_expert(args, args.bc_decisions)
            stats = behaviour_clone(self.model, data, args.bc_epochs, args.seed)
            self.state["behaviour_cloning"] = stats | {"seconds": time.time() - t}

    def snapshot(self) -> None:
        """Freeze the learner into the opponent pool."""
        path = self.run / "snapshots" / f"snapshot_{self.timesteps:010d}.pt"
        export_policy(self.model, self.args, path, self.timesteps)
        keep = self.args.max_snapshots
        self.state["snapshots"] = (self.state["snapshots"] + [str(path)])[-keep:]
        self.games.set_pool(*opponent_pool(self.args, self.state["snapshots"]))

    def evaluate(self, games: int | None = None, workers: int = 1) -> dict[str, Any]:
        """Export the learner and play `games` (default: eval_games) against each bot."""
        games = games or self.args.eval_games
        path = self.run / "eval_policy.pt"
        export_policy(self.model, self.args, path, self.timesteps)
        results = evaluate_policy_file(path, self.args, games, workers)
        row: dict[str, Any] = {"timesteps": self.timesteps}
        for bot, r in results.items():
            self.writer.add_scalar(f"eval/win_rate_vs_{bot}", r["win_rate_a"], self.timesteps)
            self.writer.add_scalar(f"eval/margin_vs_{bot}", r["margin_a"], self.timesteps)
            row[f"win_rate_vs_{bot}"] = r["win_rate_a"]
        append_evaluation(self.run, row)
        print("evaluation at", self.timesteps, {k: v for k, v in row.items() if k != "timesteps"})
        return results

    def checkpoint(self) -> None:
        save_checkpoint(self.model, self.optimizer, self.args, self.run, self.state)

    def learn(self) -> None:
        """PPO updates until `total_timesteps`, with snapshots, checkpoints and evaluations
        each time their interval is passed."""
        args, start = self.args, time.time()
        every = {"snapshot": args.snapshot_every, "checkpoint": args.checkpoint_every}
        every["evaluate"] = args.eval_every
        due = {k: (self.timesteps // v + 1) * v for k, v in every.items()}
        last_print, since, steps_since = time.time(), time.time(), 0
        while self.timesteps < args.total_timesteps:
            if args.anneal_lr:
                frac = 1.0 - self.timesteps / args.total_timesteps
                for group in self.optimizer.param_groups:
                    group["lr"] = frac * args.learning_rate
            rollout = self.collector.collect(self.model, args.n_steps, args.gamma, args.gae_lambda)
            losses = ppo_update(
                self.model, self.optimizer, rollout, args, args.seed + self.state["updates"]
            )
            self.state["updates"] += 1
            self.state["timesteps"] += args.rollout_size
            steps_since += args.rollout_size
            self.state["wall_s"] += time.time() - start
            start = time.time()
            self._log(losses)
            if args.progress and time.time() - last_print > 15:
                rate = steps_since / (time.time() - since)
                recent = self.collector.episode_returns[-500:]
                print(
                    f"{self.timesteps:>10,} steps  {rate:,.0f}/s  mean return "
                    f"{np.mean(recent) if recent else float('nan'):+.3f}  entropy "
                    f"{losses['entropy']:.2f}  kl {losses['kl']:.4f}",
                    flush=True,
                )
                last_print, since, steps_since = time.time(), time.time(), 0
            for name in ("snapshot", "checkpoint", "evaluate"):  # snapshot first: see state
                if name == "evaluate" and self.timesteps >= args.total_timesteps:
                    continue  # the final evaluation follows
                if self.timesteps >= due[name]:
                    due[name] += every[name]
                    getattr(self, name)()

    def _log(self, losses: dict[str, float]) -> None:
        for k, v in losses.items():
            self.writer.add_scalar(f"loss/{k}", v, self.timesteps)
        recent = self.collector.episode_returns[-500:]
        if recent:
            self.writer.add_scalar("rollout/episode_return", np.mean(recent), self.timesteps)
        self.writer.add_scalar("time/wall_s", self.state["wall_s"], self.timesteps)


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy."""
    trainer = Trainer(args, resume)
    run = trainer.run
    print(f"run folder: {run}\nconfig: {json.dumps(jsonable(args))}", flush=True)
    if not resume:
        trainer.warm_start()
        trainer.snapshot()
        if args.bc_decisions or args.init_policy:
            trainer.evaluate(args.eval_games)  # the start, to measure what PPO adds
    trainer.learn()
    trainer.checkpoint()
    trainer.writer.close()
    policy = run / "policy.pt"
    print(
        f"evaluating against {', '.join(args.eval_bots)} "
        f"({args.final_eval_games} games each, duplicate deals)...",
        flush=True,
    )
    results = trainer.evaluate(args.final_eval_games, workers=min(2, os.cpu_count() or 1))
    extra = {
        "evaluation": {
            "games_per_bot": args.final_eval_games,
            "episode": "game",
            "results": results,
        },
        "wall_s": trainer.state["wall_s"],
    }
    export_policy(trainer.model, args, policy, trainer.timesteps, extra)
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
        f"saved {policy} ({trainer.timesteps} timesteps, {trainer.state['wall_s']:.0f}s of "
        f"training); evaluate it with: python -m training.evaluate {policy} greedy expert"
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
