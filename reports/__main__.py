"""``python -m reports``: see :mod:`reports.cli`; started by
:func:`runio.launch.launch` (signals handled before the heavy imports)."""

from runio.launch import launch

launch("reports.cli:main")
