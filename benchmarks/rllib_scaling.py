"""RLlib scaling: env steps/s sampled by 1, 2, ... env runners, and a whole training iteration.

    python benchmarks/rllib_scaling.py [--runners 1 2] [--envs 1 32] [--steps 4000] [--repeats 3]
                                       [--opponents random=0.1 greedy=0.4 expert=0.2 self=0.3]
                                       [--address auto] [--train] [--json]

For each number of env runners and of envs per runner (``--envs``; the packaged config's
``num_envs_per_env_runner`` when not given) it starts a local Ray instance of that many CPUs
(at least two), or joins the cluster at ``--address``, builds `training.rllib`'s algorithm
from the packaged config ``rllib`` (its opponent pool, network and batch) and measures

* sampling: every remote env runner samples ``--steps`` env steps at once, in parallel; the
  figure is all the env steps they sampled over the wall time (best of ``--repeats``, after a
  warm-up sample). This is what more runners, here or on a cluster, multiply.
* per runner CPU-second: the same env steps over the CPU time the runners spent on them, what
  one runner samples with a core to itself, whatever else the machine runs (the figure to
  compare on a busy machine).
* per node: the env steps each node's runners sampled, so a cluster's figure visibly counts
  every node's share.
* training (``--train``): ``algo.train()`` (sampling, then the PPO update in the driver), env
  steps per second of wall time (best of ``--repeats``, after a warm-up iteration).

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
from rummy500_env.training.rllib import args_from_dict, build_config, sampled, start_ray
from rummy500_env.training.settings import load_yaml


def sample_steps(runner: Any, steps: int) -> tuple[int, float, str]:
    """(env steps sampled, CPU seconds the runner spent, its node's id) when asked for
    `steps` (runs on the runner). The CPU time does not depend on what else the machine
    runs."""
    import ray

    cpu = time.process_time()
    episodes = runner.sample(num_timesteps=steps, random_actions=False)
    node = ray.get_runtime_context().get_node_id()
    return sum(e.env_steps() for e in episodes), time.process_time() - cpu, node


def measure(
    runners: int,
    envs: int | None,
    steps: int,
    repeats: int,
    opponents: dict[str, float] | None,
    address: str | None,
    train: bool,
) -> dict[str, Any]:
    import ray

    fields = load_yaml("rllib") | {"num_env_runners": runners, "num_cpus": max(2, runners)}
    if envs is not None:
        fields["num_envs_per_env_runner"] = envs
    if opponents is not None:
        fields["opponents"] = opponents
    fields["address"] = address
    args = args_from_dict(fields)
    args.validate()
    start_ray(args)
    algo = build_config(args).build_algo()
    nodes: dict[str, int] = {}
    try:
        group = algo.env_runner_group

        def sample_all() -> tuple[float, float]:
            t = time.perf_counter()
            done = group.foreach_env_runner(
                lambda r: sample_steps(r, steps), local_env_runner=False
            )
            total = sum(n for n, _, _ in done)
            nodes.clear()
            for n, _, node in done:
                nodes[node] = nodes.get(node, 0) + n
            return total / (time.perf_counter() - t), total / sum(c for _, c, _ in done)

        sample_all()  # warm-up: actors started, modules built, first episodes dealt
        samples = [sample_all() for _ in range(repeats)]
        sampling = max(wall for wall, _ in samples)
        per_cpu = max(cpu for _, cpu in samples)
        training = 0.0
        if train:
            algo.train()  # warm-up iteration
            for _ in range(repeats):
                t = time.perf_counter()
                result = algo.train()
                training = max(training, sampled(result) / (time.perf_counter() - t))
    finally:
        algo.stop()
        ray.shutdown()
    return {
        "env_runners": runners,
        "envs_per_runner": args.num_envs_per_env_runner,
        "sampled_env_steps_per_s": round(sampling),
        "env_steps_per_runner_cpu_s": round(per_cpu),
        "env_steps_by_node": {node[:8]: n for node, n in nodes.items()},
        "train_env_steps_per_s": round(training) if train else None,
        "train_batch_size": args.train_batch_size,
        "opponents": args.opponents,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runners", type=int_option("runners"), nargs="+", default=[1, 2])
    ap.add_argument(
        "--envs",
        type=int_option("envs"),
        nargs="+",
        default=[None],
        help="envs per runner (default: the packaged config's num_envs_per_env_runner)",
    )
    ap.add_argument(
        "--steps", type=int_option("steps"), default=4000, help="env steps per runner per sample"
    )
    ap.add_argument("--repeats", type=int_option("repeats"), default=3)
    ap.add_argument("--opponents", nargs="*", metavar="SPEC=WEIGHT", default=None)
    ap.add_argument(
        "--address", default=None, help="a running Ray cluster to join (auto: this node's)"
    )
    ap.add_argument("--train", action="store_true", help="also time whole train() iterations")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    opponents = None
    if a.opponents:
        opponents = {k: float(v) for k, v in (item.split("=", 1) for item in a.opponents)}
    rows = [
        measure(n, e, a.steps, a.repeats, opponents, a.address, a.train)
        for n in a.runners
        for e in a.envs
    ]
    if a.json:
        print(json.dumps({"cpus": os.cpu_count(), "rows": rows}))
        return
    print(
        f"{'env runners':>11} {'envs each':>9} {'sampled env steps/s':>20} "
        f"{'per runner CPU-second':>22} {'train() env steps/s':>20}  env steps by node"
    )
    for r in rows:
        train = "-" if r["train_env_steps_per_s"] is None else f"{r['train_env_steps_per_s']:,}"
        print(
            f"{r['env_runners']:>11} {r['envs_per_runner']:>9} "
            f"{r['sampled_env_steps_per_s']:>20,} {r['env_steps_per_runner_cpu_s']:>22,} "
            f"{train:>20}  {r['env_steps_by_node']}"
        )


if __name__ == "__main__":
    main()
