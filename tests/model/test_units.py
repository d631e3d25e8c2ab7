"""Units read off column names: one table for the whole toolkit."""

import pytest

from model.units import unit_of
from reports.units import unit_for


@pytest.mark.parametrize("column, unit", [
    ("mops", "MOPS"), ("pred_wait_us", "us"), ("wait_us_3", "us"), ("latency_ns", "ns"),
    ("kops", "Kops"), ("qps", "QPS"), ("cpu_total_pct", "%"), ("memtable_mb", "MB"),
    ("normalized_x", "x"), ("server_process_avg", "us"), ("client_send_min", "us"),
    ("conns_per_core", "connections"), ("clients_by_littles_law", "clients"),
])
def test_unit_of(column, unit):
    assert unit_of(column) == unit


def test_reports_typeset_the_same_units():
    assert unit_for("wait_us") == "µs" and unit_for("runtime_x") == "×"
    assert unit_for("mops") == unit_of("mops")
