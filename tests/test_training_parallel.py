"""Rollouts collected in several processes (`collect_workers`, training/parallel.py): the
joined batch is the processes' own rollouts side by side, legal and reproducible; with overlap
each is collected by the weights one update old; a worker that dies is a clear error after a
checkpoint; ``auto`` counts the usable cores; bad settings are refused."""

from __future__ import annotations

import copy
import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("tyro")
import torch

from rummy500_env.rl.selfplay import SelfPlayGames
from rummy500_env.training import parallel
from rummy500_env.training.parallel import SEED_STRIDE, CollectionError, shares
from rummy500_env.training.ppo import Trainer, args_from_dict, parse_args
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


@pytest.mark.parametrize("workers", [0, 6, "2", "all"])
def test_collect_workers_must_be_an_int_from_1_to_n_games(workers, tmp_path):
    with pytest.raises(ConfigError, match="collect_workers"):
        args_from_dict(load_yaml("ppo") | SMALL | {"collect_workers": workers}).validate()


def perturbed(model: torch.nn.Module, seed: int) -> None:
    """Move every weight a little, as an update would."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))


@pytest.mark.slow
@pytest.mark.parametrize("overlap_steps", [6, 2])
def test_with_overlap_a_rollouts_first_overlap_steps_are_one_update_old(tmp_path, overlap_steps):
    """Overlapped, the k-th rollout handed back is what one process collects with the
    weights given at call k - 1 for its first `overlap_steps`, then with the weights the
    caller published after its update: with 6 of 6 all of it is one update old (the first
    two rollouts by the start's weights, the third by the first update's), with 2 of 6 the
    weights switch at step 2."""
    t = trainer(tmp_path / "overlap", overlap=True, overlap_steps=overlap_steps, collect_workers=1)
    alone = trainer(tmp_path / "alone", collect_workers=1)  # the same games and seeds
    args = t.args
    handed, versions = [], [copy.deepcopy(t.model.state_dict())]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker: the same sums, to the last bit
    try:
        for k in range(3):
            handed.append(t.collector.collect(t.model, args.n_steps, args.gamma, args.gae_lambda))
            perturbed(t.model, k)  # "the update" that follows the hand-over
            t.collector.publish(t.model)
            versions.append(copy.deepcopy(t.model.state_dict()))
        expected = []
        for k in range(3):
            old, new = versions[max(k - 1, 0)], versions[k]

            def switch(step: int, old: dict = old, new: dict = new) -> None:
                if step in (0, overlap_steps):
                    alone.model.load_state_dict(old if step == 0 else new)

            rollout = alone.collector.collect(
                alone.model, args.n_steps, args.gamma, args.gae_lambda, switch
            )
            expected.append(rollout)
    finally:
        torch.set_num_threads(threads)
        t.close()
        alone.close()
    for k in range(3):
        for name in ("obs", "masks", "actions", "logprobs", "rewards", "advantages"):
            assert torch.equal(getattr(handed[k], name), getattr(expected[k], name)), (k, name)
    assert not torch.equal(handed[1].obs, handed[2].obs)


@pytest.mark.parametrize(
    ("fields", "allowed"),
    [({"overlap_steps": 3}, "with overlap: true"), ({"overlap": True, "overlap_steps": -1}, "0")],
)
def test_overlap_steps_needs_overlap_and_a_step_count(fields, allowed, tmp_path):
    with pytest.raises(ConfigError, match=f"overlap_steps=.*{allowed}"):
        args_from_dict(load_yaml("ppo") | SMALL | fields).validate()


@pytest.mark.parametrize(
    ("overlap_steps", "lagged"), [(None, 16), (0, 0), (5, 5), (64, 64), (99, 64)]
)
def test_by_default_a_quarter_of_the_rollout_is_lagged(overlap_steps, lagged):
    fields = {"overlap": True, "overlap_steps": overlap_steps}
    assert args_from_dict(load_yaml("ppo") | fields).lagged_steps == lagged


@pytest.mark.slow
@pytest.mark.parametrize(("overlap", "overlap_steps"), [(False, None), (True, None), (True, 6)])
def test_a_seeded_run_trains_the_same_weights_twice_for_a_worker_count(
    tmp_path, overlap, overlap_steps
):
    weights = []
    for k in range(2):
        fields = {"overlap": overlap, "overlap_steps": overlap_steps, "total_timesteps": 90}
        t = trainer(tmp_path / str(k), collect_workers=2, **fields)
        try:
            t.snapshot()
            t.learn()
        finally:
            t.close()
        weights.append(torch.cat([p.flatten() for p in t.model.parameters()]))
    assert torch.equal(weights[0], weights[1])


def test_an_overlapped_worker_that_dies_is_a_clear_error_after_a_checkpoint(tmp_path):
    t = trainer(tmp_path, overlap=True, collect_workers=2, total_timesteps=10**6)
    try:
        t.snapshot()
        t.collector.collect(t.model, 6, 0.99, 0.95)  # the next rollout is now under way
        process, _conn = t.collector.workers[1]
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)
        with pytest.raises(CollectionError, match=r"died \(exit code -9\).*--resume.*checkpoint"):
            t.learn()
    finally:
        t.close()
    assert list((tmp_path / "run" / "checkpoints").glob("*.pt")), "what was learned is kept"


@pytest.mark.parametrize(
    ("given", "cores", "n_games", "processes"),
    [
        (3, 16, 64, 3),
        ("auto", 16, 64, 16),
        ("auto", 2, 64, 2),
        ("auto", 1, 64, 1),
        ("auto", 16, 4, 4),
    ],
)
def test_auto_collects_on_every_usable_core_one_game_each_at_least(
    monkeypatch, given, cores, n_games, processes
):
    monkeypatch.setattr(parallel, "usable_cores", lambda: cores)
    assert parallel.collection_processes(given, n_games) == processes


def test_collect_workers_auto_is_taken_on_the_command_line_and_in_a_config():
    args, _ = parse_args(["--collect-workers", "auto", "--overlap"])
    assert (args.collect_workers, args.overlap) == ("auto", True)
    args_from_dict(load_yaml("ppo") | {"collect_workers": "auto"}).validate()
    with pytest.raises(ConfigError, match="collect-workers"):
        parse_args(["--collect-workers", "٢"])  # Python's int reads other scripts' digits


@pytest.mark.parametrize("overlap", [False, True])
def test_overlapped_workers_yield_their_cores_to_the_learner(tmp_path, overlap):
    t = trainer(tmp_path, overlap=overlap, collect_workers=2)
    try:
        t.collector.collect(t.model, 6, 0.99, 0.95)  # the workers have started
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        theirs = {os.getpriority(os.PRIO_PROCESS, p.pid) for p, _ in t.collector.workers}
    finally:
        t.close()
    assert theirs == {min(19, mine + parallel.OVERLAP_NICENESS) if overlap else mine}


@pytest.mark.parametrize(("cores", "warned"), [(2, True), (16, False)])
def test_overlap_on_a_cpu_whose_cores_the_update_takes_says_it_cannot_help(
    tmp_path, monkeypatch, capsys, cores, warned
):
    monkeypatch.setattr("rummy500_env.training.ppo.usable_cores", lambda: cores)
    trainer(tmp_path, overlap=True, collect_workers=1, threads=2, device="cpu").close()
    assert ("overlap cannot hide collection here" in capsys.readouterr().err) is warned
