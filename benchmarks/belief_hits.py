"""How close the search's worlds come to the real hidden hand: of the cards a world deals the
other hand beyond those the seat knows it holds, the share that hand really holds. Worlds
dealt uniformly, by a hand belief and by whole-hand odds, on positions of the shipped
model's self-play (standard rules, two players; a fifth of the decisions, seeded).

    python -m training.search_nets --out runs/search_nets       # belief.pt, odds.pt
    python benchmarks/belief_hits.py --belief runs/search_nets/belief.pt \\
        --odds runs/search_nets/odds.pt --hands 200

A uniform deal's share is the hand's unknown cards over the unseen ones; a belief earns its
place by how far above that it deals. The interval is over positions (95%).
"""

from __future__ import annotations

import argparse
import random

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
    ap.add_argument("--belief", default="runs/search_nets/belief.pt", help="hand belief file")
    ap.add_argument("--odds", default="runs/search_nets/odds.pt", help="whole-hand odds file")
    ap.add_argument("--hands", type=int_option("hands"), default=200)
    ap.add_argument("--worlds", type=int_option("worlds"), default=16, help="a position")
    ap.add_argument("--seed", type=int_option("seed", 0), default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rules = Rules.coerce("standard")
    model = PolicyAgent.load("standard", rules=rules)
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    deals = {
        "uniform": PolicySearchAgent(rules, simulations=8, seed=args.seed),
        "belief": PolicySearchAgent(rules, simulations=8, seed=args.seed, belief=args.belief),
        "odds": PolicySearchAgent(rules, simulations=8, seed=args.seed, belief=args.odds),
    }
    shares: dict[str, list[float]] = {name: [] for name in deals}
    rng = random.Random(args.seed)
    for h in range(args.hands):
        game = Game.new(rules, seed=args.seed * 1_000_003 + h)
        while not game.is_hand_over:
            seat = game.current_player
            view = game.seat_view(seat)
            other = view.opponents[0]
            hidden = set(game.hand(other)) - set(view.known[other])
            if hidden and rng.random() < 0.2:
                for name, search in deals.items():
                    hits = [  # the known cards are never in `hidden` (one deck)
                        sum(c in hidden for c in w.hand(other))
                        for w in search.deal_worlds(view, args.worlds)
                    ]
                    shares[name].append(sum(hits) / (len(hits) * len(hidden)))
            obs = encoder.encode(game, seat)
            game.apply(codec.decode(game, model.act(obs, codec.mask(game))))
    for name, values in shares.items():
        mean, lo, hi = mean_ci(values)
        print(
            f"{name:8s} {mean:.3f} ({lo:.3f} to {hi:.3f}) of the dealt cards are in the hand, "
            f"{len(values)} positions x {args.worlds} worlds"
        )


if __name__ == "__main__":
    main()
