"""How a collection worker's rollout reaches the learner: pickled through the pipe, as shared
tensors made per rollout, or written into shared buffers made once (what
`training.parallel` does since 2026-12-04). The figure is the learner's wait from its request
to a joined batch (the worker's part beside a copy of itself, as two workers' parts are
joined), the worker's rollout already made: the transport alone.

    python benchmarks/studies/rollout_transport.py --rounds 3

The rollout has the ``ppo`` config's share of one of two workers: 32 games × 64 steps of
865-float observations and 360-action masks (about 7 MB). Medians over 35 requests after 5
warm-ups, the three ways interleaved round by round.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from multiprocessing.connection import Connection

import numpy as np
import torch

WAYS = ("pipe", "shared per rollout", "shared buffers")
ROWS = (64, 32)


def rollout() -> dict[str, torch.Tensor]:
    out = {"obs": torch.rand(*ROWS, 865), "masks": torch.rand(*ROWS, 360) > 0.5}
    for name in ("actions", "logprobs", "values", "rewards", "dones", "advantages", "returns"):
        out[name] = torch.rand(ROWS)
    return out


def worker(conn: Connection, way: str, buffers: dict[str, torch.Tensor]) -> None:
    torch.set_num_threads(1)
    made = rollout()
    while conn.recv() is not None:
        if way == "pipe":
            conn.send({k: v.numpy() for k, v in made.items()})
        elif way == "shared per rollout":
            conn.send({k: v.clone().share_memory_() for k, v in made.items()})
        else:
            for k, v in made.items():
                buffers[k].copy_(v)
            conn.send("ok")


def wait_ms(way: str, requests: int = 40) -> float:
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    buffers = {k: torch.zeros_like(v).share_memory_() for k, v in rollout().items()}
    process = ctx.Process(target=worker, args=(theirs, way, buffers))
    process.start()
    times = []
    for _ in range(requests):
        t = time.perf_counter()
        mine.send(1)
        got = mine.recv()
        part = buffers if got == "ok" else got
        part = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in part.items()}
        {k: torch.cat([v, v], dim=1) for k, v in part.items()}  # the join copies it out
        times.append(time.perf_counter() - t)
    mine.send(None)
    process.join()
    return statistics.median(times[5:]) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    runs: dict[str, list[float]] = {w: [] for w in WAYS}
    for _ in range(a.rounds):
        for way in WAYS:
            runs[way].append(wait_ms(way))
    for way, ms in runs.items():
        rounds = ", ".join(f"{m:.2f}" for m in ms)
        print(f"{way:<20} {statistics.median(ms):6.2f} ms (rounds: {rounds})")


if __name__ == "__main__":
    main()
