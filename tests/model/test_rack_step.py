"""The compiled solve (model/solvers/rack_step.py, native/mva/rack.cpp) against
the numpy reference (analytic._solve_states_numpy, _iterate, _step).

The compiled form runs the same equations in the same order per rack, so the
two agree to rounding (exp and log of libm against numpy's vectorised ones,
a few units in the last place, carried through the iterations), take the
same number of steps, and report the same details. Every rack takes the
compiled path, the collapse chain's states included (their collapsed
workers' drop fraction by the same bracket and Brent steps as the
reference's scipy.optimize.brentq).

Only racks whose fixed point settles are compared this way. Where the damped
map keeps oscillating (a 0.3 ms timeout under 128 clients: the throughput
jumps between 0.2 and 0.96 MOPS from step to step), a difference in the last
bit grows to the size of the answer within 150 steps, in either
implementation: the reference's own answer there moves with any change of
rounding (a numpy version, the CPU's exp)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.special import gammaincc

from model.profile import Profile
from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers import analytic, mva_core, rack_step

pytestmark = pytest.mark.skipif(rack_step._solve_racks is None, reason="native/mva is not built")

#: relative agreement of compiled and numpy answers (rounding only)
REL = 1e-9


@pytest.fixture(scope="module")
def profile():
    return Profile.load("tofino-testbed")


def _both(spec, monkeypatch):
    """The compiled solve of every worker (no worker classes: those are an
    approximation of their own, tests/model/test_worker_classes.py) and the
    numpy reference."""
    monkeypatch.setattr(rack_step, "LUMP_TOL", 0.0)
    monkeypatch.setattr(rack_step, "USE_COMPILED", True)
    fast = analytic.solve(spec)
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)
    ref = analytic.solve(spec)
    monkeypatch.setattr(rack_step, "USE_COMPILED", True)
    return fast, ref


def _close(a: float, b: float, rel: float = REL, floor: float = 1e-12) -> bool:
    if a == b:                                    # inf (an idle worker's wait) included
        return True
    return abs(a - b) <= rel * max(abs(a), abs(b), floor)


def assert_same(fast, ref, rel: float = REL):
    assert _close(fast.throughput_mops, ref.throughput_mops, rel)
    assert _close(fast.pktloss, ref.pktloss, rel, 1.0)
    assert _close(fast.false_pos, ref.false_pos, rel, 1.0)
    assert _close(fast.stall_fraction, ref.stall_fraction, rel)
    assert _close(fast.client.latency_us, ref.client.latency_us, rel)
    for a, b in zip(fast.servers, ref.servers, strict=True):
        for f in ("share", "utilization", "wait_us", "process_us"):
            assert _close(getattr(a, f), getattr(b, f), rel), f
    da, db = fast.details, ref.details
    assert da["iterations"] == db["iterations"]
    assert da["converged"] == db["converged"]
    assert _close(da["timeout_delay_us_per_request"], db["timeout_delay_us_per_request"], rel)
    for k in ("loss_probability", "duplicates_per_request", "flush_busy_fraction",
              "write_stop_fraction"):
        np.testing.assert_allclose(da[k], db[k], rtol=rel, atol=1e-15, err_msg=k)


def _regimes():
    from sim.parity import regimes
    return regimes()


@pytest.mark.parametrize("name", sorted(_regimes()))
def test_every_parity_regime_solves_as_the_reference(name, profile, monkeypatch):
    """Every regime of the parity table and of sim.facts (stalls, WAL blocks,
    loss, late replies, the lab's tuning rows): the compiled solve is the
    reference's, step for step."""
    spec = compile_rack(_regimes()[name], profile)
    fast, ref = _both(spec, monkeypatch)
    assert_same(fast, ref)


@pytest.mark.parametrize("changes", [
    {"clients.retry": "strict"},                                   # late replies fail attempts
    {"network.loss_rate": 0.002},                                  # wire loss
    {"clients.timeout_ms": 2.0, "clients.threads": 256},           # replies outlive the timeout
    {"clients.timeout_ms": 1.0, "clients.retry": "strict"},        # ... and strict retries
    {"switch.mode": "read-only", "servers.count": 8},              # NetCache write-backs
    {"clients.threads": 1},
    {"clients.timeout_ms": 600_000.0},
    {"workload.profile": "lab", "switch.partition": "range", "servers.count": 4},
    {"storage.db": "normal", "storage.wal": False, "servers.pinned": False},
    {"servers.cores": 4},                                          # threads outnumber cores
    {"servers.cores": 2, "servers.count": 80, "servers.machines": 1},   # past EXACT_PEERS
])
def test_other_mechanisms_solve_as_the_reference(changes, profile, monkeypatch):
    spec = compile_rack(Scenario.default().updated(changes), profile)
    fast, ref = _both(spec, monkeypatch)
    assert_same(fast, ref)


def test_random_valid_scenarios_solve_as_the_reference(profile, monkeypatch):
    """Forty scenarios of the declared space (tests/robustness/space.py, the
    CI bounds): on the compiled path or off it, the same answer."""
    from tests.robustness.space import DIMENSIONS, FAST, scenario_from_unit
    rng = np.random.default_rng(20261126)
    compiled = settled = 0
    for _ in range(40):
        sc = scenario_from_unit(rng.random(DIMENSIONS), FAST)
        spec = compile_rack(sc, profile)
        compiled += rack_step.enabled()
        fast, ref = _both(spec, monkeypatch)
        if ref.details["converged"]:
            assert_same(fast, ref, rel=1e-7)
            settled += 1
    assert compiled >= 20 and settled >= 30   # most of them ran compiled, and settled


def test_a_rack_answers_the_same_alone_and_in_any_batch(profile, monkeypatch):
    """The compiled solve runs each rack on its own workers, so a batch's
    padding to its widest rack does not move its answer; the reference's
    padded workers start idle, so its answers move by rounding only (they
    started at half load and shifted a batched rack's first steps)."""
    scs = [Scenario.default().updated(ch) for ch in (
        {"servers.count": 1}, {"servers.count": 64, "clients.threads": 512},
        {"storage.memtable_mb": 4.0, "clients.timeout_ms": 100.0},
        {"switch.cache": False, "servers.count": 8})]
    specs = [compile_rack(sc, profile) for sc in scs]
    together = analytic.solve_many(specs)
    for spec, t in zip(specs, together):
        alone = analytic.solve(spec)
        assert alone.throughput_mops == t.throughput_mops
        assert alone.pktloss == t.pktloss
        assert [s.wait_us for s in alone.servers] == [s.wait_us for s in t.servers]
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)
    for spec, t in zip(specs, analytic.solve_many(specs)):
        assert_same(analytic.solve(spec), t)


