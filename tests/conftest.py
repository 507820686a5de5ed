"""Suite-wide settings: hypothesis profiles, and no silent skips (see docs/testing.md).

Hypothesis profiles: ``dev`` (the default) explores afresh on every run; ``ci`` (chosen when
the environment has CI set, as on .ci/run's machine, or by HYPOTHESIS_PROFILE=ci) is
derandomized with no example database, so a CI run is reproducible; ``long`` runs many more
examples, for benchmarks/reference_long.py; ``mutation`` fewer, derandomized and without
shrinking (a failure is all a mutant needs), for benchmarks/mutation.py. Choose one with
HYPOTHESIS_PROFILE=name.

Skips: a test that needs an extra skips where it is not installed, and its reason names the
extra (the modules' own reasons, or the one `EXTRAS` adds to a bare "could not import");
every run lists its skips with their reasons at the end. With RUMMY500_NO_SKIPS=1 (.ci/run
sets it, where every extra is installed) a skipped or deselected test fails the run, unless
`ALLOWED_SKIPS` lists it.

Background jobs (tests/background.py): a test whose fixture is a registered job runs at the
end of the session, and its job starts in a thread when collection ends, beside the rest.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

_COMMON: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=600, **_COMMON)
settings.register_profile("ci", max_examples=600, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=20_000, **_COMMON)
settings.register_profile(  # benchmarks/mutation.py: one run per mutant, a failure is enough
    "mutation",
    max_examples=100,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking
    **_COMMON,
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

ALLOWED_SKIPS: dict[str, str] = {
    "tests/test_play_security.py::test_host_ipv6_loopback_answers_through_the_command": (
        "the machine's network, not an install: a container without an IPv6 loopback"
    ),
}
"""Tests (node id patterns, fnmatch) that may skip even under RUMMY500_NO_SKIPS=1, each with
why no install can enable it. Everything else skips only for a missing extra, Chromium or
Python version, all of which CI's machine has: a skip there is a broken install."""

EXTRAS = {
    "torch": "train",
    "tyro": "train",
    "yaml": "train",
    "stable_baselines3": "sb3",
    "sb3_contrib": "sb3",
    "starlette": "play",
    "uvicorn": "play",
    "httpx": "test",
    "playwright": "test",
    "ray": "rllib",
    "torchrl": "frameworks",
    "tianshou": "frameworks",
    "textarena": "text",
    "jax": "jax",
}
"""The extra that installs each optional module, named in a skip that says only "could not
import" (pyproject.toml's [project.optional-dependencies])."""

_skipped: list[tuple[str, str]] = []
_deselected: list[str] = []


def _no_skips(config: pytest.Config) -> bool:
    return os.environ.get("RUMMY500_NO_SKIPS") == "1"


def _with_extra(reason: str) -> str:
    """A bare importorskip reason, with the extra that installs the module added."""
    for module, extra in EXTRAS.items():
        if f"could not import '{module}'" in reason and "pip install" not in reason:
            return f"{reason} (the {extra} extra: pip install -e '.[{extra}]')"
    return reason


def _note_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    if isinstance(report.longrepr, tuple):
        path, line, reason = report.longrepr
        reason = _with_extra(reason)
        report.longrepr = (path, line, reason)
    else:
        reason = str(report.longrepr)
    _skipped.append((report.nodeid, reason.removeprefix("Skipped: ")))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    outcome = yield
    _note_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    _note_skip(outcome.get_result())  # a module-level skip (importorskip at the top)


def pytest_deselected(items: list[pytest.Item]) -> None:
    _deselected.extend(item.nodeid for item in items)


def _unexpected() -> list[tuple[str, str]]:
    allowed = [p for p in ALLOWED_SKIPS]
    return [(n, r) for n, r in _skipped if not any(fnmatch.fnmatch(n, p) for p in allowed)]


def _jobs_of(item: pytest.Item) -> list[Any]:
    """The background jobs (tests/background.py) that a test's fixtures stand for; none when
    no test module registered any (this file also runs alone, tests/test_reference_skips.py)."""
    background = sys.modules.get("tests.background")
    module = getattr(getattr(item, "module", None), "__name__", None)
    if background is None or module is None:
        return []
    jobs = background.JOBS
    names = getattr(item, "fixturenames", ())
    return [jobs[n] for n in names if n in jobs and jobs[n].module == module]


def _uses_jax(item: pytest.Item) -> bool:
    """The JAX engine's tests and doctests, and the tests marked ``jax``: once JAX has run,
    its threads make any later ``os.fork`` of this process unsafe (a vector env's or Ray's
    workers)."""
    room = item.nodeid.startswith(("rummy500_env/jax/", "tests/test_jax_"))
    return room or item.get_closest_marker("jax") is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The JAX tests run after every test that forks, and the tests that wait on a
    background job run last, in their order: the job has the rest of the run to finish on the
    other core (its subprocesses are started without ``os.fork``'s hooks)."""
    waiting = [item for item in items if _jobs_of(item)]
    jax_items = [item for item in items if _uses_jax(item) and not _jobs_of(item)]
    rest = [item for item in items if not _uses_jax(item) and not _jobs_of(item)]
    items[:] = rest + jax_items + waiting


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background job of each selected test that asks for one. Not in a
    pytest-xdist worker, which collects every test but runs only those sent to it: there a
    job starts when its test first asks for it."""
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    for item in session.items:
        for job in _jobs_of(item):
            job.start()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under RUMMY500_NO_SKIPS=1, an unexpected skip or any deselection fails the run. Ends
    the background jobs still running (a run stopped early) and removes their folders."""
    background = sys.modules.get("tests.background")
    if background is not None:
        background.finish()
    if _no_skips(session.config) and (_unexpected() or _deselected) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Every skip with its reason, whatever the verbosity (`-q` alone prints none)."""
    tr = terminalreporter
    background = sys.modules.get("tests.background")
    if background is not None and background.summary():
        tr.write_line(background.summary())
    if _skipped:
        tr.section(f"{len(_skipped)} skipped (the reason names what to install)")
        for nodeid, reason in _skipped:
            tr.line(f"SKIPPED {nodeid}: {reason}")
    if not _no_skips(config):
        return
    unexpected, deselected = _unexpected(), _deselected
    if unexpected or deselected:
        tr.section("RUMMY500_NO_SKIPS=1: this run must skip and deselect nothing", red=True)
        for nodeid, reason in unexpected:
            tr.line(f"unexpected skip: {nodeid}: {reason}", red=True)
        for nodeid in deselected:
            tr.line(f"deselected: {nodeid}", red=True)
        tr.line(
            "install what the reasons name, or list the test in tests/conftest.py ALLOWED_SKIPS"
        )
