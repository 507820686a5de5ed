"""Hypothesis profiles for the whole suite (see docs/testing.md).

``dev`` (the default) explores afresh on every run; ``ci`` (chosen when the environment has
CI set, as .ci/run's machine does) is derandomized with no example database, so a CI run is
reproducible; ``long`` runs many more examples, for benchmarks/reference_long.py; ``mutation``
fewer, derandomized, for benchmarks/mutation.py. Choose one with HYPOTHESIS_PROFILE=name.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=600, **_COMMON)
settings.register_profile("ci", max_examples=600, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
settings.register_profile(  # benchmarks/mutation.py: one test run per mutant, the same examples
    "mutation", max_examples=100, derandomize=True, database=None, **_COMMON
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
