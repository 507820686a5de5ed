"""Rollouts collected in several processes (`collect_workers`), joined into one batch.

The games step in one Python thread, so one process collects on one core. With
``collect_workers: N`` the learner's games are split between N processes, each with its own
copy of the network: before each rollout every worker gets the learner's weights (and the
opponent pool's snapshot files when they changed), collects its games' rollout into a buffer
of shared memory, and says so; the parts are joined along the games axis, so the PPO update
sees one batch exactly as with one process. Without overlap this process is one of the N
(it collects its own share meanwhile); with ``overlap: true`` the N are all worker processes,
and they collect the next rollout while this one updates on the last (`ParallelCollector`).
Workers start once (``spawn``, so nothing of this process's torch state is shared, and
ignoring Ctrl+C, which this process handles) and end with the run, or by themselves when this
process dies. A worker that dies, or that sends no heartbeat for ``worker_deadline`` seconds
(`evaluation.pool.Heartbeats`: stopped, frozen), is a `CollectionError` naming it wherever this
process meets it, sending or receiving; `training.ppo` checkpoints, then stops. On an error or
Ctrl+C the workers are terminated, and killed after a short grace (`ParallelCollector.close`),
never waited on.

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
import signal
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

import torch

from rummy500_env.engine.errors import Rummy500Error
from rummy500_env.evaluation.pool import BEAT_S, DEADLINE_S, Heartbeats, sigint_ignored, stop
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training.model import ActorCritic, new_model
from rummy500_env.training.rollouts import Collector, LearnerSettings, Rollout, new_collector

CLOSE_S = 30.0
"""How long a run's end waits for its workers to finish the rollout they are on and leave,
before they are terminated (`ParallelCollector.close`)."""
SEED_STRIDE = 1_000_003
"""Worker k's seeds are the run's plus k times this: far from the run's own."""

OVERLAP_NICENESS = 19
"""How much lower the workers' priority is with overlap: the learner's update keeps the cores
it uses, and the workers collect in the cycles it leaves idle, at full speed once it waits
for them. At equal priority, two workers beside a two-thread update on two cores were far
slower than no overlap; at this niceness, level with it (docs/speed.md)."""

WORKER_MB = 280
"""A collection worker's resident memory, measured (a spawned process with torch and its
games): what `training.ppo` warns each process beyond the usable cores costs."""

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
    for tensor in buffers.values():
        tensor.share_memory_()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    return buffers


