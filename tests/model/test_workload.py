"""model.workload.evaluate and its sources against independent references.

The references here are re-typed from the public code's rules as
docs/workload.md states them (scalar Python, struct and zlib), and computed
by brute force over every rank and record of small key spaces.
"""

import csv
import math
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from model import keys, workload as W, workload_fit, workload_sources as ws, ycsb
from runio import workload_files
from model import workload_blocks as wb, workload_summary as wsum
from model.errors import InputError
from runio.inputs import read_observations
from model.scenario import Scenario, Switch, Workload
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]
M64 = (1 << 64) - 1


# ------------------------------------------------------ scalar references
def ref_fnv(x: int) -> int:
    h = 0xCBF29CE484222325
    for b in (x & M64).to_bytes(8, "little"):
        h = ((h ^ b) * 1099511628211) % 2**64
    s = int.from_bytes(h.to_bytes(8, "big"), "big", signed=True)
    return abs(s) if s != -2**63 else s


def ref_wire(keynum: int, insertorder="hashed") -> bytes:
    """FarReach Key.fromString("user" + ...) then Key.serialize."""
    k = ref_fnv(keynum) if insertorder == "hashed" else keynum
    name = "user" + str(k)
    v = int(name[4:].lstrip("0")) & M64
    keyhilo, keyhihi = v & 0xFFFFFFFF, v >> 32
    return (struct.pack(">II", 0, 0) + struct.pack(">I", keyhilo)
            + struct.pack(">H", keyhihi & 0xFFFF) + struct.pack(">H", keyhihi >> 16))


def ref_server(wire: bytes, n: int, partition: str, buckets=32768, bits=31) -> int:
    keyhihi = (int.from_bytes(wire[14:16], "big") << 16) | int.from_bytes(wire[12:14], "big")
    if partition == "range":
        return min(n - 1, (keyhihi >> 16) // (65536 // n))
    if partition == "range-even":
        return min(n - 1, (keyhihi * n) >> bits)
    b = zlib.crc32(wire) % buckets
    return b // (buckets // n) if buckets % n == 0 else b * n // buckets


def brute_stock(records, theta, items, n, partition, k, generator="ycsb"):
    zp = ycsb.ZipfParams.make(theta, items)
    p = ycsb.rank_pmf(zp, items)
    m = ycsb.modulus(records, generator)
    mass = np.bincount(ycsb.fnvhash64_np(np.arange(items)) % m, weights=p, minlength=m)
    mass = mass[:records] / mass[:records].sum()
    if generator == "kvperf":
        srv = keys.servers_of(np.arange(records), "kvperf", n, partition)
    else:
        srv = np.array([ref_server(ref_wire(i), n, partition) for i in range(records)])
    order = np.lexsort((np.arange(records), -mass))
    cached = np.zeros(records, bool)
    cached[order[:k]] = True
    nocache = np.bincount(srv, weights=mass, minlength=n)
    shares = np.bincount(srv, weights=np.where(cached, 0, mass), minlength=n)
    return mass, srv, cached, nocache, shares


def switch(n_keys=10_000, partition="range", cache=True, mode="write-back"):
    return Switch(cache=cache, mode=mode, cache_keys=n_keys, partition=partition)


# ----------------------------------------------------------- key layout
def test_key_names_and_wire_keys():
    assert ycsb.fnvhash64(0) == ref_fnv(0) == 6284781860667377211
    assert keys.ycsb_key_name(0) == "user6284781860667377211"
    assert keys.ycsb_key_name(7, "ordered") == "user7"
    for i in (0, 1, 2, 999, 10**8 - 1, 123456789):
        assert keys.wire_key(i) == ref_wire(i)
        assert keys.wire_key(i + 1, insertorder="ordered") == ref_wire(i + 1, "ordered")
        assert keys.farreach_key_value(keys.ycsb_key_name(i)) == ref_fnv(i)
    # synthetic: 12 zero bytes, the high then the low 16 bits of the key number
    assert keys.wire_key(0x12345678, "synthetic") == bytes(12) + b"\x12\x34\x56\x78"
    # kvperf (docs/protocol.md): fnvhash64(i) then i, big-endian
    assert keys.wire_key(5, "kvperf") == ref_fnv(5).to_bytes(8, "big") + (5).to_bytes(8, "big")


@pytest.mark.parametrize("name, why", [("user", "user"), ("user0", "zeros"), ("usr12", "user"),
                                       ("user12x", "decimal"), ("user99999999999999999999", "long")])
def test_key_value_rejects_what_java_rejects(name, why):
    with pytest.raises(ValueError, match=why):
        keys.farreach_key_value(name)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 16, 32, 48])
