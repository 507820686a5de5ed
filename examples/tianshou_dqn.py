"""Tianshou 2.x: masked multi-agent collection and a few DQN updates, seat 0 learning against a
masked random seat 1.

Tianshou's `PettingZooEnv` turns the env's observation dict into ``obs`` plus a boolean
``mask``; its DQN policy reads the mask (illegal actions get the lowest Q value, and
exploration draws among legal actions only), and `MARLRandomDiscreteMaskedOffPolicyAlgorithm`
plays uniformly among the legal actions. `MultiAgentOffPolicyAlgorithm` dispatches each step
to the seat's algorithm. (Tianshou 1.x names such as ``MultiAgentPolicyManager`` are gone in
2.x.)

The bare env (``raw_env``) raises on an illegal action, so a run that finishes collected none.

    python examples/tianshou_dqn.py --steps 400
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from tianshou.algorithm import (
    DQN,
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentOffPolicyAlgorithm,
)
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env.pettingzoo_env import PettingZooEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

import rummy500_env


def make_env() -> PettingZooEnv:
    return PettingZooEnv(rummy500_env.raw_env(episode="hand"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400, help="env steps to collect")
    ap.add_argument("--updates", type=int, default=4, help="DQN gradient steps afterwards")
    ap.add_argument("--envs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    env = make_env()
    obs_space = env.observation_space["observation"]
    net = Net(state_shape=obs_space.shape, action_shape=env.action_space.n, hidden_sizes=[128])
    learner = DQN(
        policy=DiscreteQLearningPolicy(
            model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0
        ),
        optim=AdamOptimizerFactory(lr=1e-4),
        gamma=0.99,
        target_update_freq=100,
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)

    envs = DummyVectorEnv([make_env for _ in range(args.envs)])
    envs.seed(args.seed)
    buffer = VectorReplayBuffer(max(args.steps, 64) * 2, len(envs))
    collector = Collector[CollectStats](algorithm, envs, buffer, exploration_noise=True)
    collector.reset()
    stats = collector.collect(n_step=args.steps)

    collected = buffer[buffer.sample_indices(0)]  # every stored transition
    seats, masks, actions = collected.obs.agent_id, collected.obs.mask, collected.act
    legal = masks[np.arange(len(actions)), actions]
    if not legal.all():
        raise SystemExit("an action outside the mask was collected")
    for seat in env.agents:
        print(f"{seat}: {int((seats == seat).sum())} decisions collected, all legal")

    losses = []
    with policy_within_training_step(algorithm.policy):  # what Tianshou's trainer does
        for _ in range(args.updates):  # each seat's algorithm learns from its own transitions
            update = algorithm.update(buffer=buffer, sample_size=32)
            losses.append(float(update.get_loss_stats_dict()["player_0/loss"]))
    print(
        f"tianshou: {stats.n_collected_steps} steps, {stats.n_collected_episodes} hands "
        f"finished, {len(losses)} DQN updates (last loss {losses[-1]:.4f})"
    )


if __name__ == "__main__":
    main()
