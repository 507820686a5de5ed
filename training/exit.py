"""``python -m training.exit`` from a checkout: runs `rummy500_env.training.exit`."""

import sys

from rummy500_env.training.exit import main

if __name__ == "__main__":
    sys.exit(main())
