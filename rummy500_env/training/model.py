"""The learner's model and its loss, beside each other: `ActorCritic` (the exported actor plus
the values training needs), how its actions are sampled, GAE, and the clipped PPO loss.

`training.ppo` trains with them, its collection workers (`training.parallel`) sample with
them, and `training.rllib`'s learner computes the very same loss (`ppo_loss`), so no trainer
imports another for them.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
import torch.nn as nn

from rummy500_env.agents.networks import CardPolicy, build_network, mlp
from rummy500_env.agents.policy import current_encoding
from rummy500_env.engine.rules import Rules

MASKED = -1e9
"""The logit of an illegal action (finite, so entropies stay finite)."""
ADAM_EPS = 1e-5
"""Adam's eps in the PPO update (torch's default is 1e-8); `training.rllib`'s learner uses it
too."""


class ModelSettings(Protocol):
    """The run settings the model reads (`training.ppo.Args` has them)."""

    net_arch: tuple[int, ...]
    activation: str

    def game_rules(self) -> Rules: ...

    def network_spec(self) -> dict[str, Any]: ...


class ActorCritic(nn.Module):
    """The exported actor plus its values: the card network's own value head, or, for the flat
    MLP, a separate critic of the same shape (`new_model`)."""

    def __init__(self, actor: nn.Module, critic: nn.Module | None = None) -> None:
        super().__init__()
        self.actor = actor
        self.critic = critic

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(action logits, values) of a batch of observations."""
        if self.critic is not None:
            return self.actor(obs), self.critic(obs).squeeze(-1)
        assert isinstance(self.actor, CardPolicy), "an actor without a critic has a value head"
        logits, values = self.actor.forward_with_value(obs)
        return logits, values


def new_model(args: ModelSettings) -> ActorCritic:
    """The actor `args` name, and a critic where the network has no value head of its own."""
    rules = args.game_rules()
    spec = args.network_spec()
    actor = build_network(rules, spec)
    if spec["kind"] == "mlp":
        obs_size = current_encoding(rules)["observation_size"]
        return ActorCritic(actor, mlp(obs_size, list(args.net_arch), 1, args.activation))
    return ActorCritic(actor)


def masked_logits(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """`logits` with the illegal actions' set to `MASKED`."""
    return logits.masked_fill(~masks, MASKED)


def sample(logp: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row from log-probabilities, by the Gumbel-max trick (argmax of logp
    plus Gumbel noise): the same distribution as `torch.multinomial`, twice as fast on
    these rows of 360."""
    u = torch.rand(logp.shape, generator=generator).clamp_(1e-20, 1.0)
    return torch.argmax(logp - torch.log(-torch.log(u)), dim=-1)


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    next_value: torch.Tensor,
    gamma: float,
    lam: float,
) -> torch.Tensor:
    """GAE advantages of (steps, games) rows: `dones[t]` ends a game after step t (its next row
    is the next game's first, never bootstrapped), `next_value` bootstraps the last row (the
    rollout's edge, where the games go on)."""
    advantages = torch.zeros_like(rewards)
    last = torch.zeros_like(next_value)
    for t in reversed(range(len(rewards))):
        following = next_value if t == len(rewards) - 1 else values[t + 1]
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * following * alive - values[t]
        last = delta + gamma * lam * alive * last
        advantages[t] = last
    return advantages


def ppo_loss(
    logits: torch.Tensor,
    values: torch.Tensor,
    mb: dict[str, torch.Tensor],
    clip_range: float,
    vf_coef: float,
    ent_coef: float,
) -> dict[str, torch.Tensor]:
    """The clipped PPO loss of one minibatch, as tensors: ``loss`` (what is minimised),
    ``policy``, ``value``, ``entropy``, ``ratio`` and ``log_ratio``.

    `logits` are the network's (unmasked), `values` its values; `mb` holds ``masks`` (bool),
    ``actions``, ``logprobs`` (at sampling), ``advantages`` (GAE, standardised here per
    minibatch) and ``returns``. The value loss is half the squared error, unclipped.
    """
    logp_all = torch.log_softmax(masked_logits(logits, mb["masks"]), -1)
    logp = logp_all.gather(1, mb["actions"][:, None]).squeeze(1)
    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
    log_ratio = logp - mb["logprobs"]
    ratio = log_ratio.exp()
    adv = mb["advantages"]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    clipped = torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -torch.min(ratio * adv, clipped * adv).mean()
    value_loss = 0.5 * ((values - mb["returns"]) ** 2).mean()
    loss = policy_loss + vf_coef * value_loss - ent_coef * entropy
    return {
        "loss": loss,
        "policy": policy_loss,
        "value": value_loss,
        "entropy": entropy,
        "ratio": ratio,
        "log_ratio": log_ratio,
    }
