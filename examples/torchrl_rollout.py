"""TorchRL: the AEC env through ``PettingZooWrapper(use_mask=True)``, a masked policy, a rollout.

TorchRL wraps the env as it is: each seat is a group (``player_0``, ``player_1``) with its
``observation``, ``action_mask`` and ``mask`` (whether the seat is the one to act). The
policy is one small network shared by the seats, sampling from a `MaskedCategorical` over
the legal actions. A seat that is not to act has an all-zero action mask; TorchRL ignores its
action, but a distribution needs at least one allowed value, so that seat samples from every
action instead (``legal_or_idle``).

The bare env (``raw_env``) raises on an illegal action, so a rollout that finishes is a
rollout without one; the script checks it again from the collected masks.

    python examples/torchrl_rollout.py --steps 300
"""

from __future__ import annotations

import argparse

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential
from torch import nn
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import check_env_specs
from torchrl.modules import MaskedCategorical, ProbabilisticActor

import rummy500_env


def legal_or_idle(action_mask: torch.Tensor, acting: torch.Tensor) -> torch.Tensor:
    """The legal actions of the seat to act; every action for a seat that waits."""
    return action_mask | ~acting.unsqueeze(-1)


def masked_policy(env: PettingZooWrapper, hidden: int = 64) -> TensorDictSequential:
    """One network for every seat; per seat, logits -> sampling mask -> masked sample."""
    obs_size = env.observation_spec["player_0", "observation", "observation"].shape[-1]
    n_actions = env.action_spec["player_0", "action"].space.n
    net = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, n_actions))
    parts: list[TensorDictModule] = []
    for seat in env.group_map:
        parts.append(
            TensorDictModule(
                net, in_keys=[(seat, "observation", "observation")], out_keys=[(seat, "logits")]
            )
        )
        parts.append(
            TensorDictModule(
                legal_or_idle,
                in_keys=[(seat, "action_mask"), (seat, "mask")],
                out_keys=[(seat, "sampling_mask")],
            )
        )
        parts.append(
            ProbabilisticActor(
                TensorDictModule(nn.Identity(), in_keys=[(seat, "logits")], out_keys=["_"]),
                in_keys={"logits": (seat, "logits"), "mask": (seat, "sampling_mask")},
                out_keys=[(seat, "action")],
                distribution_class=MaskedCategorical,
                return_log_prob=True,
                log_prob_key=(seat, "log_prob"),
            )
        )
    return TensorDictSequential(*parts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="AEC steps to roll out")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)

    env = PettingZooWrapper(env=rummy500_env.raw_env(episode="hand"), use_mask=True, seed=args.seed)
    check_env_specs(env)
    policy = masked_policy(env)
    with torch.no_grad():
        rollout = env.rollout(args.steps, policy=policy, break_when_any_done=False)

    for seat in env.group_map:
        acting = rollout[seat, "mask"].squeeze(-1)
        actions = rollout[seat, "action"]
        legal = rollout[seat, "action_mask"].gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        if not bool(legal[acting].all()):
            raise SystemExit(f"{seat} played an action outside its mask")
        print(f"{seat}: {int(acting.sum())} decisions, all legal")
    hands = int(rollout["next", "done"].sum())
    print(f"torchrl: {rollout.batch_size[0]} steps, {hands} hands finished, masked policy")


if __name__ == "__main__":
    main()
