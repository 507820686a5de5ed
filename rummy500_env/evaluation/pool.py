"""A pool of worker processes that says so when a worker dies (`WorkerPool`).

``multiprocessing.Pool`` never reports a task whose worker was killed (the out-of-memory
killer, a ``kill``, a crash in native code): ``imap_unordered`` waits for it forever. This pool
runs on ``concurrent.futures.ProcessPoolExecutor``, which marks every unfinished task broken
when a worker dies; `WorkerPool.imap_unordered` hands on the results that did arrive and then
raises `WorkerDied`, one line naming the worker, how it ended and how many tasks were lost.

Its workers are started with ``spawn`` (nothing of this process's torch or threads is shared),
ignore Ctrl+C (the terminal sends it to the whole process group, and this process stops them
itself, `WorkerPool.close`, instead of each printing a traceback) and end when this process
dies, even killed outright. A pool that finished its work is shut down in order (each worker
leaves on a sentinel, and this process reads all it sends before closing the pipes); only a
pool stopped with tasks still running has its workers terminated (``multiprocessing.Pool``'s
``with`` terminates them always, whatever they are doing). No torch here: the tournaments use
it without torch.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, TypeVar

from rummy500_env.engine.errors import Rummy500Error

T = TypeVar("T")
R = TypeVar("R")


class WorkerDied(Rummy500Error):
    """A worker process died with tasks unfinished; the message names it and what was lost."""


def _run_chunk(work: Callable[[T], R], chunk: list[T]) -> list[R]:
    """A worker's share of `WorkerPool.imap_unordered`: several tasks, one round trip."""
    return [work(task) for task in chunk]


def _start_worker(initializer: Callable[[], None] | None) -> None:
    """A new worker: Ctrl+C is the parent's to handle (module docstring), it leaves with its
    parent (`_leave_with`), then `initializer`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = mp.parent_process()
    if parent is not None:
        watch = threading.Thread(target=_leave_with, args=(parent.sentinel,), daemon=True)
        watch.start()
    if initializer is not None:
        initializer()


def _leave_with(parent_sentinel: int) -> None:
    """End this worker when its parent is gone (killed outright, crashed): an orphan would
    finish an hour's search for nobody, then wait for tasks forever."""
    wait([parent_sentinel])
    os._exit(1)


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
    closes the pool (`close`) on leaving."""

    def __init__(self, workers: int, initializer: Callable[[], None] | None = None) -> None:
        self._executor = ProcessPoolExecutor(
            workers,
            mp_context=mp.get_context("spawn"),
            initializer=_start_worker,
            initargs=(initializer,),
        )
        # The executor's own map of its live workers (started as tasks arrive): the one place
        # that still holds a dead worker, so that `WorkerDied` can name it and its exit code.
        self._processes: dict[int, BaseProcess] = getattr(self._executor, "_processes", {})
        self._submitted: list[Future[Any]] = []

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
        many `unit`s were lost, followed by `advice` (what to do next). A task's exception is
        raised as it is (the other tasks are abandoned, see `close`)."""
        chunks = [list(tasks[i : i + chunksize]) for i in range(0, len(tasks), chunksize)]
        futures = [self._executor.submit(_run_chunk, work, chunk) for chunk in chunks]
        self._submitted = list(futures)
        delivered = 0
        broken: BrokenProcessPool | None = None
        for future in as_completed(futures):
            try:
                results = future.result()
            except BrokenProcessPool as e:  # every unfinished chunk; the finished ones follow
                broken = e
                continue
            delivered += len(results)
            yield from results
        if broken is not None:
            lost = f"{len(tasks) - delivered} of {len(tasks)} {unit}s unfinished"
            raise WorkerDied(f"{self._dead_worker(broken)} with {lost}{advice}") from broken

    def _dead_worker(self, broken: BrokenProcessPool) -> str:
        """Which worker died and how. Once one has died the executor terminates the others
        and reaps them all; after that (the shutdown) every exit code can be read."""
        workers = list(self._processes.values())
        self._executor.shutdown(wait=True)
        ended = [p for p in workers if p.exitcode not in (None, 0)]
        first = [p for p in ended if p.exitcode != -signal.SIGTERM]  # not the executor's own
        if first:
            return f"worker process {first[0].pid} died ({how_it_ended(first[0].exitcode)})"
        if ended:  # SIGTERM, as a plain `kill` sends: the executor's own look the same
            return f"a worker process died ({how_it_ended(ended[0].exitcode)})"
        return f"the worker pool broke ({broken.__cause__ or broken})"

    def close(self) -> None:
        """Shut the pool down: in order when no task is running (every worker leaves on a
        sentinel and is joined), else, as after an error or Ctrl+C, by terminating the workers
        first: a search can run for hours, and nobody will take its result."""
        running = any(not f.done() for f in self._submitted)
        for future in self._submitted:
            future.cancel()
        if running:
            for process in list(self._processes.values()):
                process.terminate()
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
