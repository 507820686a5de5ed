"""Counted instructions per AEC step of `raw_env()` and `env()` (valgrind's callgrind).

    python benchmarks/env_steps.py [--steps 4000] [--profile DIR]

The work is `python -m rummy500_env.bench`'s env loop (`last()`, a random legal id from the
mask, `step`) over a fixed number of steps of seeded games, so the count is of the same work
the timed figures are, without their noise: the same build, inputs and PYTHONHASHSEED give
the same count whatever else runs on the machine. Each env is run twice under callgrind, for
`--steps` steps and for none (imports, the env's construction, its first reset), and the
difference over the steps is the count per step. `--profile DIR` keeps callgrind's output
files there (read them with ``callgrind_annotate --inclusive=yes``).

Needs valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def work(wrapped: bool, steps: int) -> None:
    """`steps` live AEC steps of the bench loop on seeded games (0: the setup alone)."""
    import numpy as np

    import rummy500_env

    e = rummy500_env.env() if wrapped else rummy500_env.raw_env()
    rng = random.Random(0)
    flatnonzero, randrange = np.flatnonzero, rng.randrange
    e.reset(seed=0)
    live = 0
    while live < steps:
        for _agent in e.agent_iter():
            obs, _reward, term, trunc, _info = e.last()
            if term or trunc:
                e.step(None)
                continue
            legal = flatnonzero(obs["action_mask"])
            e.step(int(legal[randrange(len(legal))]))
            live += 1
            if live == steps:
                return
        e.reset()


def count(wrapped: bool, steps: int, keep: Path | None) -> int:
    """Instructions callgrind counts for `work(wrapped, steps)`."""
    with tempfile.TemporaryDirectory() as tmp:
        name = f"callgrind.{'env' if wrapped else 'raw_env'}.{steps}"
        out = (keep or Path(tmp)) / name
        # OpenBLAS's idle threads (numpy starts them) spin for as long as valgrind lets them,
        # which added 0-5k instructions a step from one run to the next: one thread.
        env = os.environ | {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        cmd += [str(Path(__file__).resolve()), "--work", "env" if wrapped else "raw_env"]
        cmd += ["--steps", str(steps)]
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True)
        m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        if m is None:
            raise RuntimeError(f"no total in callgrind's output {out}")
        return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4000, help="live AEC steps counted")
    ap.add_argument("--profile", type=Path, help="keep callgrind's output files here")
    ap.add_argument("--only", choices=("raw_env", "env"), help="count one env")
    ap.add_argument("--work", choices=("raw_env", "env"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.work:
        work(args.work == "env", args.steps)
        return
    from rummy500_env import _build

    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    out: dict[str, object] = {"build": _build.BUILD, "steps": args.steps}
    for name in (args.only,) if args.only else ("raw_env", "env"):
        wrapped = name == "env"
        total = count(wrapped, args.steps, args.profile)
        base = count(wrapped, 0, args.profile)
        out[name] = {"instructions_per_step": round((total - base) / args.steps)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
