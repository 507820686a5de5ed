"""Best responses in the training pool, PSRO-style: each round a best response to the learner
(`training.exploit`) joins the learner's opponent pool, the learner trains on against it
(`training.ppo`), and the next best response measures what that bought.

    python benchmarks/psro.py --rules standard,jokers=2,rummy_calls=true \\
        --start models/rummy500-ppo-jokers-calls.pt --config benchmarks/psro_jokers_calls.yaml \\
        --rounds 1 --br-budget 500000 --train-budget 500000 --out runs/psro_jk
    python benchmarks/psro.py ... -- --eval-every 100000      # flags for every exploit run

Round i (from 0) trains BR_i against the learner L_i (L_0 is ``--start``) in ``OUT/br_i``,
then continues L_i for ``--train-budget`` learner decisions in ``OUT/learner_{i+1}``:
``--config``'s settings (a YAML file or a packaged config), its pool's weights scaled to sum
to 1 − ``--weight`` and BR_0 … BR_i sharing ``--weight``. After the last round BR_rounds
measures the last learner. A best response's margin a hand over its learner is that learner's
edge (a lower bound on how exploitable it is). Every step is a run folder of its own: a
finished one is read, an interrupted one resumed, so the driver can be stopped and started
again with the same flags. The edges are printed and written to ``OUT/psro.md``; head-to-head
figures are `training.evaluate`'s (the learners' ``policy.pt``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from exploit_ladder import run_target

from rummy500_env.engine.numbers import int_option
from rummy500_env.evaluation.reports import signed_interval
from rummy500_env.training import ppo


def train_on(start: Path, responses: list[Path], out: Path, args: argparse.Namespace) -> Path:
    """The learner `start` trained on in `out` against ``--config``'s pool scaled to sum to
    1 − weight and `responses` sharing the weight; its policy file (read when done)."""
    if (out / "policy.pt").exists():
        return out / "policy.pt"
    if (out / "state.json").exists():
        parsed, resume = ppo.parse_args(["--resume", str(out)])
    else:
        argv = ["--config", args.config, "--rules", args.rules, "--init-policy", str(start)]
        argv += ["--bc-decisions", "0", "--total-timesteps", str(args.train_budget)]
        argv += ["--run-dir", str(out), "--seed", str(args.seed)]
        parsed, resume = ppo.parse_args(argv)
        total = sum(parsed.opponents.values())
        pool = {name: w / total * (1 - args.weight) for name, w in parsed.opponents.items()}
        pool |= {str(r): args.weight / len(responses) for r in responses}
        parsed.opponents = pool
        parsed.validate()
    return ppo.train(parsed, resume)


def edge(result: dict[str, Any]) -> str:
    figs = result["edge"]
    return f"{figs['margin']:+.1f} ({signed_interval(figs['margin_ci95'])}) by {figs['by']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--start", type=Path, required=True, help="the first learner's policy file")
    ap.add_argument("--config", default="ppo", help="the learner's training config")
    ap.add_argument("--rounds", type=int_option("rounds", 1), default=1)
    ap.add_argument("--br-budget", type=int_option("br-budget", 1), default=500_000)
    ap.add_argument("--train-budget", type=int_option("train-budget", 1), default=500_000)
    ap.add_argument(
        "--weight", type=float, default=0.3, help="the best responses' share of the pool"
    )
    ap.add_argument("--seed", type=int_option("seed"), default=0)
    ap.add_argument("--out", type=Path, default=Path("runs/psro"))
    ap.add_argument("exploit_flags", nargs="*", help="after --: flags for every exploit run")
    args = ap.parse_args(argv)
    if not 0 < args.weight < 1:
        ap.error(f"--weight is the best responses' share of the pool: in (0, 1), not {args.weight}")
    lines = ["| learner | its best response's edge a hand (95% CI) |", "|---|---|"]
    learner, responses = args.start, []
    for i in range(args.rounds + 1):
        br = args.out / f"br_{i}"
        result = run_target(
            str(learner), args.rules, br, args.br_budget, args.seed, args.exploit_flags
        )
        lines.append(f"| `{learner}` | {edge(result)} |")
        print(lines[-1], flush=True)
        if i == args.rounds:
            break
        responses.append(br / "policy.pt")
        learner = train_on(learner, responses, args.out / f"learner_{i + 1}", args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "psro.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
