"""``python -m training.rllib`` from a checkout: runs `rummy500_env.training.rllib`."""

import sys

from rummy500_env.training.rllib import main

if __name__ == "__main__":
    sys.exit(main())
