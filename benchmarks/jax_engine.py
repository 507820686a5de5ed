"""Random-play steps/s of the JAX engine (`rummy500_env.jax`) by batch size, next to the
compiled engine's decisions/s and `raw_env`'s AEC steps/s in the same run.

    python benchmarks/jax_engine.py                       # batches 1, 64, 1024, 16384
    python benchmarks/jax_engine.py --batch 1024 --rounds 5 --rules nordic --json

Each JAX figure is one jitted program: steps of a batch of fresh games under `lax.scan`
(about `--work` steps in all: `--work` / batch steps of each game, from 16 to 256, fewer than
a random game to 500 lasts, so that nearly every step counted is a live one),
each step drawing a uniformly random legal action for every game from its state's legal mask
(one random number a game: the k-th legal id) and stepping it, which computes the next
legal mask and the observation of the player to act, as pgx's `step` does. Steps of games
whose episode has ended are not counted (a game episode lasts hundreds of steps, so few end
within a run). The compile time of each batch size is reported apart (the first call);
the figure is the median of `--rounds` rounds, every measure interleaved in each round.

The engine's figure is `rummy500_env.bench`'s (random legal hands through `Game.apply`, one
core, no observation); `raw_env`'s is `bench`'s AEC loop, which reads the observation and the
mask every step: that is the fair comparison with the JAX engine, which makes both too.
Needs the jax extra. JAX runs on its default backend (`--platform cpu` to force the CPU).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

import rummy500_env
import rummy500_env.jax as rj
from rummy500_env import bench


def random_legal(key: Any, mask: Any) -> Any:
    """A uniformly random legal id per row of `mask` (batch, actions): the k-th legal one."""
    count = mask.sum(-1)
    k = jnp.floor(jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    return jnp.argmax(jnp.cumsum(mask, -1) > k[:, None], -1)


def program(env: Any, batch: int, steps: int) -> Any:
    """A jitted function of a key: deal `batch` games, play `steps` random legal steps of all
    of them; returns the number of steps played by games still in their episode."""
    init, step = jax.vmap(env.init), jax.vmap(env.step)

    def one(carry: Any, key: Any) -> tuple[Any, Any]:
        state, played = carry
        pick, deal = jax.random.split(key)
        action = random_legal(pick, state.legal_action_mask)
        live = ~(state.terminated | state.truncated)
        state = step(state, action, jax.random.split(deal, batch))
        return (state, played + live.sum()), None

    @jax.jit
    def run(key: Any) -> Any:
        first, rest = jax.random.split(key)
        state = init(jax.random.split(first, batch))
        (_, played), _ = jax.lax.scan(one, (state, 0), jax.random.split(rest, steps))
        return played

    return run


def measure_jax(run: Any, seed: int) -> float:
    """Steps/s of one call of `run` (already compiled)."""
    start = time.perf_counter()
    played = int(run(jax.random.PRNGKey(seed)).block_until_ready())
    return played / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", nargs="+", type=int, default=[1, 64, 1024, 16384])
    ap.add_argument("--work", type=int, default=2**20, help="steps of all games a round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="each engine and raw_env run")
    ap.add_argument("--rules", default="standard")
    ap.add_argument("--platform", help="JAX's backend (cpu, gpu); its default otherwise")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.platform:
        jax.config.update("jax_platforms", a.platform)
    env = rj.make(a.rules)
    runs: dict[int, Any] = {}
    compile_s: dict[int, float] = {}
    steps = {b: max(16, min(256, a.work // b)) for b in a.batch}
    for b in a.batch:
        runs[b] = program(env, b, steps[b])
        start = time.perf_counter()
        runs[b](jax.random.PRNGKey(0)).block_until_ready()
        compile_s[b] = time.perf_counter() - start
    figures: dict[str, list[float]] = {f"jax_batch_{b}": [] for b in a.batch}
    figures |= {"engine_decisions": [], "raw_env_steps": []}
    for r in range(a.rounds):
        for b in a.batch:
            figures[f"jax_batch_{b}"].append(measure_jax(runs[b], r + 1))
        figures["engine_decisions"].append(
            bench.bench_engine(a.seconds, a.rules)["decisions_per_s"]
        )
        figures["raw_env_steps"].append(
            bench.bench_env(a.seconds, wrapped=False, reps=1, rules=a.rules)["steps_per_s"]
        )
    out = {
        "rules": a.rules,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "build": "compiled" if rummy500_env.COMPILED else "pure",
        "steps_of_each_game": steps,
        "compile_s": compile_s,
        "medians": {k: statistics.median(v) for k, v in figures.items()},
        "rounds": figures,
    }
    if a.json:
        print(json.dumps(out))
        return
    print(f"{a.rules}: JAX on {out['backend']} ({', '.join(out['devices'])}), {out['build']} core")
    raw = out["medians"]["raw_env_steps"]
    for b in a.batch:
        rate = out["medians"][f"jax_batch_{b}"]
        print(
            f"  JAX, batch {b:>6,}: {rate:>12,.0f} steps/s  ({rate / raw:.2f}x raw_env; "
            f"compiled in {compile_s[b]:.1f} s)"
        )
    print(f"  engine:        {out['medians']['engine_decisions']:>12,.0f} decisions/s")
    print(f"  raw_env:       {raw:>12,.0f} steps/s")


if __name__ == "__main__":
    main()
