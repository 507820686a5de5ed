"""PPO on RLlib against `training.ppo`, on identical data: where the two losses differ.

    python benchmarks/ppo_loss_parity.py [--rows 512] [--seed 0] [--sample] [--json]

It builds `training.rllib`'s learner twice from the packaged config ``rllib`` (the card
network): with ``learner: rllib`` (RLlib's own PPO learner) and with ``learner: ppo``
(`MatchedPPOLearner`). One fixed batch (real positions of the env with their masks, sampled
actions, old log-probabilities off by up to ±0.3 so that some ratios leave the clip range,
GAE advantages and value targets, some value errors beyond RLlib's ``vf_clip_param``, and
every 16th row one of the steps RLlib's GAE appends to each episode chunk) goes to

* `training.model.ppo_loss` (`training.ppo`'s loss) on the real rows, with the same network
  weights (the reference);
* RLlib's PPO loss, with the advantages standardised the way its GAE connector does (once,
  over the whole batch, the appended rows included);
* `MatchedPPOLearner`'s loss, on the same batch as RLlib's.

It prints the policy loss, value loss, entropy and total loss of each, what each item alone
changes in RLlib's figure (the value loss's clip and factor, the advantages' standardisation),
both optimizers' Adam eps, and GAE on one terminated episode and one chunk cut at the batch's
edge from `training.model.gae` and from RLlib's ``compute_value_targets``. ``--sample``
also samples 8,192 env steps with the packaged runner (32 envs) on a local Ray instance of one
CPU and counts the learner's rows and the appended ones in that batch. The exit status is 1
when the matched learner's loss is not `training.ppo`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np
import torch

import rummy500_env
from rummy500_env.engine.numbers import int_option
from rummy500_env.training import ppo, rllib
from rummy500_env.training.model import gae, new_model, ppo_loss
from rummy500_env.training.settings import load_yaml

PAD_EVERY = 16
"""Every 16th row of the fixed batch is an appended step (RLlib's loss mask False)."""


def learner(kind: str, args: rllib.Args) -> Any:
    """`training.rllib`'s learner of `kind` ("ppo" or "rllib"), built in this process."""
    args.learner = kind
    config = rllib.build_config(args)
    env = rummy500_env.raw_env(rules=args.game_rules())
    spaces = (env.observation_space("player_0"), env.action_space("player_0"))
    return config.build_learner(spaces={mid: spaces for mid in config.policies})


def fixed_batch(module: Any, rows: int, seed: int) -> dict[str, Any]:
    """One batch of the learner module's rows in RLlib's columns (see the module docstring),
    plus ``raw_advantages`` (before any standardisation)."""
    from ray.rllib.core.columns import Columns

    rng = np.random.default_rng(seed)
    env = rummy500_env.raw_env(rules="standard", episode="hand")
    obs: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    game = 0
    env.reset(seed=seed)
    while len(obs) < rows:
        if all(env.terminations.values()):
            game += 1
            env.reset(seed=seed + game)
        o = env.observe(env.agent_selection)
        obs.append(o["observation"])
        masks.append(o["action_mask"])
        env.step(int(rng.choice(np.flatnonzero(o["action_mask"]))))
    observation = torch.as_tensor(np.array(obs))
    mask = torch.as_tensor(np.array(masks))
    with torch.no_grad():
        logits = module.forward_train(
            {Columns.OBS: {"observation": observation, "action_mask": mask}}
        )[Columns.ACTION_DIST_INPUTS]
        values = module.net.forward_with_value(observation)[1]
        logp_all = torch.log_softmax(logits, -1)
    actions = torch.as_tensor([rng.choice(np.flatnonzero(m)) for m in masks])
    logp = logp_all.gather(1, actions[:, None]).squeeze(1)
    old_logp = logp + torch.as_tensor(rng.uniform(-0.3, 0.3, rows), dtype=torch.float32)
    advantages = torch.as_tensor(rng.normal(0.3, 1.5, rows), dtype=torch.float32)
    errors = rng.normal(0.0, 1.0, rows)
    errors[::7] = 5.0  # a squared error of 25, beyond RLlib's vf_clip_param of 10
    targets = values + torch.as_tensor(errors, dtype=torch.float32)
    real = torch.ones(rows, dtype=torch.bool)
    real[PAD_EVERY - 1 :: PAD_EVERY] = False
    advantages[~real] = -values[~real]  # what RLlib's GAE gives an appended step
    return {
        Columns.OBS: {"observation": observation, "action_mask": mask},
        Columns.ACTIONS: actions,
        Columns.ACTION_LOGP: old_logp,
        Columns.ACTION_DIST_INPUTS: logits,
        Columns.LOSS_MASK: real,
        "raw_advantages": advantages,
        "value_targets": targets,
    }


def rllib_standardised(advantages: torch.Tensor) -> torch.Tensor:
    """The advantages as RLlib's GAE connector leaves them: standardised once, over every row
    (the appended ones included), numpy's deviation with a floor of 1e-4."""
    a = advantages.numpy()
    return torch.as_tensor((a - a.mean()) / max(1e-4, a.std()))


def rllib_loss(lrn: Any, batch: dict[str, Any]) -> dict[str, float]:
    """A learner's loss of the learner module on `batch` and the figures it logged."""
    from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY

    module = lrn.module[rllib.LEARNER]
    config = lrn.config.get_config_for_module(rllib.LEARNER)
    with torch.no_grad():
        loss = lrn.compute_loss_for_module(
            module_id=rllib.LEARNER,
            config=config,
            batch=batch,
            fwd_out=module.forward_train(batch),
        )
    logged = lrn.metrics.reduce()[rllib.LEARNER]
    return {
        "loss": float(loss),
        "policy": float(logged[POLICY_LOSS_KEY]),
        "value": float(logged[VF_LOSS_KEY]),
        "entropy": float(logged[ENTROPY_KEY]),
    }


def reference_loss(
    net_state: dict[str, Any], batch: dict[str, Any], args: rllib.Args
) -> dict[str, float]:
    """`training.model.ppo_loss` on the batch's real rows, through training.ppo's own model
    (`training.model.new_model`) with the learner module's weights."""
    from ray.rllib.core.columns import Columns

    model = new_model(
        ppo.Args(network="cards", channels=args.channels, blocks=args.blocks, hidden=args.hidden)
    )
    model.actor.load_state_dict(net_state)
    real = batch[Columns.LOSS_MASK]
    with torch.no_grad():
        logits, values = model(batch[Columns.OBS]["observation"][real])
        mb = {
            "masks": batch[Columns.OBS]["action_mask"][real] != 0,
            "actions": batch[Columns.ACTIONS][real],
            "logprobs": batch[Columns.ACTION_LOGP][real],
            "advantages": batch["raw_advantages"][real],
            "returns": batch["value_targets"][real],
        }
        out = ppo_loss(logits, values, mb, args.clip_range, args.vf_coef, args.ent_coef)
    return {k: float(out[k]) for k in ("loss", "policy", "value", "entropy")}


def gae_check(gamma: float, lam: float) -> dict[str, Any]:
    """GAE of two learner chunks, one terminated (5 steps, the hand's reward at its last) and
    one cut at the batch's edge (4 steps, bootstrapped), by `training.model.gae` (one game
    column, ``dones`` after the terminal step, the next value at the edge) and by RLlib's
    ``compute_value_targets`` over the chunks with the step its connector appends to each."""
    from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

    rng = np.random.default_rng(1)
    v1, v2 = rng.normal(0, 0.5, 5), rng.normal(0, 0.5, 4)
    final, edge = 0.7, 0.3  # the value of the terminal obs (never used), and at the edge
    r1, r2 = np.zeros(5), np.zeros(4)
    r1[-1] = 1.2  # the hand's reward arrives with the learner's last step
    ours = gae(
        torch.as_tensor(np.concatenate([r1, r2]), dtype=torch.float32)[:, None],
        torch.as_tensor(np.concatenate([v1, v2]), dtype=torch.float32)[:, None],
        torch.as_tensor([0, 0, 0, 0, 1, 0, 0, 0, 0], dtype=torch.float32)[:, None],
        torch.as_tensor([edge], dtype=torch.float32),
        gamma,
        lam,
    )[:, 0].numpy()
    # RLlib: each chunk + one appended step (reward 0); terminated / truncated on the last real
    values = np.concatenate([v1, [final], v2, [edge]])
    rewards = np.concatenate([r1, [0.0], r2, [0.0]])
    terminated = np.array([0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    truncated = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0], dtype=np.float32)
    targets = compute_value_targets(values, rewards, terminated, truncated, gamma, lam)
    real = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0], dtype=bool)
    theirs = (targets - values)[real]
    return {
        "training.ppo": [round(float(x), 6) for x in ours],
        "rllib": [round(float(x), 6) for x in theirs],
        "max_difference": float(np.abs(ours - theirs).max()),
    }