def test_a_warm_start_from_a_neighbours_root_is_the_reference(profile, monkeypatch):
    """The sigma points of an interval start from their centre's root
    (solve_many's warm_from): the compiled search takes the warm branch as the
    reference does."""
    from model.intervals import sigma_profiles
    sc = Scenario.default().updated({"storage.memtable_mb": 4.0, "clients.timeout_ms": 100.0})
    profs = [profile] + sigma_profiles(profile)[0][:4]
    specs = [compile_rack(sc, p) for p in profs]
    warm = [None] + [0] * (len(specs) - 1)
    monkeypatch.setattr(rack_step, "USE_COMPILED", True)
    fast = analytic.solve_many(specs, warm_from=warm)
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)
    ref = analytic.solve_many(specs, warm_from=warm)
    for a, b in zip(fast, ref):
        assert_same(a, b, rel=1e-7)


def test_every_rack_takes_the_compiled_path(profile, monkeypatch):
    """Collapsed workers, a core count and a population past the exact
    recursion are all solved compiled; only USE_COMPILED = False (the tests'
    reference) sends a rack to numpy."""
    def numpy_reference(*args):
        raise AssertionError("solved by the numpy reference")
    monkeypatch.setattr(analytic, "_solve_states_numpy", numpy_reference)

    def eligible(sc, collapsed=None):
        spec = compile_rack(sc, profile)
        b = analytic._Batch.of([spec])
        st = analytic._solve_states(b, analytic._initial(b, collapsed))
        return rack_step.enabled() and bool(st.iterations[0] > 0)
    base = Scenario.default()
    assert eligible(base)
    assert eligible(base, [(0,)])
    assert eligible(base.updated({"servers.cores": 4}))
    assert eligible(base.updated({"clients.threads": mva_core.N_EXACT + 1, "servers.count": 512}))


