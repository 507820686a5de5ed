"""``python -m rummy500_env``: play one seeded game between two simple agents and print it.

A quick look at the engine with nothing but the standard library: player 0 melds and lays
off whatever it can and discards its highest card, player 1 plays uniformly at random.
"""

from __future__ import annotations

import argparse
import random

from rummy500_env.game import Action, Game
from rummy500_env.melds import hand_values
from rummy500_env.rules import PRESETS, Rules


def simple_policy(game: Game, rng: random.Random) -> Action:
    """Draw from the stock, put down everything possible, discard the highest card."""
    legal = game.legal_actions()
    for kind in ("draw", "meld", "layoff"):
        for a in legal:
            if a.kind == kind:
                return a
    discards = [a for a in legal if a.kind == "discard"]
    if discards:
        values = hand_values(game.rules.scoring)
        return max(discards, key=lambda a: values[a.cards[0]])
    return rng.choice(legal)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rummy500_env", description=__doc__)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rules", default="standard", choices=sorted(PRESETS))
    ap.add_argument("--verbose", action="store_true", help="print every action")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    g = Game.new(Rules.preset(args.rules), seed=args.seed)
    while g.phase != "game_over":
        if g.phase == "hand_over":
            print(g, end="\n\n")
            g.next_hand()
            continue
        p = g.current_player
        a = simple_policy(g, rng) if p == 0 else rng.choice(g.legal_actions())
        if args.verbose:
            print(f"P{p}: {a}")
        g.apply(a)
    print(g)
    print(f"\nfinal totals {g.totals}; winner: player {g.winner} (P0 simple heuristic, P1 random)")


if __name__ == "__main__":
    main()
