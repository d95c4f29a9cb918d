"""``python -m cfgmask`` runs the console script (:func:`cfgmask.app.cli.main`)."""

import sys

from cfgmask.app.cli import main

sys.exit(main())
