"""Long subprocess work that runs beside the rest of the suite (docs/testing.md, "Time").

pytest runs one test at a time on one core, while a few tests spend minutes waiting on child
processes: the pure build's run of the core tests (tests/test_compiled.py), and building and
installing the wheel (tests/test_packaging.py). Each of those is a *job*: a function a test
module registers under the name of the fixture that hands out its result. When collection
ends, tests/conftest.py starts, in a thread, each job that a selected test asks for (by
fixture name), and moves those tests to the end of the run; by the time they run, the job has
usually finished on the other core. A test that asks for the result waits for it, and a job's
error is raised in that test, as if the fixture had done the work itself. A job that nothing
selected asks for never starts; one asked for without being started (a plugin that reorders,
a fixture called from elsewhere) starts when first asked, so nothing depends on the early start.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Job:
    """One piece of background work: `start` it once, `result` waits and returns or raises."""

    def __init__(self, module: str, name: str, work: Callable[[], Any]) -> None:
        self.module, self.name, self.work = module, name, work
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._value: Any = None
        self._error: BaseException | None = None
        self._procs: list[subprocess.Popen[str]] = []
        self._cancelled = False
        self.seconds: float | None = None  # how long the work took, once it has ended

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self._value = self.work()
        except BaseException as e:  # handed to the test that asks for the result
            self._error = e
        self.seconds = time.monotonic() - started

    def result(self) -> Any:
        self.start()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        """End the job's running child process, if any (the session is ending without it)."""
        self._cancelled = True
        for proc in list(self._procs):
            if proc.poll() is None:
                proc.kill()
        if self._thread is not None:
            self._thread.join(30)


JOBS: dict[str, Job] = {}
"""The registered jobs by fixture name: tests/conftest.py reads this (only when some test
module imported this one)."""

NICE = shutil.which("nice")
"""The jobs' commands run niced: a test that runs two processes at once (or torch's threads)
keeps both cores, and the jobs never slow the tests they run beside."""

_TEMP: list[Path] = []
_current = threading.local()


def job(module: str, name: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Register a function as the job behind the fixture `name` of test module `module`."""

    def register(work: Callable[[], Any]) -> Callable[[], Any]:
        def run_as_job() -> Any:
            _current.job = JOBS[name]
            return work()

        JOBS[name] = Job(module, name, run_as_job)
        return work

    return register


def result(name: str) -> Any:
    """The job's result: waits for it (starting it if no hook did), raises its error."""
    return JOBS[name].result()


def temp_dir(prefix: str) -> Path:
    """A fresh folder for a job, removed at the end of the session."""
    path = Path(tempfile.mkdtemp(prefix=f"rummy500-{prefix}-"))
    _TEMP.append(path)
    return path


def popen(cmd: list[str], **kw: Any) -> subprocess.Popen[str]:
    """Start a command from a job, as `subprocess.Popen` (text mode), at a lower priority
    (``nice -n 10``, where there is one): killed if the session ends while it runs."""
    job: Job | None = getattr(_current, "job", None)
    if NICE:  # below the tests that run meanwhile: the job takes the core they leave idle
        cmd = [NICE, "-n", "10", *cmd]
    proc: subprocess.Popen[str] = subprocess.Popen(cmd, text=True, **kw)
    if job is not None:
        job._procs.append(proc)
        if job._cancelled:
            proc.kill()
    return proc


def call(cmd: list[str], cwd: Path, timeout: float = 600, **kw: Any) -> tuple[int, str, str]:
    """Run a command from a job (killed if the session ends first): its exit status, output
    and error output ("" where `stderr=subprocess.STDOUT` joins it to the output)."""
    options = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | kw
    proc = popen(cmd, cwd=cwd, **options)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(
            f"{cmd} ran past {timeout} s\n{stdout[-3000:]}\n{stderr or ''}"[-6000:]
        ) from None
    return proc.returncode, stdout, stderr or ""


def run(cmd: list[str], cwd: Path, timeout: float = 600, **kw: Any) -> str:
    """`call`, asserting that the command succeeded: its output, or a failure that shows the
    output's tail."""
    code, stdout, stderr = call(cmd, cwd, timeout, **kw)
    assert code == 0, f"{cmd}\n{stdout[-3000:]}\n{stderr[-3000:]}"
    return stdout


def summary() -> str:
    """One line: how long each job that ran took (the run's summary shows it, for balancing
    the two cores)."""
    ran = [f"{j.name} {j.seconds:.0f} s" for j in JOBS.values() if j.seconds is not None]
    return "background jobs: " + ", ".join(ran) if ran else ""


def finish() -> None:
    """At the end of the session: end the jobs still running, remove their folders."""
    for j in JOBS.values():
        j.cancel()
    while _TEMP:
        shutil.rmtree(_TEMP.pop(), ignore_errors=True)
