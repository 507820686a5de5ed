"""A pool of worker processes that says so when a worker dies or stops answering
(`WorkerPool`).

``multiprocessing.Pool`` never reports a task whose worker was killed (the out-of-memory
killer, a ``kill``, a crash in native code): ``imap_unordered`` waits for it forever. This pool
runs on ``concurrent.futures.ProcessPoolExecutor``, which marks every unfinished task broken
when a worker dies; `WorkerPool.imap_unordered` hands on the results that did arrive and then
raises `WorkerDied`, one line naming the worker, how it ended and how many tasks were lost.

A worker that stops answering is an error too: each worker beats from a thread of its own
every `BEAT_S`, whatever its task is doing (`Heartbeats`), and one silent for the pool's
deadline (`DEADLINE_S` by default: stopped with SIGSTOP, frozen, stuck in native code that
holds the interpreter) raises `WorkerSilent`, naming it, as a dead one does, instead of a wait
for ever. A long task is no silence: a search may take an hour.

Its workers are started with ``spawn`` (nothing of this process's torch or threads is shared),
ignore Ctrl+C from their first instruction (`sigint_ignored`: the terminal sends it to the
whole process group, and this process stops them itself, `WorkerPool.close`, instead of each
printing a traceback) and end when this process dies, even killed outright. A pool that
finished its work is shut down in order (each worker leaves on a sentinel, and this process
reads all it sends before closing the pipes); a pool stopped with tasks still running (an
error, Ctrl+C) has its workers terminated, and killed after `GRACE_S` if still there (`stop`:
a stopped process keeps a terminate pending), never waited on (``multiprocessing.Pool``'s
``with`` terminates them always, whatever they are doing). No torch here: the tournaments use
it without torch, and `training.parallel`'s collection workers use its heartbeats.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar

from rummy500_env.engine.errors import Rummy500Error

T = TypeVar("T")
R = TypeVar("R")

BEAT_S = 0.5
"""How often a worker's heartbeat thread says it is alive (`Heartbeats`)."""
DEADLINE_S = 120.0
"""How long a worker may send no heartbeat before it is an error (`WorkerSilent`), unless
told otherwise: far beyond any pause of a running process (its heartbeat thread needs the
interpreter for a moment every `BEAT_S`, whatever the task does), short enough that a stopped
worker ends the wait within minutes."""
GRACE_S = 2.0
"""How long terminated workers have to end before they are killed (`stop`)."""


class WorkerDied(Rummy500Error):
    """A worker process died with tasks unfinished; the message names it and what was lost."""


