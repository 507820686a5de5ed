"""What a policy-guided search takes from an opponent it knows: the search whose simulations
play the opponent's own moves, against that opponent.

    python benchmarks/studies/psearch_knows.py OPPONENT [--rules RULES] [--simulations 64]
                                       [--games 100] [--seed 0] [--paired RESULTS.json ...]

The search is `PolicySearchAgent.for_play`'s setting (the shipped policy made for the table,
its top two moves, the rollout leaf, the other seat's last two turns as evidence) with
``opponent`` set to a copy of OPPONENT (an agent spec). It plays OPPONENT on the duplicate
deals ``python -m training.evaluate X OPPONENT --episode hand --games N --seed S`` plays
(the same game seeds, each deal from both seats), so its margin a deal pairs with that
command's for any X: ``--paired`` takes those commands' ``results.json`` and prints the
difference a deal, with its 95% interval. Used to ask whether expert iteration against an
agent (``training.exit --opponents.AGENT``) has an expert to learn from: whether the search
that knows the agent beats it by more than the policy does.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from rummy500_env.agents.psearch import PolicySearchAgent
from rummy500_env.agents.registry import AgentSpecError, check_spec, make_agent
from rummy500_env.engine.rules import Rules
from rummy500_env.evaluation.arena import play
from rummy500_env.evaluation.stats import mean_ci
from rummy500_env.evaluation.tournament import Config, score_game, tasks_for


def agent(spec: str) -> str:
    """An agent spec, or argparse's error with the registry's words (what is allowed)."""
    try:
        return check_spec(spec)
    except AgentSpecError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def by_deal(games: list[dict]) -> dict[int, float]:
    """Each deal's mean margin over its seatings (a duplicate sample)."""
    margins: dict[int, list[float]] = {}
    for g in games:
        margins.setdefault(g["deal"], []).append(g["margin"])
    return {deal: float(np.mean(m)) for deal, m in margins.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("opponent", type=agent)
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--simulations", type=int, default=64)
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--paired", type=Path, nargs="*", default=[])
    a = ap.parse_args(argv)
    rules = Rules.parse(a.rules)
    cfg = Config(["search", a.opponent], games=a.games, rules=a.rules, episode="hand", seed=a.seed)
    games = []
    for task in tasks_for(cfg):  # training.evaluate's seeds: its play_task
        game_seed = cfg.seed * 1_000_003 + task.deal
        agents = []
        for seat, who in enumerate(task.seats):
            seed = game_seed * 7 + seat
            if who == 1:
                agents.append(make_agent(a.opponent, rules, seed))
                continue
            known = make_agent(a.opponent, rules, seed)  # a copy: the search's model of it
            agents.append(
                PolicySearchAgent.for_play(
                    rules, simulations=a.simulations, seed=seed, opponent=known
                )
            )
        result = play(agents, rules, seed=game_seed, episode="hand")
        games.append(vars(score_game(task, result, "hand")))
        print(f"deal {task.deal} seating {task.rotation}: {games[-1]['margin']:+.0f}", flush=True)
    ours = by_deal(games)
    m, lo, hi = mean_ci(list(ours.values()))
    wins = sum(g["winner"] == 0 for g in games)
    print(
        f"\nthe search knowing {a.opponent} against it: {m:+.1f} a hand ({lo:+.1f} to {hi:+.1f}), "
        f"{len(ours)} deals, {wins} of {len(games)} hands won"
    )
    for path in a.paired:
        data = json.loads(path.read_text())
        theirs = by_deal(data["games"])
        name = data["pairs"][0]["a"]
        common = sorted(set(ours) & set(theirs))
        m, lo, hi = mean_ci([ours[d] - theirs[d] for d in common])
        print(
            f"minus {name}'s margin on the same deals: {m:+.1f} ({lo:+.1f} to {hi:+.1f}), "
            f"{len(common)} deals"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
