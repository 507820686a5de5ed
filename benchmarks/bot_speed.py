"""Bot decisions per second and the decisions themselves, on seeded positions.

    python benchmarks/bot_speed.py --json out.json [--rules standard] [--positions 400]
    python benchmarks/bot_speed.py --compare 103cd7c --rounds 5   # today against a commit

Positions are the decisions of seeded games between two `ExpertAgent`s (whose choices are
the same on both versions, so both see the same positions: the tables with melds that bots
meet in training and tournaments); each bot
decides on every position where a seat is to act, through ``act(observation, action_mask)``
and, where the bot has it, through ``decide(seat_view, legal_actions)`` (the engine path the
package's own loops use). The decisions are written out, so two versions can be compared
decision by decision (issue 18: run this file on commit 103cd7c and on today's checkout, back
to back, interleaved).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rummy500_env import Game, Rules

try:  # the layout before and after issue 18
    from rummy500_env.rl.actions import ActionCodec
    from rummy500_env.rl.observation import ObservationEncoder
except ImportError:  # pragma: no cover - commit 103cd7c
    from rummy500_env.actions import ActionCodec  # type: ignore[no-redef]
    from rummy500_env.observation import ObservationEncoder  # type: ignore[no-redef]
from rummy500_env.agents import ExpertAgent, GreedyAgent, SearchAgent


def positions(rules: Rules, count: int, seed: int) -> list[Game]:
    """A seeded random quarter of the decisions of expert-vs-expert hands, `count` of them."""
    enc, codec, bot = ObservationEncoder(rules), ActionCodec(rules), ExpertAgent(rules)
    rng = random.Random(seed)
    out: list[Game] = []
    s = 0
    while len(out) < count:
        g = Game.new(rules, seed=s)
        s += 1
        while not g.is_hand_over and len(out) < count:
            if rng.random() < 0.25:
                out.append(g.copy())
            a = bot.act(enc.encode(g, g.current_player), codec.mask(g))
            g.apply(codec.decode(g, a))
    return out


def compare(commit: str, rounds: int, extra: list[str]) -> None:
    """Run this file on `commit` (a git worktree) and on this checkout, interleaved
    (old, new, old, new, ...), and print the medians of the per-round ratios; the decisions
    of both are compared position by position."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "-q", "--detach", str(old), commit],
            check=True,
        )
        try:
            (old / "benchmarks" / "bot_speed.py").write_text(Path(__file__).read_text())
            ratios: dict[str, list[float]] = {}
            same: dict[str, bool] = {}
            for k in range(rounds):
                runs = {}
                for name, where in (("old", old), ("new", root)):
                    out = Path(tmp) / f"{name}{k}.json"
                    env = {"PYTHONPATH": str(where)}
                    cmd = [
                        sys.executable,
                        str(where / "benchmarks" / "bot_speed.py"),
                        "--json",
                        str(out),
                        *extra,
                    ]
                    subprocess.run(
                        cmd,
                        check=True,
                        cwd=where,
                        env={**os.environ, **env},
                        stdout=subprocess.DEVNULL,
                    )
                    runs[name] = json.loads(out.read_text())
                for bot in ("greedy", "expert"):
                    old_rate = runs["old"][f"{bot}_act_per_s"]
                    for path in ("act", "decide"):
                        ratios.setdefault(f"{bot}_{path}", []).append(
                            runs["new"][f"{bot}_{path}_per_s"] / old_rate
                        )
                    same[bot] = (
                        runs["new"][f"{bot}_ids"]
                        == runs["old"][f"{bot}_ids"]
                        == runs["new"][f"{bot}_decide_ids"]
                    )
            print(
                json.dumps(
                    {
                        "commit": commit,
                        "rounds": rounds,
                        "median_ratio_to_commit": {
                            k: round(statistics.median(v), 2) for k, v in ratios.items()
                        },
                        "same_decisions": same,
                    }
                )
            )
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", str(old)], check=False
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="standard", help="a preset name or JSON fields")
    ap.add_argument("--positions", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3, help="timed passes; the best is kept")
    ap.add_argument("--json", default=None)
    ap.add_argument("--search-worlds", type=int, default=8, help="SearchAgent's worlds")
    ap.add_argument("--search-positions", type=int, default=60, help="positions it decides")
    ap.add_argument("--compare", metavar="COMMIT", help="run interleaved against a commit")
    ap.add_argument("--rounds", type=int, default=5, help="with --compare: old/new pairs")
    args = ap.parse_args()
    if args.compare:
        compare(
            args.compare, args.rounds, ["--rules", args.rules, "--positions", str(args.positions)]
        )
        return
    text = args.rules
    rules = Rules.coerce(json.loads(text) if text.startswith("{") else text)
    games = positions(rules, args.positions, 0)
    enc, codec = ObservationEncoder(rules), ActionCodec(rules)
    inputs = [(enc.encode(g, g.current_player), codec.mask(g)) for g in games]
    out: dict[str, Any] = {"rules": text, "positions": len(games)}
    for name, bot in (("greedy", GreedyAgent(rules)), ("expert", ExpertAgent(rules))):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            ids = [bot.act(o, m) for o, m in inputs]
            best = min(best, time.perf_counter() - start)
        out[f"{name}_act_per_s"] = len(inputs) / best
        out[f"{name}_ids"] = ids
        decide = getattr(bot, "decide", None)
        if decide is not None:
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                picks = [decide(g.seat_view(g.current_player), g.legal_actions()) for g in games]
                best = min(best, time.perf_counter() - start)
            out[f"{name}_decide_per_s"] = len(games) / best
            out[f"{name}_decide_ids"] = [
                codec.encode(g, a) for g, a in zip(games, picks, strict=True)
            ]
    # SearchAgent with a fixed number of worlds (a time budget is never reproducible): its
    # choices on the first positions, to compare versions; one pass, seeded.
    search = SearchAgent(rules, rollouts=args.search_worlds, seed=0)
    out["search_ids"] = [search.act(o, m) for o, m in inputs[: args.search_positions]]
    summary = {k: round(v) for k, v in out.items() if k.endswith("_per_s")}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
