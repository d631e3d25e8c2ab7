"""Simulation and the command line of the toolkit (``python -m sim``).

``sim.cli`` holds the ``predict`` and ``simulate`` commands; ``sim.batch``
the batch-prediction contract over reference CSV files. The discrete-event
engines live beside them.
"""
