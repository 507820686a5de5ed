"""What tests/test_faults_60.py runs inside worker processes, in a module light to import (a
spawned worker imports the module of the function it runs), and the processes' helpers."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from rummy500_env.evaluation import tournament

REAL_PLAY_TASK = tournament.play_task
MARKER_ENV = "RUMMY500_TEST_STOPPED_MARKER"
"""A folder the worker that stops itself writes its PID into first."""


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def play_or_stop(work: tournament.Work) -> tournament.GameRecord:
    """The tournament's game, except that the second seating of deal 1 stops its own worker
    (SIGSTOP, by its PID), as a debugger or a frozen machine would."""
    task = work[2]
    if (task.deal, task.rotation) == (1, 1):
        Path(os.environ[MARKER_ENV], str(os.getpid())).touch()
        os.kill(os.getpid(), signal.SIGSTOP)
    return REAL_PLAY_TASK(work)


def alive(pid: int) -> bool:
    """Running or stopped (not gone, not a zombie nobody has reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def spawned_children(parent: int) -> list[int]:
    """The worker processes `parent` spawned (multiprocessing's ``spawn_main``; not its
    resource tracker), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) == parent and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return sorted(found)


def kill_if_alive(pids: list[int]) -> None:
    """SIGKILL each of `pids` still there: a failed test leaves no stopped process behind."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
