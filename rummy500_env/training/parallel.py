"""Rollouts collected in several processes (`collect_workers`), joined into one batch.

The games step in one Python thread, so one process collects on one core. With
``collect_workers: N`` the learner's games are split between N processes, each with its own
copy of the network: before each rollout every worker gets the learner's weights (and the
opponent pool's snapshot files when they changed), collects its games' rollout into a buffer
of shared memory, and says so; the parts are joined along the games axis, so the PPO update
sees one batch exactly as with one process. Without overlap this process is one of the N
(it collects its own share meanwhile); with ``overlap: true`` the N are all worker processes,
and they collect the next rollout while this one updates on the last (`ParallelCollector`).
Workers start once (``spawn``, so nothing of this process's torch state is shared) and end
with the run, or by themselves when this process dies.

Shared memory, not the pipe, carries the rollouts: measured, a worker's part crosses a pipe
about ten times slower than it is read from a buffer (docs/speed.md, "Collection").

Seeded: the workers' games, opponents and sampling have seeds of their own, derived from the
run's, so a run is reproducible for a given number of workers and overlap (not across them).
"""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing
import os
import traceback
from multiprocessing.connection import Connection

import torch

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training.model import ActorCritic, new_model
from rummy500_env.training.rollouts import Collector, LearnerSettings, Rollout, new_collector

SEED_STRIDE = 1_000_003
"""Worker k's seeds are the run's plus k times this: far from the run's own."""

OVERLAP_NICENESS = 19
"""How much lower the workers' priority is with overlap: the learner's update keeps the cores
it uses, and the workers collect in the cycles it leaves idle, at full speed once it waits
for them. At equal priority, two workers beside a two-thread update on two cores were far
slower than no overlap; at this niceness, level with it (docs/speed.md)."""

Buffers = dict[str, torch.Tensor]
"""One worker's rollout in shared memory: a tensor per `Rollout` field."""


class CollectionError(Rummy500Error):
    """A collection worker failed or died; the message carries its traceback or exit code."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity, which containers and ``taskset``
    narrow; `os.cpu_count` counts the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity
        return os.cpu_count() or 1


def collection_processes(collect_workers: int | str, n_games: int) -> int:
    """The processes that collect: the number given, or for ``auto`` one per usable core (at
    most one per game). With overlap the learner needs no core of its own: the workers yield
    theirs to it (`OVERLAP_NICENESS`)."""
    if collect_workers != "auto":
        assert isinstance(collect_workers, int)
        return collect_workers
    return max(1, min(n_games, usable_cores()))


def shares(n_games: int, processes: int) -> list[int]:
    """Games per process, as even as they go, the first first: 64 in 3 are 22, 21, 21."""
    base, extra = divmod(n_games, processes)
    return [base + (k < extra) for k in range(processes)]


def shared_buffers(n_steps: int, n_games: int, args: LearnerSettings) -> Buffers:
    """Zeroed shared-memory tensors for one worker's rollout of `n_steps` × `n_games`."""
    rules, rows = args.game_rules(), (n_steps, n_games)
    buffers = {
        "obs": torch.zeros((*rows, ObservationEncoder(rules).size)),
        "masks": torch.zeros((*rows, ActionCodec(rules).size), dtype=torch.bool),
        "actions": torch.zeros(rows, dtype=torch.long),
    }
    for field in dataclasses.fields(Rollout):
        buffers.setdefault(field.name, torch.zeros(rows))
    return {name: tensor.share_memory_() for name, tensor in buffers.items()}  # type: ignore[no-untyped-call]


