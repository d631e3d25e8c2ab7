"""Closed-network solvers against independent references.

References are computed here, never copied from the solver:

* birth-death chains (machine repairman M/M/1//N and M/M/c//N), in log space;
* Buzen's convolution in exact rational arithmetic (``fractions.Fraction``);
* brute-force enumeration of all network states with product-form weights;
* the textbook Reiser-Lavenberg multi-server MVA run in high-precision
  ``decimal`` arithmetic (enough digits that its instability does not bite).
"""

from __future__ import annotations

import itertools
import math
import time
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from model.errors import InputError
from tests.oracles.queueing import (
    EXACT_COST_LIMIT, Station, asymptotic_bounds, mva, mva_approx, mva_exact,
    mva_multiclass_exact,
)


# ---------------------------------------------------------------- references

def birth_death(n_pop: int, think: float, demand: float, servers: int) -> dict:
    """Finite-source M/M/c//N: p(n) ~ prod_{i<=n} ((N-i+1)/Z) / (min(i,c)/D)."""
    logp = [0.0]
    for i in range(1, n_pop + 1):
        logp.append(logp[-1] + math.log((n_pop - i + 1) / think) - math.log(min(i, servers) / demand))
    m = max(logp)
    w = np.exp(np.array(logp) - m)
    p = w / w.sum()
    j = np.arange(n_pop + 1)
    x = float((np.minimum(j, servers) * p).sum()) / demand
    return {"p": p, "x": x, "q": float((j * p).sum())}


def _frac_f(kind: str, demand: Fraction, alphas, n_pop: int) -> list[Fraction]:
    f = [Fraction(1)]
    for j in range(1, n_pop + 1):
        a = {"fcfs": 1, "delay": j}.get(kind) if kind in ("fcfs", "delay") else alphas[j - 1]
        f.append(f[-1] * demand / Fraction(a))
    return f


def _conv(a, b):
    return [sum(a[j] * b[n - j] for j in range(n + 1)) for n in range(len(a))]


def buzen(stations: list[Station], n_pop: int, think: float) -> dict:
    """Exact X and queue lengths by convolution of product-form factors, in rationals."""
    fs = []
    for s in stations:
        alphas = [Fraction(float(a)) for a in s.alpha(n_pop)] if s.load_dependent else None
        fs.append(_frac_f(s.kind if not s.load_dependent else "ld", Fraction(s.demand), alphas, n_pop))
    z = _frac_f("delay", Fraction(think), None, n_pop)
    g = z
    for f in fs:
        g = _conv(g, f)
    x = g[n_pop - 1] / g[n_pop]
    q = []
    for k, f in enumerate(fs):
        rest = z
        for i, f2 in enumerate(fs):
            if i != k:
                rest = _conv(rest, f2)
        q.append(sum(j * f[j] * rest[n_pop - j] for j in range(n_pop + 1)) / g[n_pop])
    return {"x": float(x), "q": np.array([float(v) for v in q])}


def enumerate_states(stations: list[Station], n_pop: int, think: float) -> dict:
    """Sum product-form weights over every placement of N customers (Z as a delay)."""
    m = len(stations)
    total = 0.0
    q = np.zeros(m)
    busy_think = 0.0
    for state in itertools.product(range(n_pop + 1), repeat=m):
        nz = n_pop - sum(state)
        if nz < 0:
            continue
        w = think ** nz / math.factorial(nz)
        for s, n in zip(stations, state):
            w *= s.demand ** n / float(np.prod(s.alpha(n))) if n else 1.0
        total += w
        q += w * np.array(state)
        busy_think += w * nz
    q /= total
    # throughput from the think station: X = E[n_Z] / Z
    return {"x": busy_think / total / think, "q": q}


