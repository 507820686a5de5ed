"""The learner's rollouts, for `training.ppo` and its collection workers (`training.parallel`):
the opponent pool, and `Collector`, which plays the learner in a `SelfPlayGames` and returns
one `Rollout` (with GAE advantages) at a time. Both import it; it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.registry import make_agent
from rummy500_env.rl.opponents import Agent
from rummy500_env.rl.selfplay import SelfPlayGames
from rummy500_env.training.model import ActorCritic, ModelSettings, gae, masked_logits, sample


class LearnerSettings(ModelSettings, Protocol):
    """The run settings the model and the rollouts read (`training.ppo.Args` has them)."""

    episode: str
    seed: int
    opponents: dict[str, float]


def opponent_pool(args: LearnerSettings, snapshots: list[str]) -> tuple[list[Agent], list[float]]:
    """The pool and its weights: the agents named, and the snapshots sharing the "self"
    weight."""
    rules = args.game_rules()
    pool: list[Agent] = []
    weights: list[float] = []
    for name, w in args.opponents.items():
        if w <= 0:
            continue
        if name == "self":
            for path in snapshots:
                pool.append(PolicyAgent.load(path, deterministic=False, seed=args.seed))
                weights.append(w / len(snapshots))
        else:
            pool.append(make_agent(name, rules, seed=args.seed + len(pool)))
            weights.append(w)
    if not pool:  # only "self" is weighted and no snapshot exists yet
        pool, weights = [make_agent("random", rules, seed=args.seed)], [1.0]
    return pool, weights


@dataclass
class Rollout:
    """One rollout: `n_steps` rows of the learner's decisions in every game."""

    obs: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class Collector:
    """Plays the learner in `games` and keeps the observations between rollouts."""

    def __init__(self, games: SelfPlayGames, seed: int) -> None:
        self.games = games
        obs, masks = games.reset()
        self.obs, self.masks = torch.as_tensor(obs), torch.as_tensor(masks)
        self.generator = torch.Generator().manual_seed(seed)
        self.episode_returns: list[float] = []

    def set_opponents(self, args: LearnerSettings, snapshots: list[str]) -> None:
        """Draw the next deals' opponents from the pool with these snapshots."""
        self.games.set_pool(*opponent_pool(args, snapshots))

    def collect(
        self,
        model: ActorCritic,
        n_steps: int,
        gamma: float,
        lam: float,
        before_step: Callable[[int], None] | None = None,
    ) -> Rollout:
        """`n_steps` of every game by `model`; `before_step(t)` runs before step t (a
        collection worker loads newer weights there)."""
        n = len(self.games.envs)
        device = next(model.parameters()).device
        obs = torch.zeros((n_steps, n, self.obs.shape[1]))
        masks = torch.zeros((n_steps, n, self.masks.shape[1]), dtype=torch.bool)
        actions = torch.zeros((n_steps, n), dtype=torch.long)
        logprobs, values = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        rewards, dones = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        with torch.no_grad():
            for t in range(n_steps):
                if before_step is not None:
                    before_step(t)
                obs[t], masks[t] = self.obs, self.masks
                logits, value = model(self.obs.to(device))
                logits, value = logits.cpu(), value.cpu()  # sampled here: the same on any device
                logp = torch.log_softmax(masked_logits(logits, self.masks), -1)
                action = sample(logp, self.generator)
                actions[t], values[t] = action, value
                logprobs[t] = logp.gather(1, action[:, None]).squeeze(1)
                step = self.games.step(action.numpy())
                rewards[t] = torch.as_tensor(step.rewards)
                dones[t] = torch.as_tensor(step.terminated | step.truncated, dtype=torch.float32)
                self.obs = torch.as_tensor(step.observations)
                self.masks = torch.as_tensor(step.action_masks)
                self.episode_returns += [r for r in step.episode_returns if r is not None]
            next_value = model(self.obs.to(device))[1].cpu()
        advantages = gae(rewards, values, dones, next_value, gamma, lam)
        return Rollout(
            obs=obs,
            masks=masks,
            actions=actions,
            logprobs=logprobs,
            values=values,
            rewards=rewards,
            dones=dones,
            advantages=advantages,
            returns=advantages + values,
        )


def new_collector(
    args: LearnerSettings, n_games: int, games_seed: int, sampling_seed: int, snapshots: list[str]
) -> Collector:
    """`n_games` seeded games against the opponent pool with these snapshots, and their
    collector (the trainer's own, and each collection worker's)."""
    pool, weights = opponent_pool(args, snapshots)
    games = SelfPlayGames(
        args.game_rules(), n_games, pool, weights, episode=args.episode, seed=games_seed
    )
    return Collector(games, sampling_seed)
