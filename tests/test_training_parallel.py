"""Rollouts collected in two processes (`collect_workers: 2`, training/parallel.py): the
joined batch is the two processes' own rollouts side by side, legal and reproducible; a worker
that dies is a clear error; bad settings are refused."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("tyro")
import torch

from rummy500_env.rl.selfplay import SelfPlayGames
from rummy500_env.training.parallel import SEED_STRIDE, CollectionError, shares
from rummy500_env.training.ppo import Trainer, args_from_dict
from rummy500_env.training.rollouts import Collector, opponent_pool
from rummy500_env.training.settings import ConfigError, load_yaml

SMALL = {
    "n_games": 5,
    "n_steps": 6,
    "minibatch_size": 10,
    "channels": 4,
    "blocks": 1,
    "hidden": 8,
    "bc_decisions": 0,
    "progress": False,
    "collect_workers": 2,
}


def trainer(tmp_path: Path, **fields: object) -> Trainer:
    args = args_from_dict(load_yaml("ppo") | SMALL | fields | {"run_dir": str(tmp_path / "run")})
    return Trainer(args, resume=False)


def test_games_are_shared_out_evenly_this_process_first():
    assert shares(64, 2) == [32, 32]
    assert shares(64, 3) == [22, 21, 21]
    assert shares(5, 5) == [1] * 5


@pytest.mark.slow
def test_the_joined_rollout_is_each_process_own_rollout_side_by_side(tmp_path):
    """The workers' part equals what one process with the worker's games and seeds
    collects: the split changes who steps the games, not what they play."""
    t = trainer(tmp_path)
    try:
        args = t.args
        t.snapshot()  # the pool's "self" share, in both processes
        joined = t.collector.collect(t.model, args.n_steps, args.gamma, args.gae_lambda)
    finally:
        t.close()
    assert joined.obs.shape[:2] == (args.n_steps, args.n_games)
    picked = joined.masks.gather(2, joined.actions[:, :, None]).squeeze(2)
    assert picked.all(), "every learner action is in its mask"

    worker = args_from_dict(load_yaml("ppo") | SMALL | {"seed": args.seed + SEED_STRIDE})
    pool, weights = opponent_pool(worker, t.snapshot_files())
    games = SelfPlayGames(
        args.game_rules(), 2, pool, weights, episode=args.episode, seed=SEED_STRIDE
    )  # the worker's 2 of 5 games: seed 0 * 7919 + 0 updates, plus the stride
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker: the same sums, to the last bit
    try:
        alone = Collector(games, SEED_STRIDE).collect(
            t.model, args.n_steps, args.gamma, args.gae_lambda
        )
    finally:
        torch.set_num_threads(threads)
    for name in ("obs", "masks", "actions", "rewards", "dones"):
        assert torch.equal(getattr(joined, name)[:, 3:], getattr(alone, name)), name


@pytest.mark.slow
def test_a_seeded_parallel_run_collects_the_same_rollout_twice(tmp_path):
    rollouts = []
    for k in range(2):
        t = trainer(tmp_path / str(k))
        try:
            rollouts.append(t.collector.collect(t.model, 6, 0.99, 0.95))
        finally:
            t.close()
    for name in ("obs", "actions", "rewards", "advantages"):
        assert torch.equal(getattr(rollouts[0], name), getattr(rollouts[1], name)), name


def test_a_worker_that_dies_is_a_clear_error_naming_resume(tmp_path):
    t = trainer(tmp_path)
    try:
        process, _conn = t.collector.workers[0]
        assert process.is_alive()
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)
        with pytest.raises(CollectionError, match=r"died \(exit code -9\).*--resume"):
            t.collector.collect(t.model, 6, 0.99, 0.95)
    finally:
        t.close()


@pytest.mark.slow
def test_close_stops_the_workers(tmp_path):
    t = trainer(tmp_path)
    processes = [p for p, _ in t.collector.workers]
    t.close()
    assert not any(p.is_alive() for p in processes)


@pytest.mark.parametrize("workers", [0, 6, "2"])
def test_collect_workers_must_be_an_int_from_1_to_n_games(workers, tmp_path):
    with pytest.raises(ConfigError, match="collect_workers"):
        args_from_dict(load_yaml("ppo") | SMALL | {"collect_workers": workers}).validate()