@pytest.mark.parametrize("partition", keys.PARTITIONS)
def test_partitions_match_the_reference(n, partition):
    recs = np.random.default_rng(n).integers(0, 10**8, 3000)
    got = keys.servers_of(recs, "farreach", n, partition)
    want = [ref_server(ref_wire(int(r)), n, partition) for r in recs]
    assert got.tolist() == want
    if partition == "range" and n > 1:   # Math.abs: no key reaches the upper half
        assert got.max() <= 32767 // (65536 // n) < n - 1
    else:
        assert set(got.tolist()) == set(range(n))


def test_ordered_keys_all_go_to_server_zero_under_range():
    recs = np.arange(1, 10**6, 997)
    for p in ("range", "range-even"):
        assert set(keys.servers_of(recs, "farreach", 8, p, insertorder="ordered").tolist()) == {0}


def test_synthetic_range_cycles_with_the_low_16_bits():
    k = np.arange(3 * 65536)
    s = keys.servers_of(k, "synthetic", 4, "range")
    assert np.array_equal(s, (k % 65536) // 16384)
    runs = keys.server_runs(1000, 3 * 65536 - 5, "synthetic", 4, "range")
    st_, en, srv = runs
    assert st_[0] == 1000 and en[-1] == 3 * 65536 - 5
    for a, b, v in zip(st_, en, srv):
        assert np.all(s[a:b] == v)


def test_a_long_periodic_range_is_counted_not_enumerated():
    """242 billion records in the synthetic layout are 3.7 million cycles of
    the range field; as runs that was 7 GiB at 261 servers and the process
    was killed (a soak scenario). Per-server counts are now computed from the
    cycle, equal to the runs' counts where those are affordable, and a long
    range's runs stay bounded, contiguous and exact in every server's count."""
    for recs in (3 * 65536 - 5, 1_000_003, 65536 * 40 + 17):
        for part in ("range", "range-even"):
            s, e, srv = keys.server_runs(0, recs, "synthetic", 261, part, "ordered")
            runs = np.bincount(srv, weights=(e - s).astype(float), minlength=261)
            assert np.array_equal(keys._ordered_counts(recs, "synthetic", 261, part), runs)
    lo = 777
    for hi in (242_544_773_754, 10**12):
        s, e, srv = keys.server_runs(lo, hi, "synthetic", 261, "range")
        assert len(s) < 2 * (keys.EXACT_CYCLES + 1) * 262
        assert s[0] == lo and e[-1] == hi and np.all(s[1:] == e[:-1]) and np.all(s < e)
        got = np.bincount(srv, weights=(e - s).astype(float), minlength=261)
        want = (keys._ordered_counts(hi, "synthetic", 261, "range")
                - keys._ordered_counts(lo, "synthetic", 261, "range"))
        assert np.array_equal(got, want)
        # the first cycles are exact, key by key
        k = np.arange(lo, lo + 5 * 65536)
        first = s < lo + 5 * 65536
        for a, b, v in zip(s[first], np.minimum(e[first], lo + 5 * 65536), srv[first]):
            assert np.all(keys.servers_of(k[a - lo:b - lo], "synthetic", 261, "range") == v)


# ------------------------------------------------- stock generator, exact
cases = st.tuples(
    st.integers(3, 20_000),                         # ranks
    st.integers(1, 2_000),                          # records
    st.sampled_from([0.0, 0.5, 0.99, 0.9999]),
    st.integers(1, 40),                             # servers
    st.sampled_from(list(keys.PARTITIONS)),
    st.integers(0, 2_500),                          # cache keys
    st.sampled_from(["ycsb", "kvperf"]),
)


@given(cases)
@settings(max_examples=25, deadline=None)
def test_exact_head_matches_brute_force(case):
    items, records, theta, n, part, k, gen = case
    spec = W.StockSpec(records=records, theta=theta, items=items, head=items, generator=gen,
                       layout="kvperf" if gen == "kvperf" else "farreach")
    wl = Workload(zipf_theta=theta, records=records)
    r = W.evaluate(wl, switch(k, part), n, spec)
    mass, _, cached, nocache, shares = brute_stock(records, theta, items, n, part,
                                                   min(k, records), gen)
    assert r.tail_mass == 0.0
    assert r.hit_ratio == pytest.approx(mass[cached].sum(), abs=1e-9)
    np.testing.assert_allclose(r.shares, shares, atol=1e-9)
    np.testing.assert_allclose(r.shares_nocache, nocache, atol=1e-9)
    assert r.shares.sum() == pytest.approx(1.0 - r.hit_ratio, abs=1e-9)


@given(cases, st.integers(10, 4000))
@settings(max_examples=25, deadline=None)
def test_tail_within_stated_tolerance(case, head):
    items, records, theta, n, part, k, gen = case
    spec = W.StockSpec(records=records, theta=theta, items=items, head=min(head, items),
                       generator=gen, layout="kvperf" if gen == "kvperf" else "farreach")
    r = W.evaluate(Workload(zipf_theta=theta, records=records), switch(k, part), n, spec)
    mass, _, cached, nocache, shares = brute_stock(records, theta, items, n, part,
                                                   min(k, records), gen)
    assert abs(r.hit_ratio - mass[cached].sum()) <= r.tolerance
    assert np.abs(r.shares - shares).max() <= r.tolerance
    assert np.abs(r.shares_nocache - nocache).max() <= r.tolerance


def test_default_is_stock_ycsb_and_the_public_range_split_idles_half_the_servers():
    sc = Scenario.default().updated({"switch.partition": "range"})
    assert W.evaluate_scenario(Scenario.default()).source == "ycsb"
    r = W.evaluate_scenario(sc)
    n = sc.servers.count
    assert r.source == "ycsb" and r.partition == "range"
    assert np.all(r.shares_nocache[n // 2:] == 0) and np.all(r.shares_nocache[: n // 2] > 0)
    assert r.tolerance < 1e-3
    assert r.shares.sum() == pytest.approx(1 - r.hit_ratio, abs=1e-9)
    # the cache flattens what the servers see
    busy = r.shares_nocache > 0
    assert np.all(r.server_hot_fraction[busy] < r.server_hot_fraction_nocache[busy])
    even = W.evaluate_scenario(sc.updated({"switch.partition": "range-even"}))
    assert np.all(even.shares_nocache > 0)
    assert even.hit_ratio == pytest.approx(r.hit_ratio, abs=1e-12)


def test_one_server_normalized_is_inverse_miss():
    for dist in ("zipf", "uniform", "sequential"):
        sc = Scenario.default().updated({"servers.count": 1, "workload.distribution": dist})
        r = W.evaluate_scenario(sc)
        assert r.normalized_x == pytest.approx(1 / (1 - r.hit_ratio))


def test_uniform_hit_is_cache_over_records():
    sc = Scenario.default().updated({"servers.count": 4, "switch.partition": "hash",
                                     "workload.distribution": "uniform", "workload.records": 5000,
                                     "switch.cache_keys": 500})
    r = W.evaluate_scenario(sc)
    assert r.hit_ratio == pytest.approx(0.1)
    frac = np.bincount(keys.servers_of(np.arange(5000), "farreach", 4, "hash"), minlength=4) / 5000
    np.testing.assert_allclose(r.shares_nocache, frac)
    np.testing.assert_allclose(r.shares, 0.9 * frac)


def test_read_only_cache_keeps_the_writes():
    """With entries always valid (no update window) a read-only cache answers
    exactly the reads of the write-back cache's keys (tests/model/test_netcache.py
    has the window)."""
    sc = Scenario.default().updated({"servers.count": 8, "switch.partition": "hash"})
    wb = W.evaluate_scenario(sc)
    ro = W.evaluate_scenario(sc.updated({"switch.mode": "read-only"}), update_window=0.0)
    r = sc.workload.read_ratio
    assert ro.hit_ratio == pytest.approx(r * wb.hit_ratio)
    np.testing.assert_allclose(ro.shares, wb.shares_nocache - r * (wb.shares_nocache - wb.shares))
    off = W.evaluate_scenario(sc.updated({"switch.cache": False}))
    assert off.hit_ratio == 0 and off.normalized_x == 1.0 and off.cached_keys == 0
    np.testing.assert_array_equal(off.shares, off.shares_nocache)


def test_bad_partition_and_servers():
    with pytest.raises(InputError, match="partition"):
        W.evaluate(Workload(), switch(partition="modulo"), 4)
    with pytest.raises(InputError, match="servers"):
        W.evaluate(Workload(), switch(), 0)


# ---------------------------------------------------- rank-ordered profiles
def brute_rank(items, theta, n, partition, k, layout="synthetic"):
    p = np.arange(1, items + 1, dtype=float) ** -theta
    p /= p.sum()
    srv = keys.servers_of(np.arange(items), layout, n, partition, insertorder="ordered")
    nocache = np.bincount(srv, weights=p, minlength=n)
    shares = np.bincount(srv[k:], weights=p[k:], minlength=n)
    return p, srv, nocache, shares


@pytest.mark.parametrize("partition", ["range", "range-even", "hash"])
@pytest.mark.parametrize("n", [1, 3, 4, 16])
def test_rank_profile_tail_runs_match_brute_force(partition, n):
    items, k = 700_000, 3000
    spec = W.RankSpec("zipf", 0.99, items, head=5000)     # most of it in the tail blocks
    r = W.evaluate(Workload(), switch(k, partition), n, spec)
    p, _, nocache, shares = brute_rank(items, 0.99, n, partition, k)
    assert r.hit_ratio == pytest.approx(p[:k].sum(), abs=1e-9)
    assert np.abs(r.shares_nocache - nocache).max() <= r.tolerance + 1e-9
    assert np.abs(r.shares - shares).max() <= r.tolerance + 1e-9
    if partition != "hash":
        assert r.tolerance < 1e-6


# -------------------------------------------------------- memtable window
def test_window_hit_is_che_over_the_same_popularity():
    """Per server: Σ_k m_k (1 - exp(-W m_k / M_i)) / Σ_k m_k over the keys that
    reach it (uncached), M_i the mass of the keys written to it."""
    items, records, n, k = 4000, 1500, 4, 50
    spec = W.StockSpec(records=records, items=items, head=items)
    wl = Workload(records=records)
    r = W.evaluate(wl, switch(k, "hash"), n, spec)
    mass, srv, cached, _, _ = brute_stock(records, 0.99, items, n, "hash", k)
    for window in (0.0, 10.0, 300.0, 5000.0, 1e9):
        got = W.window_hit_fraction(r, window)
        for i in range(n):
            m = mass[(srv == i) & ~cached]
            want = (m * -np.expm1(-window * m / m.sum())).sum() / m.sum()
            assert got[i] == pytest.approx(want, rel=2e-3, abs=1e-12)
    assert W.window_hit_fraction(r, 0.0).max() == 0.0
    assert W.window_hit_fraction(r, 1e12).min() > 0.999
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    assert W.window_hit_fraction(r, w, server=2) == pytest.approx(
        W.window_hit_fraction(r, 100.0)[2])


def test_window_hits_fall_behind_the_cache_and_under_read_only():
    sc = Scenario.default().updated({"servers.count": 4, "switch.partition": "hash"})
    off = W.evaluate_scenario(sc.updated({"switch.cache": False}))
    on = W.evaluate_scenario(sc)
    # entries always valid (tests/model/test_netcache.py: invalid entries' reads)
    ro = W.evaluate_scenario(sc.updated({"switch.mode": "read-only"}), update_window=0.0)
    win = 1e6
    assert np.all(W.window_hit_fraction(on, win) < W.window_hit_fraction(off, win))
    # read-only: cached keys' writes still fill the server's memtable, so fewer
    # of its reads (uncached keys only) find their key there
    assert np.all(W.window_hit_fraction(ro, win) < W.window_hit_fraction(on, win))
    # the seq-check lookups of a read-only server follow the writes, hot keys included
    assert np.all(W.window_hit_fraction(ro, win, lookups="writes")
                  > W.window_hit_fraction(ro, win, lookups="reads"))


def test_window_hits_are_computed_once_per_workload_across_racks(monkeypatch):
    """The rows of a plan that share a workload and server count ask the same
    memtable-window question; each compile builds a new result object, and the
    cache once keyed on it (a 1,000-row plan spent 0.9 s recomputing)."""
    from model.rack import compile_rack
    calls = []
    real = W._window_hit_fraction
    monkeypatch.setattr(W, "_window_hit_fraction",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    W._WINDOW_CACHE.clear()
    p = load_profile("tofino-testbed")
    sc = Scenario.default().updated({"servers.count": 4})
    first = compile_rack(sc, p)
    n = len(calls)
    assert n > 0
    again = compile_rack(sc.updated({"clients.timeout_ms": 100.0}), p)
    assert len(calls) == n
    np.testing.assert_array_equal(first.placement.shares, again.placement.shares)
    # another workload is another question
    compile_rack(sc.updated({"workload.zipf_theta": 0.9}), p)
    assert len(calls) > n


# ------------------------------------------------------------- sampling
def test_sampled_classes_follow_the_shares():
    sc = Scenario.default().updated({"servers.count": 4})
    r = W.evaluate_scenario(sc)
    rng = np.random.default_rng(11)
    n = 300_000
    cls = W.sample_classes(sc.workload, sc.switch, 4, n, rng)
    p = np.concatenate([[r.hit_ratio], r.shares])
    freq = np.bincount(cls + 1, minlength=5) / n
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 5 * se + r.tolerance)


def test_sampled_keynums_are_ycsbs():
    rng = np.random.default_rng(3)
    k = ycsb.sample_keynums(200_000, 1000, 0.99, rng)
    assert k.max() < 1000 and k.min() >= 0
    top = ycsb.fnvhash64(0) % 1001
    assert (k == top).mean() == pytest.approx(1 / ycsb.ZETAN / (1 - 1 / 1001), rel=0.05)


# --------------------------------------------------------------- sources
def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_measured_toml_and_farreach_json(tmp_path):
    sc = Scenario.default().updated({"servers.count": 4})
    path = write(tmp_path, "m.toml", "hit_ratio = 0.5\nload_ratio = [4, 2, 1, 1]\n"
                 "load_ratio_nocache = [0.7, 0.1, 0.1, 0.1]\n")
    r = W.evaluate_scenario(sc, path)
    np.testing.assert_allclose(r.shares, 0.5 * np.array([4, 2, 1, 1]) / 8)
    assert r.normalized_x == pytest.approx(0.7 / 0.25)
    assert any("skew assumed" in n for n in r.notes)
    assert 0 < W.window_hit_fraction(r, 1e5)[0] < 1
    stats = write(tmp_path, "s.json", '[{"totalOpsdone": 100, "perserverOpsdone": [30, 10, 10, 0],'
                  ' "perserverCachehits": [40, 5, 5, 0]}]')
    r = W.evaluate_scenario(sc, stats)
    assert r.hit_ratio == pytest.approx(0.5)
    np.testing.assert_allclose(r.shares, [0.3, 0.1, 0.1, 0.0])
    np.testing.assert_allclose(r.shares_nocache, [0.7, 0.15, 0.15, 0.0])
    off = W.evaluate_scenario(sc.updated({"switch.cache": False}), stats)
    np.testing.assert_allclose(off.shares, [0.7, 0.15, 0.15, 0.0])


@pytest.mark.parametrize("text, field, line", [
    ("hit_ratio = 0.5\nload_ratio = [1, 2, 3]\n", "load_ratio", None),          # 3 != 4 servers
    ("hit_ratio = 1.5\nload_ratio = [1, 1, 1, 1]\n", "hit_ratio", 1),
    ("hit_ratio = 0.5\n\nload_ratio = [1, -1, 1, 1]\n", "load_ratio", 3),
    ("hit_ratio = 0.5\nloadratio = [1, 1, 1, 1]\n", "loadratio", 2),
    ("hit_ratio = 0.5\nload_ratio = [1, 1, 1, 1]\ncache = false\n", "load_ratio", None),
    ("perserverOpsdone = [1, 1, 1, 1]\n", "perserverCachehits", None),
])
def test_measured_errors_are_located(tmp_path, text, field, line):
    sc = Scenario.default().updated({"servers.count": 4})
    path = write(tmp_path, "bad.toml", text)
    with pytest.raises(InputError) as e:
        W.evaluate_scenario(sc, path)
    assert e.value.source.endswith("bad.toml") and e.value.field == field
    if line is not None:
        assert e.value.line == line


def test_key_trace(tmp_path):
    lines = ["# a YCSB trace", "READ usertable user6284781860667377211 [ <all fields>]",
             "UPDATE usertable user6284781860667377211 [ field0=x ]",
             f"READ usertable {keys.ycsb_key_name(1)} [ <all fields>]", "",
             keys.ycsb_key_name(2), f"{keys.ycsb_key_name(3)},5"]
    path = write(tmp_path, "t.txt", "\n".join(lines) + "\n")
    sc = Scenario.default().updated({"servers.count": 4, "switch.partition": "hash",
                                     "switch.cache_keys": 1})
    r = W.evaluate_scenario(sc, path)
    counts = {0: 2, 1: 1, 2: 1, 3: 5}
    srv = {i: ref_server(ref_wire(i), 4, "hash") for i in counts}
    want = np.zeros(4)
    for i, c in counts.items():
        want[srv[i]] += c / 9
    np.testing.assert_allclose(r.shares_nocache, want)
    assert r.hit_ratio == pytest.approx(5 / 9)            # the cache holds the hottest key (3)


@pytest.mark.parametrize("bad, line", [("READ usertable\n", 1), ("user12\nuser1x3\n", 2),
                                       ("user12,0\n", 1), ("a b c d\n", 1)])
def test_key_trace_errors_name_the_line(tmp_path, bad, line):
    path = write(tmp_path, "t.txt", bad)
    with pytest.raises(InputError) as e:
        workload_files.trace(path)
    assert e.value.line == line and e.value.source == path


def test_profile_errors_are_located(tmp_path):
    path = write(tmp_path, "p.toml", 'kind = "workload-profile"\n[popularity]\norder = "rank"\n'
                 'theta = 0.99\n\n[popularity.items]\nvalue = "many"\n')
    with pytest.raises(InputError) as e:
        ws.load_source(path)
    assert e.value.field == "popularity.items" and e.value.line == 6
    with pytest.raises(InputError, match="embedded"):
        ws.load_source("no-such-profile")


# ----------------------------------------------------------- lab profile
def lab_data():
    return [str(ROOT / "data" / "farreach_runs.csv"), str(ROOT / "data" / "farreach_breakdown.csv")]


def test_lab_profile_explains_the_runs_it_was_fitted_on():
    """The shipped profile against the data it states as its source."""
    prof = ws.load_source("lab")
    assert {k for k, _ in prof.params} == {"theta", "items"}
    assert all(p.unit and p.source for _, p in prof.params)
    obs = read_observations(lab_data())
    for o in obs:
        if o.kind not in ("hit", "split"):
            continue
        sc = Scenario.default().updated({"servers.count": o.servers, "switch.cache": o.cache,
                                         "switch.partition": "range"})   # the lab's split
        r = W.evaluate_scenario(sc, prof)
        if o.kind == "hit":
            assert abs(r.hit_ratio - o.value[0]) <= 2 * o.sigma
        else:
            s = (r.shares if o.cache else r.shares_nocache)
            assert np.abs(s / s.sum() - np.array(o.value)).max() <= 2 * o.sigma


@pytest.mark.parametrize("fit_on, check", [("hit", "split"), ("split", "hit")])
def test_lab_fit_predicts_what_it_was_not_fitted_on(fit_on, check):
    obs = read_observations(lab_data())
    res = workload_fit.fit(obs, fit_on=fit_on)
    held = [(o, p) for o, p in res.checks if o.kind == check]
    assert held
    for o, p in held:
        assert np.abs(np.array(p) - np.array(o.value)).max() <= 2 * o.sigma


def test_fit_reads_per_server_lists_and_load_ratios(tmp_path):
    path = write(tmp_path, "r.csv", "id,system,servers,workload,normalized_x,wait_us,process_us,"
                 "wait_stat,mops,load_ratio\n"
                 "X1,nocache,2,zipf,,10|30,10|10,per-server,,\n"
                 "X2,farreach,2,zipf,,,,,,3|1\n"
                 "X3,farreach,1,zipf,2.0,,,,,\n")
    obs = read_observations([path])
    kinds = sorted((o.kind, o.servers, o.cache) for o in obs)
    assert kinds == [("hit", 1, True), ("split", 2, False), ("split", 2, True)]
    split = next(o for o in obs if o.kind == "split" and not o.cache)
    assert split.value == pytest.approx((2 / 3, 1 / 3))
    bad = write(tmp_path, "b.csv", "id,system,servers,workload,normalized_x\nX,farreach,1,zipf,two\n")
    with pytest.raises(InputError) as e:
        read_observations([bad])
    assert e.value.line == 2 and e.value.field == "normalized_x"


def test_runs_csv_header_is_what_the_fit_reads():
    with open(ROOT / "data" / "farreach_runs.csv", newline="") as fh:
        cols = next(csv.reader(fh))
    assert {"system", "servers", "normalized_x", "wait_us", "process_us", "wait_stat"} <= set(cols)


@pytest.fixture
def disk_store(tmp_path, monkeypatch):
    """The on-disk workload store the entry points install, in ``tmp_path``."""
    from runio import workload_cache
    monkeypatch.setenv("KVPERF_CACHE_DIR", str(tmp_path))
    previous = W.set_store(workload_cache.DiskStore())
    yield workload_cache
    W.set_store(previous)


def test_disk_cache_round_trip(tmp_path, disk_store):
    wsum.summary.cache_clear()
    sc = Scenario.default().updated({"servers.count": 8, "workload.records": 50_000})
    first = W.evaluate_scenario(sc)
    assert len(list(tmp_path.glob("workload-*.npz"))) == 1
    wsum.summary.cache_clear()
    wb.blocks.cache_clear()
    again = W.evaluate_scenario(sc)
    assert np.array_equal(first.shares, again.shares) and first.hit_ratio == again.hit_ratio
    assert np.array_equal(W.window_hit_fraction(first, 1e4), W.window_hit_fraction(again, 1e4))
    assert not again.shares.flags.writeable


def test_the_model_keeps_nothing_on_disk_unless_a_store_is_installed(tmp_path, monkeypatch):
    """The domain is pure: without a store its results stay in memory; the
    entry points install the disk store (runio.workload_cache.install())."""
    from model import workload_store
    from runio import workload_cache
    monkeypatch.setenv("KVPERF_CACHE_DIR", str(tmp_path))
    previous = W.set_store(None)
    try:
        sc = Scenario.default().updated({"servers.count": 5, "workload.records": 40_000})
        W.evaluate_scenario(sc)                      # a source no test evaluated before
        assert list(tmp_path.iterdir()) == []
        workload_cache.install()
        assert isinstance(workload_store.get_store(), workload_cache.DiskStore)
    finally:
        W.set_store(previous)


def test_the_folded_head_is_kept_on_disk_for_every_server_count(tmp_path, monkeypatch, disk_store):
    """The fold (ranks onto key numbers) does not depend on the server count:
    it is stored once, and a new server count reads it back, with the same
    shares as a fold computed afresh."""
    caches = (wsum.summary, wsum._base, wb.blocks, wb.stock_fold, wb.head_keys)
    for f in caches:
        f.cache_clear()
    sc = Scenario.default().updated({"servers.count": 8, "workload.records": 50_000})
    first = W.evaluate_scenario(sc)
    assert len(list(tmp_path.glob("fold-*.npz"))) == 1
    assert len(list(tmp_path.glob("headkeys-*.npz"))) == 1
    for f in caches:
        f.cache_clear()
    calls = []
    monkeypatch.setattr(wb, "fold_head", lambda spec: calls.append(spec))
    monkeypatch.setattr(keys, "partition_keys", lambda *a, **k: calls.append(a))
    other = W.evaluate_scenario(sc.updated({"servers.count": 12}))   # read from disk
    assert calls == [] and len(list(tmp_path.glob("fold-*.npz"))) == 1
    monkeypatch.undo()
    monkeypatch.setenv("KVPERF_CACHE_DIR", "off")
    for f in caches:
        f.cache_clear()
    fresh = W.evaluate_scenario(sc.updated({"servers.count": 12}))
    assert np.array_equal(other.shares, fresh.shares) and other.hit_ratio == fresh.hit_ratio
    assert np.array_equal(other.server_hot_fraction, fresh.server_hot_fraction)
    assert np.array_equal(W.evaluate_scenario(sc).shares, first.shares)


@pytest.mark.parametrize("partition", ["hash", "range", "range-even"])
@pytest.mark.parametrize("layout", ["farreach", "kvperf", "synthetic"])
def test_servers_from_partition_keys_are_servers_of(partition, layout):
    from model import keys
    recs = np.random.default_rng(2).integers(0, 10**9, 5000)
    for n in (1, 3, 16, 32, 100):
        pk = keys.partition_keys(recs, layout, partition, 32768, "hashed")
        assert np.array_equal(keys.servers_from_keys(pk, layout, n, partition, 32768),
                              keys.servers_of(recs, layout, n, partition, 32768, "hashed"))


def test_the_disk_cache_stays_within_its_budget_least_recently_used_out(tmp_path, monkeypatch):
    """A soak over workload settings made a 16 MB fold per generator setting
    and the cache grew to 2.4 GB: it is now kept within BUDGET, the entries
    least recently saved or read removed first."""
    import os
    from runio import workload_cache as wc
    monkeypatch.setenv("KVPERF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(wc, "BUDGET", 280_000)                     # room for 3 of them
    blob = {"a": np.arange(10_000, dtype=np.int64)}             # about 80 kB uncompressed
    paths = [wc.path_for("t", (i,)) for i in range(5)]
    for k, p in enumerate(paths[:3]):
        wc.save(p, blob, compress=False)
        os.utime(p, (1000 + k, 1000 + k))                       # saved in this order
    assert wc.load(paths[0]) is not None                       # read: now the most recent
    wc.save(paths[3], blob, compress=False)
    left = {p for p in paths if os.path.exists(p)}
    assert left == {paths[0], paths[2], paths[3]}               # paths[1] was least recent
    assert sum(os.path.getsize(p) for p in left) <= wc.BUDGET
    assert not [n for n in os.listdir(tmp_path) if ".tmp." in n]
    # a user's own file in the folder is never pruned, however old
    mine = tmp_path / "mine.npz"
    np.savez(mine, a=np.arange(100_000))
    os.utime(mine, (1, 1))
    wc.save(paths[4], blob, compress=False)
    assert mine.exists()


def test_hot_order_is_the_lexsort():
    """hot_mass's two stable sorts give np.lexsort((-q, server)), ties included."""
    rng = np.random.default_rng(4)
    for trial in range(100):
        N, n = int(rng.integers(0, 2000)), int(rng.integers(1, 40))
        q = rng.choice([0.0, -0.0, 0.25, 1.0], N) if trial % 2 else rng.random(N)
        srv = rng.integers(0, n, N)
        assert np.array_equal(wsum.by_server_then_mass(q, srv, n), np.lexsort((-q, srv)))
    srv = rng.integers(0, 40_000, 500)          # past int16: the general stable sort
    q = rng.random(500)
    assert np.array_equal(wsum.by_server_then_mass(q, srv, 40_000), np.lexsort((-q, srv)))


def test_scenario_workload_keys_are_declared_and_in_sync():
    sc = Scenario.default()
    assert sc.workload == Workload() and sc.switch == Switch()
    assert (sc.workload.generator, sc.workload.insertorder, sc.workload.profile) == ("ycsb", "hashed", "")
    for key, bad in (("switch.partition", "modulo"), ("workload.generator", "java"),
                     ("workload.insertorder", "random")):
        with pytest.raises(InputError) as e:
            sc.updated({key: bad})
        assert e.value.field == key
    assert sc.updated({"switch.partition": "range-even"}).switch.partition == "range-even"
    assert Scenario.from_mapping(sc.to_dict()) == sc


def test_scrambled_profile_is_the_stock_generator_with_its_parameters(tmp_path):
    sc = Scenario.default().updated({"servers.count": 4, "switch.partition": "hash"})
    same = write(tmp_path, "same.toml", 'kind = "workload-profile"\n[popularity]\n'
                 'order = "scrambled"\ntheta = { value = 0.99, unit = "1", source = "test" }\n')
    a, b = W.evaluate_scenario(sc), W.evaluate_scenario(sc, same)
    np.testing.assert_array_equal(a.shares, b.shares)
    skewed = write(tmp_path, "skewed.toml", 'kind = "workload-profile"\n[popularity]\n'
                   'order = "scrambled"\ntheta = 0.9999\n')
    assert W.evaluate_scenario(sc, skewed).hit_ratio > a.hit_ratio


@pytest.mark.parametrize("dist", ["uniform", "sequential"])
def test_a_profile_keeps_its_layout_but_not_its_popularity_off_zipf(dist):
    """The lab's rank profile under a uniform or sequential run: no hot keys
    (the notes' F077, uniform-seq: "no load imbalance"), every server an even
    share of the range split, the cache hitting only its share of the records;
    the same profile under zipf sends most NoCache requests to server 0."""
    sc = Scenario.default().updated({"servers.count": 4, "switch.partition": "range",
                                     "workload.profile": "lab"})
    zipf = W.evaluate_scenario(sc)
    flat = W.evaluate_scenario(sc.updated({"workload.distribution": dist}))
    assert zipf.shares_nocache.max() > 0.6
    np.testing.assert_allclose(flat.shares_nocache, 0.25, atol=0.01)
    np.testing.assert_allclose(flat.shares, 0.25, atol=0.01)
    assert flat.hit_ratio == pytest.approx(sc.switch.cache_keys / sc.workload.records, rel=0.05)
    assert flat.source == f"profile lab (its key layout; {dist} popularity)"
    assert zipf.source == "profile lab"
    # the layout is the profile's (synthetic keys, whose range field cycles
    # over every partition), not the stock keys' (the public range split
    # leaves half the servers without keys)
    stock = W.evaluate_scenario(sc.updated({"workload.distribution": dist,
                                            "workload.profile": ""}))
    assert stock.shares_nocache.max() > 0.45


def test_a_rack_of_242_billion_sequential_records_fits_in_memory():
    """The soak scenario that was killed for memory: 261 servers, 242 billion
    records, sequential keys in the lab's synthetic layout, range partitions.
    Its workload now evaluates in a few MiB of numpy arrays, every record on
    some server."""
    import tracemalloc
    from model.scenario import Scenario
    from model.workload import evaluate_scenario
    sc = Scenario.default().updated({
        "servers.count": 261, "workload.records": 242_544_773_754,
        "workload.distribution": "sequential", "workload.profile": "lab",
        "switch.partition": "range"})
    tracemalloc.start()
    try:
        res = evaluate_scenario(sc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 2**20
    assert len(res.shares) == 261 and sum(res.shares) == pytest.approx(1.0)
