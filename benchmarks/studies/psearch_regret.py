"""How good the policy-guided search's choices are, position by position, against an oracle
that sees the hidden hand: a fast way to compare search settings before playing them out.

Positions come from the shipped model's self-play (standard rules, two players; a share of
the decisions with more than one legal move, seeded). For each, the oracle values the
policy's top ``--truth`` moves by prior in ``--worlds`` copies of the *real* position, only
the stock's order dealt again (the one thing no seat knows), each move played out by the
policy for both seats to the end of the hand (the ``rollout`` leaf, paired: every move meets
the same stocks). A choice's regret is the oracle's best value minus its value, in hand
points. Each setting then searches every position as it would in play (evidence from the
other seat's last turns included) and the table gives its mean regret below the policy's
own choice (the gain a decision; the 95% interval is paired over positions), how often it
left the policy's move and its simulations a decision.

    python benchmarks/studies/psearch_regret.py --hands 40 \\
        --setting m=4,ms=200,evidence=2 --setting m=4,ms=200,evidence=2,c=0.5

A setting is comma-separated ``key=value``: ``m`` (candidates), ``ms`` (CPU milliseconds a
decision), ``evidence`` (turns), ``c`` (c_scale), ``leaf``, ``gumbel`` (0/1), ``steps``
(Metropolis steps a world, `psearch.REJUVENATE_STEPS`). The oracle (the rollout leaf in the
studies' baseline, `_lab.PAPER`) has noisy values, the same for every setting: compare
settings on one run. Run it alone (the budget is read on CPU time).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from _lab import PAPER

from rummy500_env.agents import psearch
from rummy500_env.agents.opponent_turn import OpponentTurn, TurnWitness
from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.agents.psearch import PolicySearchAgent
from rummy500_env.engine.game import Game
from rummy500_env.engine.notation import Action
from rummy500_env.engine.numbers import int_option
from rummy500_env.engine.rules import Rules
from rummy500_env.engine.seat_view import SeatView
from rummy500_env.evaluation.stats import mean_ci
from rummy500_env.rl.actions import ActionCodec
from rummy500_env.rl.observation import ObservationEncoder

KEYS: dict[str, type] = {
    "m": int,
    "ms": float,
    "evidence": int,
    "c": float,
    "leaf": str,
    "gumbel": int,
    "steps": int,
}
"""A setting's keys and the type of each value."""
EVIDENCE_KEPT = 4
"""Turns of evidence kept with each position (a setting reads its last ``evidence``)."""


@dataclass
class Spot:
    """One position: what the seat saw, its legal moves, the other seat's last turns, the
    real game, and the oracle's values of the policy's top moves."""

    view: SeatView
    legal: list[Action]
    evidence: list[OpponentTurn]
    truth: Game
    moves: list[Action] = field(default_factory=list)
    values: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(0))
    prior: float = 0.0
    """The policy's prior of its own move."""


def parse_setting(text: str) -> dict[str, Any]:
    """``m=4,ms=200`` as a dict, every key one of `KEYS` with a value of its type."""
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key not in KEYS or not value:
            raise SystemExit(f"setting part {part!r}: use key=value with a key of {list(KEYS)}")
        try:
            out[key] = KEYS[key](value)
        except ValueError as e:
            raise SystemExit(f"setting part {part!r}: {key} takes a {KEYS[key].__name__}") from e
    return out


def collect(rules: Rules, model: PolicyAgent, hands: int, share: float, seed: int) -> list[Spot]:
    """Positions of the model's self-play, each with the evidence a following search holds."""
    encoder, codec = ObservationEncoder(rules), ActionCodec(rules)
    rng = random.Random(seed)
    spots = []
    for h in range(hands):
        game = Game.new(rules, seed=seed * 1_000_003 + h)
        witnesses = [TurnWitness(EVIDENCE_KEPT) for _ in range(rules.players)]
        while not game.is_hand_over:
            seat = game.current_player
            view, legal = game.seat_view(seat), game.legal_actions()
            action = codec.decode(game, model.act(encoder.encode(game, seat), codec.mask(game)))
            witness = witnesses[seat]  # what a search in the seat would have seen
            witness.see(view)
            witness.did(view, action)
            if len(legal) > 1 and rng.random() < share:
                spots.append(Spot(view, legal, list(witness.turns_for(view)), game.copy()))
            game.apply(action)
    return spots


def judge(oracle: PolicySearchAgent, spots: list[Spot], top: int, worlds: int) -> None:
    """The oracle's values (hand points) of each spot's top `top` moves by prior."""
    for k, spot in enumerate(spots):
        ordered = oracle.ordered(spot.view, spot.legal)
        root = psearch._Halving(oracle, spot.view, ordered)
        best = np.argsort(-root.logits, kind="stable")[:top]
        spot.moves = [ordered[i] for i in best]
        spot.prior = float(np.exp(root.logits[best[0]]))
        position = spot.truth.position()
        dealt = []
        for _ in range(worlds):
            stock = list(position.stock)
            oracle.rng.shuffle(stock)
            dealt.append(Game.from_position(replace(position, stock=tuple(stock))))
        with psearch._one_torch_thread():
            values = oracle._evaluate(dealt, spot.moves, spot.view.seat)
        spot.values = 100 * values.mean(axis=0)
        if (k + 1) % 50 == 0:
            print(f"oracle: {k + 1} of {len(spots)} positions", flush=True)


