"""Ranking agents, torch-free: `arena.play` plays one game, `tournament` decides which games a
tournament plays and where (a `pool.WorkerPool`, or Ray), `stats` the intervals and Elo,
`reports` the table and the files, and `evaluate` is the command (``python -m
training.evaluate`` from a checkout, ``python -m rummy500_env.evaluation.evaluate`` from an
install). Bots play without the ``train`` extra; a policy file needs torch only when it loads.
"""
