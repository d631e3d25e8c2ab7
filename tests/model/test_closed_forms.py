"""Open-queue closed forms: limiting cases, conservation laws, truncated
birth-death chains computed here, and small seeded Monte Carlo runs."""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pytest

from model.closed_forms import (
    erlang_b, erlang_c, fork_join_bounds, harmonic, machine_repairman, mg1,
    mg1_priority_nonpreemptive, mg1_priority_preemptive_resume, mg1_ps, mm1, mmc,
)
from model.errors import InputError
from tests.oracles.queueing import Station, mva_exact


def truncated_mmc(lam: float, mu: float, c: int, n_max: int = 4000) -> dict:
    """Stationary M/M/c by the birth-death product, truncated far in the tail."""
    logp = [0.0]
    for n in range(1, n_max + 1):
        logp.append(logp[-1] + math.log(lam) - math.log(min(n, c) * mu))
    p = np.exp(np.array(logp) - max(logp))
    p /= p.sum()
    n = np.arange(n_max + 1)
    lq = float((np.maximum(n - c, 0) * p).sum())
    return {"L": float((n * p).sum()), "Lq": lq, "pwait": float(p[c:].sum())}


# ---------------------------------------------------------------- M/M/c family

@pytest.mark.parametrize("lam,mu", [(0.3, 1.0), (0.9, 1.0), (7.0, 10.0)])
def test_mm1_against_birth_death(lam, mu):
    r = mm1(lam, mu)
    ref = truncated_mmc(lam, mu, 1)
    assert r.mean_number == pytest.approx(ref["L"], rel=1e-9)
    assert r.mean_queue == pytest.approx(ref["Lq"], rel=1e-9)
    assert r.response_time == pytest.approx(r.mean_number / lam)     # Little
    assert r.waiting_time == pytest.approx(r.response_time - 1 / mu)


@pytest.mark.parametrize("c", [1, 2, 5, 16, 64])
@pytest.mark.parametrize("rho", [0.2, 0.8, 0.97])
def test_mmc_against_birth_death(c, rho):
    mu = 2.0
    lam = rho * c * mu
    r = mmc(lam, mu, c)
    ref = truncated_mmc(lam, mu, c)
    assert r.prob_wait == pytest.approx(ref["pwait"], rel=1e-8)
    assert r.mean_queue == pytest.approx(ref["Lq"], rel=1e-8)
    assert r.mean_number == pytest.approx(ref["L"], rel=1e-8)
    assert r.utilization == pytest.approx(rho)


def test_mmc_one_server_equals_mm1():
    a, b = mmc(0.6, 1.3, 1), mm1(0.6, 1.3)
    for f in ("utilization", "mean_number", "mean_queue", "response_time", "waiting_time", "prob_wait"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12)


@pytest.mark.parametrize("c", [0, 1, 3, 10, 30])
@pytest.mark.parametrize("a", [0.5, 4.0, 25.0])
def test_erlang_b_direct_sum(a, c):
    direct = (a ** c / math.factorial(c)) / sum(a ** k / math.factorial(k) for k in range(c + 1))
    assert erlang_b(a, c) == pytest.approx(direct, rel=1e-12)


def test_erlang_b_large_is_finite():
    # the recursion must not overflow where a^c / c! would
    b = erlang_b(900.0, 1000)
    assert 0 < b < 0.01
    assert erlang_c(900.0, 1000) > b


# ---------------------------------------------------------------- M/G/1

def test_mg1_exponential_equals_mm1_and_md1():
    lam, es = 0.7, 1.0
    g = mg1(lam, es, 2 * es ** 2)
    m = mm1(lam, 1 / es)
    assert g.response_time == pytest.approx(m.response_time, rel=1e-12)
    assert g.mean_number == pytest.approx(m.mean_number, rel=1e-12)
    d = mg1(lam, es, es ** 2)   # M/D/1 waits half as long as M/M/1
    assert d.waiting_time == pytest.approx(m.waiting_time / 2, rel=1e-12)


def test_ps_equals_mm1_and_is_insensitive():
    m = mm1(0.8, 2.0)
    ps = mg1_ps(0.8, 0.5)
    assert ps.response_time == pytest.approx(m.response_time, rel=1e-12)
    assert ps.mean_number == pytest.approx(m.mean_number, rel=1e-12)


