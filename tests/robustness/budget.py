"""Budgets of the property and fuzz tests.

In CI they run a few examples each, derandomized (the same examples every
run) so a failure is reproducible and the time is bounded. ``KVPERF_LONG=1``
runs the long version on demand: many more examples from fresh random seeds
(``python -m pytest tests/robustness`` with the variable set).
"""

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("KVPERF_LONG", "") not in ("", "0")


def budget(ci: int, long: int) -> settings:
    """Hypothesis settings: ``ci`` examples in CI, ``long`` with KVPERF_LONG=1."""
    return settings(max_examples=long if LONG else ci, deadline=None, derandomize=not LONG,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
