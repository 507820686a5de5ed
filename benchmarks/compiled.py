"""The compiled core against the pure build and the peers, interleaved (README "Speed").

    python benchmarks/compiled.py [--tree DIR] [--runs 5] [--seconds 2] [--instructions]

`--tree` is a checkout with the compiled core built in place (``pip install -e .`` or
``python setup.py build_ext --inplace``); its pure build is the same tree under
``RUMMY500_PURE=1``. Each run measures, in turn, the compiled build, the peers
(benchmarks/peers/peers_bench.py, once benchmarks/peers/setup.sh has built their venv) and
the pure build, with ``python -m rummy500_env.bench --json`` (engine decisions/s, raw_env()
and env() AEC steps/s, the peers' own loop): this shared machine's speed swings by a third
within an hour, so every ratio is the median of the per-run ratios, each run's figures taken
minutes apart at most.

`--instructions` also counts instructions with valgrind's callgrind (PYTHONHASHSEED fixed;
start-up subtracted): 40 seeded random hands through `legal_actions` + `apply`, 4 seeded
hands through `raw_env()`, and one seeded hand of `SearchAgent` with 10 worlds a decision
against ExpertAgent (the same decisions on both builds), in each build. Counts do not move
with the machine's load. `--runs 0 --instructions` counts only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("engine", "raw_env", "env")


def bench(tree: Path, pure: bool, seconds: float, peers: bool) -> dict[str, Any]:
    """One ``python -m rummy500_env.bench --json`` run in `tree`, on one build."""
    env = {k: v for k, v in os.environ.items() if k != "RUMMY500_PURE"}
    env |= {"PYTHONPATH": str(tree)} | ({"RUMMY500_PURE": "1"} if pure else {})
    cmd = [sys.executable, "-m", "rummy500_env.bench", "--json", "--seconds", str(seconds)]
    cmd += [] if peers else ["--no-peers"]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def work(kind: str, n: int) -> None:
    """`n` units of fixed work (0: imports and setup only), for callgrind."""
    import numpy as np

    import rummy500_env
    from rummy500_env import Game

    rng = random.Random(1)
    if kind == "engine":
        for seed in range(n):
            g = Game.new("standard", seed=seed)
            while not g.is_hand_over:
                g.apply(rng.choice(g.legal_actions()))
        return
    if kind == "search":
        from rummy500_env.agents import ExpertAgent, SearchAgent

        for seed in range(n):
            g = Game.new("standard", seed=seed)
            seats = (SearchAgent(rollouts=10, seed=seed), ExpertAgent())
            while not g.is_hand_over:
                seat = g.current_player
                g.apply(seats[seat].decide(g.seat_view(seat), g.legal_actions()))
        return
    e = rummy500_env.raw_env(episode="hand")
    for hand in range(n):
        e.reset(seed=hand)
        for _agent in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            legal = np.flatnonzero(obs["action_mask"])
            e.step(None if term or trunc else int(legal[rng.randrange(len(legal))]))


def instructions(tree: Path, pure: bool, kind: str, n: int) -> int:
    """Instructions callgrind counts for `work(kind, n)` in `tree`, on one build."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {k: v for k, v in os.environ.items() if k != "RUMMY500_PURE"}
        env |= {"PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        env |= {"RUMMY500_PURE": "1"} if pure else {}
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        cmd += [str(Path(__file__).resolve()), "--work", kind, "--n", str(n)]
        subprocess.run(cmd, check=True, cwd=tree, env=env, capture_output=True)
        m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert m is not None, "no total in callgrind's output"
        return int(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=ROOT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--instructions", action="store_true")
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.work:
        work(args.work, args.n)
        return
    runs = []
    for i in range(args.runs):
        compiled = bench(args.tree, False, args.seconds, peers=True)
        assert compiled["build"].startswith("compiled"), compiled["build"]
        pure = bench(args.tree, True, args.seconds, peers=False)
        row: dict[str, Any] = {"compiled": compiled["ours"], "pure": pure["ours"]}
        row["peers"] = compiled["peers"]
        runs.append(row)
        print(f"run {i + 1}: {json.dumps(row)}", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for key in FIGURES if runs else ():
        fig: dict[str, Any] = {
            "compiled": statistics.median(r["compiled"][key] for r in runs),
            "pure": statistics.median(r["pure"][key] for r in runs),
            "compiled_over_pure": [round(r["compiled"][key] / r["pure"][key], 2) for r in runs],
        }
        peer_rows = [r["peers"][key] for r in runs if key in r["peers"]]
        if peer_rows:
            fig["peer"] = peer_rows[0]["peer"]
            fig["peer_steps_per_s"] = statistics.median(p["steps_per_s"] for p in peer_rows)
            fig["ratios"] = [round(p["ratio"], 2) for p in peer_rows]
            fig["pure_ratios"] = [
                round(r["pure"][key] / r["peers"][key]["steps_per_s"], 2)
                for r in runs
                if key in r["peers"]
            ]
            fig["target"] = peer_rows[0]["target_ratio"]
            if "also" in peer_rows[0]:
                fig["also"] = peer_rows[0]["also"]["peer"]
                fig["also_ratios"] = [round(p["also"]["ratio"], 2) for p in peer_rows]
        for name in [k for k in fig if k.endswith("ratios") or k == "compiled_over_pure"]:
            fig[f"median_{name}"] = statistics.median(fig[name])
        summary[key] = fig
    if args.instructions:
        for kind, n in (("engine", 40), ("raw_env", 4), ("search", 1)):
            counts = {}
            for label, pure in (("compiled", False), ("pure", True)):
                base = instructions(args.tree, pure, kind, 0)
                counts[label] = instructions(args.tree, pure, kind, n) - base
            counts["pure_over_compiled"] = round(counts["pure"] / counts["compiled"], 2)
            summary[f"instructions_{kind}"] = counts
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
