"""What the studies in this folder share that the product does not carry.

The studies measured `PolicySearchAgent` variants against the paper's setting: eight
candidates, Gumbel noise, no evidence, the compiled playout leaf, which its constructor built
by default until its defaults became the ``psearch`` spec's (top two, no noise, rollouts, two
turns of evidence). `PAPER` keeps that setting here, so a study varies one knob of it as
before. Run a study from the repository root (``python benchmarks/studies/psearch_leaf.py``):
Python puts this folder first on the path, so ``import _lab`` finds this module.
"""

from __future__ import annotations

from typing import Any

PAPER: dict[str, Any] = {"candidates": 8, "leaf": "playout", "gumbel": True, "evidence": 0}
"""`PolicySearchAgent` keyword arguments of the studies' baseline setting."""
