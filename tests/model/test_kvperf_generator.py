"""This repository's load generator (``generator = "kvperf"``): FNV hash, wire
keys, partitions and key draws, against scalar references re-typed here.

These were the tests of the former workload API (model/workload_legacy.py,
removed in issue 42), moved to the current one: model.ycsb, model.keys and
model.workload.evaluate with the kvperf generator and key layout. (The
former model's numbers are the current model's for that generator; its
brute-force share checks live on in test_workload.py.)"""

import math
import time
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from model import keys, workload as W, ycsb
from model.scenario import Scenario


def java_fnv(x: int) -> int:
    """FNV-1a written independently: bytes of the Java long, low byte first,
    then Java Math.abs on the signed 64-bit value."""
    h = 0xCBF29CE484222325
    for b in (x & (2**64 - 1)).to_bytes(8, "little"):
        h = ((h ^ b) * 1099511628211) % 2**64
    signed = int.from_bytes(h.to_bytes(8, "big"), "big", signed=True)
    return abs(signed) if signed != -2**63 else signed


def test_fnvhash64_known_values():
    assert ycsb.fnvhash64(0) == java_fnv(0)
    assert ycsb.fnvhash64(1) == java_fnv(1)
    assert ycsb.fnvhash64(0) == 6284781860667377211  # FNV-1a of 8 zero bytes, abs
    for x in (2, 255, 256, 10**10, -1, -5, 2**63 - 1):
        assert ycsb.fnvhash64(x) == java_fnv(x)


@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=50))
@settings(max_examples=30, deadline=None)
def test_fnvhash64_vectorized_matches_scalar(xs):
    assert ycsb.fnvhash64_np(np.array(xs, dtype=np.int64)).tolist() == [ycsb.fnvhash64(x) for x in xs]


def test_crc32_and_key_layout():
    recs = np.array([0, 1, 7, 123456, 99_999_999])
    rows = keys.wire_keys(keys.key_values(recs, "kvperf"), "kvperf", recs)
    for r, row in zip(recs, rows):
        k = keys.wire_key(int(r), "kvperf")
        assert bytes(row) == k and len(k) == 16
        assert int.from_bytes(k[:8], "big") == ycsb.fnvhash64(int(r))
        assert int.from_bytes(k[8:], "big") == r
    assert keys.crc32_rows(rows).tolist() == [zlib.crc32(bytes(row)) for row in rows]


def key_server(key: bytes, n: int, partition: str, buckets: int = 32768) -> int:
    """Both partition functions of this repository's keys, straight from
    docs/protocol.md: the top 32 bits split evenly over [0, 2^31), or the
    CRC32 bucket."""
    if partition == "range-even":
        return min(n - 1, (int.from_bytes(key[:4], "big") * n) >> 31)
    return (zlib.crc32(key) % buckets) * n // buckets


@pytest.mark.parametrize("n", [1, 2, 3, 16, 128])
def test_partition_functions_cover_all_servers(n):
    # fnvhash64 ends in Math.abs, so keys live in [0, 2^31) and the even
    # range split covers every server.
    recs = np.arange(10_000)
    wire = [keys.wire_key(i, "kvperf") for i in range(10_000)]
    for partition in ("range-even", "hash"):
        srv = keys.servers_of(recs, "kvperf", n, partition)
        assert set(srv.tolist()) == set(range(n))
        assert srv[:500].tolist() == [key_server(k, n, partition) for k in wire[:500]]
    assert max(int.from_bytes(k[:4], "big") for k in wire) < 2**31


def test_sampler_matches_analytic_pmf():
    rng = np.random.default_rng(12345)
    items, records, n = 2000, 997, 400_000
    recs = ycsb.sample_keynums(n, records, 0.99, rng, "zipf", generator="kvperf", items=items)
    zp = ycsb.ZipfParams.make(0.99, items)
    mass = np.bincount(ycsb.fnvhash64_np(np.arange(items)) % records,
                       weights=ycsb.rank_pmf(zp, items), minlength=records)
    freq = np.bincount(recs, minlength=records)
    exp = mass * n
    assert freq[mass == 0].sum() == 0  # records no rank folds onto never appear
    ok = exp > 5  # chi-square over records with enough expected counts
    chi2 = ((freq[ok] - exp[ok]) ** 2 / exp[ok]).sum()
    dof = int(ok.sum())
    assert chi2 < dof + 5 * math.sqrt(2 * dof)
    top = np.argsort(-mass)[:20]
    assert np.all(np.abs(freq[top] / n - mass[top]) <= 5 * np.sqrt(mass[top] / n))


def test_default_is_fast_and_tolerance_small():
    sc = Scenario.default().updated({"servers.count": 16, "switch.partition": "range-even",
                                     "workload.generator": "kvperf"})
    t = time.perf_counter()
    r = W.evaluate_scenario(sc)
    first = time.perf_counter() - t
    t = time.perf_counter()
    W.evaluate_scenario(sc)
    assert time.perf_counter() - t < 0.01        # remembered in memory
    assert first < 10  # generous for 2 shared cores; ~0.7 s measured
    assert r.tolerance < 1e-3 and 0.3 < r.hit_ratio < 0.5
    assert r.shares_nocache.sum() == pytest.approx(1.0, abs=1e-9)
