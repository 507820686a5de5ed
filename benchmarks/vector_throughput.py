"""Learner decisions per second of ``gymnasium.make_vec("Rummy500-v0", ...)`` in each
vectorization mode: the package's vector env (``vector_entry_point``), Gymnasium's
``sync`` and ``async`` vector envs, with a masked random learner.

    python benchmarks/vector_throughput.py [--envs 4] [--opponent random|greedy|policy]
        [--seconds 10] [--rounds 5] [--modes vector_entry_point sync async]

``policy`` plays the shipped model as every opponent (one object shared by the envs, as
self-play against a frozen snapshot has it): the package's vector env asks it once per round
for all envs, the others once per env and decision. Masks come from
``envs.call("action_masks")`` in every mode (``async`` pays a second round trip for them).
On a machine shared with other jobs the wall-clock figures swing; the CPU-time figures of the
in-process modes (the package's env and ``sync``) do not, and compare the work per decision.
``async`` starts its workers with ``--context`` (default ``spawn``: a worker forked from a
process that has run torch can hang).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

import rummy500_env  # noqa: F401 - registers "Rummy500-v0"
from rummy500_env import Rules
from rummy500_env.agents import GreedyAgent
from rummy500_env.engine.numbers import int_option

MODEL = Path(__file__).resolve().parents[1] / "models" / "rummy500-ppo-standard.pt"


def opponent(name: str) -> Any:
    if name == "random":
        return None
    if name == "greedy":
        return GreedyAgent(Rules.preset("standard"))
    from rummy500_env.agents import PolicyAgent

    one_torch_thread(None)
    return PolicyAgent.load(MODEL, deterministic=False, seed=0)


def one_torch_thread(env: Any) -> Any:
    """One torch thread per process: on a busy machine two threads a process made a single
    forward pass about 30 times slower here (53 ms against 1.8 ms). Applied in each async
    worker too, as a make_vec wrapper."""
    import torch

    torch.set_num_threads(1)
    return env


def make(mode: str, n: int, opponents: Any, context: str) -> Any:
    view = {"opponents": opponents, "episode": "hand", "seat": "random"}
    same_step = AutoresetMode.SAME_STEP
    if mode == "vector_entry_point":
        return gymnasium.make_vec("Rummy500-v0", n, autoreset_mode=same_step, **view)
    kwargs: dict[str, Any] = {"autoreset_mode": same_step}
    wrappers = []
    if mode == "async":
        kwargs["context"] = context
        wrappers = [one_torch_thread] if opponents is not None else []
    return gymnasium.make_vec(
        "Rummy500-v0", n, mode, vector_kwargs=kwargs, wrappers=wrappers, **view
    )


def decisions_per_second(
    envs: Any, seconds: float, rng: np.random.Generator
) -> tuple[float, float]:
    """Step for `seconds` with a masked random learner: learner decisions per second of wall
    time, and per second of this process's CPU time (all its threads)."""

    def step() -> None:
        masks = np.stack(envs.call("action_masks"))
        envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))

    count, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        step()
        count += envs.num_envs
    return count / (time.perf_counter() - start), count / (time.process_time() - cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int_option("envs"), default=4)
    ap.add_argument("--opponent", choices=["random", "greedy", "policy"], default="random")
    ap.add_argument("--seconds", type=float, default=10.0, help="per mode, all rounds")
    ap.add_argument("--rounds", type=int_option("rounds"), default=5)
    ap.add_argument("--modes", nargs="+", default=["vector_entry_point", "sync", "async"])
    ap.add_argument("--context", default="spawn", help="async: multiprocessing start method")
    args = ap.parse_args()
    opponents = opponent(args.opponent)
    rng = np.random.default_rng(0)
    envs = {mode: make(mode, args.envs, opponents, args.context) for mode in args.modes}
    for e in envs.values():
        e.reset(seed=0)
        decisions_per_second(e, 0.5, rng)  # warm up (worker start, first deals)
    # The modes take turns, a slice each per round, so that a machine whose speed drifts
    # (other jobs) weighs on all of them alike; the median slice is reported.
    rates: dict[str, list[tuple[float, float]]] = {mode: [] for mode in args.modes}
    for _ in range(args.rounds):
        for mode, e in envs.items():
            rates[mode].append(decisions_per_second(e, args.seconds / args.rounds, rng))
    for mode, r in rates.items():
        wall = float(np.median([w for w, _ in r]))
        # The CPU figure counts only this process: for async, the workers do the stepping.
        cpu = "" if mode == "async" else f", {np.median([c for _, c in r]):,.0f} per CPU-second"
        print(
            f"{mode:>18}: {wall:8,.0f} learner decisions/s{cpu} "
            f"({args.envs} envs, {args.opponent}; wall slices {min(w for w, _ in r):,.0f}-"
            f"{max(w for w, _ in r):,.0f})"
        )
    for e in envs.values():
        e.close()


if __name__ == "__main__":
    main()
