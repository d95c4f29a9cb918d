"""``python -m cfgmask`` runs the console script (:func:`cfgmask.cli.main`)."""

import sys

from .cli import main

sys.exit(main())
