"""training.ppo trains exactly what it trained before its model, loss and self-play loop were
moved (`training.model`, `rl.selfplay`): the weights after imitation and two PPO updates
match, to float noise, the digests the code wrote before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tyro")

import torch

from rummy500_env.training.ppo import Trainer, args_from_dict, ppo_update
from rummy500_env.training.settings import load_yaml

SMALL = {
    "n_games": 4,
    "n_steps": 16,
    "minibatch_size": 32,
    "channels": 4,
    "blocks": 1,
    "hidden": 8,
    "bc_decisions": 100,
    "bc_epochs": 1,
    "progress": False,
    "collect_workers": 1,
    "threads": 1,
    "net_arch": [16],
}
"""A tiny run: 100 imitated decisions, then PPO updates of 64 decisions."""

BEFORE = {
    "cards": [-0.31544255050539505, 64.04686567174213, 1.1358320703332432],
    "mlp": [16.828467335792084, 1204.6713878282208, -7.886098889584648],
}
"""`digest` of the weights `trained` leaves, written by the code of 0.1.x (same seed, one
torch thread) and unchanged by every move since."""


def trainer(tmp_path: Path, **fields: Any) -> Trainer:
    args = args_from_dict(load_yaml("ppo") | SMALL | fields | {"run_dir": str(tmp_path / "run")})
    return Trainer(args, resume=False)


def trained(t: Trainer, updates: int = 2) -> dict[str, torch.Tensor]:
    """Imitation, a snapshot, then `updates` PPO updates: the model's weights after them."""
    args = t.args
    t.warm_start()
    t.snapshot()
    for u in range(updates):
        rollout = t.collector.collect(t.model, args.n_steps, args.gamma, args.gae_lambda)
        ppo_update(t.model, t.optimizer, rollout, args, args.seed + u)
    return {k: v.clone() for k, v in t.model.state_dict().items()}


def digest(state: dict[str, torch.Tensor]) -> list[float]:
    """Three numbers that move with any weight: the sum, the absolute sum and a fixed random
    projection (compared to a tolerance of 1e-4, so that the last bits in which CPUs' float
    kernels differ are no failure, while any change of what training does, which moves them
    by orders of magnitude more, is)."""
    v = torch.cat([state[k].double().flatten() for k in sorted(state)]).numpy()
    projection = np.random.default_rng(0).standard_normal(len(v))
    return [float(v.sum()), float(np.abs(v).sum()), float(v @ projection)]


@pytest.mark.parametrize("network", ["cards", "mlp"])
@pytest.mark.slow
def test_ppo_trains_the_same_weights_as_before(tmp_path, network):
    weights = trained(trainer(tmp_path, network=network))
    assert digest(weights) == pytest.approx(BEFORE[network], rel=1e-4, abs=1e-4)


def test_the_digest_moves_with_one_more_update(tmp_path):
    """The check can fail: a third update gives other weights."""
    weights = trained(trainer(tmp_path, network="cards"), updates=3)
    assert digest(weights) != pytest.approx(BEFORE["cards"], rel=1e-4, abs=1e-4)
