"""The policy networks side by side: size, `PolicyAgent.act` latency, batched forward and
training cost.

    python benchmarks/policy_networks.py [--json]

For each network (the flat MLP of the first shipped model, and the card network in the sizes
of the packaged configs) on one torch thread: weights, the median and 95th percentile of one
`PolicyAgent.act` call (numpy in, action out, checks included), a forward pass over 128
positions (one self-play step), and a forward plus backward pass over 1,024 positions (one PPO
minibatch). Positions are real observations from random games.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch

from rummy500_env.agents.networks import build_network
from rummy500_env.agents.policy import PolicyAgent, current_encoding
from rummy500_env.engine.rules import Rules
from rummy500_env.rl.rummy500_v0 import raw_env

NETWORKS = {
    "mlp 256-256 (first model)": {"kind": "mlp", "net_arch": [256, 256], "activation": "tanh"},
    "cards 32/2/128 (config ppo)": {"kind": "cards", "channels": 32, "blocks": 2, "hidden": 128},
    "cards 48/2/256 (config ppo_long)": {
        "kind": "cards",
        "channels": 48,
        "blocks": 2,
        "hidden": 256,
    },
}


def positions(n: int, seed: int = 0) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """`n` observations and masks of random play."""
    env, rng = raw_env(episode="hand"), np.random.default_rng(seed)
    env.reset(seed=seed)
    obs, masks = [], []
    while len(obs) < n:
        o = env.observe(env.agent_selection)
        obs.append(o["observation"])
        masks.append(o["action_mask"].astype(bool))
        env.step(int(rng.choice(np.flatnonzero(o["action_mask"]))))
        if all(env.terminations.values()):
            env.reset(seed=int(rng.integers(1 << 30)))
    return np.stack(obs), np.stack(masks)


def measure(
    spec: dict[str, Any], obs: np.ndarray[Any, Any], masks: np.ndarray[Any, Any]
) -> dict[str, float]:
    rules = Rules()
    net = build_network(rules, spec)
    meta = {"rules": rules.to_dict(), "encoding": current_encoding(rules), "network": spec}
    agent = PolicyAgent(net, meta)
    times = []
    for i in range(600):
        t = time.perf_counter()
        agent.act(obs[i % len(obs)], masks[i % len(obs)])
        times.append(time.perf_counter() - t)
    times = times[100:]
    batch = torch.as_tensor(obs[:128])
    with torch.no_grad():
        t = time.perf_counter()
        for _ in range(50):
            net(batch)
        forward = (time.perf_counter() - t) / 50
    train = torch.as_tensor(obs[:1024])
    t = time.perf_counter()
    for _ in range(5):
        out = net(train)
        torch.autograd.backward(out.square().mean())
    backward = (time.perf_counter() - t) / 5
    return {
        "weights": sum(p.numel() for p in net.parameters()),
        "act_median_ms": 1e3 * float(np.median(times)),
        "act_p95_ms": 1e3 * float(np.percentile(times, 95)),
        "forward_128_ms": 1e3 * forward,
        "train_1024_ms": 1e3 * backward,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    obs, masks = positions(1024)
    out = {name: measure(spec, obs, masks) for name, spec in NETWORKS.items()}
    if a.json:
        print(json.dumps(out))
        return
    print(
        f"{'network':<34}{'weights':>9}{'act p50':>9}{'act p95':>9}{'fwd 128':>9}{'train 1024':>11}"
    )
    for name, r in out.items():
        print(
            f"{name:<34}{r['weights']:>9,}{r['act_median_ms']:>7.2f}ms{r['act_p95_ms']:>7.2f}ms"
            f"{r['forward_128_ms']:>7.1f}ms{r['train_1024_ms']:>9.0f}ms"
        )


if __name__ == "__main__":
    main()
