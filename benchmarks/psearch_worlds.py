"""How much the policy-guided search loses to the way it deals its worlds: the same search
(`PolicySearchAgent`, the ``table`` leaf, or ``--leaf rollout``: the policy playing the hand
out) against ``model`` over duplicate hands, its worlds dealt four ways:

``uniform``  the other hand's unknown cards uniformly from the unseen ones (the default deal);
``belief``   by a hand belief's odds (``--belief``, `HandBelief`);
``odds``     by whole-hand odds (``--odds``, `HandOdds`): the belief's deal, resampled;
``true``     the other hand's true cards (a diagnostic, not a player: the search is told the
             hidden hand, so its worlds differ only in the stock's order). The observation
             the search encodes is the seat's own either way.

With ``--evidence K`` the deal's worlds are resampled by the other seat's last K turns (the
policy's odds of the moves it made in each world; `agents.opponent_turn`).

    python -m training.search_nets --out runs/search_nets     # table value, belief, odds
    python benchmarks/psearch_worlds.py --deal uniform --ms 50 --deals 100
    python benchmarks/psearch_worlds.py --deal belief --ms 50 --deals 100
    python benchmarks/psearch_worlds.py --deal odds --ms 50 --deals 100
    python benchmarks/psearch_worlds.py --deal true --ms 50 --deals 100
    python benchmarks/psearch_worlds.py --deal true --leaf rollout --ms 50 --deals 100
    python benchmarks/psearch_worlds.py --evidence 2 --leaf rollout --ms 200 --deals 200

Each deal is played twice with the seats swapped; a deal's margin is the mean of its two
hands' (search − model) hand-score differences, the 95% interval over deals. The budget is
read on this process's CPU time. Standard rules, two players. Run it alone.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch

from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.psearch import PolicySearchAgent
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training.stats import mean_ci

SURE = 1e9
"""A weight that deals a card to the hand that holds it before any other (``--deal true``)."""


class TrueHands(PolicySearchAgent):
    """The search told the other hands (``--deal true``): its worlds deal each hidden card
    where it really is, through the same weighted deal as a belief."""

    truth: Game | None = None

    def _weights(self, view: SeatView, root: np.ndarray[Any, Any]) -> list[list[float]] | None:
        assert self.truth is not None
        rows = []
        for q in view.opponents:
            row = [1 / SURE] * 53
            for c in self.truth.hand(q):
                row[c] = SURE
            rows.append(row)
        return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deal", choices=("uniform", "belief", "odds", "true"), default="uniform")
    ap.add_argument("--table", default="runs/search_nets/table.pt", help="table value file")
    ap.add_argument("--belief", default="runs/search_nets/belief.pt", help="hand belief file")
    ap.add_argument("--odds", default="runs/search_nets/odds.pt", help="whole-hand odds file")
    ap.add_argument(
        "--leaf",
        choices=("table", "rollout"),
        default="table",
        help="how a candidate is valued in a world: the table value, or the policy playing "
        "every seat to the end of the hand",
    )
    ap.add_argument(
        "--evidence",
        type=int_option("evidence", 0),
        default=0,
        help="the other seat's last turns whose moves weigh the worlds (0: none)",
    )
    ap.add_argument("--ms", type=float, default=50.0, help="CPU milliseconds a decision")
    ap.add_argument(
        "--candidates", type=int_option("candidates", 1), default=8, help="actions searched"
    )
    ap.add_argument("--no-gumbel", action="store_true", help="top-k candidates, no noise")
    ap.add_argument("--deals", type=int_option("deals"), default=100)
    ap.add_argument("--seed", type=int_option("seed"), default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rules = Rules.coerce("standard")
    kind = TrueHands if args.deal == "true" else PolicySearchAgent
    search = kind(
        rules,
        ms=args.ms,
        leaf=args.leaf,
        table=args.table if args.leaf == "table" else None,
        belief={"belief": args.belief, "odds": args.odds}.get(args.deal),
        gumbel=not args.no_gumbel,
        seed=args.seed,
        clock=time.process_time,
        evidence=args.evidence,
        candidates=args.candidates,
    )
    model = PolicyAgent.load("standard", rules=rules)
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    margins: list[float] = []
    start = time.perf_counter()
    for deal in range(args.deals):
        pair = []
        for seat in (0, 1):
            game = Game.new(rules, seed=args.seed * 1_000_003 + deal)
            while not game.is_hand_over:
                p = game.current_player
                if p == seat:
                    if isinstance(search, TrueHands):
                        search.truth = game
                    action = search.decide(game.seat_view(p), game.legal_actions())
                else:
                    action = codec.decode(
                        game, model.act(encoder.encode(game, p), codec.mask(game))
                    )
                game.apply(action)
            scores = game.hand_scores()
            pair.append(scores[seat] - scores[1 - seat])
        margins.append(sum(pair) / 2)
        if len(margins) % 20 == 0:
            print(f"{len(margins)} deals: {mean_ci(margins)[0]:+.1f} a hand", flush=True)
    mean, lo, hi = mean_ci(margins)
    print(
        f"deal={args.deal} evidence={args.evidence} leaf={args.leaf} m={args.candidates} "
        f"{'top-k' if args.no_gumbel else 'gumbel'} {args.ms:g}ms vs model: "
        f"{mean:+.1f} a hand (95% CI {lo:+.1f} to {hi:+.1f}), {2 * len(margins)} hands, "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