def regret(spot: Spot, action: Action) -> float:
    """The oracle's best value minus `action`'s; NaN for a move it did not value."""
    if action not in spot.moves:
        return math.nan
    return float(spot.values.max() - spot.values[spot.moves.index(action)])


def run_setting(
    rules: Rules, model: PolicyAgent, spots: list[Spot], setting: dict[str, Any], seed: int
) -> tuple[list[float], float, float]:
    """Per spot the gain over the policy's move (hand points; NaN where the setting chose a
    move the oracle did not value), the share of moves left, and the mean simulations."""
    steps = psearch.REJUVENATE_STEPS
    psearch.REJUVENATE_STEPS = setting.get("steps", steps)
    agent = PolicySearchAgent(
        rules,
        policy=model,
        ms=setting.get("ms", 200.0),
        candidates=setting.get("m", 4),
        leaf=setting.get("leaf", "rollout"),
        gumbel=bool(setting.get("gumbel", 0)),
        c_scale=setting.get("c", 1.0),
        seed=seed,
        clock=time.process_time,
    )
    k = setting.get("evidence", 0)
    gains, left, sims = [], 0, 0
    try:
        for spot in spots:
            ordered = agent.ordered(spot.view, spot.legal)
            evidence = spot.evidence[-k:] if k else []
            with psearch._one_torch_thread():
                action = agent._search(spot.view, ordered, agent.clock(), evidence).action
            sims += agent.last_simulations
            left += action != spot.moves[0]
            gains.append(regret(spot, spot.moves[0]) - regret(spot, action))
    finally:
        psearch.REJUVENATE_STEPS = steps
    return gains, left / len(spots), sims / len(spots)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", action="append", default=[], help="a search setting, key=value,…")
    ap.add_argument("--hands", type=int_option("hands"), default=40)
    ap.add_argument("--share", type=float, default=0.25, help="of the decisions measured")
    ap.add_argument(
        "--truth", type=int_option("truth", 2), default=8, help="moves the oracle values"
    )
    ap.add_argument("--worlds", type=int_option("worlds"), default=32, help="oracle stocks")
    ap.add_argument("--seed", type=int_option("seed", 0), default=0)
    ap.add_argument("--out", help="a JSON file for each position's figures (prior, gains)")
    args = ap.parse_args(argv)
    settings = [parse_setting(s) for s in args.setting] or [{"m": 4, "evidence": 2}]
    torch.set_num_threads(1)
    rules = Rules.coerce("standard")
    model = PolicyAgent.load("standard", rules=rules)
    start = time.perf_counter()
    spots = collect(rules, model, args.hands, args.share, args.seed)
    setting = PAPER | {"leaf": "rollout"}
    oracle = PolicySearchAgent(rules, policy=model, simulations=8, **setting, seed=args.seed)
    judge(oracle, spots, args.truth, args.worlds)
    spread = np.mean([s.values.max() - s.values[0] for s in spots])
    print(
        f"{len(spots)} positions from {args.hands} hands; the oracle's best beats the policy's "
        f"move by {spread:.2f} points a decision ({time.perf_counter() - start:.0f} s)",
        flush=True,
    )
    first: list[float] = []
    table: dict[str, Any] = {
        "prior": [float(s.prior) for s in spots],
        "kind": [s.moves[0].kind for s in spots],
        "spread": [float(s.values.max() - s.values[0]) for s in spots],
    }
    for text, setting in zip(args.setting or ["m=4,evidence=2"], settings, strict=True):
        begun = time.perf_counter()
        gains, left, sims = run_setting(rules, model, spots, setting, args.seed)
        valued = [g for g in gains if not math.isnan(g)]
        mean, lo, hi = mean_ci(valued)
        line = (
            f"{text:32s} gain {mean:+.2f} a decision ({lo:+.2f} to {hi:+.2f}); left the "
            f"policy's move {left:.1%}; {sims:.0f} simulations; "
            f"{len(gains) - len(valued)} unvalued; {time.perf_counter() - begun:.0f} s"
        )
        if first:
            both = [b - a for a, b in zip(first, gains, strict=True) if not math.isnan(a + b)]
            d, dlo, dhi = mean_ci(both)
            line += f"; against the first {d:+.2f} ({dlo:+.2f} to {dhi:+.2f})"
        else:
            first = gains
        print(line, flush=True)
        table[text] = gains
        if args.out:
            with open(args.out, "w") as f:
                json.dump(table, f)


if __name__ == "__main__":
    main()
