"""``python -m training.search_nets`` from a checkout: runs `rummy500_env.training.search_nets`."""

import sys

from rummy500_env.training.search_nets import main

if __name__ == "__main__":
    sys.exit(main())
