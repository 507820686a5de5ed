"""Rollouts collected in several processes (`collect_workers`), joined into one batch.

The games step in one Python thread, so while `training.ppo` collects a rollout one core of
two sits idle; the PPO update that follows uses both (``threads``). With ``collect_workers: 2``
the learner's games are split between this process and a worker process, each with its own
copy of the network: before each rollout the worker gets the learner's weights (and the
opponent pool's snapshot files when they changed), collects its games' rollout, and sends it
back, and the parts are joined along the games axis, so the PPO update sees one batch
exactly as with one process. The worker starts once (``spawn``, so nothing of this process's
torch state is shared) and ends with the run, or by itself when this process dies.

Seeded: the worker's games, opponents and sampling have seeds of their own, derived from the
run's, so a run is reproducible for a given number of workers (not across numbers).
"""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing
import traceback
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.training.model import ActorCritic, new_model
from rummy500_env.training.rollouts import Collector, LearnerSettings, Rollout, new_collector

SEED_STRIDE = 1_000_003
"""Worker k's seeds are the run's plus k times this: far from the run's own."""


class CollectionError(Rummy500Error):
    """A collection worker failed or died; the message carries its traceback or exit code."""


def shares(n_games: int, processes: int) -> list[int]:
    """Games per process, as even as they go, this process first: 64 in 3 are 22, 21, 21."""
    base, extra = divmod(n_games, processes)
    return [base + (k < extra) for k in range(processes)]


class ParallelCollector:
    """This process's `Collector` plus worker processes, each collecting its own games.

    Same interface as `Collector`: `collect` returns one `Rollout` over all the games,
    `episode_returns` holds every game's finished episodes, `set_opponents` updates the pool.
    """

    def __init__(
        self,
        local: Collector,
        args: LearnerSettings,
        worker_games: list[int],
        games_seed: int,
        sampling_seed: int,
        snapshots: list[str],
    ) -> None:
        self.local = local
        self.snapshots = list(snapshots)
        self._sent_snapshots = list(self.snapshots)
        """The pool's snapshots the workers have (all are sent the same)."""
        ctx = multiprocessing.get_context("spawn")
        self.workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        for k, n in enumerate(worker_games, start=1):
            mine, theirs = ctx.Pipe()
            seeds = (games_seed + k * SEED_STRIDE, sampling_seed + k * SEED_STRIDE)
            worker_args = copy.copy(args)
            worker_args.seed = args.seed + k * SEED_STRIDE
            process = ctx.Process(
                target=serve,
                args=(theirs, worker_args, n, *seeds, self.snapshots),
                name=f"rummy500-collect-{k}",
                daemon=True,
            )
            process.start()
            theirs.close()
            self.workers.append((process, mine))

    @property
    def episode_returns(self) -> list[float]:
        return self.local.episode_returns

    def set_opponents(self, args: LearnerSettings, snapshots: list[str]) -> None:
        """Draw the next deals' opponents from the pool with these snapshots, everywhere."""
        self.local.set_opponents(args, snapshots)
        self.snapshots = list(snapshots)

    def collect(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> Rollout:
        """One rollout of every process's games, the workers' collected while this one
        collects its own, joined along the games axis (this process's games first)."""
        weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
        changed = self.snapshots if self.snapshots != self._sent_snapshots else None
        for process, conn in self.workers:
            try:
                conn.send((weights, n_steps, gamma, lam, changed))
            except (OSError, ValueError):  # a closed pipe: the worker is gone
                raise _died(process) from None
        self._sent_snapshots = list(self.snapshots)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the other cores are the workers' while they collect
        try:
            parts = [self.local.collect(model, n_steps, gamma, lam)]
        finally:
            torch.set_num_threads(threads)
        for process, conn in self.workers:
            arrays, returns = self._receive(process, conn)
            parts.append(Rollout(**{k: torch.from_numpy(v) for k, v in arrays.items()}))
            self.local.episode_returns += returns
        names = [f.name for f in dataclasses.fields(Rollout)]
        return Rollout(**{n: torch.cat([getattr(p, n) for p in parts], dim=1) for n in names})

    @staticmethod
    def _receive(
        process: multiprocessing.process.BaseProcess, conn: Connection
    ) -> tuple[dict[str, np.ndarray[Any, Any]], list[float]]:
        try:
            status, *payload = conn.recv()
        except (EOFError, OSError):
            raise _died(process) from None
        if status != "ok":
            raise CollectionError(f"collection worker {process.name} failed:\n{payload[0]}")
        return payload[0], payload[1]

    def close(self) -> None:
        """Stop the workers (each finishes the message it is on)."""
        for _process, conn in self.workers:
            try:
                conn.send(None)
            except OSError:
                pass  # already gone
            conn.close()
        for process, _conn in self.workers:
            process.join(10)
            if process.is_alive():
                process.terminate()
        self.workers = []


def _died(process: multiprocessing.process.BaseProcess) -> CollectionError:
    process.join(5)
    return CollectionError(
        f"collection worker {process.name} died (exit code {process.exitcode}); "
        "resume the run from its last checkpoint with --resume"
    )


def serve(
    conn: Connection,
    args: LearnerSettings,
    n_games: int,
    games_seed: int,
    sampling_seed: int,
    snapshots: list[str],
) -> None:
    """A worker: its own games and network, one rollout per request, until told to stop
    (None) or until the learner's end of the pipe closes."""
    try:
        torch.set_num_threads(1)
        collector = new_collector(args, n_games, games_seed, sampling_seed, snapshots)
        model = new_model(args)
        while True:
            request = conn.recv()
            if request is None:
                return
            state, n_steps, gamma, lam, new_snapshots = request
            if new_snapshots is not None:
                collector.set_opponents(args, new_snapshots)
            model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
            rollout = collector.collect(model, n_steps, gamma, lam)
            arrays = {f.name: getattr(rollout, f.name).numpy() for f in dataclasses.fields(rollout)}
            conn.send(("ok", arrays, collector.episode_returns))
            collector.episode_returns = []
    except (EOFError, ConnectionError):
        return  # the learner is gone
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass
