"""The latency histogram's buckets (sim.counters): one definition, the edge
table, and the compiled kernel's binning (sim.fast_kernel.hist_bin) held to it."""

import math

import numpy as np
import pytest

from sim import counters as K
from sim import fast_kernel as F


def _latencies() -> np.ndarray:
    rng = np.random.default_rng(7)
    edges = K.hist_edges_us()
    return np.concatenate([
        10.0 ** rng.uniform(-3.0, 10.0, 50_000),         # every decade and beyond both ends
        rng.uniform(0.0, 5_000.0, 50_000),                # where the rack's latencies are
        edges, np.nextafter(edges, 0.0), np.nextafter(edges, np.inf),
        [0.0, -1.0, 5e-324, 0.1, 1e8, 1e300, np.inf, np.nan],
    ])


def test_a_bucket_holds_the_latencies_between_its_edges():
    edges = K.hist_edges_us()
    for k in (1, 20, 57, 179):
        assert K.hist_bin(edges[k]) == k
        assert K.hist_bin(np.nextafter(edges[k + 1], 0.0)) == k
        assert K.hist_bin(math.sqrt(edges[k] * edges[k + 1])) == k
    # below the second edge (zero, negative, NaN included): bucket 0; from the
    # last bucket's edge on: the last bucket
    for x in (0.0, -3.0, float("nan"), 0.05, np.nextafter(edges[1], 0.0)):
        assert K.hist_bin(x) == 0
    for x in (edges[K.HIST_BINS - 1], 1e12, float("inf")):
        assert K.hist_bin(x) == K.HIST_BINS - 1


def test_the_old_log10_rule_agrees_away_from_the_edges():
    # the rule the histogram had before the edge table: floor(20 log10(lat)) + 20
    rng = np.random.default_rng(3)
    for x in 10.0 ** rng.uniform(-0.9, 7.9, 20_000):
        assert K.hist_bin(x) == int(math.floor(math.log10(x) * 20)) + 20


def test_the_compiled_binning_is_the_definition():
    xs = _latencies()
    got = np.array([F.hist_bin(float(x)) for x in xs])
    want = np.array([K.hist_bin(float(x)) for x in xs])
    bad = np.nonzero(got != want)[0]
    assert len(bad) == 0, [(xs[i], want[i], got[i]) for i in bad[:5]]


@pytest.mark.parametrize("row", range(K.CELL_ROWS))
def test_a_cell_holds_at_most_one_edge(row):
    # what lets the compiled binning stop after one comparison
    lo = np.ldexp(1.0 + np.arange(2 ** K.CELL_BITS + 1) / 2 ** K.CELL_BITS, K.CELL_E0 + row)
    idx = np.searchsorted(K.hist_edges_us(), lo, side="right")
    assert np.all(np.diff(idx) <= 1)
