"""How `training.ppo` scales with its collection processes, with and without overlap.

    python benchmarks/train_scaling.py                      # ppo and ppo_long, 1 and 2 workers
    python benchmarks/train_scaling.py --workers 1 4 8 15 --config ppo --repeats 1   # a big box
    python benchmarks/train_scaling.py --set device=cuda    # any config field (JSON values)
    python benchmarks/train_scaling.py --measure collection --overlap off   # one of the two
    python benchmarks/train_scaling.py --overlap off on 16   # 16: overlap, overlap_steps 16

For each config and each setting (``collect_workers`` N, ``overlap`` off, on, or on with
the lagged steps bounded to a number) it reports:

- collection samples/s: learner decisions collected per second by rollouts alone, back to back,
  with no update (overlapped, the workers collect while the caller waits for them);
- learner steps/s: decisions trained on per second of rollouts and PPO updates together
  (`train_throughput.measure`), the figure a run's progress line shows.

Each figure is the median of ``--repeats`` rounds, the settings interleaved in each round
(this machine's speed drifts within the hour), each after a warm-up rollout. Without overlap N
counts this process; with overlap the N are workers and this process only learns.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from typing import Any

from train_throughput import measure, parse_field

from rummy500_env.engine.numbers import int_option
from rummy500_env.training.ppo import Trainer, args_from_dict
from rummy500_env.training.settings import load_yaml


def collection_rate(config: str, steps: int, overrides: dict[str, Any]) -> float:
    """Learner decisions collected per second, over at least `steps`, with no update."""
    with tempfile.TemporaryDirectory() as run:
        fields = load_yaml(config) | overrides | {"bc_decisions": 0, "init_policy": None}
        args = args_from_dict(fields | {"run_dir": run, "progress": False})
        trainer = Trainer(args, resume=False)
        try:
            trainer.snapshot()
            collect = trainer.collector.collect
            collect(trainer.model, args.n_steps, args.gamma, args.gae_lambda)  # warm-up
            rounds = -(-steps // args.rollout_size)
            t = time.perf_counter()
            for _ in range(rounds):
                collect(trainer.model, args.n_steps, args.gamma, args.gae_lambda)
            rate = rounds * args.rollout_size / (time.perf_counter() - t)
        finally:
            trainer.close()
            trainer.writer.close()
    return rate


def overlap_fields(overlap: str) -> dict[str, Any]:
    """The config fields of an ``--overlap`` setting: off, on, or a number of lagged steps."""
    if overlap in ("off", "on"):
        return {"overlap": overlap == "on"}
    return {"overlap": True, "overlap_steps": int(overlap)}


def overlap_setting(text: str) -> str:
    if text not in ("off", "on") and not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: use off, on or a number of lagged steps")
    return text


MEASURES = {"collection": collection_rate, "learner": measure}
"""What is measured: collection samples/s, learner steps/s."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", nargs="+", default=["ppo", "ppo_long"])
    ap.add_argument("--workers", nargs="+", type=int_option("workers", 1), default=[1, 2])
    ap.add_argument("--overlap", nargs="+", type=overlap_setting, default=["off", "on"])
    ap.add_argument("--steps", type=int_option("steps", 1), default=16384)
    ap.add_argument("--repeats", type=int_option("repeats", 1), default=3)
    ap.add_argument("--measure", nargs="+", choices=MEASURES, default=list(MEASURES))
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="JSON values")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    base = dict(parse_field(item) for item in a.set)
    settings = list(itertools.product(a.config, a.workers, a.overlap))
    runs: dict[tuple[str, int, str], dict[str, list[float]]] = {
        s: {m: [] for m in a.measure} for s in settings
    }
    for _ in range(a.repeats):
        for config, workers, overlap in settings:
            fields = base | {"collect_workers": workers} | overlap_fields(overlap)
            for m, figures in runs[config, workers, overlap].items():
                figures.append(MEASURES[m](config, a.steps, fields))
    rows = [
        {"config": config, "collect_workers": workers, "overlap": overlap}
        | {f"{m}_median": statistics.median(v) for m, v in f.items()}
        | {"rounds": f}
        for (config, workers, overlap), f in runs.items()
    ]
    if a.json:
        print(json.dumps(rows))
        return
    titles = {"collection": "collection samples/s", "learner": "learner steps/s"}
    heads = " | ".join(titles[m] for m in a.measure)
    print(f"| config | collect_workers | overlap | {heads} |")
    print("|---|---|---|" + "---|" * len(a.measure))
    for r in rows:
        figures = " | ".join(f"{r[f'{m}_median']:,.0f}" for m in a.measure)
        print(f"| `{r['config']}` | {r['collect_workers']} | {r['overlap']} | {figures} |")


if __name__ == "__main__":
    main()
