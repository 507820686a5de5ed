"""Steps/s of the single-agent view with bot opponents: bots asked on their seat's view
(`rl.opponents.choose`, what the env does) against the same bots asked through ``act`` on the
observation (what it did before `choose`), interleaved in one process.

    python benchmarks/single_agent_bots.py --bot expert --seconds 5 --rounds 5

Prints each round's steps/s and the median ratio view/act (medians of interleaved runs: the
machine's speed drifts).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.numbers import int_option
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv


class ActOnly:
    """The bot seen only through ``act`` (no ``decide``): the observation path."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot

    def act(self, observation: np.ndarray[Any, Any], action_mask: np.ndarray[Any, Any]) -> int:
        return int(self.bot.act(observation, action_mask))


def steps_per_second(opponent: Any, seconds: float, seed: int) -> float:
    env = Rummy500SingleAgentEnv(opponents=opponent, episode="hand", seat="random")
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        legal = np.flatnonzero(env.action_masks())
        _, _, terminated, truncated, _ = env.step(int(rng.choice(legal)))
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bot", default="expert", help="an agent spec with decide (a bot)")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int_option("rounds"), default=5)
    args = ap.parse_args()
    ratios = []
    for r in range(args.rounds):
        view = steps_per_second(make_agent(args.bot, "standard", seed=r), args.seconds, r)
        act = steps_per_second(ActOnly(make_agent(args.bot, "standard", seed=r)), args.seconds, r)
        ratios.append(view / act)
        print(f"round {r}: view {view:,.0f} steps/s, act {act:,.0f} steps/s, {view / act:.2f}x")
    print(f"median view/act: {statistics.median(ratios):.2f}x over {args.rounds} rounds")


if __name__ == "__main__":
    main()