def textbook_multiserver_mva(n_pop: int, think: float, demand: float, servers: int,
                             fixed: list[float], digits: int = 100) -> dict:
    """Reiser-Lavenberg MVA with marginals for one c-server station, in `digits` precision.

    R(n) = D/c [1 + Q(n-1) + sum_{j=0}^{c-2} (c-1-j) p(j|n-1)]
    p(j|n) = X(n) D / j p(j-1|n-1), j < c;  p(0|n) = 1 - [X D + sum (c-j) p(j|n)]/c
    """
    with localcontext() as ctx:
        ctx.prec = digits
        d = Decimal(demand)
        c = servers
        zz = Decimal(think)
        df = [Decimal(v) for v in fixed]
        qf = [Decimal(0)] * len(df)
        qm = Decimal(0)
        p = [Decimal(1)] + [Decimal(0)] * (c - 1)
        x = Decimal(0)
        for n in range(1, n_pop + 1):
            rm = d / c * (1 + qm + sum((c - 1 - j) * p[j] for j in range(c - 1)))
            rf = [di * (1 + qi) for di, qi in zip(df, qf)]
            x = n / (zz + rm + sum(rf))
            qm = x * rm
            qf = [x * r for r in rf]
            newp = [Decimal(0)] * c
            for j in range(1, c):
                newp[j] = x * d / j * p[j - 1]
            newp[0] = 1 - (x * d + sum((c - j) * newp[j] for j in range(1, c))) / c
            p = newp
        return {"x": float(x), "q_multi": float(qm), "q_fixed": [float(v) for v in qf]}


# ---------------------------------------------------------------- closed forms

@pytest.mark.parametrize("n_pop", [1, 2, 5, 50, 1024])
@pytest.mark.parametrize("think,demand", [(1.0, 0.1), (0.2, 1.0), (5.0, 0.3)])
def test_machine_repairman_matches_birth_death(n_pop, think, demand):
    ref = birth_death(n_pop, think, demand, 1)
    r = mva([Station("cpu", "fcfs", demand)], n_pop, think_time=think, method="exact")
    assert r.throughput == pytest.approx(ref["x"], rel=1e-10)
    assert r.queue[0] == pytest.approx(ref["q"], rel=1e-9, abs=1e-12)
    assert r.utilization[0] == pytest.approx(1 - ref["p"][0], rel=1e-9)


@pytest.mark.parametrize("servers", [2, 8, 64])
@pytest.mark.parametrize("n_pop", [10, 200, 1024])
def test_finite_source_multiserver_matches_birth_death(servers, n_pop):
    think, demand = 2.0, 0.5      # knee at N* = c (D+Z)/D = 5c
    ref = birth_death(n_pop, think, demand, servers)
    r = mva_exact([Station("pool", "multi", demand, servers=servers)], n_pop, think)
    assert r.throughput == pytest.approx(ref["x"], rel=1e-9)
    assert r.queue[0] == pytest.approx(ref["q"], rel=1e-9)
    np.testing.assert_allclose(r.marginals["pool"], ref["p"], rtol=1e-8, atol=1e-300)
    assert r.utilization[0] == pytest.approx(ref["x"] * demand / servers, rel=1e-12)


def test_ld_with_min_rates_equals_multi():
    fixed = [Station("a", "fcfs", 0.3), Station("b", "delay", 0.7)]
    for c in (1, 3, 16):
        multi = mva_exact(fixed + [Station("m", "multi", 2.0, servers=c)], 300, 1.0)
        ld = mva_exact(fixed + [Station("m", "ld", 2.0, rates=tuple(min(n, c) for n in range(1, c + 1)))],
                       300, 1.0)
        assert ld.throughput == pytest.approx(multi.throughput, rel=1e-12)
        np.testing.assert_allclose(ld.queue, multi.queue, rtol=1e-10)
        np.testing.assert_allclose(ld.marginals["m"], multi.marginals["m"], rtol=1e-9, atol=1e-300)


