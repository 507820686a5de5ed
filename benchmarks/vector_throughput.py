"""Learner decisions per second of ``gymnasium.make_vec("Rummy500-v0", ...)`` in each
vectorization mode: the package's vector env (``vector_entry_point``), Gymnasium's
``sync`` and ``async`` vector envs, with a masked random learner.

    python benchmarks/vector_throughput.py [--envs 4] [--opponent random|greedy|policy]
        [--seconds 5] [--modes vector_entry_point sync async]

``policy`` plays the shipped model as every opponent (one object shared by the envs, as
self-play against a frozen snapshot has it): the package's vector env asks it once per round
for all envs, the others once per env and decision. Masks come from
``envs.call("action_masks")`` in every mode (``async`` pays a second round trip for them).
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

MODEL = Path(__file__).resolve().parents[1] / "models" / "rummy500-ppo-standard.pt"


def opponent(name: str) -> Any:
    if name == "random":
        return None
    if name == "greedy":
        return GreedyAgent(Rules.preset("standard"))
    from rummy500_env.agents import PolicyAgent

    return PolicyAgent.load(MODEL, deterministic=False, seed=0)


def decisions_per_second(mode: str, n: int, opponents: Any, seconds: float) -> float:
    view = {"opponents": opponents, "episode": "hand", "seat": "random"}
    same_step = AutoresetMode.SAME_STEP
    if mode == "vector_entry_point":
        envs = gymnasium.make_vec("Rummy500-v0", n, autoreset_mode=same_step, **view)
    else:
        kwargs = {"autoreset_mode": same_step}
        envs = gymnasium.make_vec("Rummy500-v0", n, mode, vector_kwargs=kwargs, **view)
    rng = np.random.default_rng(0)

    def step() -> None:
        masks = np.stack(envs.call("action_masks"))
        envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))

    envs.reset(seed=0)
    for _ in range(20):  # warm up (worker start, first deals)
        step()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        count += n
    rate = count / (time.perf_counter() - start)
    envs.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--opponent", choices=["random", "greedy", "policy"], default="random")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--modes", nargs="+", default=["vector_entry_point", "sync", "async"])
    args = ap.parse_args()
    opponents = opponent(args.opponent)
    for mode in args.modes:
        rate = decisions_per_second(mode, args.envs, opponents, args.seconds)
        print(f"{mode:>18}: {rate:8,.0f} learner decisions/s ({args.envs} envs, {args.opponent})")


if __name__ == "__main__":
    main()
