"""Entry point: ``python -m calibrate``."""

import sys

from .cli import main

sys.exit(main())
