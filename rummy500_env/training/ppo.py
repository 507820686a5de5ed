"""``python -m training.ppo``: self-play PPO that exports a policy anyone can load.

A loop in the style of CleanRL, over `SelfPlayGames`: many games in one process, the
learner's decisions of all of them in one forward pass per step, frozen snapshots of the
learner (and bots) as opponents. It reads top to bottom: the arguments (a dataclass; the
packaged config ``ppo`` is the default and every field can be overridden on the command line),
the behaviour-cloning warm start, the PPO update, then `Trainer` and `train`, which put them
together. The learner's model and how its rollouts are collected (with GAE) are
`rummy500_env.training.model` and `rummy500_env.training.rollouts`, shared with the collection
workers (`rummy500_env.training.parallel`); what every trainer shares is
`rummy500_env.training.settings` (the run's settings and their checks) and
`rummy500_env.training.run` (the run folder, checkpoint files, the exported policy,
evaluations and the final report).

    python -m training.ppo                                # the packaged config "ppo"
    python -m training.ppo --config ppo_long --run-dir runs/long   # or a YAML file's path
    python -m training.ppo --total-timesteps 200000 --opponents.self 0.5
    python -m training.ppo --rules nordic,target=300      # a preset, overrides, or JSON
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

import contextlib
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn

import rummy500_env
from rummy500_env.agents.policy import PolicyAgent, current_encoding
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.evaluation.pool import DEADLINE_S
from rummy500_env.training.device import DeviceArgs, check_device, device_line, pick_device
from rummy500_env.training.model import ADAM_EPS, ActorCritic, masked_logits, new_model, ppo_loss
from rummy500_env.training.parallel import (
    WORKER_MB,
    CollectionError,
    ParallelCollector,
    collection_processes,
    shares,
    usable_cores,
)
from rummy500_env.training.rollouts import Collector, Rollout, new_collector
from rummy500_env.training.run import (
    SNAPSHOTS,
    Every,
    RunFolder,
    check_before_work,
    export_policy,
    load_checkpoint,
    progress_line,
    run_snapshot,
    save_checkpoint,
    seed_and_threads,
    stop_if_diverged,
    trainer_main,
)
from rummy500_env.training.settings import (
    ConfigError,
    NetworkKindArgs,
    PPOArgs,
    args_of,
    check_ppo,
    command_line,
    kind_of,
    require,
    require_network,
    require_positive_ints,
)


@dataclass
class Args(DeviceArgs, NetworkKindArgs, PPOArgs):
    """Self-play PPO for Rummy 500."""

    TRAINER = "ppo"

    n_games: int = 64
    """Games played side by side; the learner's decisions of all of them are one batch."""
    n_steps: int = 64
    """Learner decisions per game per rollout (a rollout is n_games * n_steps)."""
    bc_decisions: int = 0
    """ExpertAgent decisions imitated before PPO (behaviour cloning; 0 trains from scratch)."""
    bc_epochs: int = 6
    """Passes over the imitation data."""
    init_policy: str | None = None
    """Start from this exported policy file's weights instead (same network and rules)."""
    threads: int = 2
    """Torch threads of the PPO update (each process's games step in one thread)."""
    collect_workers: int | str = 1
    """Processes that collect rollouts (`training.parallel`): without overlap this one and
    N - 1 workers (2 puts a second core to work while the games step); with overlap N
    workers. "auto": one per usable core."""
    overlap: bool = False
    """Workers collect the next rollout while this process updates on the last (its first
    `overlap_steps` from the weights one update old); they run at a lower priority, so the
    update keeps its threads' cores."""
    overlap_steps: int | None = None
    """With overlap: the steps at the start of each rollout collected by the weights one
    update old while the update runs; then the workers wait for the updated weights. None:
    a quarter of n_steps (it learns as well as no overlap, where the whole rollout lagged
    did not); n_steps or more: the whole rollout."""
    worker_deadline: float = DEADLINE_S
    """Seconds a collection worker may send no heartbeat (it beats every half second whatever
    its games do, so only a stopped or frozen worker is silent) before the run stops with an
    error naming it, after a checkpoint."""
    progress: bool = True
    """Print a progress line every 15 seconds."""

    @property
    def lagged_steps(self) -> int:
        """With overlap: the steps of each rollout collected by the weights one update old."""
        if self.overlap_steps is None:
            return self.n_steps // 4
        return min(self.overlap_steps, self.n_steps)

    @property
    def rollout_size(self) -> int:
        """Timesteps collected per PPO update."""
        return self.n_steps * self.n_games

    def validate(self) -> None:
        """Raise `ConfigError` for values that cannot train, naming what is allowed."""
        super().validate()
        check_ppo(self)
        require_network(self)
        for name in ("n_games", "n_steps", "minibatch_size", "bc_epochs", "threads"):
            require_positive_ints(self, name)
        require(
            self,
            self.collect_workers == "auto"
            or (type(self.collect_workers) is int and 1 <= self.collect_workers <= self.n_games),
            "collect_workers",
            f"use auto or an int from 1 to n_games = {self.n_games} (each process needs a game)",
        )
        check_device(self.device)
        require(
            self,
            self.overlap_steps is None
            or (self.overlap and type(self.overlap_steps) is int and self.overlap_steps >= 0),
            "overlap_steps",
            "use null (a quarter of n_steps) or an int from 0, with overlap: true (without "
            "overlap no step is collected by old weights)",
        )
        require(
            self,
            type(self.bc_decisions) is int and self.bc_decisions >= 0,
            "bc_decisions",
            "use an int >= 0",
        )
        require(self, 0 < self.max_grad_norm < math.inf, "max_grad_norm", "use a finite number > 0")
        require(
            self,
            0 < self.worker_deadline < math.inf,
            "worker_deadline",
            "use a finite number of seconds > 0",
        )
        require(
            self,
            self.init_policy is None or kind_of(Path(self.init_policy), "init_policy") == "file",
            "init_policy",
            "give the path of an exported policy file",
        )


