"""Training and evaluation on top of the env and the agents (torch: the `train` extra).

Two trainers, each a script about its algorithm: `ppo` (self-play PPO over `selfplay`'s batched
games, which `parallel` splits with a second process under ``collect_workers: 2``) and `rllib`
(the same on Ray RLlib); `common` holds what they share (settings and their checks, the run
folder, checkpoints, the exported policy, evaluations, the final report).
`evaluate` is the tournament command over `tournament` (which games, played where), `stats`
and `reports`; `arena.play` plays one game. Run as ``python -m rummy500_env.training.ppo`` /
``.rllib`` / ``.evaluate`` (or, from a checkout, ``python -m training.ppo`` ...).
"""
