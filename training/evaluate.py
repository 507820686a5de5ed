"""``python -m training.evaluate`` from a checkout: runs `rummy500_env.training.evaluate`."""

import sys

from rummy500_env.training.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
