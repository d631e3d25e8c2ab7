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


#: The solver-mechanics tests of the collapse chain and of warm starts pin the
#: regime they exercise (which workers collapse at a 5 ms timeout, how far a
#: sigma point lies from its centre) to a frozen profile, the tofino-testbed fit
#: of 2026-11-22 (before compaction_us). A refit of the embedded profile moves
#: that regime, which says nothing about the solver.
REGIMES = "tests/model/fixtures/solver-regimes.toml"
#: ... and to the service of that day: the busy-peer share_penalty on every
#: worker. Since 2026-11-26 it slows unpinned workers only, so these tests run
#: the rack unpinned, with the fixture's unpinned_factor set to 1.
AS_FROZEN = {"servers.pinned": False}


@pytest.fixture(scope="module")
def regime_profile():
    return Profile.load(REGIMES)


def quiet(profile):
    """A profile with every load-dependent effect switched off: a pure product-form
    network. The receive floor and the gap go too: they are fixed parts of a
    service, so with them a service is not exponential (docs/model.md, "Service")."""
    return profile.with_values({"idle_penalty": 0.0, "share_penalty": 0.0, "disk_mbps": 1e9,
                                "flush_fixed_ms": 0.0, "wal_switch_ms": 0.0,
                                "wal_switch_ms_per_mbps": 0.0, "rcvbuf_pkt_bytes": 1e-3,
                                "recv_floor_us": 0.0, "server_gap_us": 0.0}, "test")


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


def test_timeouts_behind_a_saturated_worker_are_not_the_bottleneck(profile):
    """NoCache's hottest workers are saturated: its lost requests park the
    clients those workers cannot serve, and the timeout (100 ms or 5 s) does
    not move throughput. The bottleneck names the workers, with the timeouts
    as evidence, and the clients' timeout share is the delay the state was
    solved at over N / X (it read 123 %, shown as 100 %, at 5 s)."""
    nocache = Scenario.default().updated({"switch.cache": False})
    short = predict(nocache.updated({"clients.timeout_ms": 100.0}), profile)
    long = predict(nocache.updated({"clients.timeout_ms": 5000.0}), profile)
    assert long.throughput_mops == pytest.approx(short.throughput_mops, rel=0.01)
    for p in (short, long):
        b = p.bottleneck
        assert b.kind == "server" and b.share >= 0.95, b.text()
    # at 5 s the clients spend most of their time waiting out lost requests
    # (at 100 ms, under the 30 % that makes it evidence since the receive
    # floor and gap became fixed parts of a service: a shorter queue tail)
    b = long.bottleneck
    assert 0.3 < b.evidence["timeout_share"] < 0.99, b.evidence
    assert "does not limit throughput" in b.text()


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


# ---------------------------------------------------------------- blocks, short runs, mixtures
def test_sleeping_clients_cannot_arrive_during_a_block():
    """clients.free_during_block: threads waiting out a lost request sleep
    through a block shorter than their timeout, wake within a longer one."""
    from model.rack.clients import free_during_block
    N, here, asleep = 1024.0, 20.0, 400.0
    short = free_during_block(N, here, asleep, 1_000.0, 1_000_000.0)
    assert short == pytest.approx(N - here - asleep * (1 - 1e-3))
    longer = free_during_block(N, here, asleep, 500_000.0, 1_000_000.0)
    assert short < longer < N - here
    assert free_during_block(N, here, asleep, 5_000.0, 1_000.0) == N - here   # all wake
    assert free_during_block(N, here, asleep, 5_000.0, math.inf) == N - here - asleep
    assert free_during_block(10.0, 20.0, 0.0, 1.0, 1.0) == 1.0               # at least one


def test_fewer_sleepers_more_block_overflow(profile, monkeypatch):
    """With 1 s timeouts, WAL blocks of a 1 MiB memtable drop fewer packets than
    if every thread kept sending (the simulator's 16.6k per run, see
    docs/model.md): the prediction lies between none and the no-sleep bound.
    (The mechanism is swapped in Python, so the numpy reference solves it;
    tests/model/test_rack_step.py holds the compiled solve to it.)"""
    from model.rack import clients
    from model.solvers import rack_step
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)
    sc = Scenario.default().updated({"storage.memtable_mb": 1.0})
    with_sleep = predict(sc, profile)
    real = clients.free_during_block
    try:
        clients.free_during_block = lambda N, here, asleep, L, period: real(N, here, 0.0, L, period)
        no_sleep = predict(sc, profile)
    finally:
        clients.free_during_block = real
    assert 0 < with_sleep.pktloss < no_sleep.pktloss
    assert with_sleep.throughput_mops > no_sleep.throughput_mops


def test_a_run_too_short_to_reach_maxnum_never_stops_writes():
    """lsm.flush_cycles with memtables_per_run: writes stop only once maxnum
    memtables have filled in the run; a long run keeps the steady cycle."""
    from model.rack import lsm
    spec = lsm.LsmSpec(entry_bytes=188.0, memtable_bytes=1 << 20, flushnum=1, maxnum=4, wal=False,
                       wal_block_base_us=0.0, wal_block_us_per_mbps=0.0, flush_fixed_us=50_000.0,
                       disk_bytes_per_us=5.0, wamp=10.0, slowdown_bytes_per_us=16.0, bg_threads=2)
    t = lsm.LsmTable.of([spec])
    args = (np.array([0.5]), np.array([5.0]), np.array([0.0]), np.array([1.0]))
    steady = lsm.flush_cycles(t, *args)
    assert steady.stop_fraction[0] > 0.1                       # flushes cannot keep up
    assert lsm.flush_cycles(t, *args, np.array([3.0])).stop_fraction[0] == 0.0
    half = lsm.flush_cycles(t, *args, np.array([8.0])).stop_fraction[0]
    assert 0 < half < steady.stop_fraction[0]
    assert lsm.flush_cycles(t, *args, np.array([1e9])).stop_fraction[0] == \
        pytest.approx(steady.stop_fraction[0])