def sampled_batch_shares(args: rllib.Args) -> dict[str, Any]:
    """The learner's rows and the appended ones in one batch of the packaged runner."""
    import ray
    from ray.rllib.core.columns import Columns

    fields = {"num_env_runners": 0, "num_cpus": 1, "learner": "ppo"}
    run_args = rllib.args_from_dict(load_yaml("rllib") | fields)
    rllib.start_ray(run_args)
    algo = rllib.build_config(run_args).build_algo()
    try:
        episodes = algo.env_runner.sample(
            num_timesteps=run_args.train_batch_size, random_actions=False
        )
        env_steps = sum(e.env_steps() for e in episodes)
        batch = algo.learner_group._learner._learner_connector(
            rl_module=algo.learner_group._learner.module,
            batch={},
            episodes=episodes,
            shared_data={},
        )
        mask = batch[rllib.LEARNER][Columns.LOSS_MASK]
        rows, real = len(mask), int(mask.sum())
    finally:
        algo.stop()
        ray.shutdown()
    return {
        "env_steps": env_steps,
        "learner_rows": real,
        "appended_rows": rows - real,
        "appended_share": round((rows - real) / rows, 4),
        "envs_per_runner": run_args.num_envs_per_env_runner,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int_option("rows"), default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", action="store_true", help="also count a sampled batch's rows")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    args = rllib.args_from_dict(load_yaml("rllib"))
    stock, matched = learner("rllib", args), learner("ppo", args)
    matched.module[rllib.LEARNER].load_state_dict(stock.module[rllib.LEARNER].state_dict())
    module = stock.module[rllib.LEARNER]
    batch = fixed_batch(module, a.rows, a.seed)
    batch["advantages"] = rllib_standardised(batch["raw_advantages"])
    net_state = module.net.state_dict()

    reference = reference_loss(net_state, batch, args)
    results = {
        "training.ppo": reference,
        "rllib": rllib_loss(stock, batch),
        "matched": rllib_loss(matched, batch),
    }
    # Each of RLlib's differences alone, on its own learner (the others as training.ppo's):
    stock_config = stock.config.get_config_for_module(rllib.LEARNER)
    value_error = []
    with torch.no_grad():
        out = module.forward_train(batch)
        from ray.rllib.core.columns import Columns

        real = batch[Columns.LOSS_MASK]
        values = module.compute_values(batch, embeddings=out.get(Columns.EMBEDDINGS))[real]
        value_error = (values - batch["value_targets"][real]) ** 2
    alone = {
        "value loss: squared error, no 1/2": float(value_error.mean()),
        f"value loss: squared error clamped at {stock_config.vf_clip_param}": float(
            value_error.clamp(0, stock_config.vf_clip_param).mean()
        ),
        "value loss: training.ppo's (1/2, unclipped)": float(0.5 * value_error.mean()),
    }
    per_batch = batch["advantages"][real]
    per_minibatch = batch["raw_advantages"][real]
    per_minibatch = (per_minibatch - per_minibatch.mean()) / (per_minibatch.std() + 1e-8)
    alone["advantages: largest |difference| per batch (padding in) vs per minibatch"] = float(
        (per_batch - per_minibatch).abs().max()
    )
    alone["advantages: mean over the real rows, per batch (padding in)"] = float(per_batch.mean())
    eps = {
        "rllib": stock.get_optimizer(rllib.LEARNER).defaults["eps"],
        "matched": matched.get_optimizer(rllib.LEARNER).defaults["eps"],
        "training.ppo": ppo.ADAM_EPS,
    }
    report = {
        "losses": results,
        "rllib's differences alone": alone,
        "adam_eps": eps,
        "gae": gae_check(args.gamma, args.gae_lambda),
    }
    if a.sample:
        report["sampled batch"] = sampled_batch_shares(args)
    same = all(
        abs(results["matched"][k] - reference[k]) <= 1e-5 * max(1.0, abs(reference[k]))
        for k in reference
    )
    report["matched equals training.ppo"] = same
    if a.json:
        print(json.dumps(report))
    else:
        print(f"{'':>10} {'training.ppo':>13} {'RLlib PPO':>13} {'matched':>13}")
        for k in ("loss", "policy", "value", "entropy"):
            row = [results[n][k] for n in ("training.ppo", "rllib", "matched")]
            print(f"{k:>10} " + " ".join(f"{x:>13.6f}" for x in row))
        for k, v in alone.items():
            print(f"{k}: {v:.6f}")
        print(f"Adam eps: {eps}")
        print(f"GAE: {report['gae']}")
        if a.sample:
            print(f"sampled batch: {report['sampled batch']}")
        print(f"matched learner's loss equals training.ppo's: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
