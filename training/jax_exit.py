"""``python -m training.jax_exit`` from a checkout: runs `rummy500_env.training.jax_exit`."""

import sys

from rummy500_env.training.jax_exit import main

if __name__ == "__main__":
    sys.exit(main())
