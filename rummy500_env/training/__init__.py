"""Training and evaluation on top of the env and the agents (torch: the `train` extra).

Four trainers, each a script about its algorithm: `ppo` (self-play PPO over `selfplay`'s
batched games, with the learner's model and rollouts in `rollouts`, which `parallel` splits
with a second process under ``collect_workers: 2``), `rllib` (the same on Ray RLlib), `exit`
(expert iteration with the policy-guided search) and `exploit` (a best response to one
player); `common` holds what they share (settings and their checks, the run folder,
checkpoints, the exported policy, evaluations, the final report). `search_nets` trains the
search's own networks. `evaluate` is the tournament command over `tournament` (which games,
played where), `stats` and `reports`; `arena.play` plays one game. Run as ``python -m
rummy500_env.training.ppo`` / ``.rllib`` / ``.exit`` / ``.exploit`` / ``.search_nets`` /
``.evaluate`` (or, from a checkout, ``python -m training.ppo`` ...).
"""
