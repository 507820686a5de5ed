"""Mutation testing of the engine (issue 23): how many deliberate bugs the rules tests and the
reference properties kill, per file, and which survive.

Two modes, both in a scratch clone of this checkout's HEAD (never in the checkout itself):

* ``python benchmarks/mutation.py`` runs mutmut over ``rummy500_env/engine/{game,melds,scoring}.py``
  (``--files`` for others, ``--sample N`` for a random sample of N mutants per file) with the
  rules tests and the reference properties (`TESTS`), under the ``mutation`` hypothesis
  profile (derandomized, 100 examples), and prints killed / survived per file and every
  survivor. A collection error (the engine no longer imports) counts as killed; a timeout
  (the tests took over 2 x ``--timeout-multiplier`` times their clean CPU time: an endless
  loop, or a lost cache) is counted and listed apart.
  Needs mutmut 3.8 and the test requirements in the interpreter's environment (``--mutmut``
  names another executable); about an hour on one core for the three files.
* ``--rerun OLD_WORKDIR`` runs, on that run's code with the current reference tests
  (`OURS`), only the mutants it did not kill, and reports its figures with their new
  results: tests added for survivors are measured on the same mutants.
* ``python benchmarks/mutation.py --named`` applies, one at a time, the four bugs issue 23
  names (the taken-top discard rule removed, Q-K-A dropped from the meld finder, an off-by-one
  in ``stock_out="ends_hand"``, a full 13-card run left open to lay-offs), runs
  tests/test_reference.py under the ``ci`` profile, and says which each one fails.

Run it niced (``nice -n 19``): it keeps one core busy. docs/testing.md has the last figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/test_rules_default.py",
    "tests/test_rules_variants.py",
    "tests/test_rules_fine_points.py",
    "tests/test_worked_examples.py",
    "tests/test_jokers.py",
    "tests/test_calls.py",
    "tests/test_positions.py",
    "tests/test_position_checks.py",
    "tests/test_notation.py",
    "tests/test_reference.py",
    "tests/test_reference_model.py",
    "tests/test_seat_view.py",
    "tests/test_reference_mutants.py",
    "tests/test_illegal_messages.py",
]
"""The rules tests, the reference properties and the engine's information-state tests: the
suite whose strength is measured (no RL, browser or training tests: they cost minutes)."""
OURS = [
    "tests/reference",
    "tests/test_reference*.py",
    "tests/test_illegal_messages.py",
    "tests/conftest.py",
]
"""The tests a `--rerun` takes from HEAD: the reference and the tests written for survivors."""
IMPORT_TIME = ("melds.x__templates__", "melds.x__set_joker_places__")
"""Functions the engine calls once, at import, to build its tables: mutmut's default (fork
after importing) never switches their mutants on, so they get a second pass with a fresh
import per mutant (forkserver, no warm-up)."""
STATUS = {1: "killed", 3: "killed", 0: "survived", 33: "no tests", 5: "no tests", None: "not run"}
STATUS |= {2: "killed"}  # a collection error: with the mutant the engine cannot even import
STATUS |= {-24: "timeout", 24: "timeout", 36: "timeout", 152: "timeout", 255: "timeout"}
NAMED = {
    "taken-top discard rule removed": (
        "rummy500_env/engine/game.py",
        "        if tt is not None and held != 1 << tt:",
        "        if False:",
    ),
    "Q-K-A dropped from the meld finder": (
        "rummy500_env/engine/melds.py",
        "    starts = (held & held >> 1 & held >> 2 & _RUN_STARTS) | (",
        "    starts = (held & held >> 1 & held >> 2 & _RUN_STARTS) | 0 * (",
    ),
    'off-by-one in stock_out="ends_hand"': (
        "rummy500_env/engine/game.py",
        '        if not self.stock and self.rules.stock_out == "ends_hand":',
        '        if len(self.stock) <= 1 and self.rules.stock_out == "ends_hand":',
    ),
    "full 13-card run open to lay-offs": (
        "rummy500_env/engine/melds.py",
        "    if hi - lo + 1 >= FULL_RUN:",
        "    if hi - lo + 1 > FULL_RUN:",
    ),
}
"""Issue 23's bugs as (file, line, broken line)."""


def scratch_clone(workdir: Path) -> None:
    """A fresh clone of HEAD: the committed engine and tests, nobody's work in progress."""
    if workdir.exists():
        shutil.rmtree(workdir)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(workdir)], check=True)


def mutmut_config(files: list[str], timeout_multiplier: float) -> str:
    only = ", ".join(f'"rummy500_env/engine/{f}"' for f in files)
    tests = ", ".join(f'"{t}"' for t in TESTS)
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["rummy500_env"]\n'
        f"only_mutate = [{only}]\n"
        'pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider"]\n'
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        f"timeout_multiplier = {timeout_multiplier}\n"
    )


def _meta(workdir: Path, f: str) -> dict[str, int | None]:
    path = workdir / "mutants" / "rummy500_env" / "engine" / f"{f}.meta"
    codes: dict[str, int | None] = json.loads(path.read_text())["exit_code_by_key"]
    return codes


def statuses(workdir: Path, files: list[str], only: set[str] | None) -> dict[str, dict[str, str]]:
    """Per file, the status of each mutant checked (of those in `only`, if given)."""
    return {
        f: {
            k: STATUS.get(v, "other")
            for k, v in _meta(workdir, f).items()
            if v is not None and (only is None or k in only)
        }
        for f in files
    }


def sample_names(workdir: Path, files: list[str], n: int, seed: int) -> list[str]:
    """`n` mutants of each file, drawn with `seed` from the sorted names (reproducible)."""
    rnd, names = random.Random(seed), []
    for f in files:
        keys = sorted(_meta(workdir, f))
        names += rnd.sample(keys, min(n, len(keys)))
    return names


