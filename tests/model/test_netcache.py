"""NetCache as the public code runs it, and the switch's value-size limit, in
the workload model (model/workload.py, model/workload_summary.py).

NetCache (``LGN520/farreach-public``, ``netcache/``): a write of a cached key
resets the entry's ``latest`` bit as it passes the switch; the server queues
a NETCACHE_VALUEUPDATE before its put and sends it back through the switch,
which sets ``latest`` again with no sequence check. The references here are
an event-by-event replay of that rule and a brute-force sum over a small key
space; docs/workload.md, section 4, states the rules.
"""

import numpy as np
import pytest

from model import workload as W
from model.rack import compile_rack
from model.scenario import Scenario, Switch, Workload
from model.workload_summary import cached_hit_fraction
from runio.inputs import load_profile

from .test_workload import brute_stock


def replayed_valid_fraction(lam_w: float, rng, writes: int = 200_000) -> float:
    """The switch's ``latest`` bit replayed: Poisson writes at rate 1, each
    resetting the bit as it passes; each write's value update passes the
    switch ``lam_w`` later and sets the bit, whichever write it carries.
    Returns the fraction of reads (at uniform times) that find it set."""
    w = np.cumsum(rng.exponential(1.0, writes))
    u = w + lam_w
    t = rng.uniform(w[0] + lam_w, w[-1], 100_000)
    last_write = w[np.searchsorted(w, t) - 1]
    j = np.searchsorted(u, t) - 1
    return float(np.mean(u[j] > last_write))


@pytest.mark.parametrize("lam_w", [0.02, 0.3, 1.0, 3.0, 30.0])
def test_an_entry_is_valid_as_the_replayed_switch_says(lam_w):
    """(1 + exp(-2 lam W)) / 2: about 1 - lam W for a rarely written key, 1/2
    (not 0) for one written many times per window, since an older write's
    update re-validates the entry after a newer write reset it."""
    rng = np.random.default_rng(7)
    got = replayed_valid_fraction(lam_w, rng)
    r = 0.5
    # cached_hit_fraction takes the window in requests: lam W = (1 - r) q M
    q, window = 1e-3, lam_w / ((1 - r) * 1e-3)
    want = float(cached_hit_fraction(np.array([q]), r, window)[0]) / r
    assert got == pytest.approx(want, abs=0.006)
    assert 0.5 <= want <= 1.0


def ro_switch(k, partition="hash"):
    return Switch(cache=True, mode="read-only", cache_keys=k, partition=partition)


@pytest.mark.parametrize("window", [0.0, 50.0, 2_000.0, 1e9])
def test_read_only_shares_are_the_brute_force_sum(window):
    """Per cached key: its reads are hits while the entry is valid; its writes
    and the other reads reach its server."""
    items, records, n, k, r = 4000, 1500, 4, 50, 0.5
    spec = W.StockSpec(records=records, items=items, head=items)
    res = W.evaluate(Workload(records=records), ro_switch(k), n, spec, update_window=window)
    mass, srv, cached, nocache, _ = brute_stock(records, 0.99, items, n, "hash", k)
    valid = 0.5 * (1 + np.exp(-2 * (1 - r) * mass * window))
    hits = np.where(cached, r * mass * valid, 0.0)
    assert res.hit_ratio == pytest.approx(hits.sum(), abs=1e-9)
    np.testing.assert_allclose(res.shares, nocache - np.bincount(srv, weights=hits, minlength=n),
                               atol=1e-9)
    np.testing.assert_allclose(res.shares_nocache, nocache, atol=1e-9)


def test_the_window_only_ever_takes_hits_away_and_at_most_half():
    sc = Scenario.default().updated({"switch.mode": "read-only"})
    hits = [W.evaluate_scenario(sc, update_window=m).hit_ratio for m in (0, 10, 128, 1024, 1e12)]
    assert all(a > b for a, b in zip(hits, hits[1:]))
    assert hits[-1] == pytest.approx(hits[0] / 2, rel=1e-6)
    # the scenario's window is its client threads (model.workload.update_window_requests)
    assert W.evaluate_scenario(sc).hit_ratio == pytest.approx(hits[3])
    assert W.update_window_requests(sc) == 1024
    assert W.update_window_requests(Scenario.default()) == 0.0       # write-back: none
    # rounded to a power of 2: a plan over many client counts shares a few evaluations
    assert [W.update_window_requests(sc.updated({"clients.threads": c}))
            for c in (100, 128, 181, 182, 1500)] == [128, 128, 128, 256, 2048]
    assert any("value update" in n for n in W.evaluate_scenario(sc).notes)