def test_stalls_pool_over_equally_loaded_workers_only():
    """lsm.pool_stalls: workers whose write rates agree within 2 % (of their
    group's first, sorted by rate) share the weighted mean of their stall
    figures; a worker loaded 50 % more keeps its own, and idle workers are
    left alone. Nothing happens without a stall."""
    from model.rack import lsm
    n = 5
    cyc = {f: np.zeros(n) for f in lsm.FlushCycles.__dataclass_fields__}
    cyc["stop_fraction"][:] = [0.1, 0.3, 0.5, 0.0, 0.2]
    cyc["stop_us"][:] = [1.0, 3.0, 5.0, 0.0, 2.0]
    cyc["flush_busy"][:] = [0.9, 1.0, 1.0, 0.0, 1.0]
    writes = [1.0, 1.01, 1.5, 0.0, 1.015]
    lsm.pool_stalls(cyc, writes, weight=[1.0, 2.0, 1.0, 1.0, 1.0])
    assert cyc["stop_fraction"].tolist() == pytest.approx([0.225, 0.225, 0.5, 0.0, 0.225])
    assert cyc["stop_us"].tolist() == pytest.approx([2.25, 2.25, 5.0, 0.0, 2.25])
    assert cyc["flush_busy"].tolist() == [0.9, 1.0, 1.0, 0.0, 1.0]     # not a stall figure
    calm = {f: np.zeros(2) for f in lsm.FlushCycles.__dataclass_fields__}
    calm["cycle_us"][:] = [5.0, 7.0]
    lsm.pool_stalls(calm, [1.0, 1.0])
    assert calm["cycle_us"].tolist() == [5.0, 7.0]


@pytest.mark.parametrize("compiled", [True, False])
def test_equal_workers_at_the_flush_capacity_limit_settle_with_equal_stalls(profile, monkeypatch,
                                                                             compiled):
    """At the flush-capacity limit each worker's cycle map is neutral, and four
    equal workers drifted to stop 0, 22.5, 0 and 4.6 % of the time without
    settling (docs/model.md, section 3). Pooled, they settle, equal, at the
    simulator's throughput (sim.parity "flush stalls": 0.1805 MOPS in 8 s),
    in the compiled solver and the numpy reference alike."""
    from model.solvers import rack_step
    monkeypatch.setattr(rack_step, "USE_COMPILED", compiled)
    sc = Scenario.default().updated({
        "servers.count": 4, "clients.threads": 64, "workload.read_ratio": 0.0,
        "storage.wal": False, "storage.memtable_mb": 0.25, "storage.flushnum": 1,
        "storage.maxnum": 2, "storage.l1_mb": 1.0})
    pred = predict(sc, profile)
    assert pred.details["converged"]
    stops = pred.details["write_stop_fraction"]
    assert min(stops) > 0.05 and max(stops) == pytest.approx(min(stops), rel=1e-9)
    procs = [s.process_us for s in pred.servers]
    assert max(procs) == pytest.approx(min(procs), rel=1e-3)
    assert pred.throughput_mops == pytest.approx(0.1805, rel=0.02)


def test_short_run_with_a_huge_maxnum_settles_and_obeys_the_laws(profile):
    """Found by the soak (tests/robustness/soak.py): 1,446 requests, maxnum 930,
    7 KB values. The steady cycle stops writes 99 % of the time at high load
    and never at low load; the map jumped between the two for 2,400 steps and
    reported X s S = 8 x the utilisation. A run that short never fills 930
    memtables, so writes never stop (as the simulator shows: 2.28 MOPS)."""
    from tests.robustness.laws import violations
    sc = Scenario.default().updated({
        "clients.threads": 305, "clients.timeout_ms": 6.75, "clients.retry": "strict",
        "switch.mode": "read-only", "switch.partition": "range", "servers.count": 59,
        "servers.machines": 45, "servers.cores": 25, "servers.pinned": True,
        "servers.rcvbuf_kb": 208, "servers.bg_threads": 1, "storage.memtable_mb": 37.25,
        "storage.flushnum": 2, "storage.maxnum": 930, "storage.wal": False,
        "workload.distribution": "uniform", "workload.read_ratio": 0.157,
        "workload.key_bytes": 165, "workload.value_bytes": 7123, "workload.queries_m": 0.0014466})
    pred = predict(sc, profile)
    assert pred.details["converged"]
    assert violations(pred, compile_rack(sc, profile)) == []
    assert pred.stall_fraction == 0.0
    assert pred.throughput_mops > 1.0


def test_an_unsettled_solution_is_law_abiding_and_flagged(profile, monkeypatch, capsys):
    """If the fixed point runs out of steps, the figures are the map's last
    output (one recursion: the laws hold) and predict says so."""
    import model.solvers.analytic as an
    from sim.cli import main
    from tests.robustness.laws import violations
    monkeypatch.setattr(an, "MAX_ITER", 1)
    sc = Scenario.default().updated({"storage.memtable_mb": 1.0})
    pred = predict(sc, profile)
    assert not pred.details["converged"]
    assert violations(pred, compile_rack(sc, profile)) == []
    assert main(["predict", "--set", "storage.memtable_mb=1", "--no-intervals"]) == 0
    assert "did not settle" in capsys.readouterr().out


# ---------------------------------------------------------------- warm starts
def test_warm_start_reaches_the_same_fixed_point_in_fewer_steps(regime_profile):
    """solve_many(warm_from=...): a rack started from a neighbour's solution (a
    sigma-point profile of an interval) gets the cold answer, in fewer steps."""
    from model.intervals import sigma_profiles
    from model.solvers import predict_many
    sc = Scenario.default().updated(AS_FROZEN)
    points = sigma_profiles(regime_profile)[0][:4]
    profs = [regime_profile, *points]
    cold = predict_many([sc] * len(profs), profs)
    warm = predict_many([sc] * len(profs), profs, warm_from=[None] + [0] * len(points))
    for c, w in zip(cold, warm):
        assert w.throughput_mops == pytest.approx(c.throughput_mops, rel=1e-4)
        assert [s.wait_us for s in w.servers] == pytest.approx([s.wait_us for s in c.servers],
                                                              rel=1e-3)
    assert sum(w.details["iterations"] for w in warm[1:]) < \
        0.7 * sum(c.details["iterations"] for c in cold[1:])


def test_a_sigma_point_of_a_collapsing_rack_runs_its_chain_from_its_centres_states(regime_profile):
    """With a 5 ms timeout a worker has two stable states and the answer is the
    collapse chain's mixture. A sigma point runs its own chain (its weights
    follow its profile: here 15 % above the centre), each collapsed state
    started from the centre's same state and its healthy state cold (near
    the collapse it has more than one fixed point): the cold answer within
    the fixed point's tolerance, in fewer steps."""
    from model.intervals import sigma_profiles
    from model.solvers import predict_many
    sc = Scenario.default().updated({"clients.timeout_ms": 5.0, **AS_FROZEN})
    profs = [regime_profile, sigma_profiles(regime_profile)[0][0]]
    cold = predict_many([sc, sc], profs)
    warm = predict_many([sc, sc], profs, warm_from=[None, 0])
    # the centre is solved cold both times, but in batches of different sizes:
    # numpy's vectorised arithmetic may round a last bit differently by position
    assert warm[0].throughput_mops == pytest.approx(cold[0].throughput_mops, rel=1e-12)
    assert warm[1].throughput_mops == pytest.approx(cold[1].throughput_mops, rel=1e-5)
    assert abs(cold[1].throughput_mops / cold[0].throughput_mops - 1) > 0.05
    assert [s.wait_us for s in warm[1].servers] == \
        pytest.approx([s.wait_us for s in cold[1].servers], rel=1e-3)
    assert len(warm[1].details["collapsed_workers"]) == len(cold[1].details["collapsed_workers"])
    assert warm[1].details["iterations"] < cold[1].details["iterations"]   # 95 vs 115


