"""The workload model against keys drawn by YCSB 0.17's own jar.

The fixtures in tests/model/fixtures/ are written by scripts/ycsb_fixture.sh:
YCSB's CoreWorkload (Maven site.ycsb:core:0.17.0) draws the keys, its own
buildKeyName names them, and FarReach's Key.fromString / Key.serialize /
CRC32 and partition rules (re-typed in Java from the public code) place them.
Counts are multinomial, so every comparison below uses the binomial standard
error of the measured fraction, ``se = sqrt(p (1 - p) / draws)``, plus the
model's own stated tolerance. With ~200 compared fractions at 4.5 se, a
correct model fails by chance with probability below 0.2 %.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from model import keys, workload as W, ycsb
from model.scenario import Scenario

FIX = Path(__file__).parent / "fixtures"
Z = 4.5


def load(name):
    return json.loads((FIX / name).read_text())


@pytest.fixture(scope="module")
def big():
    return load("ycsb_zipfian_100M.json")


def scenario(n, partition, cache=True, records=100_000_000, dist="zipf"):
    return Scenario.default().updated({"servers.count": n, "switch.partition": partition,
                                       "switch.cache": cache, "workload.records": records,
                                       "workload.distribution": dist})


def test_key_names_wire_keys_and_crc_match_the_jar(big):
    rows = [r for r in big["top_keys"] if len(r) == 4]
    assert len(rows) >= 100
    for keynum, _, key_value, crc in rows:
        name = keys.ycsb_key_name(keynum)
        v = keys.farreach_key_value(name)
        assert v == key_value                          # "user" + fnvhash64, parsed back
        wire = keys.wire_key(keynum, "farreach", "hashed")
        assert keys.crc32_rows(np.frombuffer(wire, np.uint8)[None, :])[0] == crc


def _model_top(spec, k):
    """The model's k hottest key numbers (exact head)."""
    recs, mass, *_ = W._stock_fold(spec)
    return recs[:k], mass[:k]


def _counts_of(big, recs):
    """Fixture counts of key numbers; keys not listed are bounded by the
    smallest listed count (they were drawn at most that often)."""
    listed = {r[0]: r[1] for r in big["top_keys"]}
    floor = min(listed.values())
    got = np.array([listed.get(int(r), -1) for r in recs])
    missing = got < 0
    lo = np.where(missing, 0, got)
    hi = np.where(missing, floor, got)
    return lo, hi, int(missing.sum())


@pytest.mark.parametrize("k", [100, 1_000, 10_000])
def test_hit_ratio_of_the_cached_keys(big, k):
    d = big["draws"]
    res = W.evaluate_scenario(scenario(1, "range").updated({"switch.cache_keys": k}))
    recs, _ = _model_top(W.stock_spec(Scenario.default().workload), k)
    lo, hi, missing = _counts_of(big, recs)
    assert missing <= k // 100                         # the model's hot keys are YCSB's hot keys
    h = res.hit_ratio
    se = math.sqrt(h * (1 - h) / d)
    assert lo.sum() / d - Z * se - res.tolerance <= h <= hi.sum() / d + Z * se + res.tolerance


def test_top_keys_are_the_scrambled_ranks_modulo_records_plus_one(big):
    """The hottest keys are fnvhash64(rank) % (recordcount + 1), not % recordcount."""
    top = [r[0] for r in big["top_keys"][:5]]
    m = big["recordcount"]
    assert top[0] == ycsb.fnvhash64(0) % (m + 1)
    assert set(top) == {ycsb.fnvhash64(v) % (m + 1) for v in range(5)}
    assert ycsb.fnvhash64(0) % m not in {r[0] for r in big["top_keys"][:100]}


PARTS = ["range", "range-even", "hash"]


@pytest.mark.parametrize("n", [4, 16, 32])
@pytest.mark.parametrize("partition", PARTS)
def test_nocache_shares_per_server(big, n, partition):
    d = big["draws"]
    emp = np.asarray(big["per_server"][str(n)][partition], float) / d
    res = W.evaluate_scenario(scenario(n, partition, cache=False))
    s = res.shares_nocache
    se = np.sqrt(np.maximum(s * (1 - s), 1e-30) / d)
    assert np.all(np.abs(emp - s) <= Z * se + res.tolerance), (emp, s)
    if partition == "range":                           # Math.abs: the top bit is 0
        assert np.all(emp[n // 2:] == 0) and np.all(s[n // 2:] == 0)


@pytest.mark.parametrize("n", [4, 16, 32])
@pytest.mark.parametrize("partition", PARTS)
def test_cached_shares_per_server(big, n, partition):
    """Per-server requests that miss a 10K-key cache holding the model's hottest
    keys: the jar's per-server counts minus those keys' counts."""
    d = big["draws"]
    k = 10_000
    res = W.evaluate_scenario(scenario(n, partition, cache=True))
    spec = W.stock_spec(Scenario.default().workload)
    recs, _ = _model_top(spec, k)
    srv = keys.servers_of(recs, "farreach", n, partition)
    lo, hi, _ = _counts_of(big, recs)
    total = np.asarray(big["per_server"][str(n)][partition], float)
    emp_hi = (total - np.bincount(srv, weights=lo, minlength=n)) / d
    emp_lo = (total - np.bincount(srv, weights=hi, minlength=n)) / d
    s = res.shares
    se = np.sqrt(np.maximum(s * (1 - s), 1e-30) / d)
    slack = Z * se + res.tolerance
    assert np.all(emp_lo - slack <= s) and np.all(s <= emp_hi + slack), (emp_lo, emp_hi, s)


def test_per_record_distribution_with_the_redraw():
    """1000 records: YCSB draws fnvhash64(rank) % 1001 and redraws 1000. Chi-square
    of the jar's per-record counts against the model's per-record masses; the
    former `% records` rule is rejected by the same counts."""
    f = load("ycsb_zipfian_1000.json")
    d, r = f["draws"], f["recordcount"]
    counts = np.zeros(r)
    for keynum, c, *_ in f["top_keys"]:
        counts[keynum] = c

    def model_mass(generator):
        spec = W.StockSpec(records=r, generator=generator,
                           layout="kvperf" if generator == "kvperf" else "farreach")
        recs, mass, per_rec, *_ = W._stock_fold(spec)
        m = np.full(r, per_rec)
        m[recs] = mass
        return m / m.sum()

    def chi2(m):
        e = m * d
        return float(((counts - e) ** 2 / e).sum())

    dof = r - 1
    assert chi2(model_mass("ycsb")) < dof + 5 * math.sqrt(2 * dof)
    assert chi2(model_mass("kvperf")) > 10 * dof


@pytest.mark.parametrize("n", [4, 16, 32])
@pytest.mark.parametrize("partition", PARTS)
def test_uniform_keys(n, partition):
    f = load("ycsb_uniform_100M.json")
    d = f["draws"]
    emp = np.asarray(f["per_server"][str(n)][partition], float) / d
    res = W.evaluate_scenario(scenario(n, partition, cache=False, dist="uniform"))
    s = res.shares_nocache
    se = np.sqrt(np.maximum(s * (1 - s), 1e-30) / d)
    assert np.all(np.abs(emp - s) <= Z * se + res.tolerance)
