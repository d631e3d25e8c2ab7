"""``python -m sim``: the command line of :mod:`cli.main`, started by
:func:`runio.launch.launch` (signals handled before the heavy imports)."""

from runio.launch import launch

launch("cli.main:main")