# ---------------------------------------------------------------- the collapse chain
def _collapse_states(profile, timeout_ms=5.0, **more):
    from model.solvers import analytic as an
    sc = Scenario.default().updated({"clients.timeout_ms": timeout_ms, **AS_FROZEN, **more})
    b = an._Batch.of([compile_rack(sc, profile)])
    order = [int(i) for i in np.argsort(-b.s[0], kind="stable")]
    states = [an._row(an._solve_states(b, an._initial(b, [tuple(order[:k])])), 0, b)
              for k in range(3)]
    return an, b, order, states


def test_stationary_distribution_of_a_two_state_chain():
    from model.solvers.analytic import _stationary
    up, down = 0.3, 1.2
    pi = _stationary(np.array([[-up, up], [down, -down]]))
    assert pi == pytest.approx([down / (up + down), up / (up + down)], rel=1e-12)


def test_a_block_takes_the_clients_of_the_collapsed_workers(regime_profile):
    """What the simulator shows at a 5 ms timeout (docs/model.md, "Short
    timeouts"): a WAL switch at a healthy worker collapses it; one old
    collapsed worker usually keeps its clients through the block, two lose
    theirs. The survival falls with the block's length."""
    an, b, order, (st0, st1, st2) = _collapse_states(regime_profile)
    h1 = an._handovers(b, st1, tuple(order[:1]), 0)
    h2 = an._handovers(b, st2, tuple(order[:2]), 0)
    assert len(h1) == 15 and len(h2) == 14            # every healthy worker switches
    assert all(keep[0] > 0.5 for _, keep in h1)
    assert all(max(keep) < 0.5 for _, keep in h2)
    # WAL switches per second over the healthy workers: a memtable each per ~24 s
    assert 0.3 < sum(r for r, _ in h1) * 1e6 < 1.5
    j = next(i for i in order if i != order[0])
    short, long_ = (an._survival(b, st1, tuple(order[:1]), j, B)[0] for B in (5e3, 5e5))
    assert short > 0.99 and long_ < 0.01


def test_one_collapsed_worker_decays_as_the_closed_form(profile):
    """One collapsed worker: its clients decay at (1 - w / D) / r over the
    block, the part w / D of its escapes being caught by itself again."""
    import math as m
    an, b, order, (_, st1, _) = _collapse_states(profile)
    i, j, B = order[0], order[1], 64_500.0
    p, S = float(st1.p_drop[0, i]), float(st1.S_req[0, i])
    period, K, N = float(b.period[0]), float(b.K[0]), float(b.N[0])
    r = p / (1 - p) * period + K * S
    w, D = b.s[0, i] * p, b.s[0, j] + b.s[0, i] * p
    n0 = float(st1.q[0, i]) + max(0.0, N - float(st1.q[0, i]) - float(st1.q[0, j])) * w / D
    nB = n0 * m.exp(-(1 - w / D) * B / r)
    need = period / S
    expect = 0.5 * m.erfc(-(nB - need) / m.sqrt(nB) / m.sqrt(2))
    assert an._survival(b, st1, (i,), j, B)[0] == pytest.approx(expect, rel=1e-9)


def test_the_drain_of_many_collapsed_workers_is_the_matrix_exponential():
    """_drain's symmetrised eigen-decomposition gives scipy's expm(M t) n0 for
    M = -diag(a) + u a^T, over 1-40 workers and rates across five decades,
    and the general form where some worker catches nobody (u = 0)."""
    import numpy as np
    from scipy.linalg import expm
    from model.solvers.analytic import _drain
    rng = np.random.default_rng(5)
    for k in list(range(1, 41)) * 5:
        a = 10 ** rng.uniform(-6, -1, k)
        u = rng.dirichlet(np.ones(k)) * rng.uniform(0.1, 1.0)
        if k > 2 and rng.random() < 0.2:
            u[rng.integers(k)] = 0.0
        n0, t = rng.uniform(0, 1e4, k), 10 ** rng.uniform(1, 7)
        want = expm((np.outer(u, a) - np.diag(a)) * t) @ n0
        got = _drain(a, u, t, n0)
        assert np.max(np.abs(got - want)) <= 1e-8 * max(np.max(np.abs(want)), 1e-12)


def test_the_collapse_chain_weighs_one_and_two_collapsed_workers(regime_profile):
    """At 5 ms the number collapsed alternates between one and two at WAL
    switches (the simulator: two 58-72 % of the time); the old mixture put
    91 % on one collapsed worker for the whole run."""
    from model.solvers import analytic as an
    _, b, order, (st0, _, _) = _collapse_states(regime_profile)
    mixture, _ = an._collapse_mixture(b, st0)
    weights = {len(st.collapsed[0]): w for w, st in mixture}
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights.get(0, 0.0) < 0.05                  # the first collapse comes early
    assert weights[1] > 0.3 and weights[2] > 0.3
    # with the WAL off there are no switch blocks: only queue fluctuations move k
    _, b_off, _, (st0_off, _, _) = _collapse_states(regime_profile, **{"storage.wal": False})
    assert an._handovers(b_off, st0_off, (), 0) == []


def test_warm_from_must_point_at_a_cold_rack(profile):
    from model.solvers import predict_many
    sc = Scenario.default()
    with pytest.raises(ValueError):
        predict_many([sc, sc, sc], profile, warm_from=[None, 0, 1])


# ---------------------------------------------------------------- late replies
def _late_sum_one(tail, k_drop, S, A, cv2, dup, budget, period, every):
    """One worker's late-reply sum written out directly: the gamma mixture of
    the time at the worker, summed over the timers that fire while it is late
    (clients.resends_while_late), or the first timer only."""
    from scipy.special import gammaincc
    from model.rack.clients import resends_while_late
    pk = tail[:-1] - tail[1:]
    k = np.arange(len(pk), dtype=float)
    keep = (k < k_drop) & (pk > 1e-15)
    if not keep.any():
        return 0.0
    pk, k = pk[keep] / pk[keep].sum(), k[keep]
    mean = S + k * A
    shape = (k * (1.0 + dup) + 1.0) / cv2
    scale = mean / shape
    horizon = float(np.max(mean + 10.0 * np.sqrt(shape) * scale))

    def surv(t):
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return np.array([float(gammaincc(shape, x / scale) @ pk) if 0 < x < horizon else
                         float(x <= 0) for x in t])
    return resends_while_late(surv, budget, period, horizon) if every else float(surv(budget)[0])


