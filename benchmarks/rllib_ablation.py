"""RLlib's PPO against `training.ppo`'s per learner decision, one difference at a time
(docs/rllib.md, "Learning per decision"): each arm trains from scratch with the packaged
config for the same number of learner decisions, then plays ExpertAgent over 200 duplicate
games to 500 (`training.evaluate ... --seed 7`).

    python benchmarks/rllib_ablation.py --seeds 0 1 --out runs/rllib_ablation

Arms (``--arms``; the first three by default, one seed of each before the next seed):

* ``ppo``: ``python -m training.ppo`` (the reference);
* ``rllib:ppo``: ``python -m training.rllib --learner ppo`` (the packaged `MatchedPPOLearner`);
* ``rllib:rllib``: ``python -m training.rllib --learner rllib`` (RLlib's own PPO learner);
* ``rllib:rllib+value`` and any other ``rllib:LEARNER``: RLlib's learner with only the named
  of the matched learner's changes (``value``, ``advantages``, ``eps``: `rllib.MATCHES`);
* ``rllib:LEARNER:ENVS``: the same with ENVS envs per env runner instead of the packaged 32
  (``rllib:rllib:1`` samples as the runners did before they batched).

Runs are kept in ``OUT/ARM_sSEED``: a finished arm is never trained again, an interrupted one
resumes from its last checkpoint, and the evaluation is read back from its ``results.json``.
The table of every finished arm goes to ``OUT/ablation.md`` and the curves (the runs' own
evaluations against ExpertAgent, 40 games every 50,000 decisions) to ``OUT/curves.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

PLAYERS = 2
"""The packaged configs' table: the learner makes about 1/PLAYERS of RLlib's env steps."""
RLLIB_BATCH = 8192
"""configs/rllib.yaml's train_batch_size (env steps an iteration)."""
LEARNER_SHARE = 0.49
"""A little under the learner's share of env steps measured at two players (49.5%), so that
an RLlib run makes at least the decisions asked for."""
DEFAULT_ARMS = "ppo,rllib:ppo,rllib:rllib"


def arm_parts(arm: str) -> tuple[str, str, str]:
    """(kind, learner, envs) of ``ppo``, ``rllib:LEARNER`` or ``rllib:LEARNER:ENVS`` (the
    missing parts empty)."""
    kind, _, rest = arm.partition(":")
    learner, _, envs = rest.partition(":")
    return kind, learner, envs


def check_arm(arm: str) -> str:
    """`arm` itself, or ValueError when it is neither ``ppo`` nor ``rllib:LEARNER[:ENVS]``."""
    kind, learner, envs = arm_parts(arm)
    if arm != "ppo" and (kind != "rllib" or not learner or not (envs or "1").isdigit()):
        raise ValueError(f"{arm!r}: an arm is ppo, rllib:LEARNER or rllib:LEARNER:ENVS")
    if learner:
        from rummy500_env.training.rllib import learner_matches

        try:
            learner_matches(learner)
        except ValueError:
            raise ValueError(f"{arm!r}: training.rllib has no learner {learner!r}") from None
    return arm


def run_dir(out: Path, arm: str, seed: int) -> Path:
    """The run folder of `arm` at `seed`."""
    return out / f"{arm.replace(':', '_').replace('+', '_')}_s{seed}"


def train_command(arm: str, seed: int, decisions: int, run: Path, eval_every: int) -> list[str]:
    """The training command of `arm` (a fresh run, or ``--resume`` of an interrupted one)."""
    evals = ["--eval-games", "40", "--final-eval-games", "40", "--eval-bots", "expert"]
    if arm == "ppo":
        steps = math.ceil(decisions / 4096) * 4096  # whole rollouts of 64 games x 64 steps
        cmd = ["-m", "training.ppo", "--total-timesteps", str(steps)]
        cmd += ["--eval-every", str(eval_every)]
    else:
        _, learner, envs = arm_parts(arm)
        steps = math.ceil(decisions / LEARNER_SHARE / RLLIB_BATCH) * RLLIB_BATCH
        cmd = ["-m", "training.rllib", "--learner", learner, "--total-timesteps", str(steps)]
        cmd += ["--num-envs-per-env-runner", envs] if envs else []
        cmd += ["--eval-every", str(eval_every * PLAYERS)]
    if (run / "checkpoints").is_dir():
        return [sys.executable, "-m", cmd[1], "--resume", str(run), *cmd[2:]]
    return [sys.executable, *cmd, *evals, "--seed", str(seed), "--run-dir", str(run)]


