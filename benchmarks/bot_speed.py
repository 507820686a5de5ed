"""Bot decisions per second and the decisions themselves, on seeded positions.

    python benchmarks/bot_speed.py --json out.json [--rules standard] [--positions 400]

Positions come from seeded random play (the same on any version of the package); each bot
decides on every position where a seat is to act, through ``act(observation, action_mask)``
and, where the bot has it, through ``decide(seat_view, legal_actions)`` (the engine path the
package's own loops use). The decisions are written out, so two versions can be compared
decision by decision (issue 18: run this file on commit 103cd7c and on today's checkout, back
to back, interleaved).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from rummy500_env import Game, Rules

try:  # the layout before and after issue 18
    from rummy500_env.rl.actions import ActionCodec
    from rummy500_env.rl.observation import ObservationEncoder
except ImportError:  # pragma: no cover - commit 103cd7c
    from rummy500_env.actions import ActionCodec  # type: ignore[no-redef]
    from rummy500_env.observation import ObservationEncoder  # type: ignore[no-redef]
from rummy500_env.agents import ExpertAgent, GreedyAgent


def positions(rules: Rules, count: int, seed: int) -> list[Game]:
    rng = random.Random(seed)
    out: list[Game] = []
    s = 0
    while len(out) < count:
        g = Game.new(rules, seed=s)
        s += 1
        for _ in range(rng.randrange(120)):
            if g.is_hand_over:
                break
            g.apply(rng.choice(g.legal_actions()))
        if not g.is_hand_over:
            out.append(g)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="standard", help="a preset name or JSON fields")
    ap.add_argument("--positions", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3, help="timed passes; the best is kept")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
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
    summary = {k: round(v) for k, v in out.items() if k.endswith("_per_s")}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
