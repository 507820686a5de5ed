"""The statistics of `training.evaluate`: win-rate and mean intervals, and Elo ratings.

Plain functions of numbers (numpy only), so the tournament code and its tests read them apart
from how games are scheduled.
"""

from __future__ import annotations

import math

import numpy as np


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a win rate."""
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def mean_ci(xs: list[float], z: float = 1.96) -> tuple[float, float | None, float | None]:
    """Mean and its 95% normal interval; the interval is (None, None) under two samples: one
    sample has no spread to measure (written ``null`` in JSON, never ±Infinity, which JSON
    lacks), and no sample has no mean either (0.0 stands for it)."""
    a = np.asarray(xs, dtype=float)
    if a.size < 2:
        return (float(a.mean()) if a.size else 0.0, None, None)
    m = float(a.mean())
    h = z * float(a.std(ddof=1)) / math.sqrt(a.size)
    return (m, m - h, m + h)


def elo(k: int, results: list[tuple[int, int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood Bradley-Terry ratings on the Elo scale (mean 0) and their 95%
    half-widths. `results`: (i, j, score of i in [0, 1]).

    A wide Gaussian prior (sd 1000 Elo) keeps an all-wins record finite; the intervals come
    from the inverse information, projected onto mean-zero ratings.
    """
    scale = math.log(10) / 400  # Elo points -> natural log-odds
    prior = 1.0 / (1000 * scale) ** 2
    theta = np.zeros(k)
    info = np.eye(k) * prior
    for _ in range(100):
        grad = -prior * theta
        info = np.eye(k) * prior
        for i, j, s in results:
            p = 1 / (1 + math.exp(theta[j] - theta[i]))
            grad[i] += s - p
            grad[j] -= s - p
            w = p * (1 - p)
            info[i, i] += w
            info[j, j] += w
            info[i, j] -= w
            info[j, i] -= w
        step = np.linalg.solve(info, grad)
        theta += step
        if np.abs(step).max() < 1e-9:
            break
    center = np.eye(k) - 1.0 / k
    cov = center @ np.linalg.inv(info) @ center
    ratings = (theta - theta.mean()) / scale
    return ratings, 1.96 * np.sqrt(np.clip(np.diag(cov), 0, None)) / scale
