"""The analytic solver: closed forms where the network has them, the laws
everywhere, and the direction of every mechanism (their sizes are held to
the simulator in tests/parity)."""

import math
import random
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, special

from model import compile_rack
from model.rack import clients, network, service
from model.scenario import Scenario
from model.solvers import analytic
from model.solvers.analytic import solve, solve_many
from runio.inputs import load_profile
from tests.oracles.queueing import Station, mva_exact


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def quiet(profile):
    """A profile with every load-dependent effect switched off: a pure
    product-form network (no idle or busy-peer factor, free flushes and WAL
    switches, lookups whose cost does not move with the memtables and files
    the run's write path makes, no receive floor or gap, no client cores, no
    commit path)."""
    return profile.with_values({"idle_penalty": 0.0, "share_penalty": 0.0, "disk_mbps": 1e9,
                                "flush_fixed_ms": 0.0, "wal_switch_ms": 0.0,
                                "memtable_probe_us": 0.0, "sst_probe_us": 0.0,
                                "bg_penalty": 0.0,
                                "wal_switch_ms_per_mbps": 0.0, "recv_floor_us": 0.0,
                                "server_gap_us": 0.0, "client_cpu_us": 0.0,
                                "txn_commit_us": 0.0, "rcvbuf_pkt_bytes": 1e-3}, "test")


def long_timeout(**ch):
    return Scenario.default().updated({"clients.timeout_ms": 600_000.0, **ch})


def closed_network(spec):
    """The rack's product-form network for tests.oracles.queueing: demands and think time."""
    sv, pl, c = spec.service, spec.placement, spec.clients
    svc = service.first_cost(sv) + sv.recv_floor_us + sv.gap_us
    think = c.send_us + pl.hit_ratio * c.hit_rtt_us + (1 - pl.hit_ratio) * c.miss_rtt_us
    return np.asarray(pl.shares) * svc, think


# ---------------------------------------------------------------- closed forms
def test_one_thread_is_exact(profile):
    """N = 1: nothing queues, X = 1 / (think + client work + sum of demands)."""
    spec = compile_rack(long_timeout(**{"clients.threads": 1, "servers.count": 4}), quiet(profile))
    d, think = closed_network(spec)
    p = solve(spec)
    assert p.throughput_mops == pytest.approx(1.0 / (think + d.sum()), rel=1e-7)
    assert p.client.latency_us == pytest.approx(think + d.sum(), rel=1e-7)


@pytest.mark.parametrize("servers, threads, bound", [(1, 8, 0.06), (4, 64, 0.03), (16, 1024, 0.01)])
def test_product_form_is_schweitzer_close_to_exact_mva(profile, servers, threads, bound):
    """With every effect off the rack is a product-form network: Schweitzer's
    approximate MVA, within its known error of the exact recursion (largest
    with few threads per station: 5 % at 8 threads on one worker;
    tests/oracles/queueing.py measures up to 6 % for N = 2..40)."""
    spec = compile_rack(long_timeout(**{"clients.threads": threads, "servers.count": servers}),
                        quiet(profile))
    d, think = closed_network(spec)
    ref = mva_exact([Station(f"s{i}", "fcfs", float(x)) for i, x in enumerate(d)], threads, think)
    assert solve(spec).throughput_mops == pytest.approx(ref.throughput, rel=bound)


@pytest.mark.parametrize("threads, cores, bound", [(8, 4, 0.15), (64, 16, 0.05), (256, 16, 0.05),
                                                   (1024, 32, 0.05)])
