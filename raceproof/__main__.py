"""``python -m raceproof``: the same command line as the ``raceproof`` console script."""

import sys

from raceproof.cli import main

sys.exit(main())