def test_late_sums_of_many_workers_equal_each_worker_on_its_own():
    """_late_sums (all workers in one vectorised call) gives each worker's own
    sum: FarReach resends while late, and the first timer only."""
    from model.solvers.analytic import _cum_logx, _late_sums
    rng = np.random.default_rng(3)
    R, N = 3, 400
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.9 / 30.0) * -np.expm1(-n / rng.uniform(20.0, 80.0, size=(R, 1)))  # X(n) saturating
    Ns = np.array([N, N - 50, N - 120])
    cum = _cum_logx(x_hist, Ns, 300)
    rows = np.array([0, 0, 1, 2, 2])
    logd = np.log(np.array([20.0, 28.0, 25.0, 30.0, 22.0]))
    k_drop = np.array([250.0, 180.0, 290.0, 120.0, 200.0])
    S = np.array([25.0, 30.0, 27.0, 40.0, 26.0])
    A = S * np.array([1.0, 1.2, 1.1, 1.5, 1.0])
    cv2 = np.array([1.0, 0.5, 2.0, 1.0, 0.8])
    dup = np.array([0.0, 0.3, 0.1, 1.0, 0.0])
    budget = np.array([900.0, 2000.0, 1500.0, 3000.0, 1e6])
    period = budget + 20.0
    for every in (True, False):
        got = _late_sums(cum[rows], logd, k_drop, S, A, cv2, dup, budget, period,
                         np.full(len(rows), every))
        for p, r in enumerate(rows):
            tail = np.nan_to_num(np.exp(np.minimum(np.arange(cum.shape[1]) * logd[p] + cum[r], 0.0)))
            want = _late_sum_one(tail, k_drop[p], S[p], A[p], cv2[p], dup[p], budget[p],
                                 period[p], every)
            # queue lengths past 16 are summed in bins (_k_bins): 7e-5 at most here
            assert got[p] == pytest.approx(want, rel=2e-4, abs=1e-15)
        assert got[4] == 0.0                      # a timeout far past every wait
        assert np.all(got[:4] > 0)               # the others can be late


def test_late_sums_built_a_slice_of_workers_at_a_time_are_the_same(monkeypatch):
    """_late_sums builds its workers x bins arrays for at most LATE_CHUNK_CELLS
    cells at once (a full-space plan's sigma points asked for 3.8 GiB an
    array); each worker's sum is its own, so the slices give the same sums
    (to rounding: 2e-16 relative)."""
    from model.solvers import analytic
    rng = np.random.default_rng(5)
    R, N, P = 4, 600, 37
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.9 / 30.0) * -np.expm1(-n / rng.uniform(20.0, 80.0, size=(R, 1)))
    cum = analytic._cum_logx(x_hist, np.full(R, N), 500)
    rows = rng.integers(0, R, size=P)
    S = rng.uniform(20.0, 40.0, P)
    args = (cum, np.log(rng.uniform(15.0, 35.0, P)), rng.uniform(100.0, 480.0, P), S,
            S * rng.uniform(1.0, 1.5, P), rng.uniform(0.3, 2.0, P), rng.uniform(0.0, 1.0, P),
            rng.uniform(500.0, 4000.0, P))
    for every in (True, False):
        whole = analytic._late_sums(*args, args[-1] + 20.0, np.full(P, every), rows)
        monkeypatch.setattr(analytic, "LATE_CHUNK_CELLS", 100)   # a few workers a slice
        sliced = analytic._late_sums(*args, args[-1] + 20.0, np.full(P, every), rows)
        monkeypatch.undo()
        assert np.any(whole > 0)
        assert np.allclose(sliced, whole, rtol=1e-12, atol=0.0)


def test_workers_whose_timer_fires_after_every_wait_are_skipped_exactly():
    """Workers whose first timer fires after the bound on every wait's horizon
    (mean + 10 sd at k = 0 or k = k_drop) are left out before the bins are
    built, and get 0, as the timer-by-timer reference does; the rest are
    summed as before, each equal to its own call. Budgets from half to twice
    the bound, so both sides are exercised."""
    from model.solvers.analytic import _cum_logx, _late_sums
    rng = np.random.default_rng(11)
    N = 400
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.9 / 30.0) * -np.expm1(-n / 40.0)
    cum = _cum_logx(x_hist, np.array([N]), 300)
    P = 40
    rows = np.zeros(P, dtype=np.int64)
    logd = np.log(rng.uniform(18.0, 32.0, P))
    k_drop = rng.uniform(50.0, 290.0, P)
    S = rng.uniform(20.0, 40.0, P)
    A = S * rng.uniform(0.8, 1.5, P)
    cv2 = rng.uniform(0.3, 2.0, P)
    dup = rng.uniform(0.0, 1.0, P)
    K = np.minimum(np.ceil(k_drop), cum.shape[1] - 1.0)
    bound = S + K * A + 10 * np.sqrt(cv2) * np.maximum(S, (S + K * A) / np.sqrt(K * (1 + dup) + 1))
    budget = bound * rng.uniform(0.5, 2.0, P)
    period = budget + 20.0
    got = _late_sums(cum[rows], logd, k_drop, S, A, cv2, dup, budget, period, np.ones(P, bool))
    assert np.sum(budget >= bound) >= 10 and np.sum(budget < bound) >= 10
    for p in range(P):
        tail = np.nan_to_num(np.exp(np.minimum(np.arange(cum.shape[1]) * logd[p] + cum[0], 0.0)))
        want = _late_sum_one(tail, k_drop[p], S[p], A[p], cv2[p], dup[p], budget[p],
                             period[p], True)
        # (binned queue lengths: within 1 % or 1e-7 of a late fraction; the test
        # above holds them to 2e-4 on larger sums)
        assert got[p] == pytest.approx(want, rel=1e-2, abs=1e-7), p
        alone = _late_sums(cum[rows[p:p + 1]], logd[p:p + 1], k_drop[p:p + 1], S[p:p + 1],
                           A[p:p + 1], cv2[p:p + 1], dup[p:p + 1], budget[p:p + 1],
                           period[p:p + 1], np.ones(1, bool))
        assert got[p] == pytest.approx(float(alone[0]), rel=1e-12, abs=1e-300)
        if budget[p] >= bound[p]:
            assert got[p] == 0.0 and want == 0.0
    # all quiet: no bins are built at all
    import model.solvers.analytic as an
    q = budget >= bound

    def no_bins(width):
        raise AssertionError("bins built for workers that cannot be late")
    keep, an._k_bins = an._k_bins, no_bins
    try:
        out = _late_sums(cum[rows[q]], logd[q], k_drop[q], S[q], A[q], cv2[q], dup[q],
                         budget[q], period[q], np.ones(int(q.sum()), bool))
    finally:
        an._k_bins = keep
    assert np.all(out == 0.0)


