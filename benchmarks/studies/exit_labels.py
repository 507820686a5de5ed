"""Expert iteration's labelling rate: labels a second of one round, by where the labelling runs.

    python benchmarks/studies/exit_labels.py [--backends inline pool:2 ray:2] [--labels 2048]
                                     [--repeats 2] [--json]
    python benchmarks/studies/exit_labels.py --backends cluster:2 --address 127.0.0.1:6379

Each backend labels one round of `training.exit`'s packaged config (its search, hands at once
and rules; the shipped policy made for the table), ``--labels`` positions split between the
workers as the trainer splits them (`training.exit.round_tasks`), through the trainer's own
`training.exit.Workers`:

* ``inline``: one worker, this process (``--workers 1``);
* ``pool:N``: N local processes (``--workers N``, the default backend);
* ``ray:N``: a local Ray instance of N CPUs running N tasks (``--ray --workers N``);
* ``cluster:N``: N tasks on the running Ray cluster at ``--address`` (``--ray --address A
  --workers N``): start it first (``ray start --head``, then ``ray start --address`` for each
  other node; docs/rllib.md, "On a cluster").

Figures: labels over the round's wall time (after a warm-up hand a worker: a trainer keeps
its workers for the whole run), the CPU seconds a label summed over the workers (what a worker's
core costs, whatever else the machine runs), and the labels each node made. Backends run
interleaved, ``--repeats`` rounds each, each round with new seeds; the figure is the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np

from rummy500_env.agents.shipped import policy_path
from rummy500_env.engine.numbers import int_option
from rummy500_env.training.exit import LabelTask, Workers, label_hands, parse_args, round_tasks


def timed_labels(task: LabelTask) -> dict[str, np.ndarray]:
    """`label_hands` with its CPU seconds and the node it ran on (the Ray node's id, or the
    host name off Ray) added to its result."""
    cpu = time.process_time()
    labels = label_hands(task)
    node = os.uname().nodename
    try:
        import ray

        if ray.is_initialized():
            node = ray.get_runtime_context().get_node_id()[:8]
    except ModuleNotFoundError:
        pass
    return labels | {"cpu_s": np.asarray(time.process_time() - cpu), "node": np.asarray(node)}


def backend_flags(backend: str, address: str | None) -> list[str]:
    """`training.exit`'s flags for a backend name (see the module's docstring)."""
    kind, _, n = backend.partition(":")
    if kind == "inline" and not n:
        return ["--workers", "1"]
    if kind in ("pool", "ray", "cluster") and n.isdigit() and int(n) > 0:
        flags = ["--workers", n]
        if kind == "pool":
            return flags
        if kind == "ray":
            return [*flags, "--ray"]
        if not address:
            raise SystemExit("error: backend cluster:N joins a running cluster: give --address")
        return [*flags, "--ray", "--address", address]
    raise SystemExit(
        f"error: backend {backend!r}: use inline, pool:N, ray:N or cluster:N (N workers > 0)"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", nargs="+", default=["inline", "pool:2", "ray:2"])
    ap.add_argument("--labels", type=int_option("labels"), default=2048, help="labels a round")
    ap.add_argument("--repeats", type=int_option("repeats"), default=2)
    ap.add_argument("--address", default=None, help="the Ray cluster of cluster:N")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    setups = {}
    for b in a.backends:
        args, _ = parse_args(["--labels-per-round", str(a.labels), *backend_flags(b, a.address)])
        args.validate()
        setups[b] = args
    policy = policy_path(args.policy_name()).read_bytes()  # the same table for every backend
    runs: dict[str, list[dict[str, Any]]] = {b: [] for b in a.backends}
    for repeat in range(a.repeats):
        for backend, args in setups.items():
            tasks = round_tasks(args, policy, repeat)
            workers = Workers(args)
            try:  # warm-up: a hand a worker, so its imports and start are not timed
                list(workers.label([replace(t, labels=1, hands_at_once=1) for t in tasks]))
                t = time.perf_counter()
                parts = list(workers.label(tasks, timed_labels))
                wall = time.perf_counter() - t
            finally:
                workers.close()
            labels = sum(len(p["obs"]) for p in parts)
            nodes = Counter[str]()
            for p in parts:
                nodes[str(p["node"])] += len(p["obs"])
            run: dict[str, Any] = {
                "labels": labels,
                "wall_s": wall,
                "labels_per_s": labels / wall,
                "cpu_s_per_label": sum(float(p["cpu_s"]) for p in parts) / labels,
                "labels_by_node": dict(nodes),
            }
            runs[backend].append(run)
            print(
                f"# {backend} round {repeat + 1}: {labels} labels in {wall:.1f} s, "
                f"{run['labels_per_s']:.1f} labels/s, {run['cpu_s_per_label'] * 1000:.0f} "
                f"CPU ms a label, by node {dict(nodes)}",
                flush=True,
            )
    rows = [
        {
            "backend": b,
            "labels_per_s": statistics.median(r["labels_per_s"] for r in runs[b]),
            "cpu_ms_per_label": 1000 * statistics.median(r["cpu_s_per_label"] for r in runs[b]),
            "labels_by_node": runs[b][-1]["labels_by_node"],
            "runs": runs[b],
        }
        for b in a.backends
    ]
    if a.json:
        print(json.dumps({"cpus": os.cpu_count(), "labels_per_round": a.labels, "rows": rows}))
        return
    print(f"{'backend':>12} {'labels/s':>9} {'CPU ms a label':>15}  labels by node (last round)")
    for r in rows:
        print(
            f"{r['backend']:>12} {r['labels_per_s']:>9.1f} {r['cpu_ms_per_label']:>15.0f}  "
            f"{r['labels_by_node']}"
        )


if __name__ == "__main__":
    main()
