"""``python -m statemeta``: the same as the ``statemeta`` command."""

import sys

from statemeta.cli import main

sys.exit(main())
