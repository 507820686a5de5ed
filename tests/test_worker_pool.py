"""The worker pool of the tournaments and of training.exit's labelling (evaluation/pool.py): a
worker that dies is a clear error, not a hang; the games finished before it are kept for
--resume; a finished pool's workers leave in order instead of being terminated.

The work functions are module-level so that the spawned workers can import them."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rummy500_env.evaluation import tournament
from rummy500_env.evaluation.pool import WorkerDied, WorkerPool, how_it_ended, stop
from tests.helpers import fails_after

REAL_PLAY_TASK = tournament.play_task
MARKER_ENV = "RUMMY500_TEST_TERMINATED_MARKER"


def double_or_die(x: int) -> int:
    """Kills its own worker on 3, as the out-of-memory killer would."""
    if x == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return 2 * x


def double_or_raise(x: int) -> int:
    if x == 0:
        raise ValueError("task 0 is bad")
    time.sleep(60 if x == 1 else 0)  # a long search, still running when task 0 fails
    return 2 * x


def play_or_die(work: tournament.Work) -> tournament.GameRecord:
    """The tournament's game, except that the second seating of deal 1 kills its worker."""
    task = work[2]
    if (task.deal, task.rotation) == (1, 1):
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL_PLAY_TASK(work)


def play_noting_sigterm(work: tournament.Work) -> tournament.GameRecord:
    """The tournament's game, in a worker that leaves a file behind if it is terminated."""
    marker = os.environ[MARKER_ENV]

    def terminated(signum: int, frame: Any) -> None:
        Path(marker, str(os.getpid())).touch()
        os._exit(1)

    signal.signal(signal.SIGTERM, terminated)
    return REAL_PLAY_TASK(work)


def test_every_result_comes_back_in_chunks_and_exit_codes_read_as_words():
    with fails_after(60), WorkerPool(2) as pool:
        got = list(pool.imap_unordered(abs, list(range(-7, 0)), chunksize=3))
    assert sorted(got) == list(range(1, 8))
    assert how_it_ended(-signal.SIGKILL) == "killed by SIGKILL"
    assert how_it_ended(3) == "exit code 3"


def test_a_killed_worker_is_a_clear_error_after_the_results_that_arrived():
    """multiprocessing.Pool waited forever for the killed worker's task."""
    got: list[int] = []
    with fails_after(60), WorkerPool(2) as pool:
        with pytest.raises(WorkerDied) as raised:
            for result in pool.imap_unordered(double_or_die, [0, 1, 2, 3], unit="thing"):
                got.append(result)
    message = str(raised.value)
    assert message.startswith("worker process ") and "died (killed by SIGKILL)" in message
    assert f"with {4 - len(got)} of 4 things unfinished" in message and "\n" not in message
    assert 6 not in got


def test_a_worker_that_died_and_was_reaped_by_another_thread_is_not_counted_as_killed():
    """The executor's thread reaps a dead worker as `stop` looks at it: `exitcode` then read
    None for a moment, `stop` "killed" the dead worker, and `WorkerDied` named the SIGTERM of
    the executor instead of the worker's own death (seen once in a run of the whole suite)."""
    process = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    process.start()
    assert process.pid is not None
    os.waitpid(process.pid, 0)  # the other thread's reap: this object never saw the exit
    assert stop([process]) == set()


def test_a_failing_task_raises_its_error_and_the_running_ones_are_stopped():
    started = time.monotonic()
    with fails_after(60), pytest.raises(ValueError, match="task 0 is bad"):
        with WorkerPool(2) as pool:
            list(pool.imap_unordered(double_or_raise, [0, 1]))
    assert time.monotonic() - started < 30, "close waited for the minute-long task"


