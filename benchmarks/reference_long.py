"""The engine against the independent reference (tests/test_reference.py) over many more
generated positions than CI runs, with the speed: positions (and applied actions) checked per
second, per property.

    nice -n 10 python benchmarks/reference_long.py              # the `long` profile: 20,000 each
    python benchmarks/reference_long.py --examples 2000 --seed 7   # fewer, reproducible

Without ``--seed`` every run explores new positions (and keeps failures in hypothesis's
example database, so the next run tries them first). A failure prints the position and
exits 1; docs/testing.md says how to turn it into a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=None, help="per property (long: 20000)")
    parser.add_argument("--seed", type=int, default=None, help="derandomize with this seed")
    args = parser.parse_args()
    os.environ["HYPOTHESIS_PROFILE"] = "long"
    from hypothesis import seed, settings

    import tests.conftest  # registers and loads the profiles

    if args.examples is not None:  # before the tests are decorated with the default settings
        settings.register_profile(
            "long_here", settings.get_profile("long"), max_examples=args.examples
        )
        settings.load_profile("long_here")
    from tests import test_reference

    tests = [
        test_reference.test_legal_actions_and_hand_scores_equal_the_references,
        test_reference.test_every_legal_action_leads_where_the_reference_says,
        test_reference.test_every_action_is_judged_as_the_reference_judges_it,
    ]
    print(f"max_examples={settings.default.max_examples} per property, seed={args.seed}")
    for test in tests:
        run = seed(args.seed)(test) if args.seed is not None else test
        before = dict(test_reference.CHECKED)
        start = time.perf_counter()
        run()
        took = time.perf_counter() - start
        positions = test_reference.CHECKED["positions"] - before["positions"]
        actions = test_reference.CHECKED["actions"] - before["actions"]
        line = f"{test.__name__}: {positions} positions in {took:.1f} s, {positions / took:.0f}/s"
        if actions:
            line += f"; {actions} actions applied, {actions / took:.0f}/s"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
