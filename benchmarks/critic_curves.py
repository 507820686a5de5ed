"""The learning curves of runs that differ in their critic (``critic: obs`` or ``full``), for
docs/training.md, "A critic that sees the whole table": the win rate against one bot at each
evaluation, by learner decisions, one thin line a run and a thick one per critic (the mean of
its seeds), and the same numbers as a Markdown table.

    python benchmarks/critic_curves.py runs/critic_obs_s0 runs/critic_obs_s1 \\
        runs/critic_full_s0 runs/critic_full_s1 --bot expert --out docs/critic-curves.png

Each run folder's ``config.json`` says its critic and seed; its ``evaluations.csv`` holds the
evaluations (`RunFolder.evaluate`) and its ``state.json`` the training time.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path


def read_run(run: Path, bot: str) -> tuple[str, int, dict[int, float], float]:
    """(critic, seed, win rate against `bot` by timesteps, seconds of training) of a run."""
    config = json.loads((run / "config.json").read_text())
    rows = list(csv.DictReader(open(run / "evaluations.csv")))
    key = f"win_rate_vs_{bot}"
    if rows and key not in rows[0]:
        raise SystemExit(f"{run}: no evaluation against {bot!r} (columns: {list(rows[0])})")
    curve = {int(r["timesteps"]): float(r[key]) for r in rows}
    wall = float(json.loads((run / "state.json").read_text()).get("wall_s", float("nan")))
    return str(config.get("critic", "obs")), int(config["seed"]), curve, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--bot", default="expert")
    parser.add_argument("--out", type=Path, default=Path("critic-curves.png"))
    a = parser.parse_args()
    runs = [read_run(run, a.bot) for run in a.runs]
    steps = sorted({s for _c, _s, curve, _w in runs for s in curve})
    print(f"| critic | seed | training | {' | '.join(f'{s:,}' for s in steps)} |")
    print(f"|---|---|---|{'---|' * len(steps)}")
    by_critic: dict[str, list[dict[int, float]]] = defaultdict(list)
    for critic, seed, curve, wall in sorted(runs):
        cells = " | ".join(f"{curve[s]:.1%}" if s in curve else "" for s in steps)
        print(f"| {critic} | {seed} | {wall:,.0f} s | {cells} |")
        by_critic[critic].append(curve)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"obs": "tab:blue", "full": "tab:orange"}
    fig, ax = plt.subplots(figsize=(7, 4))
    for critic, _seed, curve, _wall in sorted(runs):
        xs = sorted(curve)
        ax.plot(xs, [curve[x] for x in xs], color=colours.get(critic), lw=0.8, alpha=0.5)
    for critic, curves in sorted(by_critic.items()):
        xs = [s for s in steps if all(s in c for c in curves)]
        mean = [sum(c[s] for c in curves) / len(curves) for s in xs]
        label = f"critic: {critic} (mean of {len(curves)} seeds)"
        ax.plot(xs, mean, color=colours.get(critic), lw=2.2, marker="o", label=label)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("learner decisions")
    ax.set_ylabel(f"win rate against {a.bot}")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
