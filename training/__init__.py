"""Entry points for a checkout: ``python -m training.<trainer>`` for each trainer of
`rummy500_env.training` (``ppo``, ``rllib``, ``jax_ppo``, ``exit``, ``jax_exit``,
``exploit``) and ``python -m training.evaluate``.

The code lives in `rummy500_env.training` (installed with the package, so an installed wheel
trains too: ``python -m rummy500_env.training.ppo``); this folder is not installed.
"""
