"""The trainers, on top of the env and the agents (torch: the `train` extra; the JAX trainers
need the `jax` extra too).

Six trainers, each a script about its algorithm: `ppo` (self-play PPO over `rl.selfplay`'s
batched games, with the model and its loss in `model` and the rollouts in `rollouts`, which
`parallel` splits across collection workers), `rllib` (the same on Ray RLlib), `jax_ppo` (the
same PPO on the JAX engine, a rollout and its update in one jitted call), `exit` (expert
iteration with the policy-guided search), `jax_exit` (expert iteration on the JAX engine,
taught by its Gumbel search) and `exploit` (a best response to one player). What they share is
`settings` (arguments, their checks, YAML and the command line, resume compatibility), `run`
(the run folder, checkpoints, the exported policy, the final evaluation and report) and, for
those that update with torch, `device`. Tournaments are `rummy500_env.evaluation`'s. Run as
``python -m rummy500_env.training.ppo`` / ``.rllib`` / ``.jax_ppo`` / ``.exit`` /
``.jax_exit`` / ``.exploit`` (or, from a checkout, ``python -m training.ppo`` ...).
"""
