"""``python -m reports``: see :mod:`reports.cli`."""

import sys

from .cli import main

sys.exit(main())
