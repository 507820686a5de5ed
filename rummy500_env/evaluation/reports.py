"""What ``training.evaluate`` shows and writes of a tournament's summary (`tournament.run`):
the printed table and Elo list, ``results.json``, ``pairs.csv`` and ``ratings.png``."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from rummy500_env.engine.files import write_atomically
from rummy500_env.engine.numbers import shown

PAIR_COLUMNS = (
    "a",
    "b",
    "games",
    "wins_a",
    "wins_b",
    "draws",
    "win_rate_a",
    "ci_low",
    "ci_high",
    "points_per_hand_a",
    "points_per_hand_b",
    "margin_a",
    "margin_ci_low",
    "margin_ci_high",
)
"""The header of ``pairs.csv`` (a field tournament adds `FIELD_COLUMNS`)."""
FIELD_COLUMNS = ("fair_share", "share_over_fair")


def print_field_table(summary: dict[str, Any]) -> None:
    """A field tournament: the first agent's win share against each field, beside the fair
    share, and its mean final margin over the field's mean."""
    players = len(summary["games"][0]["seats"]) if summary["games"] else 0
    print(
        f"\n{'A':>16} vs field of {'B':<12} {'games':>6} {'A wins':>7} "
        f"{'A win share (95% CI)':>23} {'fair':>6} {'x fair':>7} "
        f"{'mean final margin A-field (95% CI)':>36}"
    )
    for row in summary["pairs"]:
        lo, hi = row["win_rate_a_ci95"]
        print(
            f"{row['a']:>16} vs field of {row['b']:<12} {row['games']:>6} {row['wins_a']:>7} "
            f"{row['win_rate_a']:>8.1%} ({lo:.1%}-{hi:.1%}) {row['fair_share']:>6.1%} "
            f"{row['share_over_fair']:>7.2f} {row['margin_a']:>16.1f} "
            f"{margin_interval(row['margin_a_ci95'])}"
        )
    print(
        f"\n{players} players: A in one seat (each seat once per deal), B in the others; the "
        "lower end of A's interval above the fair share means A beats the field."
    )


def print_reply_counts(summary: dict[str, Any]) -> None:
    """For each agent that asks an endpoint (an ``llm:`` agent), its decisions, the requests
    that got no reply and the decisions settled by its fallback: those are not the model's,
    and a table of an endpoint that failed every request would rank the fallback."""
    counts = summary.get("reply_counts") or {}
    if not counts:
        return
    print(f"\n{'asks an endpoint':>16} {'decisions':>10} {'failed requests':>16} {'fallbacks':>9}")
    for agent, c in counts.items():
        share = c["fallbacks"] / c["decisions"] if c["decisions"] else 0.0
        print(
            f"{agent:>16} {c['decisions']:>10} {c['failed']:>16} {c['fallbacks']:>9} ({share:.1%})"
        )
    print(
        "A fallback is a decision the endpoint did not make: a legal action picked without it, "
        "after its replies failed or named none."
    )


def print_table(summary: dict[str, Any]) -> None:
    if summary["config"].get("field"):
        print_field_table(summary)
        print_reply_counts(summary)
        return
    ep = summary["config"]["episode"]
    margin_name = "mean hand margin" if ep == "hand" else "mean final margin"
    print(
        f"\n{'A':>16} vs {'B':<16} {'games':>6} {'A wins':>7} {'B wins':>7} "
        f"{'A win rate (95% CI)':>22} {'pts/hand A':>10} {'pts/hand B':>10} "
        f"{margin_name + ' A-B (95% CI)':>30}"
    )
    for row in summary["pairs"]:
        lo, hi = row["win_rate_a_ci95"]
        print(
            f"{row['a']:>16} vs {row['b']:<16} {row['games']:>6} {row['wins_a']:>7} "
            f"{row['wins_b']:>7} {row['win_rate_a']:>8.1%} ({lo:.1%}-{hi:.1%}) "
            f"{row['points_per_hand_a']:>10.1f} {row['points_per_hand_b']:>10.1f} "
            f"{row['margin_a']:>12.1f} {margin_interval(row['margin_a_ci95'])}"
        )
    print_reply_counts(summary)
    print("\nElo (maximum likelihood, mean 0):")
    for e in sorted(summary["elo"], key=lambda e: -e["elo"]):
        print(f"  {e['agent']:>16} {e['elo']:>8.0f} ± {e['ci95']:.0f}")


def margin_interval(bounds: list[float | None]) -> str:
    """A margin's interval in the table: ``(lo to hi)``, or what stands in for one a single
    deal cannot give (`stats.mean_ci`)."""
    lo, hi = bounds
    if lo is None or hi is None:
        return "(one deal: no interval)"
    return f"({lo:.1f} to {hi:.1f})"


def signed_interval(bounds: list[float | None]) -> str:
    """A margin's interval as the training tools print it, ``-1.2 to +3.4``, or what stands
    in for one a single deal cannot give (`stats.mean_ci`)."""
    lo, hi = bounds
    if lo is None or hi is None:
        return "one deal: no interval"
    return f"{lo:+.1f} to {hi:+.1f}"