def test_reads_of_an_invalid_entry_reach_the_memtable_lookups():
    """A read that finds its entry invalid is an ordinary GET at its server,
    of a key just written: the read lookups' memtable odds count it."""
    sc = Scenario.default().updated({"servers.count": 4, "switch.mode": "read-only"})
    valid = W.evaluate_scenario(sc, update_window=0.0)
    inval = W.evaluate_scenario(sc, update_window=1e9)
    win = 1e5
    assert np.all(W.window_hit_fraction(inval, win) > W.window_hit_fraction(valid, win))
    assert np.all(inval.shares > valid.shares)


def test_sampled_classes_see_the_invalid_entries():
    sc = Scenario.default().updated({"servers.count": 4, "switch.mode": "read-only",
                                     "clients.threads": 128})
    r = W.evaluate_scenario(sc)
    rack = compile_rack(sc, load_profile("tofino-testbed"))
    n = 400_000
    cls = rack.placement.keys.sample(np.random.default_rng(5), n)
    p = np.concatenate([[r.hit_ratio], r.shares])
    freq = np.bincount(cls + 1, minlength=5) / n
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + r.tolerance)
    assert rack.placement.hit_ratio == pytest.approx(r.hit_ratio)


# ------------------------------------------------------------- value size
@pytest.mark.parametrize("mode", ["write-back", "read-only"])
def test_values_larger_than_the_registers_are_never_cached(mode):
    sc = Scenario.default().updated({"switch.mode": mode, "workload.read_ratio": 0.0})
    fits = W.evaluate_scenario(sc)
    big = W.evaluate_scenario(sc.updated({"workload.value_bytes": 256}))
    off = W.evaluate_scenario(sc.updated({"switch.cache": False}))
    assert big.cached_keys == 0 and big.hit_ratio == 0.0
    np.testing.assert_array_equal(big.shares, off.shares)
    assert big.normalized_x == 1.0 and any("128-byte" in n for n in big.notes)
    # at the limit itself the value fits; a wider register holds 256 B
    assert W.evaluate_scenario(sc.updated({"workload.value_bytes": 128})).cached_keys == 10_000
    wide = sc.updated({"workload.value_bytes": 256, "switch.max_value_bytes": 256})
    assert W.evaluate_scenario(wide).hit_ratio == fits.hit_ratio
    rng = np.random.default_rng(1)
    big_sc = sc.updated({"workload.value_bytes": 256})
    cls = W.sample_classes(big_sc.workload, big_sc.switch, 16, 20_000, rng)
    assert (cls == -1).sum() == 0


def test_write_only_farreach_with_large_values_is_nocache_in_the_rack():
    """FarReach's published value-size experiment: 256 B values, normalized
    throughput 11.0, NoCache's (data/public/farreach_value_size.csv). No
    write-backs either: nothing is cached to evict."""
    p = load_profile("tofino-testbed").with_values({"evict_writes_per_s": 20_000.0}, "test")
    sc = Scenario.default().updated({"workload.read_ratio": 0.0, "workload.value_bytes": 256})
    rack = compile_rack(sc, p)
    assert rack.placement.hit_ratio == 0.0 and rack.placement.evict_per_us == 0.0
    assert 1.0 / max(rack.placement.shares) == pytest.approx(11.1, rel=0.01)
    assert compile_rack(sc.updated({"workload.value_bytes": 128}), p).placement.evict_per_us > 0


def test_a_measured_description_is_taken_as_given():
    """The limit decides what a generator's keys do; measured hit ratios are
    what a run saw, whatever its values."""
    sc = Scenario.default().updated({"servers.count": 2, "workload.value_bytes": 1024})
    from model.workload_sources import MeasuredWorkload
    m = MeasuredWorkload("m", 0.4, np.array([0.6, 0.4]), None)
    assert W.evaluate_scenario(sc, m).hit_ratio == pytest.approx(0.4)
    assert Workload().value_bytes <= Switch().max_value_bytes
