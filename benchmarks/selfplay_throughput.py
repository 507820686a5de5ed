"""Learner decisions per second of sampling games: one game at a time (the Gymnasium view, as
sb3's VecEnv steps it) against many games stepped as a batch (`SelfPlayGames`).

    python benchmarks/selfplay_throughput.py [--seconds 20] [--games 32]

The learner is the shipped policy (one forward per decision, or one per batch); the opponents
are the shipped policy too (a frozen snapshot, as self-play has) or GreedyAgent. No learning:
this is the sampling half of a training step.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from rummy500_env.agents import GreedyAgent
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.engine.numbers import int_option
from rummy500_env.rl.single_agent import Rummy500SingleAgentEnv
from rummy500_env.training.selfplay import SelfPlayGames

MODEL = Path(__file__).resolve().parents[1] / "models" / "rummy500-ppo-standard.pt"


def one_game_at_a_time(opponent: object, learner: PolicyAgent, seconds: float) -> float:
    env = Rummy500SingleAgentEnv(opponents=opponent, seat="random", episode="hand")
    obs, _ = env.reset(seed=0)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        obs, _r, term, trunc, _ = env.step(learner.act(obs, env.action_masks()))
        steps += 1
        if term or trunc:
            obs, _ = env.reset()
    return steps / (time.perf_counter() - t0)


def batched(opponent: object, learner: PolicyAgent, seconds: float, n_games: int) -> float:
    games = SelfPlayGames("standard", n_games, [opponent], episode="hand", seed=0)
    obs, masks = games.reset()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step = games.step(learner.act_batch(obs, masks))
        obs, masks = step.observations, step.action_masks
        steps += n_games
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--games", type=int_option("games"), default=32)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    learner = PolicyAgent.load(MODEL, deterministic=False, seed=0)
    out = {}
    for name, opponent in (
        ("policy", PolicyAgent.load(MODEL, deterministic=False, seed=1)),
        ("greedy", GreedyAgent("standard")),
    ):
        one = one_game_at_a_time(opponent, learner, args.seconds)
        many = batched(opponent, learner, args.seconds, args.games)
        out[name] = {"one_game": round(one), f"{args.games}_games": round(many)}
        out[name]["ratio"] = round(many / one, 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    np.set_printoptions(precision=2)
    main()
