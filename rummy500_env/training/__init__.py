"""Training and evaluation on top of the env and the agents (torch, sb3-contrib: the `train`
extra). Run as ``python -m rummy500_env.training.ppo`` / ``.evaluate`` (or, from a checkout,
``python -m training.ppo`` / ``training.evaluate``)."""