def _mixture(lams, es, es2):
    lam = sum(lams)
    return lam, sum(l * s for l, s in zip(lams, es)) / lam, sum(l * s for l, s in zip(lams, es2)) / lam


def test_priority_one_class_equals_mg1():
    g = mg1(0.6, 1.2, 3.0)
    np_ = mg1_priority_nonpreemptive([0.6], [1.2], [3.0])
    pr = mg1_priority_preemptive_resume([0.6], [1.2], [3.0])
    assert np_.waiting_time[0] == pytest.approx(g.waiting_time, rel=1e-12)
    assert pr.response_time[0] == pytest.approx(g.response_time, rel=1e-12)


def test_cobham_conservation_law():
    lams, es, es2 = [0.2, 0.1, 0.15], [1.0, 2.0, 0.5], [1.0, 8.0, 0.75]
    r = mg1_priority_nonpreemptive(lams, es, es2)
    lam, s1, s2 = _mixture(lams, es, es2)
    fcfs = mg1(lam, s1, s2)
    assert float((r.utilization * r.waiting_time).sum()) == \
        pytest.approx(fcfs.utilization * fcfs.waiting_time, rel=1e-12)
    # any order of the classes conserves the same weighted wait
    rev = mg1_priority_nonpreemptive(lams[::-1], es[::-1], es2[::-1])
    assert float((rev.utilization * rev.waiting_time).sum()) == \
        pytest.approx(fcfs.utilization * fcfs.waiting_time, rel=1e-12)


def test_preemptive_classes_do_not_see_lower_ones():
    lams, es, es2 = [0.2, 0.1, 0.15], [1.0, 2.0, 0.5], [2.0, 8.0, 0.5]
    r = mg1_priority_preemptive_resume(lams, es, es2)
    top = mg1(lams[0], es[0], es2[0])
    assert r.response_time[0] == pytest.approx(top.response_time, rel=1e-12)
    r2 = mg1_priority_preemptive_resume(lams[:2], es[:2], es2[:2])
    np.testing.assert_allclose(r.response_time[:2], r2.response_time, rtol=1e-12)
    # equal exponential service: the total number in system is that of M/M/1
    # whatever the (work-conserving, preemptive) order
    pe = mg1_priority_preemptive_resume(lams, [1.0] * 3, [2.0] * 3)
    assert float((np.array(lams) * pe.response_time).sum()) == \
        pytest.approx(mm1(sum(lams), 1.0).mean_number, rel=1e-12)