class WorkerSilent(WorkerDied):
    """A worker process sent no heartbeat for the deadline (stopped, frozen, stuck) with tasks
    unfinished; the message names it and what was lost."""


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Processes started inside ignore Ctrl+C from their first instruction: SIGINT ignored
    when a process starts stays ignored through ``exec``, and Python then installs no
    KeyboardInterrupt handler, so a Ctrl+C while a worker still imports prints no traceback.
    This process takes Ctrl+C again on leaving (only the main thread can set signals; off it,
    nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


class Heartbeats:
    """The last sign of life of each of a group of worker processes, in shared memory: a
    worker calls `start`, and a thread of its own writes the time every `BEAT_S`, whatever its
    task is doing; the parent reads how long one has been silent (`silence`). A process stopped
    (SIGSTOP), frozen or stuck in native code that holds the interpreter falls silent; a long
    task does not. Times are ``time.monotonic``'s, one clock for every process of the
    machine. Made in the parent, it travels to each worker as a spawned process's argument."""

    def __init__(self, slots: int, ctx: SpawnContext) -> None:
        self.times = ctx.RawArray("d", slots)
        self.pids = ctx.RawArray("i", slots)
        self.taken = ctx.Value("i", 0)

    def start(self, parent_sentinel: int | None = None) -> None:
        """In a worker: take a slot and beat from a daemon thread; with `parent_sentinel`, the
        thread also ends this process when its parent is gone (killed outright, crashed): an
        orphan would finish an hour's search for nobody, then wait for tasks forever."""
        with self.taken.get_lock():
            slot = self.taken.value
            self.taken.value += 1
        if slot < len(self.pids):
            self.pids[slot], self.times[slot] = os.getpid(), time.monotonic()
        beat = threading.Thread(target=self._beat, args=(slot, parent_sentinel), daemon=True)
        beat.start()

    def _beat(self, slot: int, parent_sentinel: int | None) -> None:
        while True:
            if slot < len(self.times):
                self.times[slot] = time.monotonic()
            if parent_sentinel is None:
                time.sleep(BEAT_S)
            elif wait([parent_sentinel], BEAT_S):
                os._exit(1)

    def silence(self, pid: int, since: float) -> float:
        """Seconds since the worker `pid` last beat, or since `since` (when it started, or was
        first seen) if it has not yet."""
        for slot in range(min(self.taken.value, len(self.pids))):
            if self.pids[slot] == pid:
                return time.monotonic() - float(self.times[slot])
        return time.monotonic() - since


def has_ended(process: BaseProcess) -> bool:
    """Whether a started `process` has ended, whichever thread reaps it. Not `exitcode`: while
    another thread (the executor's) reaps it, `exitcode` reads None here for a moment, and a
    worker that died on its own would be counted among those `stop` killed."""
    return process.exitcode is not None or bool(wait([process.sentinel], 0))


def stop(processes: Iterable[BaseProcess], grace: float = GRACE_S) -> set[int]:
    """End `processes` now: terminate those alive, wait up to `grace` seconds, then kill those
    still there (a stopped process keeps SIGTERM pending until it runs again; SIGKILL ends it
    anyway) and reap them. Returns the PIDs that had to be killed."""
    alive = [p for p in processes if not has_ended(p)]
    for process in alive:
        process.terminate()
    end = time.monotonic() + grace
    for process in alive:
        process.join(max(0.0, end - time.monotonic()))
    killed = set()
    for process in alive:
        if not has_ended(process) and process.pid is not None:
            process.kill()
            killed.add(process.pid)
    for process in alive:
        process.join(grace)
    return killed


def _run_chunk(work: Callable[[T], R], chunk: list[T]) -> list[R]:
    """A worker's share of `WorkerPool.imap_unordered`: several tasks, one round trip."""
    return [work(task) for task in chunk]


def _start_worker(initializer: Callable[[], None] | None, beats: Heartbeats) -> None:
    """A new worker: Ctrl+C is the parent's to handle (module docstring), it beats and leaves
    with its parent (`Heartbeats.start`), then `initializer`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = mp.parent_process()
    beats.start(None if parent is None else parent.sentinel)
    if initializer is not None:
        initializer()


def how_it_ended(exitcode: int | None) -> str:
    """A process's exit code in words: ``killed by SIGKILL``, ``exit code 1``."""
    if exitcode is None:
        return "how is unknown"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class WorkerPool:
    """`workers` spawned processes, each running `initializer` first; a context manager that
    closes the pool (`close`) on leaving. A worker that sends no heartbeat for `deadline`
    seconds is an error (`WorkerSilent`)."""

    def __init__(
        self,
        workers: int,
        initializer: Callable[[], None] | None = None,
        deadline: float = DEADLINE_S,
    ) -> None:
        ctx = mp.get_context("spawn")
        self.deadline = deadline
        self._beats = Heartbeats(workers, ctx)
        self._executor = ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_start_worker, initargs=(initializer, self._beats)
        )
        # The executor's own map of its live workers (started as tasks arrive): the one place
        # that still holds a dead worker, so that `WorkerDied` can name it and its exit code.
        self._processes: dict[int, BaseProcess] = getattr(self._executor, "_processes", {})
        self._submitted: list[Future[Any]] = []
        self._seen: dict[int, float] = {}
        """When each worker was first seen: its silence counts from then until it beats."""

    def imap_unordered(
        self,
        work: Callable[[T], R],
        tasks: Sequence[T],
        chunksize: int = 1,
        unit: str = "task",
        advice: str = "",
    ) -> Iterator[R]:
        """`work` (a module-level function, as a worker imports it) on every task, in the
        workers, `chunksize` tasks to a round trip; the results as their chunks end. When a
        worker dies, the results that arrived are handed on first, then `WorkerDied` says how
        many `unit`s were lost, followed by `advice` (what to do next); when one sends no
        heartbeat for the deadline, `WorkerSilent` does, at once. A task's exception is raised
        as it is (the other tasks are abandoned, see `close`)."""
        chunks = [list(tasks[i : i + chunksize]) for i in range(0, len(tasks), chunksize)]
        with sigint_ignored():  # the workers start as the tasks arrive
            futures = [self._executor.submit(_run_chunk, work, chunk) for chunk in chunks]
        self._submitted = list(futures)
        # Each chunk, as it ends, is put on a queue that this thread reads: not
        # `concurrent.futures.wait`, which takes every pending future's lock in turn, so that a
        # Ctrl+C among those takes leaves some held, and the executor's thread, failing the
        # tasks at shutdown, waits on them for ever.
        finished: queue.SimpleQueue[Future[list[R]]] = queue.SimpleQueue()
        for submitted in futures:
            submitted.add_done_callback(finished.put)
        delivered, pending = 0, len(futures)
        broken: BrokenProcessPool | None = None
        while pending:
            try:
                ended: Future[list[R]] | None = finished.get(timeout=BEAT_S)
            except queue.Empty:
                ended = None
            if ended is not None:
                pending -= 1
                try:
                    results = ended.result()
                except BrokenProcessPool as e:  # every unfinished chunk; finished ones follow
                    broken = e
                else:
                    delivered += len(results)
                    yield from results
            if broken is None and pending:
                lost = f"{len(tasks) - delivered} of {len(tasks)} {unit}s unfinished"
                self._require_heartbeats(f"{lost}{advice}")
        if broken is not None:
            lost = f"{len(tasks) - delivered} of {len(tasks)} {unit}s unfinished"
            raise WorkerDied(f"{self._dead_worker(broken)} with {lost}{advice}") from broken

    def _require_heartbeats(self, lost: str) -> None:
        """Raise `WorkerSilent` naming a worker that sent no heartbeat for the deadline (and
        what was `lost`), after stopping every worker (`stop`): nobody will take their
        results."""
        now = time.monotonic()
        for process in list(self._processes.values()):
            if process.pid is None or has_ended(process):
                continue  # a dead one breaks the pool: `WorkerDied` says so
            quiet = self._beats.silence(process.pid, self._seen.setdefault(process.pid, now))
            if quiet > self.deadline:
                stop(list(self._processes.values()))
                raise WorkerSilent(
                    f"worker process {process.pid} sent no sign of life for {quiet:.0f} s "
                    f"(stopped, or stuck; the deadline is {self.deadline:g} s) with {lost}"
                )

    def _dead_worker(self, broken: BrokenProcessPool) -> str:
        """Which worker died and how. Once one has died the executor terminates the others
        (`stop` kills any that a terminate cannot end) and reaps them all; after that (the
        shutdown) every exit code can be read."""
        workers = list(self._processes.values())
        killed = stop(workers)
        self._executor.shutdown(wait=True)
        ended = [p for p in workers if p.exitcode not in (None, 0)]
        # not the executor's own terminate, nor a kill of `stop`'s
        first = [p for p in ended if p.exitcode != -signal.SIGTERM and p.pid not in killed]
        if first:
            return f"worker process {first[0].pid} died ({how_it_ended(first[0].exitcode)})"
        if ended:  # SIGTERM, as a plain `kill` sends: the executor's own look the same
            return f"a worker process died ({how_it_ended(ended[0].exitcode)})"
        return f"the worker pool broke ({broken.__cause__ or broken})"

    def close(self) -> None:
        """Shut the pool down: in order when no task is running (every worker leaves on a
        sentinel and is joined), else, as after an error or Ctrl+C, by stopping the workers
        first (`stop`: terminated, killed after `GRACE_S`): a search can run for hours,
        nobody will take its result, and a stopped worker never ends on a terminate. The
        executor's own thread then fails or cancels the tasks left (a future cancelled here
        meanwhile would make it raise, as Python 3.11 does in ``terminate_broken``)."""
        if any(not f.done() for f in self._submitted):
            stop(list(self._processes.values()))
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._submitted = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
