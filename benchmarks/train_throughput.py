"""Training throughput: learner steps/s during MaskablePPO learning, per training config.

    python benchmarks/train_throughput.py [--steps 8192] [--config ppo ppo_long] [--json]

Each config (a packaged name or a YAML path) runs with its own environments and workers, but
without behaviour cloning, snapshots or periodic evaluation, so the figure is rollout
collection plus PPO updates only: the learner decisions trained on per second of wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rummy500_env.training.ppo import (
    args_from_dict,
    load_yaml,
    make_env,
    new_model,
    opponent_pool,
)


def measure(config: str, steps: int) -> float:
    """Learner steps/s of `steps` steps of learning under `config`, after one warm-up rollout."""
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(os.cpu_count() or 1)  # as `train` does
    args = args_from_dict(load_yaml(config) | {"bc_decisions": 0})
    vec = SubprocVecEnv if args.subproc and args.n_envs > 1 else DummyVecEnv
    venv = vec([make_env(args, i) for i in range(args.n_envs)])
    pool, weights = opponent_pool(args, [])
    venv.env_method("set_opponent_pool", pool, weights)
    model = new_model(args, venv)
    warm_up = args.n_steps * args.n_envs
    model.learn(warm_up)  # one rollout and one update
    t = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    rate = (model.num_timesteps - warm_up) / (time.perf_counter() - t)
    venv.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=8192)
    ap.add_argument("--config", nargs="+", default=["ppo", "ppo_long"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {config: measure(config, a.steps) for config in a.config}
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:<12} {v:,.0f} learner steps/s")


if __name__ == "__main__":
    main()
