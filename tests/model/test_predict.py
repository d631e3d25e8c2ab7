"""Analytic predictor: parity with exact MVA, and the mechanisms of DOMAIN.md section 3."""

import math

import numpy as np
import pytest

from model import rack
from model.predict import predict
from model.profile import Profile
from model.queueing import Station, mva_exact
from model.scenario import Scenario

PRIORS = "calibrate/priors/farreach.toml"


@pytest.fixture(scope="module")
def profile():
    return Profile.load("tofino-testbed")


def quiet(profile):
    """A profile with every load-dependent effect switched off: a pure product-form network."""
    return profile.with_values({"idle_penalty": 0.0, "share_penalty": 0.0, "disk_mbps": 1e9,
                                "flush_fixed_ms": 0.0, "wal_switch_ms": 0.0,
                                "wal_switch_ms_per_mbps": 0.0, "rcvbuf_pkt_bytes": 1e-3}, "test")


@pytest.mark.parametrize("servers, clients", [(1, 8), (4, 64), (16, 1024)])
def test_matches_exact_mva_when_effects_are_off(profile, servers, clients):
    prof = quiet(profile)
    sc = Scenario.default().updated({"servers.count": servers, "clients.threads": clients,
                                     "clients.timeout_ms": 600_000.0})
    inp = rack.derive(sc, prof)
    service = np.array([c.process_us for c in inp.costs]) + inp.recv_floor_us + inp.gap_us
    think = inp.send_us + inp.hit_ratio * inp.hit_rtt_us + (1 - inp.hit_ratio) * inp.miss_rtt_us
    ref = mva_exact([Station(f"s{i}", "fcfs", float(d)) for i, d in enumerate(inp.shares * service)],
                    clients, think)
    p = predict(sc, prof)
    assert p.throughput_mops == pytest.approx(ref.throughput, rel=1e-6)
    # utilization law at every worker: U = X_i * S_i
    for i, s in enumerate(p.servers):
        assert s.utilization == pytest.approx(min(1.0, ref.throughput * inp.shares[i] * service[i]), rel=1e-5)
    # Little's law for the client loop
    assert clients == pytest.approx(p.throughput_mops * p.client.latency_us, rel=1e-9)


def test_wait_is_floor_when_saturated_and_above_when_starved(profile):
    sc = Scenario.default().updated({"servers.count": 1, "switch.cache": False,
                                     "clients.timeout_ms": 5000.0})
    few = predict(sc.updated({"clients.threads": 1}), profile)
    many = predict(sc.updated({"clients.threads": 64}), profile)
    floor = profile["recv_floor_us"]
    assert many.servers[0].wait_us == pytest.approx(floor, rel=0.05)
    assert few.servers[0].wait_us > 5 * floor
    assert many.throughput_mops > few.throughput_mops


def test_one_server_normalized_x_is_inverse_miss_ratio(profile):
    p = predict(Scenario.default().updated({"servers.count": 1}), profile)
    assert p.normalized_x == pytest.approx(1 / (1 - p.cache_hit_ratio), rel=1e-6)


def test_storage_mechanisms_move_process_time_the_right_way(profile):
    base = Scenario.default().updated({"servers.count": 1, "clients.threads": 32,
                                       "servers.seq_check": "disk-get", "clients.timeout_ms": 5000.0})
    proc = lambda sc: predict(sc, profile).servers[0].process_us
    small = proc(base.updated({"storage.memtable_mb": 4, "storage.flushnum": 1, "storage.maxnum": 2}))
    big = proc(base.updated({"storage.memtable_mb": 256, "storage.flushnum": 16, "storage.maxnum": 20}))
    assert small > big                         # small memtables flush often
    assert proc(base.updated({"storage.wal": False})) < proc(base)            # the WAL costs
    assert proc(base.updated({"servers.seq_check": "none"})) < proc(base)     # seq GET costs
    nocache = base.updated({"switch.cache": False})
    assert proc(base) > proc(nocache)          # the cache leaves colder keys to the server
    assert proc(base.updated({"workload.distribution": "uniform", "switch.cache": False})) > proc(nocache)


def test_loss_and_timeouts(profile):
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 1024,
                                     "switch.cache": False, "servers.rcvbuf_kb": 16})
    short = predict(sc.updated({"clients.timeout_ms": 10.0}), profile)
    long = predict(sc.updated({"clients.timeout_ms": 1000.0}), profile)
    assert long.pktloss > 0
    assert long.throughput_mops < short.throughput_mops       # a long timeout costs throughput
    roomy = predict(sc.updated({"servers.rcvbuf_kb": 65536, "clients.timeout_ms": 1000.0}), profile)
    assert roomy.pktloss < long.pktloss
    tight = predict(sc.updated({"clients.timeout_ms": 0.2, "servers.rcvbuf_kb": 65536}), profile)
    assert tight.false_pos > 0                              # small timeouts: false positives


def test_more_servers_more_throughput_with_cache(profile):
    x = [predict(Scenario.default().updated({"servers.count": n}), profile).throughput_mops
         for n in (1, 4, 16)]
    assert x[0] < x[1] < x[2]
    assert all(math.isfinite(v) for v in x)


def test_read_only_cache_answers_only_reads(profile):
    """NetCache: hits are the cached keys' reads; their writes still load the servers."""
    wb = Scenario.default().updated({"servers.count": 4})
    ro = wb.updated({"switch.mode": "read-only"})
    nc = wb.updated({"switch.cache": False})
    inp_wb, inp_ro, inp_nc = (rack.derive(s, profile) for s in (wb, ro, nc))
    r = wb.workload.read_ratio
    assert inp_ro.hit_ratio == pytest.approx(r * inp_wb.hit_ratio)
    assert np.allclose(inp_ro.shares, (1 - r) * inp_nc.shares + r * inp_wb.shares)
    assert inp_ro.shares.sum() == pytest.approx(1 - inp_ro.hit_ratio)
    x = [predict(s, profile).throughput_mops for s in (nc, ro, wb)]
    assert x[0] < x[1] < x[2]
    # a read-only workload gains as much from either cache
    reads = {"workload.read_ratio": 1.0}
    assert rack.derive(ro.updated(reads), profile).hit_ratio == pytest.approx(
        rack.derive(wb.updated(reads), profile).hit_ratio)