def args_from_dict(data: dict[str, Any]) -> Args:
    """Args from a dict, rejecting unknown fields with the list of known ones."""
    return args_of(Args, data)


def parse_args(argv: list[str]) -> tuple[Args, bool]:
    """(args, resuming) from the command line (see `settings.command_line`)."""
    return command_line(Args, argv, __doc__)


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
    """Train the actor to imitate the expert (masked cross-entropy) and the values on the
    returns, so PPO starts from a sensible policy and value."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = len(data["action"])
    gen = np.random.default_rng(seed)
    device = next(model.parameters()).device
    obs, mask, act, ret = (
        torch.as_tensor(data[k], device=device) for k in ("obs", "mask", "action", "return")
    )
    stats: dict[str, float] = {}
    for epoch in range(epochs):
        order = gen.permutation(n)
        total, correct = 0.0, 0
        for i in range(0, n, 256):
            idx = torch.as_tensor(order[i : i + 256], device=device)
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


# --- the PPO update


def ppo_update(
    model: ActorCritic, optimizer: torch.optim.Optimizer, batch: Rollout, args: Args, seed: int
) -> dict[str, float]:
    """Clipped PPO epochs over one rollout (`ppo_loss`) on the model's device; returns the
    last epoch's mean losses and gradient norm (before clipping: a non-finite one is a
    diverged step)."""
    device = next(model.parameters()).device
    flat = {
        k: getattr(batch, k).flatten(0, 1).to(device)
        for k in ("obs", "masks", "actions", "logprobs", "advantages", "returns")
    }
    size = flat["actions"].shape[0]
    gen = np.random.default_rng(seed)
    names = ("policy", "value", "entropy", "kl", "clip", "grad_norm")
    stats: dict[str, list[float]] = {k: [] for k in names}
    for _epoch in range(args.n_epochs):
        stats = {k: [] for k in stats}
        order = torch.as_tensor(gen.permutation(size), device=device)
        for start in range(0, size, args.minibatch_size):
            idx = order[start : start + args.minibatch_size]
            logits, values = model(flat["obs"][idx])
            mb = {
                k: flat[k][idx] for k in ("masks", "actions", "logprobs", "advantages", "returns")
            }
            out = ppo_loss(logits, values, mb, args.clip_range, args.vf_coef, args.ent_coef)
            optimizer.zero_grad()
            torch.autograd.backward(out["loss"])
            norm = nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            stats["grad_norm"].append(float(norm))
            with torch.no_grad():
                ratio, log_ratio = out["ratio"], out["log_ratio"]
                stats["kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clip"].append(float(((ratio - 1).abs() > args.clip_range).float().mean()))
            for k in ("policy", "value", "entropy"):
                stats[k].append(out[k].item())
    return {k: float(np.mean(v)) for k, v in stats.items()}


# --- training


def load_init_policy(args: Args) -> PolicyAgent:
    """The ``init_policy`` file, loaded for the run's rules; `ConfigError` when it cannot be
    read or holds another network than the run trains."""
    assert args.init_policy is not None
    try:
        agent = PolicyAgent.load(args.init_policy, rules=args.game_rules())
    except Rummy500Error as e:
        raise ConfigError(f"init_policy: {e}") from None
    if agent.metadata.get("network") != args.network_spec():
        raise ConfigError(
            f"init_policy {args.init_policy!r} holds network {agent.metadata.get('network')}, "
            f"but this run trains {args.network_spec()}"
        )
    return agent


class Trainer:
    """A run: its model, optimizer, games, counters and folder. `train` drives it."""

    def __init__(self, args: Args, resume: bool) -> None:
        self.args = args
        seed_and_threads(args.seed, args.threads)
        self.device = pick_device(args.device)
        print(device_line(self.device, args.device), flush=True)
        self.model = new_model(args).to(self.device)  # made on the CPU: the same start anywhere
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=args.learning_rate, eps=ADAM_EPS
        )
        self.run = RunFolder(args, resume)
        if resume:
            self.state = load_checkpoint(self.run.path, self.model, self.optimizer, args)
            named = [run_snapshot(s, self.run.path) for s in self.state["snapshots"]]
            self.state["snapshots"] = named
            self.state["encoding"] = current_encoding(args.game_rules())  # checked on parsing
            print(f"resumed from {self.state['checkpoint']} at {self.state['timesteps']} timesteps")
        else:
            self.state = {"timesteps": 0, "updates": 0, "snapshots": [], "wall_s": 0.0}
            self.state["encoding"] = current_encoding(args.game_rules())  # checked on resume
        snapshots = self.snapshot_files()
        games_seed = args.seed * 7919 + self.state["updates"]  # fresh deals after a resume
        sampling_seed = args.seed + self.state["updates"]
        if args.overlap and self.device.type == "cpu" and args.threads >= usable_cores():
            print(
                f"warning: --overlap with the update on the CPU, its {args.threads} threads on "
                f"every usable core ({usable_cores()}): the workers collect only while it "
                "waits, so overlap cannot hide collection here; it pays where the update runs "
                "on a GPU or leaves cores free (docs/training.md, 'On a GPU')",
                file=sys.stderr,
            )
        processes = collection_processes(args.collect_workers, args.n_games)
        if processes > usable_cores():
            print(
                f"warning: collect_workers={processes} on {usable_cores()} usable cores: each "
                f"process steps its games on one core, so beyond {usable_cores()} they take "
                f"turns and collect no faster, and each holds its own torch (about "
                f"{WORKER_MB} MB); use collect_workers auto (one per usable core)",
                file=sys.stderr,
            )
        parts = shares(args.n_games, processes)
        seeds = (games_seed, sampling_seed, snapshots)
        self.collector: Collector | ParallelCollector
        deadline = args.worker_deadline
        if args.overlap:
            self.collector = ParallelCollector(
                None, args, parts, *seeds, args.lagged_steps, deadline
            )
        else:
            mine, *theirs = parts
            self.collector = new_collector(args, mine, *seeds)
            if theirs:
                self.collector = ParallelCollector(
                    self.collector, args, theirs, *seeds, deadline=deadline
                )

    @property
    def timesteps(self) -> int:
        return int(self.state["timesteps"])

    def snapshot_files(self) -> list[str]:
        """The pool's snapshot files, from where this process runs (the state names them
        inside the run folder)."""
        return [str(self.run.path / name) for name in self.state["snapshots"]]

    def close(self, abort: bool = False) -> None:
        """Stop the collection workers, if any: in order, or with `abort` (an error, Ctrl+C)
        at once (`ParallelCollector.close`)."""
        if isinstance(self.collector, ParallelCollector):
            self.collector.close(abort)

    @property
    def writer(self) -> Any:
        """The run's TensorBoard writer."""
        return self.run.writer

    def warm_start(self) -> None:
        """Copy an exported policy's weights, or imitate ExpertAgent, before any PPO."""
        args = self.args
        if args.init_policy:
            agent = load_init_policy(args)
            self.model.actor.load_state_dict(agent.network.state_dict())
            self.state["init_policy"] = args.init_policy
        elif args.bc_decisions:
            t = time.time()
            data = collect_expert(args, args.bc_decisions)
            stats = behaviour_clone(self.model, data, args.bc_epochs, args.seed)
            stop_if_diverged(stats, "behaviour cloning", self.run.path)
            self.state["behaviour_cloning"] = stats | {"seconds": time.time() - t}

    def snapshot(self) -> None:
        """Freeze the learner into the opponent pool."""
        name = f"{SNAPSHOTS}/snapshot_{self.timesteps:010d}.pt"
        export_policy(self.model.actor, self.args, self.run.path / name, self.timesteps)
        keep = self.args.max_snapshots
        self.state["snapshots"] = (self.state["snapshots"] + [name])[-keep:]
        self.collector.set_opponents(self.args, self.snapshot_files())

    def evaluate(self) -> dict[str, Any]:
        """Play `eval_games` against each bot (`RunFolder.evaluate`)."""
        return self.run.evaluate(self.model.actor, self.timesteps, self.args.eval_games)

    def checkpoint(self) -> None:
        """Model, optimizer, counters and torch's random state (`Checkpoints.save`)."""
        save_checkpoint(self.run.checkpoints, self.model, self.optimizer, self.state, self.args)

    def learn(self) -> None:
        """PPO updates until `total_timesteps`, with snapshots, checkpoints and evaluations
        each time their interval is passed."""
        args, start = self.args, time.time()
        snapshot = Every(args.snapshot_every, self.timesteps)
        checkpoint = Every(args.checkpoint_every, self.timesteps)
        evaluation = Every(args.eval_every, self.timesteps)
        last_print, since, steps_since = time.time(), time.time(), 0
        while self.timesteps < args.total_timesteps:
            if args.anneal_lr:
                frac = 1.0 - self.timesteps / args.total_timesteps
                for group in self.optimizer.param_groups:
                    group["lr"] = frac * args.learning_rate
            with self.checkpoint_on_collection_error():
                rollout = self.collector.collect(
                    self.model, args.n_steps, args.gamma, args.gae_lambda
                )
            losses = ppo_update(
                self.model, self.optimizer, rollout, args, args.seed + self.state["updates"]
            )
            self.state["updates"] += 1
            self.state["timesteps"] += args.rollout_size
            where = f"update {self.state['updates']} ({self.timesteps:,} timesteps)"
            stop_if_diverged(losses, where, self.run.path, args)  # before it is saved anywhere
            if isinstance(self.collector, ParallelCollector):
                with self.checkpoint_on_collection_error():  # the rest of the next rollout
                    self.collector.publish(self.model)  # by these weights
            steps_since += args.rollout_size
            self.state["wall_s"] += time.time() - start
            start = time.time()
            self._log(losses)
            if args.progress and time.time() - last_print > 15:
                rate = steps_since / (time.time() - since)
                recent = self.collector.episode_returns[-500:]
                mean_return = float(np.mean(recent)) if recent else math.nan
                print(progress_line(self.timesteps, rate, mean_return, losses), flush=True)
                last_print, since, steps_since = time.time(), time.time(), 0
            if snapshot.due(self.timesteps):  # first, so that a checkpoint holds it
                self.snapshot()
            if self.timesteps < args.total_timesteps and evaluation.due(self.timesteps):
                self.evaluate()  # (at the end the final evaluation follows)
            if checkpoint.due(self.timesteps):  # after the evaluation (`run.Checkpoints`)
                self.checkpoint()

    @contextlib.contextmanager
    def checkpoint_on_collection_error(self) -> Iterator[None]:
        """Around each exchange with the collection workers (a request, a rollout handed back,
        the weights published with overlap): a worker that died or went silent there
        (`CollectionError`) stops the run after a checkpoint of every update made so far."""
        try:
            yield
        except CollectionError as e:
            self.checkpoint()
            raise CollectionError(
                f"{e} (a checkpoint of the {self.timesteps:,} timesteps learned so far was "
                "written first)"
            ) from None

    def _log(self, losses: dict[str, float]) -> None:
        for k, v in losses.items():
            self.writer.add_scalar(f"loss/{k}", v, self.timesteps)
        recent = self.collector.episode_returns[-500:]
        if recent:
            self.writer.add_scalar("rollout/episode_return", np.mean(recent), self.timesteps)
        self.writer.add_scalar("time/wall_s", self.state["wall_s"], self.timesteps)


def train(args: Args, resume: bool = False) -> Path:
    """Train (or resume) and return the path of the exported policy. Every input is checked
    first (`check_before_work`, `load_init_policy`), before any folder, model or game."""
    check_before_work(args, resume)
    if not resume and args.init_policy:
        load_init_policy(args)
    trainer = Trainer(args, resume)
    try:
        trainer.run.announce()
        if not resume:
            trainer.warm_start()
            trainer.snapshot()
            if args.bc_decisions or args.init_policy:
                trainer.evaluate()  # the start, to measure what PPO adds
        trainer.learn()
    except BaseException:  # an error or Ctrl+C: the workers are stopped, not waited for
        trainer.close(abort=True)
        raise
    trainer.close()
    trainer.checkpoint()
    return trainer.run.finish(trainer.model.actor, trainer.state)


def main(argv: list[str] | None = None) -> int:
    return trainer_main(parse_args, train, argv)


if __name__ == "__main__":
    sys.exit(main())
