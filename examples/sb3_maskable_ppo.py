"""Stable-Baselines3: sb3-contrib's MaskablePPO on the single-agent view, over SB3's vector
path, ``make_vec_env("Rummy500-v0", ...)`` with ``SubprocVecEnv`` (or ``DummyVecEnv``).

The single-agent view (`rummy500_env.rl.single_agent`) plays the other seats inside ``step``
and defines ``action_masks()`` on the env itself, which MaskablePPO reads through
``env_method``, also through SB3's ``Monitor`` and across ``SubprocVecEnv`` processes (an
``ActionMasker`` wrapper cannot cross them). SB3's vector envs reset a finished env in the
step that ends it, so every mask MaskablePPO sees is a live position's. ``import rummy500_env``
registers the id; ``env_kwargs`` are the view's (opponents, seat, rules, episode, reward).

    python examples/sb3_maskable_ppo.py --steps 512 --envs 2 [--vec-env dummy]
"""

from __future__ import annotations

import argparse

import gymnasium
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import rummy500_env
from rummy500_env.agents import GreedyAgent


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=512, help="learner decisions to train")
    ap.add_argument("--envs", type=int, default=2, help="envs stepped side by side")
    ap.add_argument("--vec-env", choices=["subproc", "dummy"], default="subproc")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    rules = rummy500_env.Rules.preset("standard")
    view = {"opponents": GreedyAgent(rules), "seat": "random", "episode": "hand"}
    check_env(gymnasium.make("Rummy500-v0", **view).unwrapped)
    # make_vec_env asks for render_mode="rgb_array" unless told otherwise; the view draws
    # text only ("ansi", "human"), and refuses a mode it cannot draw.
    view["render_mode"] = None
    vec_env_cls = SubprocVecEnv if args.vec_env == "subproc" else DummyVecEnv
    envs = make_vec_env(
        "Rummy500-v0", args.envs, seed=args.seed, vec_env_cls=vec_env_cls, env_kwargs=view
    )
    model = MaskablePPO("MlpPolicy", envs, n_steps=128, batch_size=64, seed=args.seed)
    model.learn(args.steps)
    mean, std = evaluate_policy(model, envs, n_eval_episodes=2, warn=False)
    envs.close()
    print(
        f"sb3: MaskablePPO trained {model.num_timesteps} decisions on Rummy500-v0 "
        f"({args.envs} envs, {vec_env_cls.__name__}); return vs greedy over 2 hands "
        f"{mean:+.2f} ± {std:.2f}"
    )


if __name__ == "__main__":
    main()
