"""Counted instructions (valgrind's callgrind) of fixed work, today against an older commit.

    python benchmarks/instructions.py --compare 103cd7c [--work env expert greedy]

Seconds swing by a third on this shared machine; instruction counts do not (the same binary,
inputs and environment give the same count, whatever else runs). Each work item is run twice
in each tree under callgrind, with its work and with none (imports and setup only), and the
difference is the work's count:

* ``env``: 6 seeded hands of `raw_env()` with random legal actions, observing every step;
* ``greedy`` / ``expert``: 120 decisions of the bot on positions of seeded random play
  (``act(observation, mask)`` on the commit; today both ``act`` and ``decide(seat_view,
  legal)``, the path the package's own loops take).

Needs valgrind (Debian's package). PYTHONHASHSEED is fixed so both runs hash alike.
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

POSITIONS = 120


def _positions(rules: object) -> list[object]:
    from rummy500_env import Game

    rng = random.Random(0)
    out = []
    s = 0
    while len(out) < POSITIONS:
        g = Game.new(rules, seed=s)
        s += 1
        for _ in range(rng.randrange(120)):
            if g.is_hand_over:
                break
            g.apply(rng.choice(g.legal_actions()))
        if not g.is_hand_over:
            out.append(g)
    return out


def run(work: str, n: int) -> None:
    """Do `n` units of `work` (0: the setup alone)."""
    import numpy as np

    import rummy500_env
    from rummy500_env import Rules

    try:
        from rummy500_env.rl.actions import ActionCodec
        from rummy500_env.rl.observation import ObservationEncoder
    except ImportError:  # the layout before issue 18
        from rummy500_env.actions import ActionCodec  # type: ignore[no-redef]
        from rummy500_env.observation import ObservationEncoder  # type: ignore[no-redef]
    from rummy500_env.agents import ExpertAgent, GreedyAgent

    rules = Rules()
    if work == "env":
        e = rummy500_env.raw_env(rules=rules, episode="hand")
        rng = random.Random(1)
        for hand in range(n):
            e.reset(seed=hand)
            while e.agents and not all(e.terminations.values()):
                o = e.observe(e.agent_selection)
                legal = np.flatnonzero(o["action_mask"])
                e.step(int(legal[rng.randrange(len(legal))]))
        return
    games = _positions(rules)
    bot = {"greedy": GreedyAgent, "expert": ExpertAgent}[work.split(":")[0]](rules)
    if work.endswith(":decide"):
        for g in games[:n]:
            bot.decide(g.seat_view(g.current_player), g.legal_actions())  # type: ignore[attr-defined]
        return
    enc, codec = ObservationEncoder(rules), ActionCodec(rules)
    inputs = [(enc.encode(g, g.current_player), codec.mask(g)) for g in games]
    for o, m in inputs[:n]:
        bot.act(o, m)


def count(tree: Path, work: str, n: int, tmp: Path) -> int:
    """Instructions callgrind counts for `run(work, n)` in `tree`."""
    out = tmp / f"cg.{os.getpid()}.{work.replace(':', '_')}.{n}"
    script = tree / "benchmarks" / "instructions.py"
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    cmd += [str(script), "--run", work, "--n", str(n)]
    subprocess.run(cmd, check=True, cwd=tree, env=env, capture_output=True)
    m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    assert m is not None, f"no total in {out}"
    return int(m.group(1))


def compare(commit: str, works: list[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old = tmp / "old"
        git = ["git", "-C", str(root), "worktree"]
        subprocess.run([*git, "add", "-q", "--detach", str(old), commit], check=True)
        try:
            (old / "benchmarks" / "instructions.py").write_text(Path(__file__).read_text())
            units = {"env": 6}
            result = {}
            for work in works:
                n = units.get(work, POSITIONS)
                base_old, base_new = count(old, work, 0, tmp), count(root, work, 0, tmp)
                old_i = count(old, work, n, tmp) - base_old
                row = {"commit": old_i, "today": count(root, work, n, tmp) - base_new}
                if work != "env":
                    decide = count(root, f"{work}:decide", n, tmp)
                    row["today_decide"] = decide - count(root, f"{work}:decide", 0, tmp)
                row |= {f"ratio_{k}": round(old_i / v, 2) for k, v in row.items() if k != "commit"}
                result[work] = row
            print(json.dumps({"commit": commit, "instructions": result}, indent=1))
        finally:
            subprocess.run([*git, "remove", "--force", str(old)], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", metavar="COMMIT")
    ap.add_argument("--work", nargs="+", default=["env", "greedy", "expert"])
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run(args.run, args.n)
    elif args.compare:
        compare(args.compare, args.work)
    else:
        ap.error("give --compare COMMIT")


if __name__ == "__main__":
    main()
