"""Priority disciplines over a pool of cores (model/systems/pools.py):
``mmc_priority`` against the closed forms for M/M/c with priorities and a
SimPy event simulation of the same discipline; ``burst_priority`` (periodic
class bursts at independent phases, non-preemptive) against a SimPy
simulation of the bursts.

Non-preemptive is the coroutine runtime's discipline: a coroutine yields only
at its await points, so a request's compute stage, once started, runs to its
end; the priority decides which ready coroutine a free core takes next."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from model.closed_forms import erlang_c
from model.systems.pools import burst_priority, mmc_priority


def _cobham_mmc(lams, s, c):
    """Non-preemptive M/M/c priority, classes sharing one exponential service
    time: W_k = C(c, a) (E[S] / c) / ((1 - sigma_{k-1}) (1 - sigma_k))."""
    pw = erlang_c(sum(lams) * s, c)
    out, sig = [], 0.0
    for lk in lams:
        prev = sig
        sig += lk * s / c
        out.append(pw * (s / c) / ((1 - prev) * (1 - sig)))
    return out


def _preemptive_mmc(lams, s, c):
    """Preemptive-resume M/M/c, equal service: classes 0..k are an M/M/c FCFS
    queue of their own; class k's time in system is what it adds to their
    number in system, divided by its rate."""
    def number(lam):
        rho = lam * s / c
        return lam * (s + erlang_c(lam * s, c) * s / (c * (1 - rho)))
    out, cum = [], 0.0
    for lk in lams:
        t = (number(cum + lk) - number(cum)) / lk
        cum += lk
        out.append(t - s)
    return out


@pytest.mark.parametrize("c,lams", [(1, [0.2, 0.3, 0.2]), (4, [0.5, 0.8, 0.9, 0.7]),
                                    (2, [0.3] * 5), (3, [0.1, 1.5, 0.8])])
def test_mmc_priority_is_the_closed_form(c, lams):
    s = 1.3
    lams = [x / s for x in lams]
    non = mmc_priority(lams, s, c)
    pre = mmc_priority(lams, s, c, preemptive=True)
    for got, ref in zip(non, _cobham_mmc(lams, s, c)):
        assert got.mean == pytest.approx(ref, rel=0.02)
    for got, ref in zip(pre, _preemptive_mmc(lams, s, c)):
        assert got.mean == pytest.approx(ref, rel=0.02)
    # both are work-conserving: the rate-weighted mean queueing of the
    # non-preemptive classes is FCFS M/M/c's; the top class gains from preemption
    lt = sum(lams)
    fcfs = erlang_c(lt * s, c) * s / (c * (1 - lt * s / c))
    assert sum(l * w.mean for l, w in zip(lams, non)) / lt == pytest.approx(fcfs, rel=1e-9)
    assert pre[0].mean < non[0].mean and pre[-1].mean > non[-1].mean


def _simpy_mmc_priority(lams, s, c, preemptive, jobs, seed):
    """Event form: Poisson classes on a simpy (Preemptive)PriorityResource of
    c cores, exponential service; waits per class (time in system - E[S]
    for preemptive-resume)."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    res = (simpy.PreemptiveResource if preemptive else simpy.PriorityResource)(env, capacity=c)
    out = [[] for _ in lams]
    lt = sum(lams)

    def job(k, work):
        t0 = env.now
        left = work
        while left > 1e-12:
            with res.request(priority=k) as req:
                yield req
                start = env.now
                try:
                    yield env.timeout(left)
                    left = 0.0
                except simpy.Interrupt:
                    left -= env.now - start
        out[k].append(env.now - t0 - (s if preemptive else work))

    def source():
        for _ in range(jobs):
            yield env.timeout(rng.exponential(1 / lt))
            k = int(rng.choice(len(lams), p=np.asarray(lams) / lt))
            env.process(job(k, rng.exponential(s)))

    env.process(source())
    env.run()
    return [float(np.mean(w[len(w) // 10:])) for w in out]


@pytest.mark.parametrize("preemptive", [False, True])
def test_mmc_priority_matches_a_simpy_simulation(preemptive):
    s, c = 1.0, 3
    lams = [0.6, 0.8, 0.8]                  # load 0.73 on 3 cores
    sim = _simpy_mmc_priority(lams, s, c, preemptive, 60000, seed=11)
    got = mmc_priority(lams, s, c, preemptive=preemptive)
    for g, m in zip(got, sim):
        assert m == pytest.approx(g.mean, rel=0.12, abs=0.01)


def _simpy_bursts(classes, n, s, c, period, periods, seed):
    """Event form of burst_priority: every period each class sends n requests of
    constant work s at once, at a uniform phase of its own drawn afresh each
    period; c cores take the highest class first, non-preemptive."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    res = simpy.PriorityResource(env, capacity=c)
    out = [[] for _ in range(classes)]

    def req(k):
        t0 = env.now
        with res.request(priority=k) as r:
            yield r
            out[k].append(env.now - t0)
            yield env.timeout(s)

    def burst(k, at):
        yield env.timeout(at)
        for _ in range(n):
            env.process(req(k))

    for p in range(periods):
        for k in range(classes):
            env.process(burst(k, p * period + rng.uniform(0, period)))
    env.run()
    return [(float(np.mean(w)), float(np.std(w))) for w in out]


@pytest.mark.parametrize("c,period", [(4, 100.0), (2, 100.0), (3, 60.0)])
def test_burst_priority_matches_a_simpy_simulation(c, period):
    k, n, s = 7, 16, 1.0
    sim = _simpy_bursts(k, n, s, c, period, 600, seed=5)
    got = burst_priority(k, n, s, c, period)
    for g, (m, sd) in zip(got, sim):
        assert g.mean == pytest.approx(m, rel=0.12)
        assert g.std == pytest.approx(sd, rel=0.2)
    # lower classes wait longer and spread wider
    assert [g.mean for g in got] == sorted(g.mean for g in got)
    assert [g.std for g in got] == sorted(g.std for g in got)


def test_burst_priority_conserves_the_fcfs_mean_and_the_top_class_sees_its_own_burst():
    from model.blocks import periodic_burst_wait
    k, n, s, c, t = 7, 16, 1.0, 4, 100.0
    got = burst_priority(k, n, s, c, t)
    own = s * np.mean([j // c for j in range(n)])
    # the top class: its own rounds and, when lower classes are in service,
    # the first of c to finish
    assert got[0].mean == pytest.approx(own + (k - 1) * n * s / (c * t) * s / (c + 1))
    mean_over = np.mean([g.mean for g in got])
    fcfs = periodic_burst_wait(k, n * s / c, t).mean + own
    assert fcfs < mean_over < fcfs * 1.05
