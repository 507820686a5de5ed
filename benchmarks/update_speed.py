"""The PPO update's own speed (`training.ppo.ppo_update` on one rollout), by variant.

    python benchmarks/update_speed.py [--config ppo ppo_long] [--repeats 7] [--json]
    python benchmarks/update_speed.py --variants eager compile --profile
    python benchmarks/update_speed.py --threads 1   # torch's threads (the config's otherwise)
    python benchmarks/update_speed.py --variants eager --set channels=192 hidden=1024 device=cuda

Each config (a packaged name or a YAML path) collects one rollout of real positions with its
own network and pool, then runs the update on that same rollout under each variant, from the
same starting weights, interleaved (eager, compile, ..., eager, compile, ...) so that the
machine's drift falls on every variant alike; the figure is the median. The update's rate is
the rollout's learner decisions per second of update (its epochs included).

Variants (``--variants``):

* ``eager``: the update as `training.ppo` runs it;
* ``compile``: the model's forward pass through ``torch.compile`` (CPU inductor; its compile
  time is reported apart and left out of the median);
* ``split-run``: `CardBlock`'s run mixing as one matmul whose three slices are rolled and
  added, instead of rolling the input three ways and concatenating (the same numbers);
* ``conv``: the run mixing as a (1, 3) convolution with circular padding on channels-first
  tensors (the same numbers);
* ``mb2048x2``: minibatches of 2,048 and 2 epochs instead of 1,024 and 3 (fewer, larger
  steps: this one changes what is learned).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from train_throughput import parse_field

from rummy500_env.agents.networks import CardBlock
from rummy500_env.engine.numbers import int_option
from rummy500_env.training.ppo import ADAM_EPS, Trainer, args_from_dict, ppo_update
from rummy500_env.training.settings import load_yaml

VARIANTS = ("eager", "compile", "split-run", "conv", "mb2048x2")


def split_run_forward(self: CardBlock, h: torch.Tensor) -> torch.Tensor:
    """`CardBlock.forward` with the run mixing as one matmul, its slices rolled."""
    c = h.shape[-1]
    w = self.run.weight  # (C, 3C): the left neighbour's, the card's, the right neighbour's
    parts = F.linear(h, torch.cat([w[:, :c], w[:, c : 2 * c], w[:, 2 * c :]], 0))
    left, own, right = parts.split(c, dim=-1)
    run = torch.roll(left, 1, 2) + own + torch.roll(right, -1, 2) + self.run.bias
    mixed = (
        run
        + self.set(h.mean(dim=1, keepdim=True))
        + self.whole(h.mean(dim=(1, 2)))[:, None, None, :]
    )
    return h + torch.relu(mixed)


def conv_forward(self: CardBlock, h: torch.Tensor) -> torch.Tensor:
    """`CardBlock.forward` with the run mixing as a circular (1, 3) convolution."""
    c = h.shape[-1]
    kernel = self.run.weight.view(c, 3, c).permute(0, 2, 1)[:, :, None, :]  # (out, in, 1, 3)
    x = F.pad(h.permute(0, 3, 1, 2), (1, 1, 0, 0), mode="circular")
    run = F.conv2d(x, kernel, self.run.bias).permute(0, 2, 3, 1)
    mixed = (
        run
        + self.set(h.mean(dim=1, keepdim=True))
        + self.whole(h.mean(dim=(1, 2)))[:, None, None, :]
    )
    return h + torch.relu(mixed)


@contextmanager
def block_forward(forward: Callable[[CardBlock, torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """Every `CardBlock` runs `forward` inside the block."""
    saved = CardBlock.forward
    CardBlock.forward = forward  # type: ignore[method-assign]
    try:
        yield
    finally:
        CardBlock.forward = saved  # type: ignore[method-assign]


def one_rollout(config: str, overrides: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(args, model, rollout): one rollout of `config`'s games (with `overrides` of its
    fields) with its starting network, on its device."""
    with tempfile.TemporaryDirectory() as run:
        fields = load_yaml(config) | overrides
        fields |= {"bc_decisions": 0, "init_policy": None, "run_dir": run}
        args = args_from_dict(fields | {"progress": False})
        trainer = Trainer(args, resume=False)
        trainer.snapshot()
        rollout = trainer.collector.collect(
            trainer.model, args.n_steps, args.gamma, args.gae_lambda
        )
        model = copy.deepcopy(trainer.model)
        trainer.close()
        trainer.writer.close()
    return args, model, rollout