def test_client_cores_are_a_multi_server_station(profile, threads, cores, bound):
    """The client machines as Seidmann's multi-server station, against exact MVA
    with a c-server station (tests.oracles.queueing, log-space normalising constants):
    within 5 % from a few threads per core, 12 % at two threads per core
    (Seidmann's form is poorest where threads and cores are alike)."""
    prof = quiet(profile).with_values({"client_cpu_us": 40.0, "client_cores": cores}, "test")
    spec = compile_rack(long_timeout(**{"clients.threads": threads, "servers.count": 8}), prof)
    d, think = closed_network(spec)
    stations = [Station(f"s{i}", "fcfs", float(x)) for i, x in enumerate(d)]
    stations.append(Station("client", "multi", 40.0, servers=cores))
    ref = mva_exact(stations, threads, think)
    got = solve(spec)
    assert got.throughput_mops == pytest.approx(ref.throughput, rel=bound)
    assert got.details["client_cores_utilization"] == pytest.approx(
        ref.throughput * 40.0 / cores, rel=bound)


def test_commit_wait_is_the_finite_source_queue():
    """One writer never waits; many writers see an M/M/1 queue; the path caps
    the machine's commit rate."""
    assert service.commit_wait(0.05, 5.0, 1) == pytest.approx(5.0)
    many = service.commit_wait(0.1, 5.0, 10_000)
    assert many == pytest.approx(5.0 / (1 - 0.5), rel=1e-3)
    assert service.commit_wait(0.2, 5.0, 8) == math.inf
    assert service.commit_wait(0.1, 0.0, 8) == 0.0


def test_block_gather_is_the_fluid_integral():
    """Threads arrive at a blocked worker as n(t) = free (1 - e^-at); the
    buffer holds `room`; later arrivals are dropped."""
    free, rate, length, room = 300.0, 1e-3, 4_000.0, 120.0
    arrived, dropped, held = network.block_gather(free, rate, length, room)
    n = lambda t: free * -math.expm1(-rate * t)  # noqa: E731
    assert arrived == pytest.approx(n(length))
    assert dropped == pytest.approx(n(length) - room)
    ref, _ = integrate.quad(lambda t: min(n(t), room), 0.0, length, limit=200)
    assert held == pytest.approx(ref, rel=1e-6)
    # a short block fills no buffer
    a, d, h = network.block_gather(free, rate, 10.0, room)
    assert d == 0.0 and h == pytest.approx(integrate.quad(n, 0, 10.0)[0], rel=1e-6)


@pytest.mark.parametrize("shape, x", [(0.3, 0.1), (1.0, 2.0), (4.5, 3.0), (20.0, 30.0),
                                      (300.0, 330.0), (2000.0, 1900.0)])
def test_gamma_sf_is_the_regularized_upper_incomplete_gamma(shape, x):
    tol = 1e-10 if shape <= 50 else 2e-3
    assert clients.gamma_sf(shape, x) == pytest.approx(special.gammaincc(shape, x), rel=tol,
                                                       abs=1e-12)


def test_late_resends_count_every_timer():
    """Resends of a late reply: the k-th timer fires when the time at the
    worker exceeds budget + (k - 1) period (a gamma time with the given mean
    and scv), summed timer by timer."""
    R, scv, budget, period = 800.0, 0.5, 300.0, 250.0
    shape, scale = 1 / scv, R * scv
    ref = sum(special.gammaincc(shape, (budget + k * period) / scale) for k in range(2000))
    assert clients.late_resends(R, scv, budget, period) == pytest.approx(ref, rel=1e-6)
    assert clients.late_resends(R, scv, 1e9, period) == 0.0


@pytest.mark.parametrize("util, K", [(0.5, 4), (0.9, 10), (0.99, 30), (0.999, 100)])
def test_tail_overflow_is_the_mm1k_loss(util, K):
    """The loss at a worker busy `util` with K buffer places: M/M/1/K (K + 1
    places with the one in service) at the offered load whose carried load is util."""
    p = network.tail_overflow(util, K, 1e9)
    rho = util / (1 - p)
    k = K + 1
    blocking = rho ** k * (1 - rho) / (1 - rho ** (k + 1))
    assert p == pytest.approx(blocking, rel=1e-6)
    assert network.tail_overflow(util, K, K) == 0.0        # the buffer holds every other thread