@pytest.mark.parametrize("changes, collapsed", [
    ({}, (0,)),                                      # forced on a healthy rack: no drops needed
    ({"clients.timeout_ms": 5.0}, (0, 1)),
    ({"clients.timeout_ms": 1.0, "servers.count": 8}, (3,)),
    ({"clients.timeout_ms": 2.0, "clients.retry": "strict"}, (0,)),
    ({"clients.timeout_ms": 5.0, "servers.count": 4, "switch.cache": False}, (0,)),
])
def test_collapsed_workers_solve_as_the_reference(changes, collapsed, profile, monkeypatch):
    """A state with collapsed workers (``_collapsed``: their drop fraction the
    root that holds the busiest at its capacity, by the same bracket and
    Brent steps as scipy's brentq) solved compiled and by numpy: the same
    answer, step for step."""
    spec = compile_rack(Scenario.default().updated(changes), profile)
    monkeypatch.setattr(rack_step, "LUMP_TOL", 0.0)
    out = {}
    for compiled in (True, False):
        monkeypatch.setattr(rack_step, "USE_COMPILED", compiled)
        b = analytic._Batch.of([spec])
        out[compiled] = analytic._solve_states(b, analytic._initial(b, [collapsed]))
    fast, ref = out[True], out[False]
    assert fast.iterations[0] == ref.iterations[0]
    assert bool(fast.converged[0]) == bool(ref.converged[0])
    for name in ("X", "util", "p_drop", "dup", "implied", "delay"):
        np.testing.assert_allclose(getattr(fast, name), getattr(ref, name), rtol=REL, atol=1e-14,
                                   err_msg=name)
    for i in collapsed:
        assert fast.util[0, i] == 1.0             # held busy by its full buffer


@pytest.mark.parametrize("changes", [
    {"clients.timeout_ms": 5.0},                                   # the default rack's chain
    {"clients.timeout_ms": 1.0},
    {"clients.timeout_ms": 5.0, "servers.count": 64},
])
def test_collapse_chains_with_intervals_solve_as_the_reference(changes, profile, monkeypatch):
    """A rack whose workers can collapse, with its sigma points (each runs its
    own chain, warm from its centre's states): the whole answer, compiled and
    numpy."""
    from model.intervals import sigma_profiles
    sc = Scenario.default().updated(changes)
    points, _ = sigma_profiles(profile)
    profs = [profile, *points[:4]]
    specs = [compile_rack(sc, p) for p in profs]
    warm = [None] + [0] * (len(specs) - 1)
    monkeypatch.setattr(rack_step, "LUMP_TOL", 0.0)
    monkeypatch.setattr(rack_step, "USE_COMPILED", True)
    fast = analytic.solve_many(specs, warm_from=warm)
    monkeypatch.setattr(rack_step, "USE_COMPILED", False)
    ref = analytic.solve_many(specs, warm_from=warm)
    for a, b in zip(fast, ref):
        assert_same(a, b)
        # the chain's states and weights (a weight of 1e-6 comes from rates
        # that differ in their last digits: compared as probabilities)
        for x, y in zip(a.details["collapsed_workers"], b.details["collapsed_workers"],
                        strict=True):
            assert x["workers"] == y["workers"]
            assert abs(x["probability"] - y["probability"]) <= 1e-9
    # the chain ran: states with collapsed workers carry weight
    assert any(s["workers"] for s in fast[0].details["collapsed_workers"])


@pytest.mark.parametrize("servers, clients", [(4096, 65_536), (16, 65_536), (16, 20_000)])
def test_large_populations_solve_as_the_reference(servers, clients, profile, monkeypatch):
    """Past N_EXACT clients and WORK_EXACT client-stations the Schweitzer
    approximation (mva_core.approximate_batch), compiled in the same steps;
    a large population over few stations stays exact."""
    sc = Scenario.default().updated({"servers.count": servers, "clients.threads": clients})
    spec = compile_rack(sc, profile)
    assert mva_core._approximate(np.array([clients]), servers)[0] == (clients * servers > 4e6)
    fast, ref = _both(spec, monkeypatch)
    assert_same(fast, ref)


