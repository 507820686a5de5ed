"""Ray RLlib: this package's pieces in your own RLlib script (``python -m training.rllib`` is
the full trainer built from them).

`rummy500_env.training.rllib` holds the glue RLlib needs for this env: an env class
(`Rummy500MultiAgentEnv`, picklable to every env runner), an action-masking RLModule for the
env's observation dict (`MaskedActorCritic`), fixed bots as RLModules (`BotModule`) and a
per-episode opponent draw (`PoolMapping`). `build_config` puts them in a `PPOConfig` that you
may change further before building; `export_policy` writes the learner as the package's
policy file, which `PolicyAgent.load` plays with torch alone.

    python examples/rllib_selfplay.py --iterations 2
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import ray

from rummy500_env.agents import GreedyAgent
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.evaluation.arena import play
from rummy500_env.training.rllib import Args, build_config, export_policy, sampled, start_ray


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--env-runners", type=int, default=1)
    args = ap.parse_args(argv)

    config = Args(
        num_env_runners=args.env_runners,
        train_batch_size=500,
        batch_size=128,
        n_epochs=1,
        net_arch=(64, 64),
        opponents={"greedy": 0.5, "self": 0.5},
    )
    start_ray(config)  # a local Ray instance; Args(address="auto") joins a cluster
    algo = build_config(config).build_algo()
    try:
        steps = 0
        for i in range(args.iterations):
            result = algo.train()
            steps += sampled(result)
            learner = result["env_runners"].get("module_episode_returns_mean", {}).get("learner")
            print(f"iteration {i + 1}: {steps} env steps, learner mean return {learner}")
        path = Path(tempfile.mkdtemp()) / "policy.pt"
        export_policy(algo, config, path, steps)
    finally:
        algo.stop()
        ray.shutdown()

    agent = PolicyAgent.load(path)
    rules = agent.metadata["rules"]
    result = play([agent, GreedyAgent(config.game_rules())], rules, seed=0, episode="hand")
    print(f"rllib: exported {path.name} after {steps} env steps; a hand vs greedy: {result.totals}")


if __name__ == "__main__":
    main()