# ---------------------------------------------------------------- laws and settling
def random_scenarios(n, seed=40):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        maxnum = rng.choice([2, 5, 20, 64])
        out.append(Scenario.default().updated({
            "servers.count": rng.choice([1, 2, 4, 8, 16, 32, 64, 128]),
            "clients.threads": int(math.exp(rng.uniform(math.log(8), math.log(4096)))),
            "clients.timeout_ms": math.exp(rng.uniform(math.log(0.5), math.log(5000))),
            "switch.cache": rng.random() < 0.7,
            "switch.mode": rng.choice(["write-back", "read-only"]),
            "storage.memtable_mb": rng.choice([1.0, 4.0, 64.0, 1024.0]),
            "storage.flushnum": rng.choice([f for f in (1, 4, 16) if f < maxnum]),
            "storage.maxnum": maxnum,
            "storage.wal_bytes_per_sync_mb": rng.choice([0.0, 0.0, 1.0, 16.0]),
            "storage.db": rng.choice(["txn", "normal"]),
            "servers.pinned": rng.random() < 0.5,
            "servers.cores": rng.choice([0, 0, 8, 24]),
            "servers.rcvbuf_kb": rng.choice([32, 208, 16384]),
            "workload.queries_m": rng.choice([1.0, 10.0, 100.0]),
        }))
    return out


def test_every_rack_settles_and_keeps_the_laws(profile):
    """Random valid racks: every answer is the root of the loop's balance
    (Little's law over a client's cycle), no worker past its capacity, every
    figure finite, and the root found in bounded steps."""
    specs = [compile_rack(sc, profile) for sc in random_scenarios(120)]
    preds = solve_many(specs)
    for spec, p in zip(specs, preds):
        X = p.throughput_mops
        assert math.isfinite(X) and X > 0
        assert p.client.latency_us * X == pytest.approx(spec.clients.threads, rel=1e-9)
        for s in p.servers:
            assert 0.0 <= s.utilization <= 1.0 + 1e-9
            assert math.isfinite(s.process_us) and s.process_us >= 0
        assert p.details["evaluations"] < analytic.MAX_EVAL
        # the root to X_TOL: a final bracket that narrow, not a last iterate
        assert p.details["converged"]
        assert p.details["bracket_rel_width"] <= 4 * analytic.X_TOL
        assert math.isfinite(p.pktloss) and math.isfinite(p.false_pos)


def sleep_in_cycle(spec, X):
    """The sleep per request already in the cycle at X (lost packets' timeouts)."""
    rs, ws = analytic._pack(spec)
    M = ws.shape[0]
    wk = np.zeros((M, analytic.K_NCOL))
    wk[:, analytic.K_MACH] = ws[:, analytic.W_MACH]
    wk[:, analytic.K_RUN] = 1.0
    return analytic._evaluate(X, rs, ws, wk,
                              np.zeros((max(int(rs[analytic.R_MACH]), 1), 6)),
                              np.zeros((M, analytic.V_NCOL)), False)[3]


def test_the_root_balances_the_loop(profile):
    """At the answer the loop's balance h(X) = N / cycle(X) - X is zero (to the
    bracket's width), on the lab's rows and random racks."""
    specs = [compile_rack(sc, profile) for sc in random_scenarios(40, seed=7)]
    for spec in specs:
        rs, ws = analytic._pack(spec)
        ro = np.zeros(analytic.O_NCOL)
        wo = np.zeros((ws.shape[0], analytic.V_NCOL))
        analytic._solve_rack(rs, ws, ro, wo, 0.0)
        if ro[analytic.O_JUMP]:
            continue
        X = ro[analytic.O_X]
        if ro[analytic.O_SATURATED]:
            # at a station's capacity: the threads left over wait at a full
            # buffer (drops and retries), never more threads than there are
            assert X * ro[analytic.O_CYCLE] <= spec.clients.threads * (1 + 1e-9)
            assert ro[analytic.O_SLEEP] * X == pytest.approx(
                spec.clients.threads - X * ro[analytic.O_CYCLE] + X * sleep_in_cycle(spec, X),
                rel=1e-6)
        else:
            assert X * ro[analytic.O_CYCLE] == pytest.approx(spec.clients.threads, rel=1e-4)


