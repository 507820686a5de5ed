"""The trainers, on top of the env and the agents (torch: the `train` extra).

Four trainers, each a script about its algorithm: `ppo` (self-play PPO over `rl.selfplay`'s
batched games, with the model and its loss in `model` and the rollouts in `rollouts`, which
`parallel` splits across collection workers), `rllib` (the same on Ray RLlib), `exit` (expert
iteration with the policy-guided search) and `exploit` (a best response to one player). What
they share is `settings` (arguments, their checks, YAML and the command line, resume
compatibility) and `run` (the run folder, checkpoints, the exported policy, the final
evaluation and report). Tournaments are `rummy500_env.evaluation`'s. Run as ``python -m
rummy500_env.training.ppo`` / ``.rllib`` / ``.exit`` / ``.exploit`` (or, from a checkout,
``python -m training.ppo`` ...).
"""