def test_the_method_of_a_rack_does_not_depend_on_its_batch():
    """The exact recursion or the approximation is chosen by a rack's own
    visited stations, not by the width of the batch it is padded to."""
    rng = np.random.default_rng(5)
    n = mva_core.N_EXACT + 100
    v = np.zeros((2, 400))
    v[0, :16] = 1.0 / 16
    v[1, :] = 1.0 / 400
    S = rng.uniform(5.0, 20.0, (2, 400))
    z = np.zeros((2, 400))
    x_hist, _, _, _ = mva_core.recursion_batch(v, S, S, z, z, z, np.array([30.0, 30.0]),
                                               np.array([n, n]))
    alone = mva_core.recursion(v[0, :16], S[0, :16], S[0, :16], z[0, :16], z[0, :16], z[0, :16],
                               30.0, n)[0]
    np.testing.assert_allclose(x_hist[0], alone, rtol=1e-12)       # exact, as alone


@pytest.mark.parametrize("a", [1e-3, 0.1, 0.5, 1.0, 3.0, 9.99, 10.0, 10.01, 30.0, 300.0,
                               9_999.0, 10_001.0, 1e5, 1e6])
def test_the_compiled_upper_incomplete_gamma_is_scipys(a):
    """Q(a, x) of the late-reply sums against scipy.special.gammaincc, across
    the series, the continued fraction and Temme's expansion (past 10^4):
    within 5e-12 relative wherever Q is not below 1e-30, and within 1e-30
    absolute below it (far in the upper tail the answer is 0 without a sum:
    native/mva/special.cpp bounds Q there by 5e-31). Past a = 10^5 the
    bound is scipy's own error: against mpmath at 40 digits, scipy is 4.9e-12
    off at a = 10^6, x = a - 4.8 sqrt(a) (and 2.9e-7 at a = 10^8), the compiled
    form below 1e-15 (checked on 2026-11-26)."""
    x = np.concatenate([a + np.sqrt(a) * np.linspace(-8.0, 8.0, 33),
                        a * np.array([1e-3, 0.1, 0.5, 2.0, 5.0, 20.0]),
                        [0.0, 1e-9, 0.5, 1.0, 3.0, 10.0, 100.0]])
    x = x[x >= 0]
    got = mva_core._compiled.gamma_q(a, x)
    want = gammaincc(a, x)
    ok = want > 1e-30
    np.testing.assert_allclose(got[ok], want[ok], rtol=5e-12 if a < 1e5 else 1e-10, atol=0)
    np.testing.assert_allclose(got[~ok], want[~ok], rtol=0, atol=1e-30)
    assert mva_core._compiled.gamma_q(a, 0.0) == 1.0
    assert np.isnan(mva_core._compiled.gamma_q(-1.0, 1.0))


def test_a_nan_in_the_state_raises_instead_of_reading_out_of_bounds(profile):
    """A queue length of NaN cannot index the tail arrays: the reference
    raises there (numpy's index), and the compiled solve must raise too (a
    ValueError naming the cause), never read past its arrays."""
    spec = compile_rack(Scenario.default(), profile)
    b = analytic._Batch.of([spec])
    st = analytic._initial(b)
    st.dup[:] = np.nan
    with pytest.raises(ValueError, match="queue length is NaN"):
        analytic._solve_states(b, st)