def test_multi_limits_equal_fcfs_and_delay_on_independent_code_path():
    # c = 1 must equal the plain FCFS recursion; c >= N must equal a delay station
    base = [Station("f1", "fcfs", 0.2), Station("f2", "fcfs", 0.05)]
    n_pop = 80
    fc = mva_exact(base + [Station("x", "fcfs", 0.1)], n_pop, 0.5)
    m1 = mva_exact(base + [Station("x", "multi", 0.1, servers=1)], n_pop, 0.5)
    assert m1.throughput == pytest.approx(fc.throughput, rel=1e-11)
    np.testing.assert_allclose(m1.queue, fc.queue, rtol=1e-9)
    dl = mva_exact(base + [Station("x", "delay", 0.1)], n_pop, 0.5)
    mn = mva_exact(base + [Station("x", "multi", 0.1, servers=n_pop)], n_pop, 0.5)
    assert mn.throughput == pytest.approx(dl.throughput, rel=1e-11)
    np.testing.assert_allclose(mn.queue, dl.queue, rtol=1e-9)


def test_large_multiserver_network_is_stable():
    """N = 1024, c = 64 plus FCFS stations: compare with 800-digit textbook MVA.

    The textbook recursion needs that many digits here (400 still give a
    negative throughput); the solver under test uses plain float64.
    """
    fixed = [0.004, 0.0025, 0.001]
    n_pop, c, demand, think = 1024, 64, 0.3, 1.0
    ref = textbook_multiserver_mva(n_pop, think, demand, c, fixed, digits=800)
    stations = [Station("pool", "multi", demand, servers=c)] + \
        [Station(f"f{i}", "fcfs", d) for i, d in enumerate(fixed)]
    r = mva_exact(stations, n_pop, think)
    assert r.throughput == pytest.approx(ref["x"], rel=1e-9)
    assert r.queue[0] == pytest.approx(ref["q_multi"], rel=1e-8)
    np.testing.assert_allclose(r.queue[1:], ref["q_fixed"], rtol=1e-8)
    p = r.marginals["pool"]
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-10)


def test_textbook_ld_mva_is_unstable_in_double_precision():
    # why the solver avoids the p(0|n) = 1 - sum recursion: in float64 it breaks down
    bad = textbook_multiserver_mva(128, 1.0, 0.3, 4, [0.004], digits=16)
    good = textbook_multiserver_mva(128, 1.0, 0.3, 4, [0.004], digits=300)
    r = mva_exact([Station("pool", "multi", 0.3, servers=4), Station("f", "fcfs", 0.004)], 128, 1.0)
    assert r.throughput == pytest.approx(good["x"], rel=1e-9)
    assert not bad["x"] == pytest.approx(good["x"], rel=1e-3)


# ---------------------------------------------------------------- product form

MIXED = [
    Station("cpu", "fcfs", 0.25),
    Station("disk", "fcfs", 0.4),
    Station("net", "delay", 0.3),
    Station("pool", "multi", 0.9, servers=3),
    Station("ssd", "ld", 0.5, rates=(1.0, 1.6, 2.0)),
]


@pytest.mark.parametrize("n_pop", [1, 4, 9])
def test_mixed_network_matches_exact_rational_convolution(n_pop):
    ref = buzen(MIXED, n_pop, 0.8)
    r = mva_exact(MIXED, n_pop, 0.8)
    assert r.throughput == pytest.approx(ref["x"], rel=1e-11)
    np.testing.assert_allclose(r.queue, ref["q"], rtol=1e-9)


def test_state_enumeration_small_network():
    stations = [Station("a", "fcfs", 0.5), Station("b", "multi", 1.2, servers=2),
                Station("c", "ld", 0.3, rates=(0.5, 1.0, 1.5))]
    for n_pop in (1, 3, 6):
        ref = enumerate_states(stations, n_pop, 1.5)
        r = mva_exact(stations, n_pop, 1.5)
        assert r.throughput == pytest.approx(ref["x"], rel=1e-10)
        np.testing.assert_allclose(r.queue, ref["q"], rtol=1e-9)