def test_a_guess_bracketed_gives_the_same_root(profile):
    """Sigma-point racks start at their centre's answer (model.intervals): the
    same root as a cold start."""
    specs = [compile_rack(sc, profile) for sc in random_scenarios(40, seed=11)]
    cold = solve_many(specs)
    near = profile.with_values({"base_us": profile["base_us"] * 1.1}, "test")
    moved = [replace(compile_rack(sc, near)) for sc in random_scenarios(40, seed=11)]
    a = solve_many(moved)
    b = solve_many(moved, starts=[p.throughput_mops for p in cold])
    apart = [sc for sc, x, y in zip(moved, a, b)
             if abs(x.throughput_mops / y.throughput_mops - 1) > 1e-6]
    # where the loop's balance has more than one root (a resend or stall cliff
    # crossed twice), each start keeps to its own: both are roots
    assert len(apart) <= 2
    for spec, x, y in zip(moved, a, b):
        for p in (x, y):
            if not (p.details["jump"] or p.details["saturated"]):
                assert p.details["cycle_us"] * p.throughput_mops == pytest.approx(
                    spec.clients.threads, rel=1e-4)


# ---------------------------------------------------------------- directions
def mops(profile, **ch):
    return solve(compile_rack(Scenario.default().updated(ch), profile)).throughput_mops


def test_a_plain_db_is_faster_than_transactiondb_at_scale(profile):
    """TransactionDB's commit path is shared by a machine's instances: it caps a
    16-worker rack and hardly matters to one worker. (Two client machines, as
    the lab's tuning series had, so that the client cores do not cap both.)"""
    two = {"clients.machines": 2}
    big = (mops(profile, **two, **{"storage.db": "normal"})
           / mops(profile, **two, **{"storage.db": "txn"}))
    one = (mops(profile, **{"storage.db": "normal", "servers.count": 1, "clients.threads": 32})
           / mops(profile, **{"storage.db": "txn", "servers.count": 1, "clients.threads": 32}))
    assert big > 1.1 and big > one >= 1.0


def test_more_client_cores_help_only_where_they_bind(profile):
    few = mops(profile, **{"clients.cores": 4, "storage.db": "normal"})
    many = mops(profile, **{"clients.cores": 256, "storage.db": "normal"})
    assert many > 1.5 * few
    single = [mops(profile, **{"clients.cores": c, "servers.count": 1, "clients.threads": 32})
              for c in (16, 256)]
    assert single[1] == pytest.approx(single[0], rel=0.02)


def test_wal_syncs_block_writes(profile):
    """16 MiB per WAL sync: a long block per sync, which the loop piles up behind."""
    assert mops(profile, **{"storage.wal_bytes_per_sync_mb": 16.0}) < \
        mops(profile, **{"storage.wal_bytes_per_sync_mb": 0.0})


def test_a_long_timeout_costs_where_packets_are_lost(profile):
    """Lost packets idle their threads for the timeout: with small buffers a
    5 s timeout costs throughput that a 10 ms one does not, and with buffers
    that never overflow the timeout does not matter."""
    small = {"servers.rcvbuf_kb": 16, "clients.threads": 2048, "storage.db": "normal"}
    assert mops(profile, **small, **{"clients.timeout_ms": 5000.0}) < \
        mops(profile, **small, **{"clients.timeout_ms": 10.0})
    big = {"servers.rcvbuf_kb": 1 << 20, "storage.wal": False, "storage.db": "normal"}
    assert mops(profile, **big, **{"clients.timeout_ms": 5000.0}) == pytest.approx(
        mops(profile, **big, **{"clients.timeout_ms": 1000.0}), rel=1e-3)
