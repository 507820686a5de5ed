"""training.jax_exit: the search teaches the network. Its returns against the long way, its loss
at its fixed point, the settings it refuses, and a run that trains from a policy file, exports a
policy the package plays, and resumes exactly (a run stopped and resumed ends with the weights
of one that ran straight)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

pytest.importorskip("jax")
import jax
import jax.numpy as jnp

from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.jax.network import CardNetwork
from rummy500_env.training import jax_exit
from rummy500_env.training.settings import ConfigError, load_yaml

SPEC = {"kind": "cards", "channels": 8, "blocks": 1, "hidden": 16}


def test_returns_are_each_seats_discounted_rewards_to_its_episode_end():
    rng = np.random.default_rng(0)
    steps, games, players, gamma = 9, 3, 2, 0.9
    rewards = rng.normal(size=(steps, games, players)).astype(np.float32)
    done = rng.random((steps, games)) < 0.25
    actor = rng.integers(0, players, (steps, games))
    bootstrap = rng.normal(size=(games, players)).astype(np.float32)
    labels = jax_exit.Labels(
        *(None,) * 3, jnp.asarray(actor), None, None, jnp.asarray(rewards), jnp.asarray(done), None
    )
    got = np.asarray(jax_exit.returns(labels, jnp.asarray(bootstrap), gamma))
    for g in range(games):
        for t in range(steps):
            p, total, k = actor[t, g], 0.0, t
            while True:  # the long way: sum forward to the episode's end or the rollout's
                total += gamma ** (k - t) * rewards[k, g, p]
                if done[k, g]:
                    break
                k += 1
                if k == steps:
                    total += gamma ** (k - t) * bootstrap[g, p]
                    break
            assert got[t, g] == pytest.approx(total, rel=1e-5, abs=1e-5)


def test_the_loss_is_the_cross_entropy_to_the_search_and_its_kl_vanishes_at_the_target():
    args = jax_exit.args_from_dict(load_yaml("jax_exit") | {"init_policy": None} | TINY)
    args.validate()
    plan = jax_exit.plan_of(args)
    net: CardNetwork = plan.network
    keys = jax.random.split(jax.random.PRNGKey(0), len(net.shapes()))
    params = {
        k: 0.2 * jax.random.normal(key, shape)
        for key, (k, shape) in zip(keys, net.shapes().items(), strict=True)
    }
    state = jax.vmap(plan.env.init)(jax.random.split(jax.random.PRNGKey(1), 6))
    logits, values = net.apply(params, state.observation)
    mask = state.legal_action_mask
    own = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf))
    batch = {"obs": state.observation, "mask": mask, "policy": own, "ret": values + 1.0}
    loss, stats = jax_exit.exit_loss(plan, params, batch, jnp.ones(6, bool))
    assert float(stats["kl"]) == pytest.approx(0.0, abs=1e-5)  # the network is the target
    assert float(stats["value"]) == pytest.approx(0.5, rel=1e-5)
    assert float(loss) == pytest.approx(float(stats["policy"]) + 0.5 * 0.5, rel=1e-5)
    uniform = jnp.where(mask, 1.0, 0.0) / mask.sum(axis=1, keepdims=True)
    _, other = jax_exit.exit_loss(plan, params, batch | {"policy": uniform}, jnp.ones(6, bool))
    assert float(other["kl"]) > 0.01


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"opponents": {"expert": 1.0}}, "['expert'] is not one of ['searched', 'self', 'greedy']"),
        ({"opponents": {"searched": 0.0}}, "give finite weights >= 0, not all zero"),
        ({"rules": "standard,jokers=2"}, "the JAX engine does not play jokers=2"),
        ({"init_policy": "nosuch.pt"}, "init_policy='nosuch.pt'"),
        ({"channels": 8}, "the init policy has channels=48"),
        ({"simulations": 0}, "simulations=0 is not allowed"),
        ({"gamma": 1.5}, "use a number in (0, 1]"),
        ({"minibatch_size": 4096}, "use at most n_steps * n_games = 2048"),
        ({"n_games": 2, "minibatch_size": 32}, "give every opponent with a weight at least one"),
        ({"n_games": 30_000_000}, "n_games=30000000 x n_steps=32 is a rollout of at least"),
    ],
)
def test_settings_it_cannot_train_are_clear_errors(fields, words, tmp_path):
    base = load_yaml("jax_exit") | {"run_dir": str(tmp_path / "run")}
    with pytest.raises(ConfigError, match=re.escape(words)):
        jax_exit.args_from_dict(base | fields).validate()


TINY = {
    "n_games": 8,
    "n_steps": 6,
    "simulations": 4,
    "worlds": 2,
    "candidates": 2,
    "horizon": 4,
    "minibatch_size": 32,
    "n_epochs": 2,
    "snapshot_every": 60,
    "checkpoint_every": 60,
    "eval_every": 10**9,
    "final_eval_games": 2,
    "eval_bots": ["greedy"],
    "progress": False,
}


def run_args(tmp_path, run, total):
    """A tiny run that starts from a small policy file of its own (`start_policy`)."""
    fields = load_yaml("jax_exit") | TINY | {"init_policy": str(start_policy(tmp_path))}
    args = jax_exit.args_from_dict(
        fields | {"run_dir": str(tmp_path / run), "total_timesteps": total}
    )
    args.validate()
    return args


def start_policy(tmp_path):
    """A small card-network policy file, written once: the warm start of the tiny runs."""
    path = tmp_path / "start.pt"
    if not path.exists():
        args = jax_exit.args_from_dict(
            load_yaml("jax_exit") | TINY | {"init_policy": None, "channels": 8, "blocks": 1,
                                            "hidden": 16, "run_dir": str(tmp_path / "scratch"),
                                            "total_timesteps": 20})  # fmt: skip
        jax_exit.train(args)
        (tmp_path / "scratch" / "policy.pt").rename(path)
    return path


def test_a_run_trains_from_a_policy_exports_and_resumes_exactly(tmp_path):
    start = PolicyAgent.load(start_policy(tmp_path), rules="standard")
    straight = jax_exit.train(run_args(tmp_path, "straight", 150))
    jax_exit.train(run_args(tmp_path, "halves", 60))  # stopped after its first checkpoint
    resumed = jax_exit.train(run_args(tmp_path, "halves", 150), resume=True)

    agent = PolicyAgent.load(straight, rules="standard")
    meta = agent.metadata
    assert meta["training"]["trainer"] == "jax_exit" and meta["network"] == SPEC
    assert meta["training"]["timesteps"] >= 150
    assert meta["evaluation"]["results"]["greedy"]["games"] == 2
    again = PolicyAgent.load(resumed, rules="standard")
    changed = False
    for name, weight in agent.network.state_dict().items():
        assert torch.equal(weight, again.network.state_dict()[name]), name
        changed |= not torch.equal(weight, start.network.state_dict()[name])
    assert changed  # it learned from the start policy's weights
    for checkpoint in (tmp_path / "straight" / "checkpoints").iterdir():
        assert {p.name for p in checkpoint.iterdir()} == {"weights.pt", "games.npz"}