def curve(run: Path) -> dict[int, float]:
    """The run's own evaluations against ExpertAgent, by learner decisions."""
    rows = list(csv.DictReader(open(run / "evaluations.csv")))
    steps = [int(r.get("learner_steps") or r["timesteps"]) for r in rows]
    return {s: float(r["win_rate_vs_expert"]) for s, r in zip(steps, rows, strict=True)}


def measured(run: Path) -> dict[str, float]:
    """Learner decisions, training seconds and the 200-game result against ExpertAgent."""
    state = json.loads((run / "state.json").read_text())
    pair = json.loads((run / "vs_expert" / "results.json").read_text())["pairs"][0]
    lo, hi = pair["win_rate_a_ci95"]
    return {
        "decisions": state.get("learner_steps", state["timesteps"]),
        "wall_s": state["wall_s"],
        "win": pair["win_rate_a"],
        "lo": lo,
        "hi": hi,
        "margin": pair["margin_a"],
    }


def report(out: Path, arms: list[str], seeds: list[int]) -> str:
    """The Markdown table of every finished run, with each arm's mean over its seeds."""
    lines = [
        "| arm | seed | learner decisions | training | vs ExpertAgent, 200 games (95% CI) "
        "| margin |",
        "|---|---|---|---|---|---|",
    ]
    means = []
    for arm in arms:
        wins = []
        for seed in seeds:
            run = run_dir(out, arm, seed)
            if not (run / "vs_expert" / "results.json").exists():
                continue
            m = measured(run)
            wins.append(m["win"])
            lines.append(
                f"| `{arm}` | {seed} | {m['decisions']:,.0f} | {m['wall_s']:,.0f} s | "
                f"{m['win']:.1%} ({m['lo']:.1%}–{m['hi']:.1%}) | {m['margin']:+.0f} |"
            )
        if wins:
            means.append(f"| `{arm}` | mean of {len(wins)} | | | {statistics.mean(wins):.1%} | |")
    return "\n".join(lines + means)


def plot(out: Path, arms: list[str], seeds: list[int]) -> Path:
    """Every finished run's curve against ExpertAgent, one colour an arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, arm in enumerate(arms):
        for j, seed in enumerate(seeds):
            run = run_dir(out, arm, seed)
            if not (run / "policy.pt").exists():
                continue
            c = curve(run)
            xs = sorted(c)
            label = arm if j == 0 else None
            ax.plot(xs, [c[x] for x in xs], color=f"C{i}", marker="o", lw=1.2, label=label)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("learner decisions")
    ax.set_ylabel("win rate against ExpertAgent (40 games)")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    path = out / "curves.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", default=DEFAULT_ARMS, help="ppo or rllib:LEARNER, by commas")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--eval-every", type=int, default=50_000, help="learner decisions")
    parser.add_argument("--games", type=int, default=200, help="against ExpertAgent, at the end")
    parser.add_argument("--out", type=Path, default=Path("runs/rllib_ablation"))
    a = parser.parse_args()
    try:
        arms = [check_arm(arm) for arm in a.arms.split(",")]
    except ValueError as e:
        parser.error(f"{e} (LEARNER: ppo, rllib, or rllib+ some of value, advantages, eps)")
    a.out.mkdir(parents=True, exist_ok=True)
    for seed in a.seeds:
        for arm in arms:
            run = run_dir(a.out, arm, seed)
            if not (run / "policy.pt").exists():
                cmd = train_command(arm, seed, a.decisions, run, a.eval_every)
                print("$", " ".join(cmd[1:]), flush=True)
                subprocess.run(cmd, check=True)
            if not (run / "vs_expert" / "results.json").exists():
                cmd = [sys.executable, "-m", "training.evaluate", str(run / "policy.pt")]
                cmd += ["expert", "--games", str(a.games), "--seed", "7"]
                cmd += ["--out", str(run / "vs_expert")]
                print("$", " ".join(cmd[1:]), flush=True)
                subprocess.run(cmd, check=True)
            table = report(a.out, arms, a.seeds)
            (a.out / "ablation.md").write_text(table + "\n")
            print(table, flush=True)
    print(f"wrote {a.out / 'ablation.md'} and {plot(a.out, arms, a.seeds)}")


if __name__ == "__main__":
    main()
