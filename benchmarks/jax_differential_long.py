"""The JAX engine against the engine and `raw_env` over more decisions than CI plays: every
configuration of tests/test_jax_differential.py (and two more shapes) for at least 20,000
random decisions each, checking at every one the legal mask, every seat's observation
features (bitwise), the position, rewards, scores and the end of the episode.

    python benchmarks/jax_differential_long.py                  # 20,480 decisions each
    python benchmarks/jax_differential_long.py --decisions 4096 --only standard

Needs the jax extra. A mismatch fails its assertion with the configuration named.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=20_480, help="per configuration")
    parser.add_argument("--only", help="configurations whose rules text contains this")
    args = parser.parse_args()
    from tests import test_jax_differential as t

    for rules, episode, reward in t.CONFIGS + t.LONG_ONLY:
        if args.only and args.only not in rules:
            continue
        start = time.perf_counter()
        seen = t.check_long(rules, episode, reward, args.decisions)
        took = time.perf_counter() - start
        print(f"{rules} ({episode}, reward {reward}): {seen} in {took:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
