"""``python -m training.ppo`` from a checkout: runs `rummy500_env.training.ppo`."""

import sys

from rummy500_env.training.ppo import main

if __name__ == "__main__":
    sys.exit(main())
