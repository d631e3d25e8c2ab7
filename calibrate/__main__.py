"""Entry point: ``python -m calibrate`` (:mod:`calibrate.cli`), started by
:func:`runio.launch.launch` (signals handled before the heavy imports)."""

from runio.launch import launch

launch("calibrate.cli:main")
