"""Operational laws checked on the simulator's own output (fast engine).

* Little's law for the closed loop: N = X R, where R runs from a request's
  start (its thread asking for a client core) to its reply. Counting from
  t = 0, the only error is the boundary: requests in progress at the end (N
  of them, each younger than its latency) are in N T but not in X R T, so
  |N - X R| / N <= R_max / T.
* Utilisation law: U_i = X_i S_i with S_i the configured mean service (the
  busy time less blocks, stops and commits). The busy time is a sum of
  X_i T independent service times, so its relative standard error is
  CV / sqrt(X_i T); we allow 4 of them.
* Flow balance, exactly: packets that reached a worker = completions +
  drops + still queued + in service; client requests started = completed +
  one outstanding per client.
"""

import math

import numpy as np
import pytest

from model.scenario import Scenario
from sim.config import SimConfig
from model.rack import compile_rack
from sim.run import FastSimulator, run_config

def rack_config(scenario, profile, **options):
    """(engine config, per-second dynamics, compiled rack) of a scenario."""
    spec = compile_rack(scenario, profile)
    cfg, dyn = FastSimulator(**options).config(spec)
    return cfg, dyn, spec



def static_rack(profile, **changes):
    """A rack config with the load-dependent inputs frozen (no dynamics)."""
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 64, **changes})
    cfg, _dyn, _inp = rack_config(sc, profile)
    return cfg


def test_littles_law_closed_loop(profile):
    cfg = static_rack(profile)
    T = 2.0
    r = run_config(cfg, T, seed=11)
    X = r.done / r.span_us
    R = r.lat / r.done
    # boundary bound: each in-progress request is younger than the largest
    # latency, which is below the histogram's highest non-empty edge
    edges = 10.0 ** (-1 + np.arange(len(r.hist) + 1) / 20)
    r_max = edges[np.nonzero(r.hist)[0].max() + 1]
    assert abs(cfg.n_clients - X * R) / cfg.n_clients <= r_max / r.span_us + 1e-9
    assert X * R == pytest.approx(cfg.n_clients, rel=0.01)


def test_utilization_law(profile):
    cfg = static_rack(profile)
    T = 2.0
    r = run_config(cfg, T, seed=12)
    for i in range(cfg.stations):
        x_i = r.compl[i] / r.span_us
        u_i = r.busy[i] / r.span_us
        s_i = cfg.service_mean_us[i]
        # busy = services + WAL-switch blocks + write stops + commits (waiting included)
        extra = (r.block[i] + r.stall[i] + r.commit[i]) / r.span_us
        se = cfg.service_cv / math.sqrt(r.compl[i])
        assert u_i - extra == pytest.approx(x_i * s_i, rel=4 * se + 1e-3)


def test_flow_balance_with_losses_and_timeouts(profile):
    # small buffers and a short timeout: drops, resends and duplicates happen
    # (a sub-millisecond timer with no kernel tick floor, and no client-core
    # queue before a resend, so replies do come after their resend)
    profile = profile.with_values({"timer_floor_ms": 0.0, "client_cpu_us": 0.0}, "test")
    cfg = static_rack(profile, **{"clients.threads": 512, "servers.rcvbuf_kb": 64,
                                  "clients.timeout_ms": 0.2})
    r = run_config(cfg, 1.0, seed=13)
    assert r.drop.sum() > 0 and r.resends > 0 and r.stale > 0
    np.testing.assert_array_equal(
        r.arr, r.compl + r.drop + r.end_queued + r.end_in_service)
    assert r.issued - r.done == cfg.n_clients
    # every packet sent was a first attempt or a resend; each either reached a
    # worker, was lost on the wire, or is still in flight to the worker/switch
    sent = r.issued + r.resends
    assert sent >= r.arr.sum() + r.wire


def test_buffer_bounds_queue(profile):
    cfg = static_rack(profile, **{"clients.threads": 512, "servers.rcvbuf_kb": 8})
    r = run_config(cfg, 0.5, seed=14)
    assert np.all(r.end_queued <= cfg.buffer_pkts)


def test_static_config_deterministic():
    cfg = lambda: SimConfig(n_clients=8, station_probs=np.array([0.5, 0.5]),  # noqa: E731
                            service_mean_us=np.array([10.0, 20.0]), send_us=5.0)
    a = run_config(cfg(), 0.2, seed=1)
    b = run_config(cfg(), 0.2, seed=1)
    assert a.done == b.done and a.lat == b.lat
    np.testing.assert_array_equal(a.hist, b.hist)


@pytest.mark.parametrize("engine,seconds", [("fast", 1.0), ("simpy", 0.05)])
def test_eviction_write_backs_reach_servers(profile, engine, seconds):
    rate = 20_000.0                                   # write-backs per second
    pf = profile.with_values({"evict_writes_per_s": rate}, source="test")
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 8})
    cfg, _dyn, _spec = rack_config(sc, pf)
    r = run_config(cfg, seconds, seed=21, engine=engine)
    n = rate * seconds
    # Poisson count: 4 standard deviations (+1 for one still in service)
    assert abs(r.open_done - n) <= 4 * math.sqrt(n) + 1
    # they are writes, spread like the cached keys' home servers
    assert r.writes.sum() >= r.open_done
    base = run_config(rack_config(sc, profile)[0], seconds, seed=21, engine=engine)
    assert base.open_done == 0


def random_scenarios(k: int, seed: int = 2024):
    """Seeded random corners of the scenario space (sizes, buffers, timeouts, LSM)."""
    rng = np.random.default_rng(seed)
    for _ in range(k):
        servers = int(rng.choice([1, 3, 16, 64]))
        yield Scenario.default().updated({
            "servers.count": servers,
            "servers.machines": int(rng.choice([1, 2, 5])),
            "servers.cores": int(rng.choice([0, 0, 2, 8])),
            "servers.pinned": bool(rng.random() < 0.7),
            "servers.rcvbuf_kb": int(rng.choice([4, 64, 208, 4096])),
            "clients.threads": int(rng.choice([1, 7, 256, 2048])),
            "clients.timeout_ms": float(rng.choice([0.05, 1.0, 1000.0])),
            "switch.cache": bool(rng.random() < 0.7),
            "switch.partition": str(rng.choice(["range", "hash"])),
            "workload.distribution": str(rng.choice(["zipf", "uniform", "sequential"])),
            "workload.read_ratio": float(rng.choice([0.0, 0.5, 1.0])),
            "network.loss_rate": float(rng.choice([0.0, 0.001])),
            "storage.memtable_mb": float(rng.choice([0.0625, 1.0, 64.0])),
            "storage.flushnum": 1, "storage.maxnum": int(rng.choice([2, 4, 6])),
            "storage.wal": bool(rng.random() < 0.5),
        })


@pytest.mark.parametrize("idx,sc", list(enumerate(random_scenarios(8))))
def test_invariants_on_random_scenarios(profile, idx, sc):
    cfg, dyn, _ = rack_config(sc, profile)
    r = run_config(cfg, 0.3, seed=idx, dynamics=dyn, chunk_s=0.1)
    np.testing.assert_array_equal(
        r.arr, r.compl + r.drop + r.end_queued + r.end_in_service)
    assert r.issued - r.done == cfg.n_clients
    assert np.all(r.busy <= r.span_us * cfg.station_servers + 1e-6)
    assert r.done > 0
    # completed requests lie inside [0, T], one per client at a time
    assert r.lat <= cfg.n_clients * r.span_us + 1e-6
