"""SearchAgent decision latency, and the sampled worlds (rollouts) each decision gets.

python benchmarks/search_latency.py [--ms 50] [--hands 10] [--same-positions]

`--same-positions` plays ExpertAgent's choice at the search's seat too (the search still
decides there, timed and counted, but its choice is dropped), so that every build and commit
searches exactly the same positions: the way to compare worlds per decision between them.

The worlds are counted by wrapping `SearchAgent._evaluate_world` (a world counts when it was
played out), so the same file measures commits before and after issue 18.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rummy500_env
from rummy500_env.agents import ExpertAgent, SearchAgent
from rummy500_env.engine.numbers import int_option


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ms", type=float, default=50.0)
    ap.add_argument("--hands", type=int_option("hands"), default=10)
    ap.add_argument("--same-positions", action="store_true")
    a = ap.parse_args()
    search, expert = SearchAgent(ms=a.ms, seed=0), ExpertAgent()
    played = [0]
    evaluate = search._evaluate_world

    def counted(*args: object) -> object:
        out = evaluate(*args)  # type: ignore[arg-type]
        played[0] += out is not None
        return out

    search._evaluate_world = counted  # type: ignore[method-assign]
    times, worlds = [], []
    env = rummy500_env.raw_env(episode="hand")
    for hand in range(a.hands):
        env.reset(seed=hand)
        while not all(env.terminations.values()):
            agent = env.agent_selection
            o = env.observe(agent)
            if agent == f"player_{hand % 2}":
                t = time.perf_counter()
                played[0] = 0
                action = search.act(o["observation"], o["action_mask"])
                times.append((time.perf_counter() - t) * 1000)
                worlds.append(played[0])
                if a.same_positions:
                    action = expert.act(o["observation"], o["action_mask"])
            else:
                action = expert.act(o["observation"], o["action_mask"])
            env.step(action)
    t = np.array(times)
    print(
        f"{t.size} decisions, budget {a.ms:g} ms: median {np.median(t):.1f} ms, "
        f"p99 {np.percentile(t, 99):.1f} ms, max {t.max():.1f} ms, "
        f"over budget {(t > a.ms).mean():.1%}"
    )
    searched = np.array([w for w in worlds if w > 0])
    print(
        f"worlds per searched decision ({searched.size} of {t.size}): median "
        f"{np.median(searched):.0f}, mean {searched.mean():.1f}, total {searched.sum()}"
    )


if __name__ == "__main__":
    main()