class ParallelCollector:
    """Worker processes collecting their own games, with this process's `Collector` (without
    overlap) or while this process learns (with overlap).

    Same interface as `Collector`: `collect` returns one `Rollout` over all the games,
    `episode_returns` holds every game's finished episodes, `set_opponents` updates the pool.

    With overlap, `collect` hands back the rollout the workers collected since the last call,
    and before returning sends them the weights it was given, so that they collect the next
    rollout while the caller updates on this one: each rollout after the first is collected
    by the weights from before the latest update, one version old. PPO's ratio is taken
    against the log-probabilities the rollout was sampled with, so its clip bounds the
    update's step from the policy that acted; at the default budget the lag still costs
    learning (docs/experiments.md, 2026-12-04), which is why overlap is off by default.
    New snapshots reach the workers with the next request, one rollout later than without
    overlap.
    """

    def __init__(
        self,
        local: Collector | None,
        args: LearnerSettings,
        worker_games: list[int],
        games_seed: int,
        sampling_seed: int,
        snapshots: list[str],
    ) -> None:
        self.local = local
        self.args = args
        self.snapshots = list(snapshots)
        self._sent_snapshots = list(self.snapshots)
        """The pool's snapshots the workers have (all are sent the same)."""
        self.worker_games = worker_games
        self.buffers: list[Buffers] = []
        self.pending = False
        """With overlap: the workers are collecting a rollout not yet handed back."""
        self._returns: list[float] = []
        """With overlap (no collector here): the finished episodes the workers report."""
        ctx = multiprocessing.get_context("spawn")
        self.workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        first = 1 if local is not None else 0  # seeds: this process's games are part 0
        for k, n in enumerate(worker_games, start=first):
            mine, theirs = ctx.Pipe()
            seeds = (games_seed + k * SEED_STRIDE, sampling_seed + k * SEED_STRIDE)
            worker_args = copy.copy(args)
            worker_args.seed = args.seed + k * SEED_STRIDE
            process = ctx.Process(
                target=serve,
                args=(theirs, worker_args, n, *seeds, self.snapshots, local is None),
                name=f"rummy500-collect-{k}",
                daemon=True,
            )
            process.start()
            theirs.close()
            self.workers.append((process, mine))

    @property
    def episode_returns(self) -> list[float]:
        return self.local.episode_returns if self.local is not None else self._returns

    def set_opponents(self, args: LearnerSettings, snapshots: list[str]) -> None:
        """Draw the next deals' opponents from the pool with these snapshots, everywhere."""
        if self.local is not None:
            self.local.set_opponents(args, snapshots)
        self.snapshots = list(snapshots)

    def collect(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> Rollout:
        """One rollout of every process's games, joined along the games axis in the order of
        the processes (this one's first, without overlap)."""
        if self.local is None:
            if not self.pending:  # the first rollout: collected now, by these weights
                self._request(model, n_steps, gamma, lam)
            parts = self._receive_all()
            self._request(model, n_steps, gamma, lam)  # the next, while the caller updates
            return _joined(parts)
        self._request(model, n_steps, gamma, lam)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the other cores are the workers' while they collect
        try:
            parts = [self.local.collect(model, n_steps, gamma, lam)]
        finally:
            torch.set_num_threads(threads)
        return _joined(parts + self._receive_all())

    def _request(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> None:
        """Send every worker the weights and the rollout's shape (new buffers when it
        changed), so that each collects its next rollout."""
        weights = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
        changed = self.snapshots if self.snapshots != self._sent_snapshots else None
        fresh = not self.buffers or len(self.buffers[0]["actions"]) != n_steps
        if fresh:
            self.buffers = [shared_buffers(n_steps, n, self.args) for n in self.worker_games]
        for (process, conn), buffers in zip(self.workers, self.buffers, strict=True):
            try:
                conn.send((weights, n_steps, gamma, lam, changed, buffers if fresh else None))
            except (OSError, ValueError):  # a closed pipe: the worker is gone
                raise _died(process) from None
        self._sent_snapshots = list(self.snapshots)
        self.pending = True

    def _receive_all(self) -> list[Rollout]:
        """Every worker's rollout, read from its buffers (copied by the join that follows,
        before the buffers are written again)."""
        parts = []
        for (process, conn), buffers in zip(self.workers, self.buffers, strict=True):
            try:
                status, payload = conn.recv()
            except (EOFError, OSError):
                raise _died(process) from None
            if status != "ok":
                raise CollectionError(f"collection worker {process.name} failed:\n{payload}")
            parts.append(Rollout(**buffers))
            self.episode_returns.extend(payload)
        self.pending = False
        return parts

    def close(self) -> None:
        """Stop the workers (each finishes the rollout it is on)."""
        for _process, conn in self.workers:
            try:
                conn.send(None)
            except OSError:
                pass  # already gone
        for process, conn in self.workers:
            process.join(30)
            if process.is_alive():
                process.terminate()
            conn.close()
        self.workers = []


def _joined(parts: list[Rollout]) -> Rollout:
    """The parts side by side along the games axis (a copy: the buffers may be rewritten)."""
    names = [f.name for f in dataclasses.fields(Rollout)]
    return Rollout(**{n: torch.cat([getattr(p, n) for p in parts], dim=1) for n in names})


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
    overlapped: bool,
) -> None:
    """A worker: its own games and network, one rollout per request written into the shared
    buffers it was last sent, until told to stop (None) or until the learner's end of the
    pipe closes; `overlapped`, at `OVERLAP_NICENESS`."""
    try:
        torch.set_num_threads(1)
        if overlapped:
            os.nice(OVERLAP_NICENESS)
        collector = new_collector(args, n_games, games_seed, sampling_seed, snapshots)
        model = new_model(args)
        buffers: Buffers = {}
        while True:
            request = conn.recv()
            if request is None:
                return
            state, n_steps, gamma, lam, new_snapshots, new_buffers = request
            if new_snapshots is not None:
                collector.set_opponents(args, new_snapshots)
            if new_buffers is not None:
                buffers = new_buffers
            model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
            rollout = collector.collect(model, n_steps, gamma, lam)
            for name, tensor in buffers.items():
                tensor.copy_(getattr(rollout, name))
            conn.send(("ok", collector.episode_returns))
            collector.episode_returns = []
    except (EOFError, ConnectionError):
        return  # the learner is gone
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass
