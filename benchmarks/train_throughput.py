"""Training throughput: env steps/s during MaskablePPO learning with 1 and 2 workers.

    python benchmarks/train_throughput.py [--steps 8192]

Uses the default config (configs/ppo.yaml) without behaviour cloning, snapshots or periodic
evaluation, so it measures rollout collection plus PPO updates only.
"""

from __future__ import annotations

import argparse
import json
import time

from rummy500_env.training.ppo import (
    DEFAULT_CONFIG,
    args_from_dict,
    load_yaml,
    make_env,
    new_model,
    opponent_pool,
)


def measure(n_envs: int, steps: int) -> float:
    import torch
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(1)
    args = args_from_dict(load_yaml(DEFAULT_CONFIG) | {"n_envs": n_envs, "bc_decisions": 0})
    vec = SubprocVecEnv if n_envs > 1 else DummyVecEnv
    venv = vec([make_env(args, i) for i in range(n_envs)])
    pool, weights = opponent_pool(args, [])
    venv.env_method("set_opponent_pool", pool, weights)
    model = new_model(args, venv)
    model.learn(args.n_steps * n_envs)  # warm-up: one rollout and one update
    t = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    rate = (model.num_timesteps - args.n_steps * n_envs) / (time.perf_counter() - t)
    venv.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=8192)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {f"{n}_workers_steps_per_s": measure(n, a.steps) for n in (1, 2)}
    out["speedup"] = out["2_workers_steps_per_s"] / out["1_workers_steps_per_s"]
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:<26} {v:,.2f}")


if __name__ == "__main__":
    main()