station_st = st.one_of(
    st.builds(lambda d: ("fcfs", d, 1, None), st.floats(0.01, 2.0)),
    st.builds(lambda d: ("delay", d, 1, None), st.floats(0.01, 2.0)),
    st.builds(lambda d, c: ("multi", d, c, None), st.floats(0.01, 2.0), st.integers(1, 4)),
    st.builds(lambda d, r: ("ld", d, 1, tuple(r)), st.floats(0.01, 2.0),
              st.lists(st.floats(0.2, 4.0), min_size=1, max_size=4)),
)


@settings(max_examples=40, deadline=None)
@given(specs=st.lists(station_st, min_size=1, max_size=4), n_pop=st.integers(1, 7),
       think=st.floats(0.0, 3.0))
def test_random_networks_match_convolution(specs, n_pop, think):
    stations = [Station(f"s{i}", k, d, servers=c, rates=r) for i, (k, d, c, r) in enumerate(specs)]
    ref = buzen(stations, n_pop, think)
    r = mva_exact(stations, n_pop, think)
    assert r.throughput == pytest.approx(ref["x"], rel=1e-9)
    np.testing.assert_allclose(r.queue, ref["q"], rtol=1e-8, atol=1e-12)
    # Little's law on the whole cycle and per station
    assert n_pop == pytest.approx(r.throughput * (r.response_time + think), rel=1e-9)
    np.testing.assert_allclose(r.queue, r.throughput * r.residence, rtol=1e-9)
    b = asymptotic_bounds(stations, n_pop, think)
    assert b.throughput_lower * (1 - 1e-9) <= r.throughput <= b.throughput_upper * (1 + 1e-9)


# ---------------------------------------------------------------- laws

@pytest.mark.parametrize("method", ["exact", "approx"])
def test_littles_and_utilization_laws(method):
    stations = [Station(f"w{i}", "fcfs", 0.001 * (1 + i % 5)) for i in range(16)] + \
        [Station("switch", "delay", 0.002), Station("cores", "multi", 0.01, servers=4)]
    r = mva(stations, 256, think_time=0.01, method=method)
    assert 256 == pytest.approx(r.throughput * (r.response_time + r.think_time), rel=1e-9)
    assert r.queue.sum() + r.throughput * r.think_time == pytest.approx(256, rel=1e-6)
    demand = np.array([s.demand for s in stations])
    servers = np.array([s.servers for s in stations])
    np.testing.assert_allclose(r.utilization, r.throughput * demand / servers, rtol=1e-12)
    assert np.all(r.utilization[:16] < 1.0 + 1e-12)
    assert r.response_time == pytest.approx(r.residence.sum(), rel=1e-9)


def test_throughput_curve_is_monotone_and_consistent():
    stations = [Station("a", "fcfs", 0.2), Station("p", "multi", 1.0, servers=4)]
    r = mva_exact(stations, 60, 1.0)
    assert len(r.throughput_curve) == 60
    assert np.all(np.diff(r.throughput_curve) > 0)
    for n in (1, 17, 60):
        assert r.throughput_curve[n - 1] == pytest.approx(mva_exact(stations, n, 1.0).throughput, rel=1e-11)


# ---------------------------------------------------------------- approximations

def _rel(a, b):
    return abs(a - b) / abs(b)


def test_schweitzer_accuracy_on_default_size_network():
    # 128 unequal workers behind a delay, the rack's shape. Measured: throughput
    # error <= 0.13 %, max |dQ|/N = 0.05 % up to N = 512 and 3.4 % at N = 1024.
    rng = np.random.default_rng(7)
    stations = [Station(f"w{i}", "fcfs", d) for i, d in enumerate(rng.uniform(0.5, 1.5, 128) * 1e-3)]
    stations.append(Station("net", "delay", 5e-3))
    for n_pop in (16, 64, 128, 256, 512, 1024):
        e = mva_exact(stations, n_pop, 0.0)
        a = mva_approx(stations, n_pop, 0.0)
        assert _rel(a.throughput, e.throughput) < 0.002
        assert a.throughput <= e.throughput
        q_err = np.max(np.abs(a.queue - e.queue)) / n_pop
        assert q_err < (0.01 if n_pop <= 512 else 0.05)