class ParallelCollector:
    """Worker processes collecting their own games, with this process's `Collector` (without
    overlap) or while this process learns (with overlap).

    Same interface as `Collector`: `collect` returns one `Rollout` over all the games,
    `episode_returns` holds every game's finished episodes, `set_opponents` updates the pool.

    With overlap, `collect` hands back the rollout the workers collected since the last call,
    and before returning sends them the weights it was given, so that they collect the next
    rollout while the caller updates on this one: the steps of it collected before the update
    ends come from the weights one update old. `fresh_from` bounds that: at that step of the
    rollout each worker waits for the weights the caller `publish`-es after its update, and
    collects the rest with them (``None``: the whole rollout with the old weights). The switch
    is at a fixed step, so a seeded run still replays. PPO's ratio is taken against the
    log-probabilities each step was sampled with, so its clip bounds the update's step from
    the policy that acted; still, lagged data costs learning at the default budget
    (docs/experiments.md, 2026-12-04), which is why overlap is off by default. New snapshots
    reach the workers with the next request, one rollout later than without overlap.

    A worker that dies, or sends no heartbeat for `deadline` seconds, is a `CollectionError`
    naming it, from `collect` or `publish`.
    """

    def __init__(
        self,
        local: Collector | None,
        args: LearnerSettings,
        worker_games: list[int],
        games_seed: int,
        sampling_seed: int,
        snapshots: list[str],
        fresh_from: int | None = None,
        deadline: float = DEADLINE_S,
    ) -> None:
        self.local = local
        self.deadline = deadline
        self.fresh_from = fresh_from
        self.published = True
        """With overlap: the workers have the weights for the rest of the pending rollout."""
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
        self.beats = Heartbeats(len(worker_games), ctx)
        self.started = time.monotonic()
        """A worker's silence counts from here until its first heartbeat."""
        self._senders: list[threading.Thread] = []
        self.workers: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        first = 1 if local is not None else 0  # seeds: this process's games are part 0
        for k, n in enumerate(worker_games, start=first):
            mine, theirs = ctx.Pipe()
            seeds = (games_seed + k * SEED_STRIDE, sampling_seed + k * SEED_STRIDE)
            worker_args = copy.copy(args)
            worker_args.seed = args.seed + k * SEED_STRIDE
            process = ctx.Process(
                target=serve,
                args=(theirs, worker_args, n, *seeds, self.snapshots, local is None, self.beats),
                name=f"rummy500-collect-{k}",
                daemon=True,
            )
            with sigint_ignored():
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
            self.publish(model)  # unless the caller did after its update: the rest by these
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

    def publish(self, model: ActorCritic) -> None:
        """With overlap: these (the updated) weights collect the pending rollout from step
        `fresh_from` on. Once per rollout; nothing to do when the workers never wait."""
        if self.published:
            return
        weights = _weights(model)
        self._send_all([weights] * len(self.workers))
        self.published = True

    def _request(self, model: ActorCritic, n_steps: int, gamma: float, lam: float) -> None:
        """Send every worker the weights and the rollout's shape (new buffers when it
        changed), so that each collects its next rollout."""
        weights, fresh_from = _weights(model), self.fresh_from
        changed = self.snapshots if self.snapshots != self._sent_snapshots else None
        fresh = not self.buffers or len(self.buffers[0]["actions"]) != n_steps
        if fresh:
            self.buffers = [shared_buffers(n_steps, n, self.args) for n in self.worker_games]
        request = (weights, n_steps, gamma, lam, fresh_from, changed)
        self._send_all([(*request, buffers if fresh else None) for buffers in self.buffers])
        self._sent_snapshots = list(self.snapshots)
        self.pending = True
        self.published = fresh_from is None or fresh_from >= n_steps

    def _receive_all(self) -> list[Rollout]:
        """Every worker's rollout, read from its buffers (copied by the join that follows,
        before the buffers are written again), in the order of the workers; each answer is
        read as it comes, and the silent workers are watched meanwhile."""
        waiting = {conn: k for k, (_process, conn) in enumerate(self.workers)}
        returns: dict[int, list[float]] = {}
        while waiting:
            for ready in wait(list(waiting), BEAT_S):
                k = waiting.pop(ready)  # type: ignore[call-overload]  # wait returns those given
                process, conn = self.workers[k]
                try:
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    raise _died(process) from None
                if status != "ok":
                    raise CollectionError(f"collection worker {process.name} failed:\n{payload}")
                returns[k] = payload
            for k in waiting.values():
                self._require_heartbeat(k)
        for k in range(len(self.workers)):
            self.episode_returns.extend(returns[k])
        self.pending = False
        return [Rollout(**buffers) for buffers in self.buffers]

    def _send_all(self, messages: list[Any]) -> None:
        """Send each worker its message, each from a thread of its own: a worker that reads
        nothing (stopped) would block this process in the send once its pipe is full. A
        worker gone, or silent for the deadline, is a `CollectionError` naming it."""
        failed: set[int] = set()

        def send(k: int, conn: Connection, message: Any) -> None:
            try:
                conn.send(message)
            except (OSError, ValueError):  # a closed pipe: the worker is gone
                failed.add(k)

        pairs = zip(self.workers, messages, strict=True)
        self._senders = [
            threading.Thread(target=send, args=(k, conn, message), daemon=True)
            for k, ((_process, conn), message) in enumerate(pairs)
        ]
        for sender in self._senders:
            sender.start()
        for k, sender in enumerate(self._senders):
            sender.join(BEAT_S)
            while sender.is_alive():
                self._require_heartbeat(k)
                sender.join(BEAT_S)
            if k in failed:
                raise _died(self.workers[k][0])

    def _require_heartbeat(self, k: int) -> None:
        """Raise `CollectionError` when worker `k` has sent no heartbeat for the deadline."""
        process = self.workers[k][0]
        quiet = self.beats.silence(process.pid or 0, self.started)
        if quiet > self.deadline:
            raise CollectionError(
                f"collection worker {process.name} (process {process.pid}) sent no sign of "
                f"life for {quiet:.0f} s (stopped, or stuck; worker_deadline is "
                f"{self.deadline:g} s); resume the run from its last checkpoint with --resume"
            )

    def close(self, abort: bool = False) -> None:
        """Stop the workers: in order, each leaving once its rollout is done (up to `CLOSE_S`
        in all), or with `abort` (an error, Ctrl+C) at once; then any still there is
        terminated, and killed after a short grace (`pool.stop`): a stopped worker keeps a
        terminate pending for ever, and is never waited on."""
        processes = [process for process, _conn in self.workers]
        if not abort:
            try:
                self._send_all([None] * len(self.workers))
            except CollectionError:
                pass  # gone, or silent: stopped below
            end = time.monotonic() + CLOSE_S
            for process in processes:
                process.join(max(0.0, end - time.monotonic()))
        stop(processes)
        for sender in self._senders:  # their worker is gone: a blocked send fails at once
            sender.join(BEAT_S)
        for _process, conn in self.workers:
            conn.close()
        self.workers = []


