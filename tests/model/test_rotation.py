"""FarReach's server rotation (model/rotation.py): the racks it runs, the
aggregation of its statistics script, and the published experiment."""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from model.rotation import aggregate, predict_rotation, rotation_racks
from model.scenario import Scenario
from model.workload import evaluate_scenario
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def _script(b, runs, per_rotation):
    """FarReach's ``staticprocess`` (scripts/local/calculate_statistics_helper.py),
    step by step on per-rotation counters: ``per_rotation[k]`` = (ops per
    partition, hits per partition, execution ms) of rotation k (rotation 0: b
    alone, then b beside runs[k][1])."""
    def thpt(k, j):
        ops, hits, ms = per_rotation[k]
        return (ops[j] + hits[j]) / ms / 1e3, ops[j] / ms / 1e3
    b_t = [thpt(k, b) for k in range(len(runs))]
    avg, avg_srv = np.mean([t for t, _ in b_t]), np.mean([s for _, s in b_t])
    total, top = avg, avg_srv
    for k in range(1, len(runs)):
        i = runs[k][1]
        t, s = thpt(k, i)
        t *= avg / b_t[k][0]
        s *= avg_srv / b_t[k][1]
        total += t
        top = max(top, s)
    return total, total / top


def test_the_aggregate_is_farreachs_statistics_script():
    """Given each rotation rack's throughput, the partitions' throughputs (a
    rack's requests split by the workload's odds, switch hits included) go
    through the same averaging and scaling as the public script's counters."""
    rng = np.random.default_rng(4)
    n, b = 9, 5
    nocache = rng.dirichlet(np.ones(n))
    nocache[b] += 0.3
    nocache /= nocache.sum()
    shares = nocache * rng.uniform(0.4, 0.9, n)          # after the cache
    runs = [(b,)] + [(b, i) for i in range(n) if i != b]
    rack = rng.uniform(0.05, 0.2, len(runs))              # MOPS of each rotation's rack
    ms = 10_000.0
    counters = []
    for run, x in zip(runs, rack):
        idx = list(run)
        total = nocache[idx].sum()
        ops, hits = np.zeros(n), np.zeros(n)
        for j in idx:                                      # replies and hits in 10 s
            ops[j] = x * 1e3 * ms * shares[j] / total
            hits[j] = x * 1e3 * ms * (nocache[j] - shares[j]) / total
        counters.append((ops, hits, ms))
    want_total, want_x = _script(b, runs, counters)
    agg, nx, part, server = aggregate(b, runs, rack, nocache, shares, n)
    assert agg == pytest.approx(want_total, rel=1e-12)
    assert nx == pytest.approx(want_x, rel=1e-12)
    assert part.sum() == pytest.approx(agg, rel=1e-12) and np.all(part > 0)


def test_rotation_racks_run_the_bottleneck_beside_each_partition(profile):
    """One rack of the bottleneck alone, then one of it beside each other
    partition, one worker per machine, each holding one N-th of the records,
    with the full workload restricted to the partitions running."""
    sc = Scenario.default()
    b, runs, racks, full = rotation_racks(sc, profile)
    assert b == int(np.argmax(full.shares))
    assert runs[0] == (b,) and sorted(r[1] for r in runs[1:]) == [i for i in range(16) if i != b]
    assert [r.servers for r in racks] == [1] + [2] * 15
    pair = racks[1]
    assert pair.placement.machine_of == (0, 1)
    i = runs[1][1]
    nc = np.asarray(full.shares_nocache)
    assert pair.placement.shares_nocache == pytest.approx(nc[[b, i]] / nc[[b, i]].sum())
    # each partition keeps its own hit ratio: the pair's is the two partitions'
    hits = (nc - np.asarray(full.shares))[[b, i]].sum() / nc[[b, i]].sum()
    assert pair.placement.hit_ratio == pytest.approx(hits)
    # every partition holds one N-th of the records, alone or beside another
    assert pair.lsm.data_bytes == pytest.approx(racks[0].lsm.data_bytes * 2, rel=1e-6)


def test_a_restricted_workload_renormalises_to_the_partitions_running():
    full = evaluate_scenario(Scenario.default())
    same = full.restricted(range(16))
    assert np.allclose(same.shares, full.shares) and same.hit_ratio == pytest.approx(full.hit_ratio)
    two = full.restricted([3, 8])
    assert two.servers == 2 and sum(two.shares_nocache) == pytest.approx(1.0)
    assert two.shares[1] / two.shares[0] == pytest.approx(full.shares[8] / full.shares[3])
    assert two.server_hot_fraction[1] == full.server_hot_fraction[8]
    assert two.win_read_mass.shape[0] == 2
    assert np.array_equal(two.win_read_mass[0], full.win_read_mass[3])