def test_many_late_timers_in_closed_form_match_the_sum(monkeypatch):
    """With a short timeout under a long queue, dozens to hundreds of timers
    fire while a reply is late; from LATE_TIMERS on their sum is taken in
    closed form (Euler-Maclaurin on the gamma mixture) instead of timer by
    timer. Against the timer-by-timer sum: within 0.1 % (measured 5e-5)."""
    from model.solvers import analytic as an
    rng = np.random.default_rng(5)
    R, N = 2, 1500
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.95 / 30.0) * -np.expm1(-n / rng.uniform(20.0, 80.0, size=(R, 1)))
    Ns = np.array([N, N - 200])
    cum = an._cum_logx(x_hist, Ns, 1200)
    rows = np.array([0, 1, 1])
    logd = np.log(np.array([31.0, 33.0, 29.0]))
    k_drop = np.array([1100.0, 900.0, 1000.0])
    S = np.array([30.0, 30.0, 28.0])
    A = S * 1.1
    cv2 = np.array([1.0, 0.5, 0.8])
    dup = np.array([0.2, 0.5, 0.0])
    budget = np.array([400.0, 1000.0, 150.0])
    period = budget + 20.0
    args = (cum[rows], logd, k_drop, S, A, cv2, dup, budget, period, np.ones(3, dtype=bool))
    fast = an._late_sums(*args)
    monkeypatch.setattr(an, "LATE_TIMERS", 10 ** 9)
    slow = an._late_sums(*args)
    assert slow[0] > 1 and slow[2] > 1 and slow[1] == 0.0
    assert not np.array_equal(fast, slow)         # the closed form was taken
    assert fast == pytest.approx(slow, rel=1e-3)


def test_timers_that_fire_before_the_packet_is_served_count_one_each():
    """A timeout shorter than the round trip leaves a negative budget at the
    worker: every timer up to the first positive budget is certainly late (one
    each), and the rest follow the gamma mixture. Against the reference sum
    timer by timer (_late_sum_one), with budgets from -2,000 us to 0, and the
    first timer only. (A 12 us timeout under a 5 ms queue used to sum ~400
    timers one gamma call each: a full-range plan row ran for minutes.)"""
    from model.solvers.analytic import _cum_logx, _late_sums
    rng = np.random.default_rng(8)
    R, N = 2, 400
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.9 / 30.0) * -np.expm1(-n / rng.uniform(20.0, 80.0, size=(R, 1)))
    cum = _cum_logx(x_hist, np.array([N, N - 60]), 300)
    rows = np.array([0, 0, 1, 1])
    logd = np.log(np.array([20.0, 28.0, 25.0, 30.0]))
    k_drop = np.array([250.0, 180.0, 290.0, 120.0])
    S = np.array([25.0, 30.0, 27.0, 40.0])
    A = S * 1.1
    cv2 = np.array([1.0, 0.5, 2.0, 1.0])
    dup = np.array([0.0, 0.3, 0.1, 1.0])
    budget = np.array([-2000.0, -7.0, 0.0, -150.0])
    period = np.array([40.0, 14.0, 30.0, 50.0])
    from model.solvers import analytic as an
    calls = []
    real_sf = an._gamma_sf

    def counted(a, x):
        calls.append(np.size(x))
        return real_sf(a, x)

    for every in (True, False):
        calls.clear()
        an._gamma_sf = counted
        try:
            got = _late_sums(cum[rows], logd, k_drop, S, A, cv2, dup, budget, period,
                             np.full(len(rows), every))
        finally:
            an._gamma_sf = real_sf
        # the sure timers cost no gamma call: at most LATE_TIMERS timer by timer
        # plus the closed form's two (50 sure timers of worker 0 used to be 50 calls)
        assert len(calls) <= an.LATE_TIMERS + 2
        for p, r in enumerate(rows):
            tail = np.nan_to_num(np.exp(np.minimum(np.arange(cum.shape[1]) * logd[p] + cum[r], 0.0)))
            want = _late_sum_one(tail, k_drop[p], S[p], A[p], cv2[p], dup[p], budget[p],
                                 period[p], every)
            # timer by timer below LATE_TIMERS, closed form past it (5e-5 there)
            assert got[p] == pytest.approx(want, rel=1e-4)
        if every:
            assert got[0] > 2000.0 / 40.0          # the sure ones and the rest
        else:
            assert np.all(got == 1.0)              # the first timer is certainly late


def test_deep_queues_are_summed_in_bins_close_to_k_by_k(monkeypatch):
    """Queues thousands deep (a 30,000-client rack over 296 workers held
    21,000 at a worker) are summed over bins of queue length, floor(sqrt(k)/4)
    wide: against the sum k by k within 1e-3, with a tenth of the terms."""
    from model.solvers import analytic as an
    rng = np.random.default_rng(2)
    N = 20000
    n = np.arange(1, N + 1)[None, :]
    x_hist = (0.95 / 30.0) * -np.expm1(-n / rng.uniform(20.0, 80.0, size=(2, 1)))
    cum = an._cum_logx(x_hist, np.array([N, N - 3000]), 19000)
    rows = np.array([0, 0, 1, 1])
    logd = np.log(np.array([31.2, 31.5, 31.0, 31.58]))
    k_drop = np.array([15000.0, 9000.0, 18000.0, 12000.0])
    S = np.array([30.0, 30.0, 28.0, 31.0])
    A = S * 1.05
    cv2 = np.array([1.0, 0.2, 0.05, 0.5])
    dup = np.array([0.0, 0.5, 0.0, 1.0])
    budget = np.array([2000.0, 8000.0, 1500.0, 500.0])
    period = budget + 20.0
    assert len(an._k_bins(19000)) < 19000 / 10
    for every in (True, False):
        args = (cum, logd, k_drop, S, A, cv2, dup, budget, period, np.full(4, every))
        binned = an._late_sums(*args, rows=rows)
        with monkeypatch.context() as m:
            m.setattr(an, "_k_bins", lambda w: np.arange(w + 1))
            exact = an._late_sums(*args, rows=rows)
        assert np.count_nonzero(exact > 0.1) >= 3
        assert binned == pytest.approx(exact, rel=1e-3)


