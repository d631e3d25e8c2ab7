"""Simulation and the command line of the toolkit (``python -m sim``).

``cli.main`` holds the ``predict`` and ``simulate`` commands; ``runio.batch``
the batch-prediction contract over reference CSV files. The discrete-event
engines live beside them.
"""
