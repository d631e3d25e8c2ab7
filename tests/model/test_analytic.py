"""The analytic solver: exact MVA where the network is product-form, and the
direction of every mechanism (the sizes are held to the simulator in tests/parity)."""

import math

import numpy as np
import pytest

from model import compile_rack, predict
from model.profile import Profile
from model.queueing import Station, mva_exact
from model.rack import service
from model.scenario import Scenario
from model.solvers import mva_core


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
    spec = compile_rack(sc, prof)
    sv, pl, c = spec.service, spec.placement, spec.clients
    svc = service.run_average_cost(sv) + sv.recv_floor_us + sv.gap_us
    think = c.send_us + pl.hit_ratio * c.hit_rtt_us + (1 - pl.hit_ratio) * c.miss_rtt_us
    shares = np.asarray(pl.shares)
    ref = mva_exact([Station(f"s{i}", "fcfs", float(d)) for i, d in enumerate(shares * svc)],
                    clients, think)
    p = predict(sc, prof)
    assert p.throughput_mops == pytest.approx(ref.throughput, rel=1e-6)
    # utilization law at every worker: U = X_i * S_i
    for i, s in enumerate(p.servers):
        assert s.utilization == pytest.approx(min(1.0, ref.throughput * shares[i] * svc[i]), rel=1e-5)
    # Little's law for the client loop
    assert clients == pytest.approx(p.throughput_mops * p.client.latency_us, rel=1e-9)


def test_compiled_recursion_equals_numpy_reference():
    rng = np.random.default_rng(3)
    m = 9
    args = [rng.random(m), rng.random(m) * 30, rng.random(m) * 40, rng.random(m) * 5,
            rng.random(m) * 0.3, rng.random(m) * 10]
    a = mva_core.recursion(*args, 25.0, 700)
    b = mva_core.recursion_numpy(*args, 25.0, 700)
    for x, y in zip(a, b):
        assert np.allclose(x, y, rtol=1e-12, atol=1e-12)


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
    proc = lambda sc: predict(sc, profile).servers[0].process_us  # noqa: E731
    assert proc(base.updated({"storage.wal": False})) < proc(base)            # the WAL costs
    assert proc(base.updated({"servers.seq_check": "none"})) < proc(base)     # seq GET costs
    nocache = base.updated({"switch.cache": False})
    assert proc(base) > proc(nocache)          # the cache leaves colder keys to the server
    assert proc(base.updated({"workload.distribution": "uniform", "switch.cache": False})) > proc(nocache)
    # many flushed files slow lookups that miss the memtables
    assert proc(base.updated({"workload.queries_m": 100.0})) > proc(base)


def test_loss_and_timeouts(profile):
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 1024,
                                     "switch.cache": False, "servers.rcvbuf_kb": 16})
    short = predict(sc.updated({"clients.timeout_ms": 10.0}), profile)
    long = predict(sc.updated({"clients.timeout_ms": 1000.0}), profile)
    assert long.pktloss > 0
    assert long.throughput_mops < short.throughput_mops       # a long timeout costs throughput
    assert long.bottleneck.kind == "timeouts"
    roomy = predict(sc.updated({"servers.rcvbuf_kb": 65536, "clients.timeout_ms": 1000.0}), profile)
    assert roomy.pktloss < long.pktloss


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
    s_wb, s_ro, s_nc = (compile_rack(s, profile).placement for s in (wb, ro, nc))
    r = wb.workload.read_ratio
    assert s_ro.hit_ratio == pytest.approx(r * s_wb.hit_ratio, rel=1e-6)
    assert np.allclose(s_ro.shares, (1 - r) * np.asarray(s_nc.shares) + r * np.asarray(s_wb.shares))
    assert sum(s_ro.shares) == pytest.approx(1 - s_ro.hit_ratio)
    # the servers see more writes under a read-only cache
    assert all(a > b for a, b in zip(s_ro.write_frac, s_wb.write_frac))
    x = [predict(s, profile).throughput_mops for s in (nc, ro, wb)]
    assert x[0] < x[1] < x[2]


def test_bottleneck_names_every_worker_of_a_balanced_rack(profile):
    # large receive buffers: no loss, so the (equally busy) workers limit
    p = predict(Scenario.default().updated({"servers.rcvbuf_kb": 16384}), profile)
    assert p.pktloss < 1.0
    b = p.bottleneck
    assert b.kind == "server"
    assert b.servers == list(range(16))
    assert "servers 0-15" in b.text()