def test_an_evenly_cached_rack_grows_with_its_partitions_in_rotation(profile):
    """With FarReach's cache the partitions are about equally loaded, and in
    rotation only two workers ever run: the aggregate grows about in
    proportion to the partitions (a concurrent rack of 32 workers on two
    machines does not), and the script's normalized throughput is exactly
    1 / the largest share of all requests a server answers (its scaling
    makes every partition's rate b's times their ratio of requests)."""
    from model.solvers import predict
    r16 = predict_rotation(Scenario.default(), profile)
    r32 = predict_rotation(Scenario.default().updated({"servers.count": 32}), profile)
    assert 1.8 < r32.throughput_mops / r16.throughput_mops < 2.2
    c16 = predict(Scenario.default(), profile).throughput_mops
    c32 = predict(Scenario.default().updated({"servers.count": 32}), profile).throughput_mops
    assert c32 / c16 < 1.6
    for r, n in ((r16, 16), (r32, 32)):
        full = evaluate_scenario(Scenario.default().updated({"servers.count": n}))
        assert r.normalized_x == pytest.approx(1.0 / max(full.shares), rel=1e-9)
        assert sum(r.partition_mops) == pytest.approx(r.throughput_mops)


def _published():
    with open(ROOT / "data" / "public" / "farreach_scalability.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("servers", [16, 128])
def test_farreach_rotation_matches_its_published_scalability(profile, servers):
    """External check (data/public: FarReach's own experiment, five rounds; no
    profile was fitted to it): the predicted rotation throughput is within
    10 % of the rounds' median, and the normalized throughput within 2 %."""
    rows = [r for r in _published() if r["system"] == "farreach" and int(r["servers"]) == servers]
    mops = statistics.median(float(r["mops"]) for r in rows)
    nx = statistics.median(float(r["normalized_x"]) for r in rows if r["normalized_x"])
    rot = predict_rotation(Scenario.default().updated({"servers.count": servers}), profile)
    assert rot.throughput_mops == pytest.approx(mops, rel=0.10)
    assert rot.normalized_x == pytest.approx(nx, rel=0.02)


@pytest.mark.xfail(strict=True, reason="known miss (docs/accuracy.md): the NoCache bottleneck "
                   "partition, which holds the hottest keys, is predicted 21-30 % slower than "
                   "published; its normalized throughput is right")
def test_nocache_rotation_matches_its_published_scalability(profile):
    rows = [r for r in _published() if r["system"] == "nocache" and int(r["servers"]) == 16]
    mops = statistics.median(float(r["mops"]) for r in rows)
    rot = predict_rotation(Scenario.default().updated({"switch.cache": False}), profile)
    assert rot.throughput_mops == pytest.approx(mops, rel=0.10)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sim", "predict", "--measure", "rotation", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_predict_measure_rotation_prints_the_aggregate_with_units_and_interval():
    done = _cli("--json")
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["measure"] == "rotation" and d["servers"] == 16 and d["rotations"] == 16
    assert d["units"]["throughput_mops"] == "MOPS"
    assert sum(d["partition_mops"]) == pytest.approx(d["throughput_mops"])
    iv = d["details"]["throughput_interval"]
    assert iv["lo_mops"] < d["throughput_mops"] < iv["hi_mops"]
    assert iv["level"] == pytest.approx(0.9)
    # the published rounds at 16 servers (1.30-1.59 MOPS) fall inside it
    assert iv["lo_mops"] < 1.298 and 1.594 < iv["hi_mops"]
    text = _cli("--set", "servers.count=4", "--no-intervals")
    assert text.returncode == 0 and "MOPS (aggregate" in text.stdout
    assert "interval" not in text.stdout
    assert len([ln for ln in text.stdout.splitlines() if ln.strip()[:1].isdigit()]) == 4


@pytest.mark.parametrize("extra, field", [(("--set", "servers.count=1"), "servers.count"),
                                          (("--runs", "data/farreach_runs.csv", "--out", "o.csv"),
                                           "--measure")])
def test_predict_measure_rotation_refuses_what_it_cannot_do(extra, field, tmp_path):
    extra = tuple(str(tmp_path / e) if e.endswith("o.csv") else e for e in extra)
    done = _cli(*extra)
    assert done.returncode == 2 and field in done.stderr and "Traceback" not in done.stderr


def test_the_simulator_measures_the_same_rotation(profile):
    """One model, two solvers: the rotation's racks through the fast simulator
    (2 simulated seconds each) give the analytic aggregate within 3 %
    (0.4 % at 16 servers on 2026-11-24; 0.7 % at 128, 0.5 % for NoCache)."""
    from sim.run import FastSimulator
    sim = FastSimulator(2.0, 1)
    sc = Scenario.default().updated({"servers.count": 8})
    a = predict_rotation(sc, profile)
    s = predict_rotation(sc, profile, solve=lambda racks: [sim.solve(r) for r in racks])
    assert s.throughput_mops == pytest.approx(a.throughput_mops, rel=0.03)
    assert s.bottleneck == a.bottleneck and s.normalized_x == pytest.approx(a.normalized_x)


def test_a_rotation_report_shows_each_partitions_part(tmp_path):
    """--html: the aggregate with its unit, and a chart of what each partition
    adds (server replies and switch hits), the bottleneck marked."""
    out = tmp_path / "rot.html"
    done = _cli("--set", "servers.count=4", "--no-intervals", "--html", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "Server rotation" in page and "MOPS" in page
    assert "What each partition adds to the aggregate" in page
    assert page.count("partition ") >= 4 and 'id="kvperf-plotly-gz"' in page