def _weights(model: ActorCritic) -> dict[str, Any]:
    """The model's weights as CPU arrays, to send to a worker."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def _joined(parts: list[Rollout]) -> Rollout:
    """The parts side by side along the games axis (a copy: the buffers may be rewritten)."""
    names = [f.name for f in dataclasses.fields(Rollout)]
    return Rollout(**{n: torch.cat([getattr(p, n) for p in parts], dim=1) for n in names})


def _died(process: multiprocessing.process.BaseProcess) -> CollectionError:
    process.join(5)  # its pipe closes as it ends: the exit code follows at once
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
    beats: Heartbeats,
) -> None:
    """A worker process: its own games and network (`Worker`), one rollout per request, until
    told to stop (None) or until the learner's end of the pipe closes; `overlapped`, at
    `OVERLAP_NICENESS`. It beats (`beats`) from its start, and leaves Ctrl+C to the learner,
    which stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    beats.start()
    try:
        torch.set_num_threads(1)
        if overlapped:
            os.nice(OVERLAP_NICENESS)
        collector = new_collector(args, n_games, games_seed, sampling_seed, snapshots)
        worker = Worker(conn, args, collector, new_model(args))
        while (request := conn.recv()) is not None:
            worker.answer(request)
    except (EOFError, ConnectionError):
        return  # the learner is gone, or said stop while a rollout waited for weights
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass


class Worker:
    """A collection worker's state between requests: its collector, its network and the
    shared buffers it was last sent."""

    def __init__(
        self, conn: Connection, args: LearnerSettings, collector: Collector, model: ActorCritic
    ) -> None:
        self.conn, self.args, self.collector, self.model = conn, args, collector, model
        self.buffers: Buffers = {}

    def load(self, state: dict[str, Any] | None) -> None:
        if state is None:
            raise EOFError  # told to stop
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})

    def answer(self, request: tuple[Any, ...]) -> None:
        """Collect one rollout into the buffers and say so. The request's ``fresh_from`` step
        waits for the weights that collect the rest (`ParallelCollector.publish`)."""
        state, n_steps, gamma, lam, fresh_from, new_snapshots, new_buffers = request
        if new_snapshots is not None:
            self.collector.set_opponents(self.args, new_snapshots)
        if new_buffers is not None:
            self.buffers = new_buffers
        self.load(state)

        def before_step(t: int) -> None:
            if t == fresh_from:
                self.load(self.conn.recv())

        rollout = self.collector.collect(self.model, n_steps, gamma, lam, before_step)
        for name, tensor in self.buffers.items():
            tensor.copy_(getattr(rollout, name))
        self.conn.send(("ok", self.collector.episode_returns))
        self.collector.episode_returns = []