def test_block_overflow_of_many_stations_matches_the_one_station_form():
    """_overflow_pairs (every worker of a batch at once, only the columns from
    the smallest room on) equals network.block_overflow worker by worker,
    for rooms from below zero (overflow from an empty queue) to past the
    population, over racks of different populations."""
    from model.rack.network import block_overflow
    from model.solvers.analytic import _cum_logx, _overflow_pairs
    rng = np.random.default_rng(5)
    N = np.array([40, 300, 7])
    x_hist = np.zeros((3, 300))
    for r, n in enumerate(N):
        x_hist[r, :n] = np.cumsum(rng.uniform(0.1, 1.0, n)) / np.arange(1, n + 1) * 0.9
    cum = _cum_logx(x_hist, N, 299)
    rows = np.array([0, 0, 1, 1, 1, 2, 2])
    logd = np.log(rng.uniform(0.3, 2.0, len(rows)))
    c = np.array([12.4, -3.0, 150.0, 0.2, 420.0, 3.7, 6.5])
    got = _overflow_pairs(cum, logd, c, rows)
    for p, (r, ld, cc) in enumerate(zip(rows, logd, c)):
        k = np.arange(cum.shape[1])
        tail = np.where(np.isfinite(cum[r]), np.exp(np.minimum(k * ld + cum[r], 0.0)), 0.0)
        a = 50.0                                   # room - a = c
        want = block_overflow(tail, cc + a, a)
        assert got[p] == pytest.approx(want, rel=1e-9, abs=1e-12), (p, got[p], want)


@pytest.mark.skipif(__import__("model.solvers.mva_core", fromlist=["_compiled"])._compiled is None,
                    reason="native/mva is not built")
def test_compiled_block_overflow_is_the_numpy_reference_to_the_bit():
    """native/mva's overflow_pairs adds the same terms in the same order as
    _overflow_pairs_numpy: equal to within a few units in the last place
    (numpy's vectorised exp, chosen by the CPU, and libm's may round the last
    bit apart: 1-4e-16 on an AVX-512 machine) over random racks, with rooms
    below zero, inside the queue, on a column and past the last column, and
    with the reference's edge values (cum -inf past a population, logd -inf
    for an idle worker, +inf, NaN)."""
    from model.solvers import mva_core
    from model.solvers.analytic import TAIL_CUT, _cum_logx, _overflow_pairs_numpy
    rng = np.random.default_rng(12)
    cut_runs = 0
    for trial in range(40):
        R = int(rng.integers(1, 6))
        N = rng.integers(2, 400, R)
        x_hist = np.zeros((R, int(N.max())))
        for r, n in enumerate(N):
            x_hist[r, :n] = np.cumsum(rng.uniform(0.1, 1.0, n)) / np.arange(1, n + 1) * 0.9
        cum = _cum_logx(x_hist, N, int(rng.integers(1, int(N.max()))))
        P = int(rng.integers(1, 200))
        rows = rng.integers(0, R, P)
        logd = np.log(rng.uniform(0.2, 2.5, P))
        logd[rng.random(P) < 0.05] = -np.inf
        logd[rng.random(P) < 0.02] = np.inf
        logd[rng.random(P) < 0.02] = np.nan
        width = cum.shape[1]
        c = rng.uniform(-5.0, width + 5.0, P)
        on_column = rng.random(P) < 0.2
        c[on_column] = np.floor(c[on_column])
        want = _overflow_pairs_numpy(cum, logd, c, rows)
        got = mva_core._compiled.overflow_pairs(cum, logd, c, rows.astype(np.int64), TAIL_CUT)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0.0, equal_nan=True,
                                   err_msg=f"trial {trial}")
        with np.errstate(invalid="ignore"):
            cut_runs += int(np.sum(width * logd + cum[rows, -1] < TAIL_CUT))
    assert cut_runs > 100                    # the cut columns were exercised
    empty = mva_core._compiled.overflow_pairs(cum, logd[:0], c[:0], rows[:0].astype(np.int64),
                                              TAIL_CUT)
    assert empty.shape == (0,)
    with pytest.raises(ValueError, match="rows"):
        mva_core._compiled.overflow_pairs(cum, logd[:1], c[:1], np.array([R], dtype=np.int64),
                                          TAIL_CUT)


def test_the_tail_cut_changes_block_overflow_by_less_than_its_size():
    """The columns of a queue's tail below TAIL_CUT (1e-30 each) count as 0:
    against the sum over every column the overflow moves by less than
    width x 1e-30, and columns above the cut are all kept."""
    from model.solvers import analytic
    rng = np.random.default_rng(3)
    N = np.array([2000])
    x_hist = np.zeros((1, 2000))
    x_hist[0] = np.minimum(np.arange(1, 2001) / 300.0, 1.0)     # saturating throughput
    cum = analytic._cum_logx(x_hist, N, 1999)
    logd = np.log(rng.uniform(0.3, 0.9, 50))                  # short queues: deep tails cut
    c = rng.uniform(0.0, 40.0, 50)
    rows = np.zeros(50, dtype=np.int64)
    cut = analytic._overflow_pairs_numpy(cum, logd, c, rows)
    keep = analytic.TAIL_CUT
    try:
        analytic.TAIL_CUT = -np.inf
        full = analytic._overflow_pairs_numpy(cum, logd, c, rows)
    finally:
        analytic.TAIL_CUT = keep
    assert np.all(np.abs(cut - full) <= 2000 * 1e-30)
    assert np.sum(full > 1e-9) >= 25           # real overflows, not all cut
    assert np.all(cut <= full)
    # and the cut did drop columns: the deepest ones are below it
    assert np.all(1999 * logd + cum[0, -1] < analytic.TAIL_CUT)


def test_mean_stretch_matches_the_worker_by_worker_expectation():
    """service.mean_stretch (all workers of a machine at once) against the
    expectation written out worker by worker: peers busy independently
    (Poisson-binomial by convolution), background jobs Poisson."""
    from dataclasses import replace as dc_replace
    rng = np.random.default_rng(3)
    spec = compile_rack(Scenario.default(), Profile.load("tofino-testbed")).service
    sv = dc_replace(spec, cores=5, ctx_penalty=0.3)
    machine_of = np.array([0, 1, 0, 0, 2, 1, 0, 0, 1])
    util = np.array([0.9, 0.2, 0.0, 1.0, 0.5, 0.7, 0.33, 0.8, 0.05])
    bg = np.array([2.5, 0.0, 7.0])

    def reference(i):
        m = machine_of[i]
        peers = [util[j] for j in range(len(util)) if machine_of[j] == m and j != i]
        dist = np.array([1.0])
        for p in peers:
            dist = np.convolve(dist, [1.0 - p, p])
        total = 0.0
        mass = 0.0
        for a, pa in enumerate(dist):
            for k in range(60):
                pk = math.exp(-bg[m]) * bg[m] ** k / math.factorial(k)
                total += pa * pk * service.stretch(1 + a + k, sv.cores, sv.ctx_penalty)
                mass += pa * pk
        return total / mass

    got = service.mean_stretch(sv, util, machine_of, bg)
    for i in range(len(util)):
        assert got[i] == pytest.approx(reference(i), rel=1e-9)
    assert np.all(got >= 1.0)
    assert got[1] == got[5] == got[8] == 1.0    # three workers, no jobs, five cores
    assert np.all(service.mean_stretch(dc_replace(sv, cores=0), util, machine_of, bg) == 1.0)


