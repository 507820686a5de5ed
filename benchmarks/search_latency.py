"""SearchAgent decision latency: how long each decision takes against its ms budget.

python benchmarks/search_latency.py [--ms 50] [--hands 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rummy500_env
from rummy500_env.agents import ExpertAgent, SearchAgent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ms", type=float, default=50.0)
    ap.add_argument("--hands", type=int, default=10)
    a = ap.parse_args()
    search, expert = SearchAgent(ms=a.ms, seed=0), ExpertAgent()
    times = []
    env = rummy500_env.raw_env(episode="hand")
    for hand in range(a.hands):
        env.reset(seed=hand)
        while not all(env.terminations.values()):
            agent = env.agent_selection
            o = env.observe(agent)
            if agent == f"player_{hand % 2}":
                t = time.perf_counter()
                action = search.act(o["observation"], o["action_mask"])
                times.append((time.perf_counter() - t) * 1000)
            else:
                action = expert.act(o["observation"], o["action_mask"])
            env.step(action)
    t = np.array(times)
    print(
        f"{t.size} decisions, budget {a.ms:g} ms: median {np.median(t):.1f} ms, "
        f"p99 {np.percentile(t, 99):.1f} ms, max {t.max():.1f} ms, "
        f"over budget {(t > a.ms).mean():.1%}"
    )


if __name__ == "__main__":
    main()
