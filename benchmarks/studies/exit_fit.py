"""How much of the search's labels the network can learn: held-out fit of expert iteration.

    python benchmarks/studies/exit_fit.py CHECKPOINT --train ROUND.npz [ROUND.npz ...] \\
        --test ROUND.npz [--settings 2x1e-4 8x3e-4 ...] [--json]

CHECKPOINT is a `training.exit` checkpoint (``RUN/checkpoints/step_*.pt``), the ``--test``
file the labels its network's search made next (the round after it), and ``--train`` the
rounds before. For each setting ``EPOCHSxRATE`` the network is trained from the checkpoint
on the ``--train`` labels by the trainer's own update (`training.exit.exit_update`, the run's
``config.json`` for everything else), then the cross entropy and KL divergence of its policy
to the improved policy, and its value loss, are measured on both sets. The first row is the
checkpoint untrained.

The held-out KL says how far the network is from the search it learns from on positions it
has not seen; how much a setting lowers it is how much of the labels generalises. A training
KL that falls while the held-out one does not is fitting the labels' noise (a search's
improved policy from a few dozen simulations of sampled worlds is noisy); both staying high
is a learner that takes too few steps.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rummy500_env.agents.policy import PolicyAgent
from rummy500_env.training.exit import (
    Args,
    entropy,
    exit_update,
    label_losses,
    load_replay,
    value_targets,
)
from rummy500_env.training.settings import args_of


def fit(network: Any, labels: dict[str, np.ndarray], mix: float) -> dict[str, float]:
    """The network's cross entropy and KL to `labels`' improved policy, and its value loss."""
    obs, masks = torch.from_numpy(labels["obs"]), torch.from_numpy(labels["mask"])
    targets = torch.from_numpy(labels["policy"])
    values = torch.from_numpy(value_targets(labels, mix).astype(np.float32))
    with torch.inference_mode():
        cross_entropy, value_loss = label_losses(network, obs, masks, targets, values)
    return {
        "ce": cross_entropy.mean().item(),
        "kl": (cross_entropy - entropy(targets)).mean().item(),
        "value": value_loss.item(),
    }


def setting(text: str) -> tuple[int, float]:
    """``EPOCHSxRATE`` (``8x3e-4``) -> (8, 0.0003)."""
    epochs, _, rate = text.partition("x")
    try:
        return int(epochs), float(rate)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give EPOCHSxRATE, e.g. 8x3e-4") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--train", type=Path, nargs="+", required=True)
    ap.add_argument("--test", type=Path, required=True)
    ap.add_argument(
        "--settings", type=setting, nargs="+", default=[(2, 1e-4), (8, 1e-4), (8, 3e-4)]
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    run = a.checkpoint.parent.parent
    args = args_of(Args, json.loads((run / "config.json").read_text()))
    torch.manual_seed(a.seed)
    start = PolicyAgent.load(args.policy_name(), rules=args.game_rules()).network
    start.load_state_dict(torch.load(a.checkpoint, weights_only=True)["model"])
    train, test = load_replay(a.train), load_replay([a.test])
    rows = [{"epochs": 0, "rate": 0.0, "s": 0.0}]
    rows[0] |= {
        "train": fit(start, train, args.value_mix),
        "test": fit(start, test, args.value_mix),
    }
    for epochs, rate in a.settings:
        network = copy.deepcopy(start)
        optimizer = torch.optim.Adam(network.parameters(), lr=rate)
        t0 = time.time()
        exit_update(network, optimizer, train, replace(args, n_epochs=epochs), a.seed)
        row: dict[str, Any] = {"epochs": epochs, "rate": rate, "s": time.time() - t0}
        rows.append(
            row
            | {k: fit(network, d, args.value_mix) for k, d in (("train", train), ("test", test))}
        )
    if a.json:
        print(json.dumps({"train": len(train["obs"]), "test": len(test["obs"]), "rows": rows}))
        return 0
    print(f"{len(train['obs'])} training labels, {len(test['obs'])} held out")
    print(f"{'epochs x rate':>14} {'train CE':>9} {'train KL':>9} {'test CE':>8} {'test KL':>8}")
    for r in rows:
        name = "untrained" if not r["epochs"] else f"{r['epochs']} x {r['rate']:g}"
        tr, te = r["train"], r["test"]
        print(f"{name:>14} {tr['ce']:9.3f} {tr['kl']:9.3f} {te['ce']:8.3f} {te['kl']:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
