"""How close the search's worlds come to the real hidden hand: of the cards a world deals the
other hand beyond those the seat knows it holds, the share that hand really holds. Worlds
dealt uniformly, resampled by the evidence of the other seat's last K turns (``--evidence``,
the agent following the seat), by a hand belief and by whole-hand odds, on positions of the
shipped model's self-play (standard rules, two players; a fifth of the decisions, seeded).

    python benchmarks/belief_hits.py --evidence 1 2 4 --hands 200
    python -m training.search_nets --out runs/search_nets       # belief.pt, odds.pt
    python benchmarks/belief_hits.py --belief runs/search_nets/belief.pt \\
        --odds runs/search_nets/odds.pt --hands 200

A uniform deal's share is the hand's unknown cards over the unseen ones; a belief earns its
place by how far above that it deals. The interval is over positions (95%).
"""

from __future__ import annotations

import argparse
import random
from typing import Any

import torch

from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.psearch import PolicySearchAgent
from rummy500_env.engine.game import Game
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder
from rummy500_env.training.stats import mean_ci


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--belief", help="hand belief file (python -m training.search_nets)")
    ap.add_argument("--odds", help="whole-hand odds file (python -m training.search_nets)")
    ap.add_argument(
        "--evidence",
        type=int_option("evidence", 1),
        nargs="*",
        default=[],
        help="turns of the other seat that weigh the worlds, a deal each",
    )
    ap.add_argument("--hands", type=int_option("hands"), default=200)
    ap.add_argument("--worlds", type=int_option("worlds"), default=16, help="a position")
    ap.add_argument("--seed", type=int_option("seed", 0), default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rules = Rules.coerce("standard")
    model = PolicyAgent.load("standard", rules=rules)
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    deals: dict[str, dict[str, Any]] = {"uniform": {}}
    deals |= {f"evidence {k}": {"evidence": k} for k in args.evidence}
    if args.belief:
        deals["belief"] = {"belief": args.belief}
    if args.odds:
        deals["odds"] = {"belief": args.odds}
    shares: dict[str, list[float]] = {name: [] for name in deals}
    rng = random.Random(args.seed)
    for h in range(args.hands):
        game = Game.new(rules, seed=args.seed * 1_000_003 + h)
        searches = {  # per seat: an agent that follows it through the hand
            (name, seat): PolicySearchAgent(
                rules, policy=model, simulations=8, seed=args.seed * 1_000_003 + h, **kw
            )
            for name, kw in deals.items()
            for seat in range(rules.players)
        }
        while not game.is_hand_over:
            seat = game.current_player
            view = game.seat_view(seat)
            other = view.opponents[0]
            hidden = set(game.hand(other)) - set(view.known[other])
            measured = hidden and rng.random() < 0.2
            obs = encoder.encode(game, seat)
            action = codec.decode(game, model.act(obs, codec.mask(game)))
            for name in deals:
                search = searches[name, seat]
                search.follow(view, action)
                if measured:
                    hits = [  # the known cards are never in `hidden` (one deck)
                        sum(c in hidden for c in w.hand(other))
                        for w in search.deal_worlds(view, args.worlds)
                    ]
                    shares[name].append(sum(hits) / (len(hits) * len(hidden)))
            game.apply(action)
        if (h + 1) % 20 == 0:
            print(f"{h + 1} hands", flush=True)
    for name, values in shares.items():
        mean, lo, hi = mean_ci(values)
        print(
            f"{name:12s} {mean:.3f} ({lo:.3f} to {hi:.3f}) of the dealt cards are in the "
            f"hand, {len(values)} positions x {args.worlds} worlds"
        )


if __name__ == "__main__":
    main()
