"""Training throughput: learner steps/s of `training.ppo` and `training.jax_ppo`, per config.

    python benchmarks/train_throughput.py [--steps 32768] [--config ppo ppo_long] [--json]
    python benchmarks/train_throughput.py --config ppo --set network=mlp   # override fields
    python benchmarks/train_throughput.py --config ppo jax_ppo --rounds 3  # interleaved medians

A config whose name starts with ``jax_ppo`` is trained by `training.jax_ppo` (the jax extra):
its figure counts the learner's decisions too, after a first update that compiles.

Each config (a packaged name or a YAML path) runs its own games, network, opponent pool and
PPO update, without behaviour cloning, periodic snapshots or evaluation: one frozen snapshot
of the starting network fills the pool's "self" share. The figure is rollout collection plus
PPO updates, the learner decisions trained on per second of wall time, after one warm-up
rollout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rummy500_env.engine.numbers import int_option
from rummy500_env.training.ppo import Trainer, args_from_dict
from rummy500_env.training.settings import load_yaml


def measure(config: str, steps: int, overrides: dict[str, Any]) -> float:
    """Learner steps/s over at least `steps` steps of learning under `config`."""
    with tempfile.TemporaryDirectory() as run:
        fields = load_yaml(config) | overrides
        fields |= {"bc_decisions": 0, "init_policy": None, "run_dir": run}
        return measure_args(args_from_dict(fields | {"progress": False}), steps)


def measure_args(args: Any, steps: int) -> float:
    """`measure` for `training.ppo` settings already made (their run folder is written)."""
    big = 10**12
    args.snapshot_every = args.checkpoint_every = args.eval_every = big
    trainer = Trainer(args, resume=False)
    trainer.snapshot()
    args.total_timesteps = args.rollout_size  # warm-up: one rollout and one update
    trainer.learn()
    start_steps, t = trainer.timesteps, time.perf_counter()
    args.total_timesteps = start_steps + steps
    trainer.learn()
    rate = (trainer.timesteps - start_steps) / (time.perf_counter() - t)
    trainer.close()
    trainer.writer.close()
    return rate


def measure_jax(config: str, steps: int, overrides: dict[str, Any]) -> float:
    """`measure` for `training.jax_ppo`: learner steps/s after one update (the compile)."""
    from rummy500_env.training import jax_ppo

    with tempfile.TemporaryDirectory() as run:
        fields = load_yaml(config) | overrides | {"run_dir": run, "progress": False}
        return measure_jax_args(jax_ppo.args_from_dict(fields), steps)


def measure_jax_args(args: Any, steps: int) -> float:
    """`measure_jax` for `training.jax_ppo` settings already made."""
    from rummy500_env.training import jax_ppo

    args.snapshot_every = args.checkpoint_every = args.eval_every = 10**12
    trainer = jax_ppo.Trainer(args, resume=False)
    trainer.snapshot()
    args.total_timesteps = 1  # warm-up: one update, compiled
    trainer.learn()
    start_steps, t = trainer.timesteps, time.perf_counter()
    args.total_timesteps = start_steps + steps
    trainer.learn()
    rate = (trainer.timesteps - start_steps) / (time.perf_counter() - t)
    trainer.run.writer.close()
    return rate


def parse_field(item: str) -> tuple[str, Any]:
    """``FIELD=VALUE`` with a JSON value, or a plain string (``network=mlp``)."""
    name, _, text = item.partition("=")
    try:
        return name, json.loads(text)
    except json.JSONDecodeError:
        return name, text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int_option("steps"), default=32768)
    ap.add_argument("--config", nargs="+", default=["ppo", "ppo_long"])
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="JSON values")
    ap.add_argument("--rounds", type=int_option("rounds"), default=1, help="medians of these")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    overrides = dict(parse_field(item) for item in a.set)
    rates: dict[str, list[float]] = {config: [] for config in a.config}
    for _ in range(a.rounds):  # interleaved: config A, config B, A, B, ...
        for config in a.config:
            run = measure_jax if Path(config).stem.startswith("jax_ppo") else measure
            rates[config].append(run(config, a.steps, overrides))
            print(f"{config}: {rates[config][-1]:,.0f} learner steps/s", file=sys.stderr)
    out = {config: statistics.median(r) for config, r in rates.items()}
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:<12} {v:,.0f} learner steps/s")


if __name__ == "__main__":
    main()
