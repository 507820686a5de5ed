"""``python -m training.jax_ppo`` from a checkout: runs `rummy500_env.training.jax_ppo`."""

import sys

from rummy500_env.training.jax_ppo import main

if __name__ == "__main__":
    sys.exit(main())
