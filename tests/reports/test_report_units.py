"""Units inferred from column names, and numbers formatted with them."""

import pytest

from reports.units import fmt, label, unit_for


@pytest.mark.parametrize("col, unit", [
    ("wait_us", "µs"), ("pred_process_us", "µs"), ("timeout_ms", "ms"), ("t_s", "s"),
    ("mops", "MOPS"), ("pred_mops", "MOPS"), ("throughput_mops", "MOPS"), ("kops", "Kops"),
    ("qps", "QPS"), ("best_qps", "QPS"), ("cpu_total_pct", "%"), ("memtable_mb", "MiB"),
    ("latency_ns", "ns"), ("wait_us_12", "µs"), ("clients", "threads"),
    ("servers", "workers"), ("normalized_x", "×"), ("stalled_frac", "fraction"),
    ("system", ""), ("flushnum", "memtables"),
])
def test_unit_for(col, unit):
    assert unit_for(col) == unit


def test_label_names_prediction_and_unit():
    assert label("mops") == "throughput (MOPS)"
    assert label("pred_wait_us") == "predicted server wait (µs)"
    assert label("process_us_3") == "server process, server 3 (µs)"
    assert label("memtable_mb") == "memtable (MiB)"
    assert label("system") == "system"


def test_fmt_carries_units():
    assert fmt(0.0395, "MOPS") == "0.0395 MOPS"
    assert fmt(0.47, "fraction") == "47 %"
    assert fmt(2.1, "×") == "2.1×"
    assert fmt(1024, "threads") == "1\u202f024 threads"
    assert fmt(None, "µs") == "–"
    assert fmt(float("nan"), "µs") == "–"
