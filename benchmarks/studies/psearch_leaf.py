"""Which way of valuing a candidate is worth its time: `PolicySearchAgent` variants against
one opponent over duplicate hands (every deal played from both seats), at equal milliseconds.

    python benchmarks/studies/psearch_leaf.py --ms 50 --opponent model --deals 40 --leaf value
    python benchmarks/studies/psearch_leaf.py --ms 50 --opponent search:50ms --no-gumbel

Each deal is played twice with the seats swapped; a deal's margin is the mean of its two
hands' (search − opponent) hand-score differences, and the 95% interval is over deals (paired:
the luck of the cards cancels). Variants of the studies' baseline (`_lab.PAPER`) the agent
spec does not reach (``--leaf``, ``--candidates``, ``--c-scale``, ``--no-gumbel``) are set
here; `training.evaluate` plays the spec's defaults. The search's budget is read on this process's
CPU time unless ``--wall-clock``: on a machine shared with other jobs, equal CPU milliseconds
compare the variants fairly (an opponent that searches, ``search:50ms``, still reads the wall
clock).
Run it niced, one at a time.
"""

from __future__ import annotations

import argparse
import time

import torch
from _lab import PAPER

from rummy500_env.agents.psearch import LEAVES, PolicySearchAgent
from rummy500_env.agents.registry import make_agent
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.evaluation.arena import play
from rummy500_env.evaluation.stats import mean_ci


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=50.0, help="milliseconds a decision")
    ap.add_argument("--leaf", choices=LEAVES, default=PAPER["leaf"])
    ap.add_argument("--candidates", type=int_option("candidates"), default=PAPER["candidates"])
    ap.add_argument("--c-scale", type=float, default=1.0)
    ap.add_argument("--no-gumbel", action="store_true")
    ap.add_argument("--opponent", default="model", help="an agent spec")
    ap.add_argument(
        "--deals", type=int_option("deals"), default=40, help="deals, each played from both seats"
    )
    ap.add_argument("--seconds", type=float, default=90.0, help="stop after this long")
    ap.add_argument("--seed", type=int_option("seed"), default=0)
    ap.add_argument(
        "--wall-clock",
        action="store_true",
        help="budget the search on wall-clock time (default: this process's CPU time, so a "
        "loaded machine does not starve one variant more than another)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rules = Rules.coerce("standard")
    search = PolicySearchAgent(
        rules,
        ms=args.ms,
        **PAPER | {"leaf": args.leaf, "candidates": args.candidates, "gumbel": not args.no_gumbel},
        c_scale=args.c_scale,
        seed=args.seed,
        clock=time.perf_counter if args.wall_clock else time.process_time,
    )
    opponent = make_agent(args.opponent, rules, seed=args.seed + 1)
    margins: list[float] = []
    start = time.perf_counter()
    for deal in range(args.deals):
        seed = args.seed * 1_000_003 + deal
        pair = []
        for seat in (0, 1):
            agents = [search, opponent] if seat == 0 else [opponent, search]
            scores = play(agents, rules, seed=seed, episode="hand").hand_scores[0]
            pair.append(scores[seat] - scores[1 - seat])
        margins.append(sum(pair) / 2)
        if len(margins) % 10 == 0:
            print(f"{len(margins)} deals: {mean_ci(margins)[0]:+.1f} a hand", flush=True)
        if time.perf_counter() - start > args.seconds:
            break
    mean, lo, hi = mean_ci(margins)
    choice = "top-k" if args.no_gumbel else "gumbel"
    print(
        f"leaf={args.leaf} {choice} m={args.candidates} c_scale={args.c_scale} "
        f"{args.ms:g}ms vs {args.opponent}: {mean:+.1f} a hand (95% CI {lo:+.1f} to {hi:+.1f}), "
        f"{2 * len(margins)} hands, {time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