def simulate_nonpreemptive_priority(lams, samplers, n_jobs: int, seed: int) -> np.ndarray:
    """Event-by-event M/G/1 with non-preemptive priorities; returns mean wait per class."""
    rng = np.random.default_rng(seed)
    k = len(lams)
    arrivals = []
    for c, lam in enumerate(lams):
        m = int(n_jobs * lam / sum(lams))
        t = np.cumsum(rng.exponential(1 / lam, m))
        s = samplers[c](rng, m)
        arrivals += [(float(a), c, float(b)) for a, b in zip(t, s)]
    arrivals.sort()
    horizon = min(arrivals[-1][0], *(max(a for a, c2, _ in arrivals if c2 == c) for c in range(k)))
    queues = [deque() for _ in range(k)]
    waits = [[] for _ in range(k)]
    t, i, n = 0.0, 0, len(arrivals)
    while i < n or any(queues):
        while i < n and arrivals[i][0] <= t:
            queues[arrivals[i][1]].append(arrivals[i])
            i += 1
        if not any(queues):
            t = arrivals[i][0]
            continue
        c = next(j for j in range(k) if queues[j])
        a, _, s = queues[c].popleft()
        if a < horizon:
            waits[c].append(t - a)
        t += s
    warm = [len(w) // 20 for w in waits]
    return np.array([np.mean(w[h:]) for w, h in zip(waits, warm)])


def test_priority_monte_carlo():
    lams = [0.25, 0.2, 0.15]
    # deterministic, exponential, uniform(0, 2.4) service
    es = [1.0, 1.2, 1.2]
    es2 = [1.0, 2 * 1.2 ** 2, 2.4 ** 2 / 3]
    samplers = [lambda r, m: np.ones(m), lambda r, m: r.exponential(1.2, m),
                lambda r, m: r.uniform(0, 2.4, m)]
    sim = simulate_nonpreemptive_priority(lams, samplers, 60_000, seed=11)
    ref = mg1_priority_nonpreemptive(lams, es, es2)
    assert float(ref.utilization.sum()) == pytest.approx(0.67)
    np.testing.assert_allclose(sim, ref.waiting_time, rtol=0.08)


# ---------------------------------------------------------------- fork-join

def simulate_fork_join(n: int, k: int, lam: float, mu: float, jobs: int, seed: int) -> float:
    """Mean k-th task completion of fork-join jobs over n FCFS M/M/1 servers."""
    rng = np.random.default_rng(seed)
    arr = np.cumsum(rng.exponential(1 / lam, jobs))
    s = rng.exponential(1 / mu, (n, jobs))
    cum = np.cumsum(s, axis=1)
    prev = cum - s
    # FCFS departures: C_j = max(C_{j-1}, A_j) + S_j = cum_j + max_{i<=j}(A_i - cum_{i-1})
    dep = cum + np.maximum.accumulate(arr[None, :] - prev, axis=1)
    resp = np.sort(dep - arr[None, :], axis=0)[k - 1]
    return float(resp[jobs // 10:].mean())


def test_fork_join_single_equals_mm1():
    fj = fork_join_bounds(1, 1, 0.6, 1.0)
    m = mm1(0.6, 1.0).response_time
    assert fj.lower == pytest.approx(m) and fj.upper == pytest.approx(m)
    assert fj.independent_approx == pytest.approx(m) and fj.nelson_tantawi == pytest.approx(m)


@pytest.mark.parametrize("n,k", [(2, 2), (4, 4), (8, 8), (4, 1), (4, 2), (8, 3), (3, 2)])
def test_fork_join_bounds_bracket_simulation(n, k):
    lam, mu = 0.6, 1.0
    sim = simulate_fork_join(n, k, lam, mu, 100_000, seed=100 + n * 10 + k)
    b = fork_join_bounds(n, k, lam, mu)
    assert b.lower <= b.upper
    assert b.lower * 0.97 <= sim <= b.upper * 1.03
    if k == n:
        assert b.nelson_tantawi == pytest.approx(sim, rel=0.05)
        assert b.upper == pytest.approx(harmonic(n) / (mu - lam))
    else:
        assert b.nelson_tantawi is None


def test_fork_join_two_server_exact_value():
    # n = 2: Nelson-Tantawi's formula is exact, (12 - rho)/8 / (mu - lam)
    b = fork_join_bounds(2, 2, 0.5, 1.0)
    assert b.nelson_tantawi == pytest.approx((12 - 0.5) / 8 / 0.5)


# ---------------------------------------------------------------- finite source

@pytest.mark.parametrize("servers", [1, 4])
@pytest.mark.parametrize("n_pop", [1, 7, 300])
def test_machine_repairman_equals_network_solver(n_pop, servers):
    r = machine_repairman(n_pop, 2.0, 0.3, servers)
    kind = "fcfs" if servers == 1 else "multi"
    net = mva_exact([Station("s", kind, 0.3, servers=servers)], n_pop, 2.0)
    assert r.throughput == pytest.approx(net.throughput, rel=1e-10)
    assert r.mean_number == pytest.approx(net.queue[0], rel=1e-9)
    assert r.response_time == pytest.approx(net.residence[0], rel=1e-9)
    assert r.probabilities.sum() == pytest.approx(1.0)
    assert n_pop == pytest.approx(r.throughput * (r.response_time + 2.0))


def test_machine_repairman_one_customer():
    r = machine_repairman(1, 2.0, 0.5)
    assert r.throughput == pytest.approx(1 / 2.5)
    assert r.response_time == pytest.approx(0.5)


# ---------------------------------------------------------------- validation

def test_unstable_and_bad_inputs_raise():
    with pytest.raises(InputError, match="unstable"):
        mm1(1.0, 1.0)
    with pytest.raises(InputError, match="unstable"):
        mmc(5.0, 1.0, 4)
    with pytest.raises(InputError, match="unstable"):
        mg1_priority_nonpreemptive([0.5, 0.6], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(InputError, match="es2"):
        mg1(0.1, 1.0, 0.5)
    with pytest.raises(InputError, match="k"):
        fork_join_bounds(3, 4, 0.1, 1.0)
    with pytest.raises(InputError, match="mu"):
        mm1(0.1, 0.0)
