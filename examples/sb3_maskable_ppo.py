"""Stable-Baselines3: sb3-contrib's MaskablePPO on the single-agent view, made with
``gymnasium.make("Rummy500-v0", ...)``.

The single-agent view (`rummy500_env.rl.single_agent`) plays the other seats inside ``step``
and defines ``action_masks()`` on the env itself, which MaskablePPO reads, also through
Gymnasium's wrappers and across `SubprocVecEnv` processes. ``import rummy500_env`` registers
the id; the keyword arguments are the view's (opponents, seat, rules, episode, reward).

    python examples/sb3_maskable_ppo.py --steps 512
"""

from __future__ import annotations

import argparse

import gymnasium
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_checker import check_env

import rummy500_env
from rummy500_env.agents import GreedyAgent


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=512, help="learner decisions to train")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    def make() -> gymnasium.Env:
        rules = rummy500_env.Rules.preset("standard")
        return gymnasium.make(
            "Rummy500-v0", opponents=GreedyAgent(rules), seat="random", episode="hand"
        )

    env = make()
    check_env(env.unwrapped)
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, seed=args.seed, verbose=0)
    model.learn(args.steps)
    mean, std = evaluate_policy(model, make(), n_eval_episodes=2, warn=False)
    print(
        f"sb3: MaskablePPO trained {model.num_timesteps} decisions on {env.spec.id}; "
        f"return vs greedy over 2 hands {mean:+.2f} ± {std:.2f}"
    )


if __name__ == "__main__":
    main()
