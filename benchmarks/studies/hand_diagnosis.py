"""Where an agent's points come from, hand by hand: A against B over duplicate hands (each
deal played from both seats), each hand taken apart for each side: the hand's score, the
points it put on the table (melds and lay-offs) and left in hand, jokers put down and left in
hand, who went out, and how often it took from the pile, dug, called "Rummy!" and passed
a call; and what it kept back: the turns it ended with a discard while a meld or a lay-off
was legal (``held_turns``), and of the points left in hand when the hand ended, those it
could have put down at its last discard (``caught_holding``) and those it had taken from
the pile (``left_from_pile``).

    python benchmarks/studies/hand_diagnosis.py model greedy \\
        --rules standard,jokers=2,rummy_calls=true
    python benchmarks/studies/hand_diagnosis.py model expert \\
        --rules standard,jokers=2,rummy_calls=true

Comparing the same agent's rows against two opponents shows which part of the game an
opponent punishes (the means are per hand, with the 95% interval of the paired A − B
difference of each row over deals).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import statistics
import sys
from collections import Counter
from typing import Any

from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.cards import JOKER
from rummy500_env.engine.game import Game
from rummy500_env.engine.melds import hand_values
from rummy500_env.engine.notation import Action
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.rl.opponents import choose

ROWS = (
    "score",
    "put_down",
    "left_in_hand",
    "caught_holding",
    "left_from_pile",
    "jokers_down",
    "jokers_left",
    "went_out",
    "takes",
    "digs",
    "calls",
    "passes",
    "moves",
    "held_turns",
)


def one_hand(rules: Rules, agents: list[Any], seed: int) -> list[dict[str, float]]:
    """Play one hand; per seat, the figures of `ROWS`."""
    g = Game.new(rules, seed=seed)
    codec, encoder = ActionCodec(rules), ObservationEncoder(rules)
    kinds: list[Counter[str]] = [Counter() for _ in agents]
    jokers_down = [0] * len(agents)
    held_turns = [0] * len(agents)
    playable: list[Counter[int]] = [Counter() for _ in agents]  # at the seat's last discard
    from_pile: list[Counter[int]] = [Counter() for _ in agents]  # taken, dug or called
    while not g.is_hand_over:
        p = g.current_player
        legal = g.legal_actions()
        if len(legal) == 1:
            a = legal[0]
        else:

            def observe() -> dict[str, Any]:
                return {"observation": encoder.encode(g, p), "action_mask": codec.mask(g)}  # noqa: B023

            a = codec.decode(g, choose(agents[p], g, codec, observe))
        kinds[p][a.kind] += 1
        if a.kind == "discard":
            playable[p] = _playable(legal)
            held_turns[p] += bool(playable[p])
        if a.kind in ("meld", "layoff"):
            jokers_down[p] += a.jokers.bit_count()
        before = Counter(g.hand(p))
        g.apply(a)
        if a.kind in ("take", "dig", "call"):
            from_pile[p] += Counter(g.hand(p)) - before
    values = hand_values(rules.scoring)
    scores = g.hand_scores()
    result = g.result()
    out = []
    for p in range(len(agents)):
        left = sum(values[c] for c in g.hand(p))
        held = playable[p] & Counter(g.hand(p))
        out.append(
            {
                "score": scores[p],
                "put_down": scores[p] + left,
                "left_in_hand": left,
                "caught_holding": sum(values[c] * n for c, n in held.items()),
                "left_from_pile": sum(
                    values[c] * n for c, n in (from_pile[p] & Counter(g.hand(p))).items()
                ),
                "jokers_down": jokers_down[p],
                "jokers_left": sum(1 for c in g.hand(p) if c == JOKER),
                "went_out": float(result.went_out == p),
                "takes": kinds[p]["take"],
                "digs": kinds[p]["dig"],
                "calls": kinds[p]["call"],
                "passes": kinds[p]["pass"],
                "moves": sum(kinds[p].values()),
                "held_turns": held_turns[p],
            }
        )
    return out


def _playable(legal: list[Action]) -> Counter[int]:
    """The hand's cards some legal meld or lay-off would put down (a joker as `JOKER`, as
    many as any one action uses): what a seat that discards now chooses to keep."""
    out: Counter[int] = Counter()
    for a in legal:
        if a.kind in ("meld", "layoff"):
            used = Counter(JOKER if a.jokers >> c & 1 else c for c in a.cards)
            out |= used
    return out


def deal(job: tuple[str, str, str, int]) -> tuple[dict[str, float], dict[str, float]]:
    """One deal from both seats: A's and B's figures, each the mean of its two seats."""
    a_spec, b_spec, rules_text, seed = job
    rules = Rules.parse(rules_text)
    a, b = make_agent(a_spec, rules, seed), make_agent(b_spec, rules, seed + 1)
    first = one_hand(rules, [a, b], seed)
    second = one_hand(rules, [b, a], seed)
    mean = {k: (first[0][k] + second[1][k]) / 2 for k in ROWS}
    theirs = {k: (first[1][k] + second[0][k]) / 2 for k in ROWS}
    return mean, theirs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--deals", type=int_option("deals", 2), default=200)
    ap.add_argument("--workers", type=int_option("workers", 1), default=2)
    ap.add_argument("--seed", type=int_option("seed"), default=0)
    args = ap.parse_args(argv)
    if Rules.parse(args.rules).players != 2:
        raise SystemExit("--rules: two players only (A against B, each deal from both seats)")
    jobs = [(args.a, args.b, args.rules, args.seed * 1_000_003 + 7 * i) for i in range(args.deals)]
    with mp.get_context("spawn").Pool(args.workers) as pool:
        pairs = pool.map(deal, jobs, chunksize=4)
    print(f"{args.a} (A) against {args.b} (B), {args.rules}, {args.deals} deals from both seats")
    print(f"{'per hand':>14} {'A':>8} {'B':>8} {'A - B (95% CI)':>24}")
    for k in ROWS:
        mine = [p[0][k] for p in pairs]
        theirs = [p[1][k] for p in pairs]
        diff = [x - y for x, y in zip(mine, theirs, strict=True)]
        m = statistics.fmean(diff)
        h = 1.96 * statistics.stdev(diff) / math.sqrt(len(diff))
        print(
            f"{k:>14} {statistics.fmean(mine):8.2f} {statistics.fmean(theirs):8.2f} "
            f"{m:+9.2f} ({m - h:+.2f} to {m + h:+.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
