"""The ladder's Elo ratings with more pairs: the round-robin's pair table in docs/ladder.md
(the command's own output, read from the page) joined with the pairs of later tournaments
(their ``results.json``: a ``--field`` run that puts a new agent against every rung), fitted
again by maximum likelihood over every hand (`rummy500_env.evaluation.stats.elo`).

    python benchmarks/ladder_elo.py runs/ladder_gumbel/results.json

Bradley-Terry's likelihood depends on a pair's games only through its wins, losses and draws,
so the pair counts refit exactly what the hands would.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from rummy500_env.evaluation.stats import elo

PAGE = Path(__file__).resolve().parents[1] / "docs" / "ladder.md"
ROW = re.compile(r"^\s*(\S+) vs (\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s")
"""A pair's row of `training.evaluate`'s table: A, B, games, A's wins, B's wins."""


def page_pairs(text: str) -> list[tuple[str, str, int, int, int]]:
    """(a, b, wins of a, wins of b, draws) of each row of the page's first pair table (the
    first code block whose header reads "A vs B")."""
    blocks = text.split("```")[1::2]
    block = next(b for b in blocks if "A vs B" in b)
    out = []
    for line in block.splitlines():
        m = ROW.match(line)
        if m:
            a, b, games, wins_a, wins_b = m.groups()
            out.append((a, b, int(wins_a), int(wins_b), int(games) - int(wins_a) - int(wins_b)))
    return out


def result_pairs(path: Path) -> list[tuple[str, str, int, int, int]]:
    rows = json.loads(path.read_text())["pairs"]
    return [(r["a"], r["b"], r["wins_a"], r["wins_b"], r["draws"]) for r in rows]


def ratings(pairs: list[tuple[str, str, int, int, int]]) -> list[tuple[str, float, float]]:
    """(agent, Elo, 95% half-width), best first."""
    names = sorted({p[0] for p in pairs} | {p[1] for p in pairs})
    index = {name: k for k, name in enumerate(names)}
    results = []
    for a, b, wins_a, wins_b, draws in pairs:
        i, j = index[a], index[b]
        results += [(i, j, 1.0)] * wins_a + [(i, j, 0.0)] * wins_b + [(i, j, 0.5)] * draws
    value, half = elo(len(names), results)
    return sorted(zip(names, value, half, strict=True), key=lambda r: -r[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", type=Path, help="results.json of later tournaments")
    a = ap.parse_args()
    pairs = page_pairs(PAGE.read_text())
    for path in a.results:
        pairs += result_pairs(path)
    print(f"{len(pairs)} pairs, {sum(p[2] + p[3] + p[4] for p in pairs):,} hands")
    for name, value, half in ratings(pairs):
        print(f"{name:>16} {value:+5.0f} ± {half:.0f}")


if __name__ == "__main__":
    main()