def same_numbers(model: Any, rollout: Any) -> dict[str, float]:
    """The largest difference of each rewritten block's logits and values from today's."""
    obs = rollout.obs.flatten(0, 1)[:512]
    with torch.no_grad():
        base = model(obs)
        out = {}
        for name, forward in (("split-run", split_run_forward), ("conv", conv_forward)):
            with block_forward(forward):
                other = model(obs)
            out[name] = max(float((a - b).abs().max()) for a, b in zip(base, other, strict=True))
    return out


def timed_update(args: Any, model0: Any, rollout: Any, variant: str) -> tuple[float, float]:
    """(seconds of one update, seconds of compiling first) of `variant`, from `model0`."""
    model = copy.deepcopy(model0)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=ADAM_EPS)
    run_args = copy.copy(args)
    compile_s = 0.0
    forward = CardBlock.forward
    if variant == "mb2048x2":
        run_args.minibatch_size, run_args.n_epochs = 2048, 2
    elif variant == "split-run":
        forward = split_run_forward
    elif variant == "conv":
        forward = conv_forward
    elif variant == "compile":
        model.heads = torch.compile(model.heads)
        t = time.perf_counter()
        ppo_update(model, optimizer, rollout, run_args, seed=0)  # compiles (and warms up)
        compile_s = time.perf_counter() - t
    with block_forward(forward):
        t = time.perf_counter()
        ppo_update(model, optimizer, rollout, run_args, seed=1)
        return time.perf_counter() - t, compile_s


def profile(args: Any, model: Any, rollout: Any) -> str:
    """torch.profiler's table of the eager update's most expensive operators."""
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, eps=ADAM_EPS)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        ppo_update(copy.deepcopy(model), optimizer, rollout, args, seed=0)
    return str(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


def measure(
    config: str,
    variants: list[str],
    repeats: int,
    show_profile: bool,
    threads: int | None,
    overrides: dict[str, Any],
) -> dict[str, Any]:
    args, model, rollout = one_rollout(config, overrides)
    args.threads = threads or args.threads
    torch.set_num_threads(args.threads)
    decisions = args.rollout_size
    if show_profile:
        print(profile(args, model, rollout))
    seconds: dict[str, list[float]] = {v: [] for v in variants}
    compile_s: dict[str, float] = {}
    for v in variants:  # warm-up (and the compile) outside the timed rounds
        _, compile_s[v] = timed_update(args, model, rollout, v)
    for _ in range(repeats):
        for v in variants:
            seconds[v].append(timed_update(args, model, rollout, v)[0])
    medians = {v: statistics.median(s) for v, s in seconds.items()}
    base = medians.get("eager")
    return {
        "config": config,
        "decisions": decisions,
        "threads": args.threads,
        "device": str(next(model.parameters()).device),
        "same_numbers": same_numbers(model, rollout),
        "variants": {
            v: {
                "median_s": medians[v],
                "decisions_per_s": decisions / medians[v],
                "speedup_vs_eager": None if base is None else base / medians[v],
                "runs_s": seconds[v],
                "compile_s": compile_s[v],
            }
            for v in variants
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", nargs="+", default=["ppo", "ppo_long"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--repeats", type=int_option("repeats"), default=7)
    ap.add_argument("--profile", action="store_true", help="the eager update's top operators")
    ap.add_argument("--threads", type=int_option("threads"), help="torch's (default: config's)")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="JSON values")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    overrides = dict(parse_field(item) for item in a.set)
    results = [measure(c, a.variants, a.repeats, a.profile, a.threads, overrides) for c in a.config]
    if a.json:
        print(json.dumps(results))
        return
    for r in results:
        print(
            f"{r['config']}: one update of {r['decisions']:,} decisions, {r['threads']} threads, "
            f"on {r['device']}"
        )
        print(f"  rewritten blocks, largest difference: {r['same_numbers']}")
        for v, m in r["variants"].items():
            extra = f", compiled in {m['compile_s']:.0f} s" if v == "compile" else ""
            print(
                f"  {v:<10} {m['median_s']:6.3f} s  {m['decisions_per_s']:8,.0f} decisions/s  "
                f"x{m['speedup_vs_eager']:.2f}{extra}"
            )


if __name__ == "__main__":
    main()