def bound(x: float | None) -> str:
    """A margin interval's end in ``pairs.csv``: empty where one deal gives none."""
    return "" if x is None else f"{x:.2f}"


def folder_problem(folder: Path, flag: str) -> str | None:
    """What stops this process from writing in `folder` (given as `flag`), or None: it, or
    its nearest existing parent, must be a folder this process can write in. Checked before
    any game, so that a tournament's results are not lost at the end to an --out that is a
    file (or lies under one), or that cannot be written."""
    given = repr(str(folder))
    for place in (folder, *folder.parents):
        try:
            mode = place.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:  # a name too long, a folder that cannot be looked in
            return f"{flag} {shown(str(folder))}: {e.strerror or type(e).__name__}"
        if not stat.S_ISDIR(mode):
            if place == folder:
                return f"{flag} {given} is a file, not a folder: choose another {flag}"
            return f"{flag} {given} lies under {str(place)!r}, which is a file, not a folder"
        if not os.access(place, os.W_OK | os.X_OK):
            return f"{flag} {given}: cannot write in {str(place)!r}"
        return None
    return None


def write_outputs(summary: dict[str, Any], out: Path) -> list[str]:
    """``results.json`` (the whole summary), ``pairs.csv`` and, where matplotlib is installed
    (the train extra), ``ratings.png`` in `out`, each written atomically; the names written."""
    out.mkdir(parents=True, exist_ok=True)
    results, pairs = out / "results.json", out / "pairs.csv"
    write_atomically(results, lambda tmp: tmp.write_text(json.dumps(summary, indent=1)))
    field = bool(summary["config"].get("field"))

    def write_pairs(tmp: Path) -> None:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PAIR_COLUMNS + FIELD_COLUMNS if field else PAIR_COLUMNS)
            for r in summary["pairs"]:
                w.writerow(pair_row(r, field))

    write_atomically(pairs, write_pairs)
    if importlib.util.find_spec("matplotlib") is None:  # no train extra: no figure
        return [results.name, pairs.name]
    (plot_field if field else plot_ratings)(summary, out / "ratings.png")
    return [results.name, pairs.name, "ratings.png"]


def pair_row(r: dict[str, Any], field: bool) -> list[Any]:
    """One pair's row of ``pairs.csv``."""
    extra = [f"{r['fair_share']:.4f}", f"{r['share_over_fair']:.3f}"] if field else []
    return [
        r["a"],
        r["b"],
        r["games"],
        r["wins_a"],
        r["wins_b"],
        r["draws"],
        f"{r['win_rate_a']:.4f}",
        f"{r['win_rate_a_ci95'][0]:.4f}",
        f"{r['win_rate_a_ci95'][1]:.4f}",
        f"{r['points_per_hand_a']:.2f}",
        f"{r['points_per_hand_b']:.2f}",
        f"{r['margin_a']:.2f}",
        *(bound(x) for x in r["margin_a_ci95"]),
        *extra,
    ]


def plot_field(summary: dict[str, Any], path: Path) -> None:
    """A field tournament: the first agent's win share against each field with its interval,
    and the fair share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["pairs"]
    share = [r["win_rate_a"] for r in rows]
    err = [
        [s - r["win_rate_a_ci95"][0] for s, r in zip(share, rows, strict=True)],
        [r["win_rate_a_ci95"][1] - s for s, r in zip(share, rows, strict=True)],
    ]
    fig, ax = plt.subplots(figsize=(6, 1.5 + 0.6 * len(rows)))
    ax.barh([f"field of {r['b']}" for r in rows], share, xerr=err, color="tab:blue")
    ax.axvline(rows[0]["fair_share"], color="grey", ls="--", label="fair share")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"win share of {rows[0]['a']} (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_ratings(summary: dict[str, Any], path: Path) -> None:
    """The win-rate matrix of every pair beside the Elo ratings with their intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [e["agent"] for e in summary["elo"]]
    k = len(labels)
    matrix = np.full((k, k), np.nan)
    for r in summary["pairs"]:
        i, j = labels.index(r["a"]), labels.index(r["b"])
        matrix[i, j] = r["win_rate_a"]
        matrix[j, i] = 1 - r["win_rate_a"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6 + 1.2 * k, 4 + 0.3 * k))
    im = ax1.imshow(matrix, vmin=0, vmax=1, cmap="RdYlGn")
    ax1.set_xticks(range(k), labels, rotation=45, ha="right")
    ax1.set_yticks(range(k), labels)
    for i in range(k):
        for j in range(k):
            if not np.isnan(matrix[i, j]):
                ax1.text(j, i, f"{matrix[i, j]:.0%}", ha="center", va="center")
    ax1.set_title("win rate of row vs column")
    fig.colorbar(im, ax=ax1, fraction=0.046)
    elos = [e["elo"] for e in summary["elo"]]
    ax2.barh(labels, elos, xerr=[e["ci95"] for e in summary["elo"]], color="tab:blue")
    ax2.set_title("Elo (95% CI)")
    ax2.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