def report(status: dict[str, dict[str, str]], workdir: Path, took: float) -> None:
    """Print and save, per file: counts, the rates, the mutants timed out and surviving."""
    summary: dict[str, Any] = {"status": status}
    print(f"mutmut in {took:.0f} s; tests: {' '.join(TESTS)}")
    for f, row in status.items():
        counts = Counter(row.values())
        killed, timeouts, checked = counts["killed"], counts["timeout"], len(row)
        summary[f] = {"checked": checked, **counts}
        print(
            f"{f}: {checked} checked, {dict(counts)}; killed {100 * killed / max(checked, 1):.1f}%"
            f", killed or timed out {100 * (killed + timeouts) / max(checked, 1):.1f}%"
        )
        for name, st in sorted(row.items()):
            if st != "killed":
                print(f"  {st}: {name}")
    (workdir / "mutation-summary.json").write_text(json.dumps(summary, indent=1))
    print(f"summary: {workdir / 'mutation-summary.json'}; a diff: cd {workdir}; mutmut show NAME")


def run_mutmut(args: argparse.Namespace) -> None:
    workdir, base = Path(args.workdir), Path(args.rerun) if args.rerun else None
    scratch_clone(workdir)
    old: dict[str, dict[str, str]] = {}
    if base is not None:  # the earlier run's engine, today's tests
        commit = subprocess.run(
            ["git", "-C", str(base), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        git = ["git", "-C", str(workdir), "checkout"]
        subprocess.run([*git, commit, "--", "."], check=True)  # that run's code and tests ...
        subprocess.run([*git, "HEAD", "--", *OURS], check=True)  # ... with today's of these
        saved = json.loads((base / "mutation-summary.json").read_text()).get("status")
        picked = (
            set(sample_names(base, args.files, args.sample, args.seed)) if args.sample else None
        )
        old = saved or statuses(base, args.files, picked)
    with open(workdir / "pyproject.toml", "a") as f:
        f.write(mutmut_config(args.files, args.timeout_multiplier))
    env = os.environ | {"HYPOTHESIS_PROFILE": "mutation"}
    mutmut = [args.mutmut, "run", "--max-children", str(args.children)]
    start = time.time()
    names = [f"rummy500_env.engine.{f.removesuffix('.py')}.*" for f in args.files]
    only: set[str] | None = None
    if old:  # only the earlier run's mutants that were not killed
        names = [k for row in old.values() for k, st in row.items() if st != "killed"]
        only = set(names)
    elif args.sample:  # generate every mutant (a first, tiny run), then run a sample of each file
        subprocess.run([*mutmut, f"{names[0]}__mutmut_1"], cwd=workdir, env=env, check=True)
        names = sample_names(workdir, args.files, args.sample, args.seed)
        only = set(names)
    if names:
        subprocess.run([*mutmut, *names], cwd=workdir, env=env, stdout=subprocess.DEVNULL)
    if "melds.py" in args.files:  # the second pass, for the import-time tables
        again = [k for k in statuses(workdir, ["melds.py"], only)["melds.py"]]
        again = [k for k in again if any(p in k for p in IMPORT_TIME)]
        with open(workdir / "pyproject.toml", "a") as f:
            f.write('process_isolation = "forkserver"\nforkserver_warmup = "none"\n')
        if again:
            subprocess.run([*mutmut, *again], cwd=workdir, env=env, stdout=subprocess.DEVNULL)
    status = statuses(workdir, args.files, only)
    for f, row in old.items():
        status[f] = row | status[f]
    report(status, workdir, time.time() - start)


def run_named(args: argparse.Namespace) -> int:
    """Each of issue 23's bugs on its own, against tests/test_reference.py (profile ci)."""
    workdir = Path(args.workdir)
    scratch_clone(workdir)
    env = os.environ | {"HYPOTHESIS_PROFILE": "ci"}
    missed = 0
    for name, (path, line, broken) in NAMED.items():
        source = workdir / path
        original = source.read_text()
        assert original.count(line + "\n") == 1, f"{path} no longer has: {line.strip()}"
        source.write_text(original.replace(line + "\n", broken + "\n"))
        test = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        done = subprocess.run(
            [*test, "tests/test_reference.py"], cwd=workdir, env=env, capture_output=True, text=True
        )
        source.write_text(original)
        failed = [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED")]
        caught = done.returncode == 1 and failed
        missed += not caught
        print(f"{'caught' if caught else 'MISSED'}: {name}")
        for ln in failed:
            print(f"  {ln[:160]}")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/rummy500-mutation", help="scratch clone")
    parser.add_argument("--files", nargs="+", default=["game.py", "melds.py", "scoring.py"])
    parser.add_argument("--sample", type=int, default=0, help="mutants per file (0: all)")
    parser.add_argument("--seed", type=int, default=23, help="seed of the sample")
    parser.add_argument("--mutmut", default=shutil.which("mutmut") or "mutmut")
    parser.add_argument("--named", action="store_true", help="issue 23's four bugs only")
    parser.add_argument(
        "--rerun",
        help="an earlier run's workdir: its code with today's reference tests (OURS), only the "
        "mutants it did not kill (give the same --sample and --seed)",
    )
    parser.add_argument("--children", type=int, default=1, help="mutants tested at once")
    parser.add_argument(
        "--timeout-multiplier",
        type=float,
        default=5.0,
        help="a mutant whose tests take this many times the clean run's CPU time is a timeout",
    )
    args = parser.parse_args()
    if args.named:
        return run_named(args)
    run_mutmut(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