@pytest.mark.slow
def test_a_killed_worker_stops_the_tournament_and_resume_plays_the_lost_games(
    tmp_path, monkeypatch, capsys
):
    """`training.evaluate --workers 2` hung forever when a worker was killed. Now it stops
    with one line, keeps the finished games in games.jsonl, and --resume plays the rest to
    the whole tournament's results."""
    from rummy500_env.evaluation.evaluate import main

    argv = ["random", "greedy", "--games", "8", "--episode", "hand", "--workers", "2"]
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    monkeypatch.setattr(tournament, "play_task", play_or_die)
    with fails_after(120):
        assert main([*argv, "--out", str(stopped)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # below the progress bar
    assert err.startswith("error: worker process ") and "died (killed by SIGKILL)" in err
    assert "of 8 games unfinished" in err and "--resume" in err and "\n" not in err
    kept = (stopped / "games.jsonl").read_text().splitlines()[1:]
    assert [1, 1] not in [[json.loads(line)[k] for k in ("deal", "rotation")] for line in kept]
    monkeypatch.setattr(tournament, "play_task", REAL_PLAY_TASK)
    one = [*argv[:-1], "1"]  # the same games on one worker, without spawning
    assert main([*one, "--out", str(stopped), "--resume"]) == 0
    assert main([*one, "--out", str(whole)]) == 0
    results = [json.loads((d / "results.json").read_text()) for d in (stopped, whole)]
    assert results[0]["games"] == results[1]["games"]


@pytest.mark.slow
def test_a_finished_tournament_lets_its_workers_leave_instead_of_terminating_them(
    tmp_path, monkeypatch
):
    """multiprocessing.Pool's `with` ends in terminate(): workers were sent SIGTERM whatever
    they were doing (exiting, sending), a race that can make one print a BrokenPipeError
    traceback after a tournament's results. Now they leave on their own."""
    marker = tmp_path / "terminated"
    marker.mkdir()
    monkeypatch.setenv(MARKER_ENV, str(marker))
    monkeypatch.setattr(tournament, "play_task", play_noting_sigterm)
    cfg = tournament.Config(["random", "greedy"], games=4, workers=2, episode="hand", out="-")
    with fails_after(120):
        summary = tournament.run(cfg, progress=False)
    assert len(summary["games"]) == 4
    assert list(marker.iterdir()) == [], "a worker was terminated"


@pytest.mark.slow
def test_a_killed_labelling_worker_stops_training_exit_with_a_clear_error():
    """`training.exit --workers 2` hung forever when a labelling worker was killed."""
    pytest.importorskip("torch")
    from rummy500_env.training.exit import Workers

    workers = Workers(SimpleNamespace(ray=False, workers=2))  # type: ignore[arg-type]
    try:
        with fails_after(30), pytest.raises(WorkerDied, match=r"killed by SIGKILL.*--resume"):
            list(workers.label([0, 1, 2, 3], work=double_or_die))  # type: ignore[list-item,arg-type]
    finally:
        workers.close()


ORPHANING_PARENT = """
import os, signal, sys, time
from rummy500_env.evaluation.pool import WorkerPool
from tests.test_worker_pool import nap

if __name__ == "__main__":
    pool = WorkerPool(2)
    results = pool.imap_unordered(nap, [0, 60, 60])
    next(results)
    print(*[p.pid for p in pool._processes.values()], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def nap(seconds: int) -> int:
    time.sleep(seconds)
    return seconds


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie nobody has reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_workers_of_a_killed_parent_leave_instead_of_waiting_forever(tmp_path):
    """A tournament or training run killed outright (SIGKILL, the out-of-memory killer) left
    its workers behind: one finishing its minute-long task for nobody, the other waiting for
    tasks forever."""
    import subprocess
    import sys

    script = tmp_path / "parent.py"
    script.write_text(ORPHANING_PARENT)
    root = Path(__file__).parents[1]
    env = os.environ | {"PYTHONPATH": str(root)}
    pids = tmp_path / "workers.txt"  # a file: a pipe would stay open while the workers live
    # stderr to a file too: the killed parent's resource tracker, which outlives it, warns there
    # of the semaphores it cleans up, after this test has ended
    errors = tmp_path / "stderr.txt"
    with open(pids, "w") as out, open(errors, "w") as err:
        run = [sys.executable, str(script)]
        code = subprocess.run(run, stdout=out, stderr=err, env=env, timeout=120)
    workers = [int(pid) for pid in pids.read_text().split()]
    assert code.returncode == -signal.SIGKILL and len(workers) == 2, errors.read_text()
    deadline = time.monotonic() + 20
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:  # not to leave them behind a failed test either
        os.kill(pid, signal.SIGKILL)
    assert left == [], "workers outlived their parent"
