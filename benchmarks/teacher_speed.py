"""The two teachers' rates: `training.jax_exit`'s searched decisions a second beside
`training.exit`'s labels a second, interleaved in one run.

    python benchmarks/teacher_speed.py [--rounds 3] [--updates 3] [--labels 512] [--json]
    python benchmarks/teacher_speed.py --set n_games=256 --set simulations=32

Each round measures, one after the other:

* ``jax_exit``: the packaged config (``--set FIELD=VALUE`` overrides a field): a trainer that
  starts from the shipped policy made for the rules, one update to compile, then ``--updates``
  updates timed: the searched (labelled) decisions over their wall time, collection and
  learning together, as the run's progress line counts them;
* ``exit``: one labelling round of `training.exit`'s packaged config (its two worker
  processes, the shipped policy), ``--labels`` positions, after a warm-up hand a worker:
  labels over the round's wall time (the labelling alone, without its training).

The figures are the medians of the rounds, and their ratio. Alone on the machine: the two
share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace
from typing import Any

import yaml

from rummy500_env.agents.shipped import policy_path
from rummy500_env.engine.numbers import int_option
from rummy500_env.training import exit as torch_exit
from rummy500_env.training import jax_exit
from rummy500_env.training.settings import load_yaml


def jax_rate(updates: int, overrides: dict[str, Any]) -> float:
    """`training.jax_exit`'s searched decisions a second over `updates` updates."""
    with tempfile.TemporaryDirectory() as run:
        fields = load_yaml("jax_exit") | overrides | {"run_dir": run, "progress": False}
        args = jax_exit.args_from_dict(fields)
        big = 10**12
        args.snapshot_every = args.checkpoint_every = args.eval_every = big
        args.validate()
        trainer = jax_exit.Trainer(args, resume=False)
        trainer.snapshot()
        args.total_timesteps = 1  # one update: the compile
        trainer.learn()
        start, t = trainer.timesteps, time.perf_counter()
        for _ in range(updates):
            args.total_timesteps = trainer.timesteps + 1
            trainer.learn()
        rate = (trainer.timesteps - start) / (time.perf_counter() - t)
        trainer.run.writer.close()
    return rate


def exit_rate(labels: int, round_index: int) -> float:
    """`training.exit`'s labels a second in one round of its packaged config."""
    args, _ = torch_exit.parse_args(["--labels-per-round", str(labels)])
    args.validate()
    policy = policy_path(args.policy_name()).read_bytes()
    tasks = torch_exit.round_tasks(args, policy, round_index)
    workers = torch_exit.Workers(args)
    try:  # warm-up: a hand a worker, so its imports and start are not timed
        list(workers.label([replace(t, labels=1, hands_at_once=1) for t in tasks]))
        t = time.perf_counter()
        made = sum(len(p["obs"]) for p in workers.label(tasks))
        return made / (time.perf_counter() - t)
    finally:
        workers.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int_option("rounds"), default=3)
    ap.add_argument("--updates", type=int_option("updates"), default=3)
    ap.add_argument("--labels", type=int_option("labels"), default=512)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    overrides = {}
    for item in a.set:
        name, _, value = item.partition("=")
        overrides[name] = yaml.safe_load(value)
    jax_rates, exit_rates = [], []
    for r in range(a.rounds):
        jax_rates.append(jax_rate(a.updates, overrides))
        exit_rates.append(exit_rate(a.labels, r))
        print(
            f"# round {r + 1}: jax_exit {jax_rates[-1]:.0f} searched decisions/s, "
            f"exit {exit_rates[-1]:.1f} labels/s",
            flush=True,
        )
    out = {
        "cpus": os.cpu_count(),
        "overrides": overrides,
        "jax_exit_per_s": statistics.median(jax_rates),
        "exit_labels_per_s": statistics.median(exit_rates),
        "ratio": statistics.median(j / e for j, e in zip(jax_rates, exit_rates, strict=True)),
        "rounds": {"jax_exit": jax_rates, "exit": exit_rates},
    }
    if a.json:
        print(json.dumps(out))
        return
    print(
        f"jax_exit {out['jax_exit_per_s']:.0f} searched decisions/s, exit "
        f"{out['exit_labels_per_s']:.1f} labels/s: {out['ratio']:.1f}x (medians of "
        f"{a.rounds} interleaved rounds)"
    )


if __name__ == "__main__":
    main()