def test_peer_distribution_by_division_matches_elimination():
    """Past EXACT_PEERS workers on a machine the busy-peer distributions come
    from dividing each worker out of the machine's whole distribution, O(n^2)
    (elimination, O(n^3), took 20 s per solver step at 1,282 workers). Both
    against each other, with utilisations at 0, 1, 1/2 and 1e-13, where a
    division the wrong way would blow up; and each row against a direct
    convolution."""
    rng = np.random.default_rng(5)
    for n in (2, 7, 65, 300):
        u = rng.random(n)
        for v, share in ((0.0, 0.1), (1.0, 0.1), (0.5, 0.05), (1e-13, 0.05), (0.999999, 0.05)):
            u[rng.random(n) < share] = v
        a, b = service._peers_by_elimination(u), service._peers_by_division(u)
        assert np.abs(a - b).max() < 1e-12
        i = int(np.argmax(u))
        direct = np.array([1.0])
        for j, p in enumerate(u):
            if j != i:
                direct = np.convolve(direct, [1.0 - p, p])
        assert np.abs(b[i] - direct).max() < 1e-12
    assert service.EXACT_PEERS == 64     # the fast soak space (<= 64 servers) stays on elimination
    big = rng.random(service.EXACT_PEERS + 1)
    assert np.array_equal(service._busy_peers_dist(big), service._peers_by_division(big))


def test_the_stretch_over_background_jobs_is_the_matrix_form():
    """g[a] = sum_k pois[k] stretch(1 + a + k) by two cumulative sums equals
    the n x kmax matrix it replaced, with the cut below, inside and past the
    jobs' range."""
    from dataclasses import replace as dc_replace
    spec = compile_rack(Scenario.default(), Profile.load("tofino-testbed")).service
    rng = np.random.default_rng(4)
    for n, cores, bg in ((9, 5, 2.5), (300, 30, 40.0), (1434, 12217, 9000.0), (50, 3, 0.0),
                         (200, 400, 0.7)):
        sv = dc_replace(spec, cores=cores, ctx_penalty=float(rng.random()))
        kmax = int(bg + 10.0 * math.sqrt(bg + 1.0)) + 1
        ks = np.arange(kmax + 1)
        pois = np.exp(ks * math.log(bg) - bg - np.array([math.lgamma(k + 1) for k in ks])) \
            if bg > 0 else (ks == 0).astype(float)
        run = 1 + np.add.outer(np.arange(n), ks)
        matrix = np.where(run > cores, run / cores * (1.0 + sv.ctx_penalty), 1.0) @ pois
        got = service._stretch_over_jobs(n, pois, sv)
        assert np.abs(got / matrix - 1.0).max() < 1e-12
        # from k0 on (mean_stretch keeps the jobs within 10 sd of the mean)
        k0 = max(0, int(bg - 10.0 * math.sqrt(bg + 1.0)))
        part = service._stretch_over_jobs(n, pois[k0:], sv, k0) / pois[k0:].sum()
        assert np.abs(part / (matrix / pois.sum()) - 1.0).max() < 1e-12


@pytest.mark.skipif(service._compiled is None, reason="native/mva is not built")
def test_compiled_peer_expectation_is_the_numpy_division_reduced(monkeypatch):
    """Past EXACT_PEERS workers mean_stretch reduces each busy-peer
    distribution in compiled code as it divides (no n x n array): the same
    sums as the numpy division's rows against g, at the same edge
    utilisations, and the same stretch as the numpy path."""
    rng = np.random.default_rng(9)
    for n in (65, 300, 1340):
        u = rng.random(n)
        for v, share in ((0.0, 0.1), (1.0, 0.1), (0.5, 0.05), (1e-13, 0.05), (0.999999, 0.05)):
            u[rng.random(n) < share] = v
        g = 1.0 + np.maximum(np.arange(n) - n / 3, 0.0) * rng.random()
        q = service._peers_by_division(u)
        dot, total = service._compiled.peers_expectation(u, g)
        assert np.abs(dot / (q @ g) - 1.0).max() < 1e-12
        assert np.abs(total / q.sum(axis=1) - 1.0).max() < 1e-12
    from dataclasses import replace as dc_replace
    spec = compile_rack(Scenario.default(), Profile.load("tofino-testbed")).service
    sv = dc_replace(spec, cores=30, ctx_penalty=0.3)
    util = rng.random(2 * 700) * 0.1            # about 70 of 700 busy against 30 cores
    machine_of = np.repeat([0, 1], 700)
    bg = np.array([4.0, 0.0])
    fast = service.mean_stretch(sv, util, machine_of, bg)
    monkeypatch.setattr(service, "_compiled", None)
    slow = service.mean_stretch(sv, util, machine_of, bg)
    assert fast.min() > 1.4                     # contention does bite here
    assert np.abs(fast / slow - 1.0).max() < 1e-12


