"""The learner's model and its rollouts, for `training.ppo` and its collection workers
(`training.parallel`): `ActorCritic` (the exported actor plus values), the opponent pool, and
`Collector`, which plays the learner in a `SelfPlayGames` and returns one `Rollout` (with GAE
advantages) at a time. Both import it; it imports neither.

The critic (``critic`` in the settings): ``obs`` values a position from the learner's
observation, what the actor reads; ``full`` (`TableCritic`) also reads what the other seats
hold (`rl.hidden.hidden_hands`), so the advantages that train the actor lose the variance of
the cards the learner cannot see (the centralised critics of PerfectDou and of Suphx's oracle
guiding). The actor never reads them: the exported policy is the same network either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn as nn

from rummy500_env.agents.networks import CardPolicy, build_network, mlp
from rummy500_env.agents.policy import PolicyAgent, current_encoding
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.hidden import hidden_hands_size
from rummy500_env.rl.opponents import Agent
from rummy500_env.training.selfplay import SelfPlayGames

MASKED = -1e9
"""The logit of an illegal action (finite, so entropies stay finite)."""
CRITICS = ("obs", "full")
"""What the critic reads: the learner's observation, or that and the other seats' hands."""


class LearnerSettings(Protocol):
    """The run settings the model and the rollouts read (`training.ppo.Args` has them)."""

    episode: str
    seed: int
    opponents: dict[str, float]
    net_arch: tuple[int, ...]
    activation: str
    critic: str

    def game_rules(self) -> Rules: ...

    def network_spec(self) -> dict[str, Any]: ...


class TableCritic(nn.Module):
    """The ``full`` critic, for training only: an MLP (``net_arch``, ``activation``) on the
    feature part of the learner's observation (`obs_size` floats, what the networks read)
    followed by the other seats' hands (`rl.hidden.hidden_hands`). A network of its own, apart
    from the actor's: what it learns of the hidden cards cannot shape the features the actor
    plays on."""

    def __init__(
        self, obs_size: int, hidden_size: int, net_arch: list[int], activation: str
    ) -> None:
        super().__init__()
        self.obs_size = obs_size
        self.net = mlp(obs_size + hidden_size, net_arch, 1, activation)

    def forward(self, obs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The values of positions (observations) whose other seats hold `hidden`."""
        features = torch.cat([obs[..., : self.obs_size], hidden], dim=-1)
        values: torch.Tensor = self.net(features).squeeze(-1)
        return values


class ActorCritic(nn.Module):
    """The exported actor plus what training needs: values. The card network has its own
    value head; the flat MLP trains with a separate critic of the same shape. With a
    `TableCritic` (``critic: full``) that critic's values are the ones GAE uses; the card
    network's own head keeps learning the same returns from the observation alone (the value
    a search's ``value`` leaf reads from the exported file), and the flat MLP has no other."""

    def __init__(
        self, actor: nn.Module, critic: nn.Module | None, table: TableCritic | None = None
    ) -> None:
        super().__init__()
        self.actor = actor
        self.critic = critic
        self.table = table

    def forward(
        self, obs: torch.Tensor, hidden: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action logits, values); `hidden` (what the other seats hold) is read only by a
        table critic."""
        logits, values, _ = self.heads(obs, hidden)
        return logits, values

    def heads(
        self, obs: torch.Tensor, hidden: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(action logits, the values GAE uses, the card network's own values where those are
        another head's, else None): one pass for the PPO loss."""
        own: torch.Tensor | None
        if self.critic is not None:
            logits, own = self.actor(obs), self.critic(obs).squeeze(-1)
        elif isinstance(self.actor, CardPolicy):
            logits, own = self.actor.forward_with_value(obs)
        else:  # the flat actor with a table critic: no critic of its own
            logits, own = self.actor(obs), None
        if self.table is None:
            assert own is not None, "a model without a table critic has one of its own"
            return logits, own, None
        if hidden is None:
            raise ValueError("a table critic needs the other seats' hands (hidden)")
        return logits, self.table(obs, hidden), own


def new_model(args: LearnerSettings) -> ActorCritic:
    """The actor `args` name and its critic (`CRITICS`)."""
    rules = args.game_rules()
    spec = args.network_spec()
    actor = build_network(rules, spec)
    obs_size = current_encoding(rules)["observation_size"]
    table = None
    if args.critic == "full":
        table = TableCritic(
            obs_size, hidden_hands_size(rules), list(args.net_arch), args.activation
        )
    if spec["kind"] == "mlp":
        critic = None if table else mlp(obs_size, list(args.net_arch), 1, args.activation)
        return ActorCritic(actor, critic, table)
    return ActorCritic(actor, None, table)


def masked_logits(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~masks, MASKED)


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
    hidden: torch.Tensor
    """What the other seats held at each decision (`rl.hidden.hidden_hands`) for a table
    critic; no columns for the ``obs`` critic."""
    masks: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    dones: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


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


class Collector:
    """Plays the learner in `games` and keeps the observations between rollouts; with
    `hidden`, also what the other seats hold at each decision (for a table critic)."""

    def __init__(self, games: SelfPlayGames, seed: int, hidden: bool = False) -> None:
        self.games = games
        self.with_hidden = hidden
        obs, masks = games.reset()
        self.obs, self.masks = torch.as_tensor(obs), torch.as_tensor(masks)
        self.hidden = self._hidden()
        self.generator = torch.Generator().manual_seed(seed)
        self.episode_returns: list[float] = []

    def set_opponents(self, args: LearnerSettings, snapshots: list[str]) -> None:
        """Draw the next deals' opponents from the pool with these snapshots."""
        self.games.set_pool(*opponent_pool(args, snapshots))

    def _hidden(self) -> torch.Tensor:
        """The other seats' hands for the current observations (no columns without)."""
        if self.with_hidden:
            return torch.as_tensor(self.games.hidden_hands())
        return torch.zeros((len(self.games.envs), 0))

    def collect(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> Rollout:
        n = len(self.games.envs)
        obs = torch.zeros((n_steps, n, self.obs.shape[1]))
        hidden = torch.zeros((n_steps, n, self.hidden.shape[1]))
        masks = torch.zeros((n_steps, n, self.masks.shape[1]), dtype=torch.bool)
        actions = torch.zeros((n_steps, n), dtype=torch.long)
        logprobs, values = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        rewards, dones = torch.zeros((n_steps, n)), torch.zeros((n_steps, n))
        with torch.no_grad():
            for t in range(n_steps):
                obs[t], masks[t], hidden[t] = self.obs, self.masks, self.hidden
                logits, value = model(self.obs, self.hidden)
                logp = torch.log_softmax(masked_logits(logits, self.masks), -1)
                action = sample(logp, self.generator)
                actions[t], values[t] = action, value
                logprobs[t] = logp.gather(1, action[:, None]).squeeze(1)
                step = self.games.step(action.numpy())
                rewards[t] = torch.as_tensor(step.rewards)
                dones[t] = torch.as_tensor(step.terminated | step.truncated, dtype=torch.float32)
                self.obs = torch.as_tensor(step.observations)
                self.masks = torch.as_tensor(step.action_masks)
                self.hidden = self._hidden()
                self.episode_returns += [r for r in step.episode_returns if r is not None]
            next_value = model(self.obs, self.hidden)[1]
        advantages = gae(rewards, values, dones, next_value, gamma, lam)
        return Rollout(
            obs=obs,
            hidden=hidden,
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
    return Collector(games, sampling_seed, hidden=args.critic == "full")
