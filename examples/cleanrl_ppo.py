"""A CleanRL-style PPO loop in one file: masked PPO on the single-agent view, nothing but
Gymnasium and torch.

The CleanRL recipe (``ppo.py``) with one change for a card game: the policy's logits outside
``action_masks()`` are set to a large negative number before sampling and in the update, so
it never picks an illegal action and its ratios and entropy count only legal ones.

The envs come from ``gymnasium.make_vec("Rummy500-v0", ...)``: by default the package's own
vector env (its ``vector_entry_point``: all envs in this process, opponents asked once per
round), or Gymnasium's ``sync`` / ``async`` vector envs with ``--vectorization``. The masks
come through ``envs.call("action_masks")``, which all three answer. The vector env resets a
finished env in the same step (``AutoresetMode.SAME_STEP``), so the observation and mask in
hand are always those of a live position, and CleanRL's GAE needs no change
(docs/frameworks.md says what ``NEXT_STEP`` would hand over instead).

    python examples/cleanrl_ppo.py --steps 1024 [--vectorization async]
"""

from __future__ import annotations

import argparse

import gymnasium
import numpy as np
import torch
from torch import nn

import rummy500_env  # noqa: F401 - registers "Rummy500-v0"
from rummy500_env.agents import RandomAgent

MASKED = -1e9


class Agent(nn.Module):
    def __init__(self, obs_size: int, n_actions: int, hidden: int = 128) -> None:
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.actor = nn.Sequential(
            nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, n_actions)
        )

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(
        self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, its log-probability, entropy, value) under the mask."""
        dist = torch.distributions.Categorical(logits=self.actor(obs).masked_fill(~mask, MASKED))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


def make_envs(mode: str, n: int) -> gymnasium.vector.VectorEnv:
    """n single-agent views against random opponents, reset in the step that ends a hand."""
    view = {"opponents": RandomAgent(), "seat": "random", "episode": "hand"}
    same_step = gymnasium.vector.AutoresetMode.SAME_STEP
    if mode == "vector_entry_point":  # the package's vector env takes its options directly
        return gymnasium.make_vec("Rummy500-v0", n, autoreset_mode=same_step, **view)
    vector_kwargs = {"autoreset_mode": same_step}
    return gymnasium.make_vec("Rummy500-v0", n, mode, vector_kwargs=vector_kwargs, **view)


def masks(envs: gymnasium.vector.VectorEnv) -> torch.Tensor:
    return torch.as_tensor(np.stack(envs.call("action_masks")), dtype=torch.bool)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1024, help="learner decisions in all")
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--rollout", type=int, default=64, help="steps per env per update")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--vectorization",
        choices=["vector_entry_point", "sync", "async"],
        default="vector_entry_point",
        help="make_vec's vectorization_mode",
    )
    args = ap.parse_args(argv)
    gamma, lam, clip, epochs, minibatches = 0.995, 0.95, 0.2, 4, 4
    torch.manual_seed(args.seed)

    envs = make_envs(args.vectorization, args.envs)
    obs_size = envs.single_observation_space.shape[0]
    agent = Agent(obs_size, int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5)

    n, t = args.envs, args.rollout
    obs_b = torch.zeros(t, n, obs_size)
    mask_b = torch.zeros(t, n, int(envs.single_action_space.n), dtype=torch.bool)
    act_b, logp_b, rew_b, done_b, val_b = (torch.zeros(t, n) for _ in range(5))
    next_obs = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32)
    next_mask, next_done = masks(envs), torch.zeros(n)
    hands, decisions = 0, 0
    while decisions < args.steps:
        for step in range(t):  # rollout
            obs_b[step], mask_b[step], done_b[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs, next_mask)
            if not bool(next_mask.gather(1, action[:, None]).all()):
                raise SystemExit("the policy chose an action outside the mask")
            act_b[step], logp_b[step], val_b[step] = action, logp, value
            obs, reward, terminated, truncated, _ = envs.step(action.numpy())
            rew_b[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32)
            hands += int(next_done.sum())
            next_obs = torch.as_tensor(obs, dtype=torch.float32)
            next_mask = masks(envs)
        decisions += n * t

        with torch.no_grad():  # generalized advantage estimation
            adv = torch.zeros(t, n)
            last, next_value = torch.zeros(n), agent.value(next_obs)
            for step in reversed(range(t)):
                nonterminal = 1.0 - (next_done if step == t - 1 else done_b[step + 1])
                following = next_value if step == t - 1 else val_b[step + 1]
                delta = rew_b[step] + gamma * following * nonterminal - val_b[step]
                last = delta + gamma * lam * nonterminal * last
                adv[step] = last
            ret = adv + val_b

        flat = [x.reshape(n * t, *x.shape[2:]) for x in (obs_b, mask_b, act_b, logp_b, adv, ret)]
        b_obs, b_mask, b_act, b_logp, b_adv, b_ret = flat
        for _ in range(epochs):  # clipped PPO update
            for idx in torch.randperm(n * t).chunk(minibatches):
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx].long())
                ratio = (logp - b_logp[idx]).exp()
                a = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
                loss = pg + 0.5 * ((value - b_ret[idx]) ** 2).mean() - 0.01 * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        print(f"{decisions} decisions, {hands} hands finished, loss {loss.item():.4f}")
    envs.close()
    print(
        f"cleanrl: {decisions} masked decisions trained, {hands} hands finished "
        f"({args.vectorization} vector env)"
    )


if __name__ == "__main__":
    main()