def test_delay_rounds_stop_after_two_whose_fixed_point_did_not_settle(monkeypatch):
    """Near the root of the timeout delay some racks' map has no stable point:
    every round there ran MAX_ITER steps without settling, 1,660 steps in all
    for a 3-server NetCache rack of a full-range plan (row P0028), whose
    answer comes from its collapse chain anyway. The rounds now stop after
    UNSETTLED_ROUNDS such rounds, with the same answer (890 steps in all)."""
    import model.solvers.analytic as an
    sc = Scenario.default().updated({
        "clients.threads": 576, "clients.timeout_ms": 6.64279, "switch.mode": "read-only",
        "switch.partition": "range", "servers.count": 3, "servers.pinned": False,
        "servers.seq_check": "none", "storage.flushnum": 1, "storage.maxnum": 701,
        "storage.wal_bytes_per_sync_mb": 1.92747, "workload.distribution": "zipf",
        "workload.profile": "lab", "workload.queries_m": 0.00666023})
    # (P0028 said "sequential", which the lab profile used to read as its zipf
    # popularity; zipf is that same rack now that the profile honours the
    # distribution, docs/workload.md section 5)
    # (an unpinned rack at the fit's own unpinned_factor: see AS_FROZEN)
    spec = compile_rack(sc, Profile.load(REGIMES).with_values(
        {"unpinned_factor": 1.170800486683335}, "fit 2026-11-22"))
    compiled = an.solve(spec)          # the compiled search stops there too (its steps in all)
    from model.solvers import rack_step
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)   # the reference, whose rounds we count
    real, rounds = an._iterate, []

    def counted(b, st, D, tol=an.TOL, min_steps=4):
        out = real(b, st, D, tol, min_steps)
        if not any(st.collapsed):
            rounds.append(bool(out.converged[0]))
        return out
    monkeypatch.setattr(an, "_iterate", counted)
    pred = an.solve(spec)
    assert rounds.count(False) == an.UNSETTLED_ROUNDS and not rounds[-1]
    assert pred.details["iterations"] < 1000
    assert compiled.details["iterations"] == pred.details["iterations"]
    assert compiled.throughput_mops == pytest.approx(pred.throughput_mops, rel=1e-12)
    monkeypatch.setattr(an, "UNSETTLED_ROUNDS", 10)
    rounds.clear()
    longer = an.solve(spec)
    assert rounds.count(False) > an.STEP_BUDGET // an.MAX_ITER - 1      # the old cost
    assert pred.throughput_mops == pytest.approx(longer.throughput_mops, rel=1e-6)


def test_collapsed_drop_fraction_falls_back_to_bisection_when_brent_refuses(monkeypatch):
    """Brent's method needs the bracket's ends to differ in sign; near p = 1 the
    log-odds round trip moves the top end, where the excess can change sign,
    and brentq then raises. The collapsed workers' drop fraction must then
    come from bisection, with the same answer, never a traceback."""
    import scipy.optimize
    import model.solvers.analytic as an
    spec = compile_rack(Scenario.default().updated({"clients.timeout_ms": 5.0}),
                        Profile.load("tofino-testbed"))
    want = an.solve(spec, collapsed=(0, 1))

    def refuses(*a, **k):
        raise ValueError("f(a) and f(b) must have different signs")
    monkeypatch.setattr(scipy.optimize, "brentq", refuses)
    got = an.solve(spec, collapsed=(0, 1))
    assert got.throughput_mops == pytest.approx(want.throughput_mops, rel=1e-6)
    assert got.details["loss_probability"][0] == pytest.approx(
        want.details["loss_probability"][0], rel=1e-6)
    assert an._bisect(lambda x: float("nan"), 0.0, 1.0, 1e-9) <= 1.0     # never raises


def test_resends_before_a_full_buffer_is_the_timer_by_timer_count():
    """A collapsed worker's resends while late: the closed count of timers
    firing before its full buffer's service equals the array sum it replaced,
    also where the buffer ends exactly on a timer."""
    from model.rack.clients import resends_before, resends_while_late
    rng = np.random.default_rng(0)
    for _ in range(3000):
        budget = float(rng.choice([0.0, rng.uniform(0, 100), rng.uniform(0, 1e4)]))
        period = float(rng.choice([rng.uniform(0.5, 10), rng.uniform(1, 1000), 0.1 * rng.integers(1, 50)]))
        held = float(rng.choice([rng.uniform(0, 1e5), budget + period * rng.integers(0, 1000), budget]))
        step = resends_while_late(lambda t, w=held: (t < w).astype(float), budget, period, held)
        assert resends_before(budget, period, held) == step


@pytest.mark.parametrize("row", [
    {"system": "farreach", "servers": "8", "clients": "1024", "memtable_mb": "16", "timeout_ms": "1000"},
    {"system": "farreach", "servers": "1", "clients": "1024", "memtable_mb": "4", "timeout_ms": "100"},
    {"system": "nocache", "servers": "4", "clients": "512", "memtable_mb": "4", "timeout_ms": "1000"},
])
def test_the_delay_solved_at_is_the_delay_its_losses_imply(regime_profile, row):
    """The timeout delay D a rack is solved at and the delay its losses imply
    agree, also where the inner fixed point has two equilibria and the root
    search closes on a jump of g(D) = implied(D) - D. Before, these racks
    ended on the trial the bracket closed on: D = 784 against 5,485 us
    implied, 4,738 against 4.3e6, 2,385 against 6.7e7 (43 of 300 plan rows
    more than 0.1 % off; docs/model.md, "Timeouts")."""
    from model.farreach_kinds import farreach_scenario
    from model.solvers import analytic
    sc = farreach_scenario({"id": "P", "seq_check": "evicted-only", "wait_stat": "avg",
                            "workload": "zipf", **row})
    b = analytic._Batch.of([compile_rack(sc, regime_profile)])
    st = analytic._solve_states(b, analytic._initial(b))
    D, implied = float(st.delay[0]), float(st.implied[0])
    assert D > 0
    assert abs(implied - D) <= analytic.MIX_TOL * (D + 1e-3 * float(b.period[0]))
    # and the state obeys the operational law at each worker: U = X s S
    assert np.all(st.util[0] <= 1.0 + 1e-9)


def test_kept_end_states_are_cut_to_their_rack_and_blend_across_batches(profile):
    """The root search keeps the states at its bracket's ends for the mixture.
    They are cut to the rack's own workers and population: whole-batch copies
    of every trial exhausted the memory on a 400-rack plan of up to 3,955
    workers a rack, and X(1..N) of batches with different largest
    populations did not broadcast together (a 1,000-row plan)."""
    from model.solvers import analytic
    small = compile_rack(Scenario.default().updated({"servers.count": 2, "clients.threads": 64}),
                         profile)
    big = compile_rack(Scenario.default().updated({"servers.count": 8, "clients.threads": 256}),
                       profile)
    b1, b2 = analytic._Batch.of([small]), analytic._Batch.of([small, big])
    s1 = analytic._solve_states(b1, analytic._initial(b1))
    s2 = analytic._solve_states(b2, analytic._initial(b2))
    assert s2.x_hist.shape[1] == 256 and s2.util.shape[1] == 8
    a = analytic._take(s1, 0, b1.nmach // b1.R, 64, 2)
    z = analytic._take(s2, 0, b2.nmach // b2.R, 64, 2)
    assert a.x_hist.shape == z.x_hist.shape == (1, 64)
    assert a.util.shape == z.util.shape == (1, 2)
    m = analytic._blend(a, 0.25, z)
    assert np.allclose(m.x_hist, 0.25 * a.x_hist + 0.75 * z.x_hist)
    assert m.X[0] == pytest.approx(0.25 * a.X[0] + 0.75 * z.X[0])
    # written back, it is that rack's state again
    before = s2.util.copy()
    analytic._put(s2, 0, z, b2.nmach // b2.R)
    assert np.array_equal(s2.util, before)
