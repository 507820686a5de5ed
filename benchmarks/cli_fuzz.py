"""The command-line fuzz test (tests/test_cli_fuzz.py) at length: many more generated argument
lists per command than CI's few, each run from a fresh random seed unless one is given.

    python benchmarks/cli_fuzz.py                      # 300 cases per command
    python benchmarks/cli_fuzz.py --examples 2000 --seed 7
    python benchmarks/cli_fuzz.py --only ppo,bench     # some commands (test name parts)

Every case must end in exit 0, or in exit 2 with one ``error:`` line, never a traceback; a
failure prints the shrunk argv and what went wrong, and the exit status is pytest's. Runs the
commands in one process, as the test does (see its docstring for what is kept out of the
generated cases and why); the real entry points are the test's own few subprocess cases.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = {
    "watch": "test_watch_a_game",
    "play": "test_play",
    "bench": "test_bench",
    "evaluate": "test_evaluate",
    "ppo": "test_training_ppo",
    "rllib": "test_training_rllib",
    "exit": "test_training_exit",
    "exploit": "test_training_exploit",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/cli_fuzz.py", description=__doc__)
    ap.add_argument("--examples", type=int, default=300, help="cases per command (300)")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    ap.add_argument(
        "--only", default=",".join(TESTS), help=f"commands, comma separated: {','.join(TESTS)}"
    )
    args = ap.parse_args(argv)
    if args.examples < 1:
        ap.error("--examples: give 1 or more")
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(TESTS))
    if unknown:
        ap.error(f"--only: unknown {unknown}; choose from {','.join(TESTS)}")
    selection = " or ".join(TESTS[name] for name in chosen)
    cmd = [sys.executable, "-m", "pytest", "tests/test_cli_fuzz.py", "-q", "-p", "no:cacheprovider"]
    cmd += ["-k", selection]
    if args.seed is not None:
        cmd += [f"--hypothesis-seed={args.seed}"]
    env = os.environ | {"RUMMY500_FUZZ_EXAMPLES": str(args.examples), "HYPOTHESIS_PROFILE": "dev"}
    started = time.time()
    done = subprocess.run(cmd, cwd=ROOT, env=env)
    print(
        f"{args.examples} cases per command ({', '.join(chosen)}) in "
        f"{time.time() - started:.0f}s: {'all ended well' if done.returncode == 0 else 'FAILURES'}"
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
