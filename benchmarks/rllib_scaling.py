"""RLlib scaling: env steps/s sampled by 1, 2, ... env runners, and a whole training iteration.

    python benchmarks/rllib_scaling.py [--runners 1 2] [--steps 4000] [--repeats 3] [--json]
                                       [--opponents random=0.1 greedy=0.4 expert=0.3 self=0.2]

For each number of env runners it starts a local Ray instance of that many CPUs (at least
two), builds `training.rllib`'s algorithm from the packaged config ``rllib`` (its opponent
pool, network and batch) and measures

* sampling: every remote env runner samples ``--steps`` env steps at once, in parallel; the
  figure is all the env steps they sampled over the wall time (best of ``--repeats``, after a
  warm-up sample). This is what more runners, here or on a cluster, multiply.
* per runner CPU-second: the same env steps over the CPU time the runners spent on them, what
  one runner samples with a core to itself, whatever else the machine runs.
* training: ``algo.train()`` (sampling, then the PPO update in the driver), env steps per
  second of wall time (best of ``--repeats``, after a warm-up iteration).

Env steps count every seat's decisions (the learner's and its opponents'), as RLlib counts
them. The machine's other load changes the figures: compare runs taken back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from rummy500_env.engine.numbers import int_option
from rummy500_env.training.ppo import load_yaml
from rummy500_env.training.rllib import args_from_dict, build_config, sampled, start_ray


def sample_steps(runner: Any, steps: int) -> tuple[int, float]:
    """(env steps sampled, CPU seconds the runner spent) when asked for `steps` (runs on the
    runner). The CPU time does not depend on what else the machine runs."""
    cpu = time.process_time()
    episodes = runner.sample(num_timesteps=steps, random_actions=False)
    return sum(e.env_steps() for e in episodes), time.process_time() - cpu


def measure(runners: int, steps: int, repeats: int, opponents: dict[str, float] | None) -> dict:
    import ray

    fields = load_yaml("rllib") | {"num_env_runners": runners, "num_cpus": max(2, runners)}
    if opponents is not None:
        fields["opponents"] = opponents
    args = args_from_dict(fields)
    args.validate()
    start_ray(args)
    algo = build_config(args).build_algo()
    try:
        group = algo.env_runner_group

        def sample_all() -> tuple[float, float]:
            t = time.perf_counter()
            done = group.foreach_env_runner(
                lambda r: sample_steps(r, steps), local_env_runner=False
            )
            total = sum(n for n, _ in done)
            return total / (time.perf_counter() - t), total / sum(c for _, c in done)

        sample_all()  # warm-up: actors started, modules built, first episodes dealt
        samples = [sample_all() for _ in range(repeats)]
        sampling = max(wall for wall, _ in samples)
        per_cpu = max(cpu for _, cpu in samples)
        algo.train()  # warm-up iteration
        training = 0.0
        for _ in range(repeats):
            t = time.perf_counter()
            result = algo.train()
            training = max(training, sampled(result) / (time.perf_counter() - t))
    finally:
        algo.stop()
        ray.shutdown()
    return {
        "env_runners": runners,
        "sampled_env_steps_per_s": round(sampling),
        "env_steps_per_runner_cpu_s": round(per_cpu),
        "train_env_steps_per_s": round(training),
        "train_batch_size": args.train_batch_size,
        "opponents": args.opponents,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runners", type=int_option("runners"), nargs="+", default=[1, 2])
    ap.add_argument(
        "--steps", type=int_option("steps"), default=4000, help="env steps per runner per sample"
    )
    ap.add_argument("--repeats", type=int_option("repeats"), default=3)
    ap.add_argument("--opponents", nargs="*", metavar="SPEC=WEIGHT", default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    opponents = None
    if a.opponents:
        opponents = {k: float(v) for k, v in (item.split("=", 1) for item in a.opponents)}
    rows = [measure(n, a.steps, a.repeats, opponents) for n in a.runners]
    if a.json:
        print(json.dumps({"cpus": os.cpu_count(), "rows": rows}))
        return
    print(
        f"{'env runners':>11} {'sampled env steps/s':>20} {'per runner CPU-second':>22} "
        f"{'train() env steps/s':>20}"
    )
    for r in rows:
        print(
            f"{r['env_runners']:>11} {r['sampled_env_steps_per_s']:>20,} "
            f"{r['env_steps_per_runner_cpu_s']:>22,} {r['train_env_steps_per_s']:>20,}"
        )


if __name__ == "__main__":
    main()