def test_threads_share_a_batch_without_changing_its_answer(profile, monkeypatch):
    """rack_step.THREADS splits a batch's racks over threads (the compiled
    solve releases the GIL; each rack is its own): the same bits as one
    thread, for a batch of healthy racks, collapse chains and sigma points;
    and a solve's error still reaches the caller."""
    from model.intervals import sigma_profiles
    points, _ = sigma_profiles(profile)
    scs = [Scenario.default().updated(c) for c in
           ({}, {"clients.timeout_ms": 1.0}, {"servers.count": 4}, {"clients.timeout_ms": 5.0})]
    specs = [compile_rack(sc, p) for sc in scs for p in (profile, *points[:3])]
    warm = [None if j % 4 == 0 else j - j % 4 for j in range(len(specs))]
    out = {}
    for threads in (1, 2):
        monkeypatch.setattr(rack_step, "THREADS", threads)
        out[threads] = analytic.solve_many(specs, warm_from=warm)
    for a, b in zip(out[1], out[2], strict=True):
        assert a.throughput_mops == b.throughput_mops
        assert a.details["iterations"] == b.details["iterations"]
        assert [s.wait_us for s in a.servers] == [s.wait_us for s in b.servers]
    b = analytic._Batch.of([compile_rack(sc, profile) for sc in scs])
    st = analytic._initial(b)
    st.dup[2] = np.nan
    with pytest.raises(ValueError, match="queue length is NaN"):
        analytic._solve_states(b, st)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_solves_on_threads_of_its_own(profile, monkeypatch):
    """The solve threads' pool is kept for the process; a child forked after
    it was used (a plan's worker processes) has the pool object but not its
    threads, and must not wait on them forever."""
    import signal
    monkeypatch.setattr(rack_step, "THREADS", 2)
    specs = [compile_rack(Scenario.default().updated({"servers.count": n}), profile)
             for n in (4, 8, 16)]
    before = [p.throughput_mops for p in analytic.solve_many(specs)]
    pid = os.fork()
    if pid == 0:                                     # the child: never back into pytest
        code = 1
        try:
            signal.alarm(60)
            after = [p.throughput_mops for p in analytic.solve_many(specs)]
            code = 0 if after == before else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_worker_holding_every_client_stays_within_its_capacity(profile, monkeypatch):
    """Reiser's residual term (a service less variable than exponential,
    C < 0) lets the recursion's throughput overshoot the busiest worker's
    capacity when it holds nearly every client: the analytic soak (seed 32)
    met one NoCache worker with every key under 6 clients at X s S = 1.044.
    X(N) is bounded by the capacity in both solvers; the laws hold."""
    from tests.robustness.laws import violations
    sc = Scenario.default().updated({
        "clients.threads": 6, "clients.retry": "strict", "clients.timeout_ms": 287141.0,
        "switch.cache": False, "switch.partition": "range", "servers.count": 29,
        "servers.machines": 10, "servers.pinned": False, "servers.bg_threads": 27,
        "storage.memtable_mb": 13904.0, "storage.flushnum": 2, "storage.maxnum": 10,
        "storage.l0_files": 963, "storage.l1_mb": 5032.0, "storage.wal": False,
        "storage.db": "normal", "workload.distribution": "uniform",
        "workload.records": 2045190, "workload.insertorder": "ordered",
        "workload.read_ratio": 0.7327, "workload.key_bytes": 10, "workload.value_bytes": 7,
        "workload.queries_m": 228705.6})
    spec = compile_rack(sc, profile)
    fast, ref = _both(spec, monkeypatch)
    assert_same(fast, ref)
    top = max(fast.servers, key=lambda s: s.share)
    assert top.share == pytest.approx(1.0)
    S = top.process_us + spec.service.recv_floor_us + spec.service.gap_us
    assert fast.throughput_mops * top.share * S <= 1.0 + 1e-9
    assert not violations(fast, spec)


@pytest.mark.parametrize("value, threads, warned", [("3", 3, False), ("abc", None, True),
                                                    ("0", None, True), ("", None, False)])
def test_solve_threads_from_the_environment(value, threads, warned):
    """KVPERF_SOLVE_THREADS sets the solve threads; anything but a whole number
    >= 1 says so on stderr and falls back to the cores, never a traceback."""
    import subprocess
    import sys
    env = dict(os.environ, KVPERF_SOLVE_THREADS=value)
    out = subprocess.run([sys.executable, "-c",
                          "from model.solvers import rack_step; print(rack_step.THREADS, "
                          "rack_step._cores())"],
                         env=env, capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 0, out.stderr
    got, cores = (int(x) for x in out.stdout.split())
    assert got == (threads if threads is not None else cores)
    assert ("KVPERF_SOLVE_THREADS" in out.stderr) == warned
