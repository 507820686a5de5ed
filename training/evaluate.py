"""``python -m training.evaluate`` from a checkout: runs `rummy500_env.evaluation.evaluate`."""

import sys

from rummy500_env.evaluation.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
