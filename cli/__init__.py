"""The command line of ``python -m sim``: parsing, the commands and their printed output.

``python -m sim`` stays the entry point (:mod:`sim.__main__` hands over to
:func:`cli.main.main`); the simulators themselves live in :mod:`sim`.
"""
