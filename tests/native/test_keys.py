"""The load generator's key stream equals a pure-Python reference of YCSB.

Reference algorithms (YCSB core): Utils.fnvhash64, ZipfianGenerator with the
ScrambledZipfianGenerator constants (10^10 items, theta 0.99, precomputed
zetan), record key layout and partition functions of docs/protocol.md.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import native

pytestmark = pytest.mark.native

M64 = (1 << 64) - 1


def ref_fnvhash64(val: int) -> int:
    h = 0xCBF29CE484222325
    val &= M64
    for _ in range(8):
        h ^= val & 0xFF
        h = (h * 1099511628211) & M64
        val >>= 8
    if h >= 1 << 63:
        h -= 1 << 64
    return h if h == -(1 << 63) else abs(h)  # Java Math.abs


ITEMS = 10**10 + 1  # ZipfianGenerator(0, ITEM_COUNT): items = max - min + 1
THETA = 0.99
ZETAN = 26.46902820178302


def ref_zipf_rank(u: float) -> int:
    zeta2 = 1.0 + 0.5**THETA
    alpha = 1.0 / (1.0 - THETA)
    eta = (1.0 - (2.0 / ITEMS) ** (1.0 - THETA)) / (1.0 - zeta2 / ZETAN)
    uz = u * ZETAN
    if uz < 1.0:
        return 0
    if uz < 1.0 + 0.5**THETA:
        return 1
    return int(ITEMS * (eta * u - eta + 1.0) ** alpha)


def java_mod(a: int, b: int) -> int:
    r = abs(a) % b
    return r if a >= 0 else -r


def test_fnvhash64_matches_reference():
    rng = np.random.default_rng(5)
    xs = [0, 1, 2, 255, 256, 10**10, -1, -(1 << 63), (1 << 63) - 1] + [int(v) for v in rng.integers(-(1 << 62), 1 << 62, 500)]
    for x in xs:
        assert native.fnvhash64(x) == ref_fnvhash64(x), x


def test_fnvhash64_and_record_keys_match_the_model():
    from model import keys, ycsb
    for x in list(range(0, 2000, 7)) + [10**10, 123456789012]:
        assert native.fnvhash64(x) == ycsb.fnvhash64(x), x
    for i in (0, 1, 99, 10**8 - 1):
        assert native.record_key(i) == keys.wire_key(i, "kvperf")


def test_zipf_ranks_match_reference():
    u = np.random.default_rng(1).random(5000)
    u = np.concatenate([u, [0.0, 0.01, 0.0377, 0.0378, 0.5, 0.999999]])
    got = native.zipf_ranks(u)
    want = [ref_zipf_rank(float(x)) for x in u]
    assert got.tolist() == want


def test_scrambled_zipfian_matches_reference():
    u = np.random.default_rng(2).random(3000)
    records = 100_000_000
    got = native.ycsb_ranks(u, records)
    want = [java_mod(ref_fnvhash64(ref_zipf_rank(float(x))), records) for x in u]
    assert got.tolist() == want
    assert (got >= 0).all() and (got < records).all()


def test_zipfian_head_mass_matches_zeta():
    # Statistical check of the generator's own RNG: P(rank 0) = 1/zetan.
    recs = native.key_stream("zipfian", 10**8, 7, 200_000)
    top = ref_fnvhash64(0) % 10**8
    frac = float(np.mean(recs == top))
    assert abs(frac - 1 / ZETAN) < 0.004, f"P(hottest) = {frac:.4f}, expected {1 / ZETAN:.4f}"


def test_uniform_and_sequential_streams():
    seq = native.key_stream("sequential", 10, 1, 25)
    assert seq.tolist() == [i % 10 for i in range(25)]
    uni = native.key_stream("uniform", 1000, 3, 50_000)
    assert uni.min() >= 0 and uni.max() < 1000
    counts = np.bincount(uni, minlength=1000)
    assert counts.std() / counts.mean() < 0.3  # ~ sqrt(1/50) = 0.14 for a fair draw
    with pytest.raises(ValueError, match="distribution"):
        native.key_stream("pareto", 10, 1, 1)


def test_record_key_layout_and_partitions():
    for i in (0, 1, 12345, 10**8 - 1):
        k = native.record_key(i)
        assert k == (ref_fnvhash64(i) & M64).to_bytes(8, "big") + i.to_bytes(8, "big")
        for n in (1, 2, 3, 8):
            assert native.range_partition(k, n) == min(n - 1, (int.from_bytes(k[:4], "big") * n) >> 31)
            assert native.hash_partition(k, n) == (zlib.crc32(k) % 32768) * n // 32768
    with pytest.raises(ValueError, match="key"):
        native.range_partition(b"short", 2)