def test_schweitzer_accuracy_small_balanced():
    stations = [Station(f"s{i}", "fcfs", 1.0) for i in range(4)]
    for n_pop in (2, 5, 10, 40):
        e = mva_exact(stations, n_pop, 2.0)
        a = mva_approx(stations, n_pop, 2.0)
        assert _rel(a.throughput, e.throughput) < 0.06
        # Schweitzer underestimates throughput on balanced networks (pessimistic)
        assert a.throughput <= e.throughput * (1 + 1e-9)


@pytest.mark.parametrize("multiserver,bound", [("rate", 0.04), ("seidmann", 0.125)])
def test_multiserver_approximation_accuracy(multiserver, bound):
    # measured worst errors: "rate" 3.5 % (c = 64, N = 33), Seidmann 12.1 % (c = 2, N = 4)
    fixed = [Station("f", "fcfs", 0.05)]
    errs = []
    for c in (2, 8, 32, 64):
        pool = Station("pool", "multi", 1.0, servers=c)
        for n_pop in (c // 2 + 1, c, 2 * c, 4 * c, 8 * c):
            e = mva_exact(fixed + [pool], n_pop, 0.5)
            a = mva(fixed + [pool], n_pop, 0.5, method="approx", multiserver=multiserver)
            errs.append(_rel(a.throughput, e.throughput))
            assert a.throughput <= e.throughput * (1 + 1e-9)
            assert a.utilization[1] == pytest.approx(a.throughput * 1.0 / c)
    assert max(errs) < bound
    # far beyond the knee both saturate at c/D
    e = mva_exact(fixed + [Station("pool", "multi", 1.0, servers=8)], 400, 0.5)
    a = mva_approx(fixed + [Station("pool", "multi", 1.0, servers=8)], 400, 0.5, multiserver)
    assert _rel(a.throughput, e.throughput) < 1e-3


def test_approx_ld_station_accuracy():
    stations = [Station("a", "fcfs", 0.1), Station("ssd", "ld", 0.5, rates=(1.0, 1.8, 2.4, 2.8))]
    for n_pop in (3, 10, 50):
        e = mva_exact(stations, n_pop, 1.0)
        a = mva_approx(stations, n_pop, 1.0)
        assert _rel(a.throughput, e.throughput) < 0.1


def test_auto_switches_on_cost():
    small = [Station("a", "fcfs", 1.0), Station("m", "multi", 1.0, servers=2)]
    assert mva(small, 50).method == "exact"
    many_ld = [Station(f"m{i}", "multi", 1.0, servers=2) for i in range(4)]
    n_pop = 1024
    assert 3.0 * n_pop ** 2 * 4 > EXACT_COST_LIMIT
    assert mva(many_ld, n_pop).method == "approx"


def test_exact_default_size_is_fast():
    stations = [Station(f"w{i}", "fcfs", 1e-3) for i in range(128)] + [Station("net", "delay", 5e-3)]
    mva_exact(stations, 1024, 0.0)   # warm up
    best = min(_timed(lambda: mva_exact(stations, 1024, 0.0)) for _ in range(3))
    assert best < 0.05


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# ---------------------------------------------------------------- bounds

def test_bounds_bracket_exact_and_asymptotes():
    stations = [Station("a", "fcfs", 0.3), Station("b", "fcfs", 0.1), Station("c", "delay", 0.2)]
    for n_pop in (1, 3, 10, 100):
        b = asymptotic_bounds(stations, n_pop, 1.0)
        x = mva_exact(stations, n_pop, 1.0).throughput
        assert b.aba_throughput_lower <= b.bjb_throughput_lower <= x <= b.bjb_throughput_upper \
            <= b.aba_throughput_upper + 1e-12
        assert b.response_lower <= n_pop / x - 1.0 <= b.response_upper
    assert asymptotic_bounds(stations, 1, 1.0).throughput_upper == pytest.approx(1 / 1.6)
    assert asymptotic_bounds(stations, 1000, 1.0).throughput_upper == pytest.approx(1 / 0.3)
    assert asymptotic_bounds(stations, 10, 1.0).n_star == pytest.approx(1.6 / 0.3)


# ---------------------------------------------------------------- multi-class

def test_multiclass_single_class_equals_mva():
    stations = [Station("a", "fcfs", 0.3), Station("b", "delay", 0.2), Station("c", "fcfs", 0.5)]
    r = mva_exact(stations, 12, 1.0)
    m = mva_multiclass_exact([[0.3, 0.2, 0.5]], ["fcfs", "delay", "fcfs"], [12], [1.0])
    assert m.throughput[0] == pytest.approx(r.throughput, rel=1e-12)
    np.testing.assert_allclose(m.queue[0], r.queue, rtol=1e-12)


def test_multiclass_matches_state_enumeration():
    """Two classes, PS stations: product form p(n) ~ prod_k n_k!/prod_c n_ck! prod D_ck^n_ck."""
    d = np.array([[0.4, 0.1, 0.3], [0.2, 0.5, 0.6]])
    kinds = ["fcfs", "fcfs", "delay"]
    pops, z = (3, 2), (1.0, 0.5)
    res = mva_multiclass_exact(d, kinds, pops, z)
    # enumerate per-class placements over stations + think (index 3)
    dz = np.column_stack([d, z])
    m = dz.shape[1]

    def placements(n):
        for v in itertools.product(range(n + 1), repeat=m):
            if sum(v) == n:
                yield v
    total = 0.0
    q = np.zeros((2, m))
    for v0 in placements(pops[0]):
        for v1 in placements(pops[1]):
            w = 1.0
            for k in range(m):
                n0, n1 = v0[k], v1[k]
                w *= dz[0, k] ** n0 * dz[1, k] ** n1 / (math.factorial(n0) * math.factorial(n1))
                if k < 2:   # queueing (PS) station: multinomial factor (n0+n1)!
                    w *= math.factorial(n0 + n1)
            total += w
            q[0] += w * np.array(v0)
            q[1] += w * np.array(v1)
    q /= total
    x_ref = q[:, 3] / np.array(z)
    np.testing.assert_allclose(res.throughput, x_ref, rtol=1e-10)
    np.testing.assert_allclose(res.queue, q[:, :3], rtol=1e-10)
    np.testing.assert_allclose(res.utilization, res.throughput[:, None] * d, rtol=1e-12)


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("kwargs,field", [
    ({"kind": "lifo", "demand": 1.0}, "kind"),
    ({"kind": "fcfs", "demand": -1.0}, "demand"),
    ({"kind": "multi", "demand": 1.0, "servers": 0}, "servers"),
    ({"kind": "fcfs", "demand": 1.0, "servers": 2}, "servers"),
    ({"kind": "ld", "demand": 1.0}, "rates"),
    ({"kind": "ld", "demand": 1.0, "rates": (1.0, 0.0)}, "rates"),
])
def test_station_validation_names_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Station("s", **kwargs)


def test_solver_validation():
    s = [Station("a", "fcfs", 1.0)]
    with pytest.raises(InputError, match="population"):
        mva(s, -1)
    with pytest.raises(InputError, match="think_time"):
        mva(s, 3, think_time=-1.0)
    with pytest.raises(InputError, match="method"):
        mva(s, 3, method="fast")
    with pytest.raises(InputError, match="demand"):
        mva([Station("a", "fcfs", 0.0)], 3)
    assert mva(s, 0).throughput == 0.0


def test_subnormal_think_time_is_zero():
    # found by hypothesis: a subnormal think time overflowed the recursion
    res = mva_exact([Station("s", "multi", 1.0, servers=1)], 1, think_time=2.2250738585e-313)
    assert res.throughput == pytest.approx(1.0)
