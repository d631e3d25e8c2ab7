"""Building blocks against closed forms, conservation laws and small seeded
Monte Carlo runs."""

from __future__ import annotations


import numpy as np
import pytest

from model.blocks import (
    closed_loop, contention_factor, pool_fcfs, pool_priority, pool_ps, quorum_wait,
    scaling_factor, seidmann, superposed_ca2, switch_cost, timer_driven, NetworkStack,
)
from model.closed_forms import (
    fork_join_bounds, machine_repairman, mg1, mg1_priority_nonpreemptive, mm1, mmc,
)
from model.errors import InputError


@pytest.mark.parametrize("n,z,s", [(1, 10.0, 3.0), (7, 10.0, 3.0), (40, 240.0, 36.0),
                                   (3000, 2300.0, 1.0)])
def test_closed_loop_single_queue_is_machine_repairman(n, z, s):
    got = closed_loop(n, z, [s])
    ref = machine_repairman(n, z, s)
    assert got.throughput == pytest.approx(ref.throughput, rel=1e-9)
    assert got.response == pytest.approx(ref.response_time, rel=1e-7)
    # Little over the whole loop
    assert got.cycle == pytest.approx(z + got.response, rel=1e-9)


def test_closed_loop_fast_path_matches_recursion():
    # a zero-demand second station forces the general MVA loop
    for n, c in ((50, 1), (500, 8), (2000, 16)):
        a = closed_loop(n, 2000.0, [5.0 * c], [c])
        b = closed_loop(n, 2000.0, [5.0 * c, 0.0], [c, 1])
        assert a.throughput == pytest.approx(b.throughput, rel=1e-9)


def test_seidmann_identity_for_one_core_and_capacity():
    assert seidmann(10.0, 1) == (10.0, 0.0)
    q, d = seidmann(12.0, 4)
    assert q == 3.0 and d == 9.0
    cl = closed_loop(5000, 100.0, [12.0], [4])
    assert cl.throughput <= 4 / 12.0 + 1e-12
    assert cl.throughput == pytest.approx(4 / 12.0, rel=1e-3)


def test_processor_sharing_mean_equals_mm1():
    for rho in (0.1, 0.5, 0.9):
        assert pool_ps(rho, 1.0).response == pytest.approx(mm1(rho, 1.0).response_time)
    assert pool_ps(2.0, 1.0, 4).response == pytest.approx(mmc(2.0, 1.0, 4).response_time)


def test_fcfs_pool_reduces_to_pk_and_mmc():
    lam, s = 0.6, 1.0
    assert pool_fcfs(lam, s, 1, cs2=0.0).response == pytest.approx(mg1(lam, s, s * s).response_time)
    assert pool_fcfs(lam * 3, s, 3).response == pytest.approx(mmc(lam * 3, 1 / s, 3).response_time)


def test_priority_pool_matches_cobham_for_one_core_and_conserves_work():
    lams, es = [0.2, 0.3, 0.1], [1.0, 0.5, 2.0]
    es2 = [2 * e * e for e in es]
    got = pool_priority(lams, es, es2, 1)
    ref = mg1_priority_nonpreemptive(lams, es, es2)
    for g, r in zip(got, ref.response_time):
        assert g.response == pytest.approx(r)
    # Kleinrock's conservation law: sum rho_i Wq_i = rho Wq(FCFS)
    rho = np.array(lams) * np.array(es)
    lt = sum(lams)
    es_mix = sum(l * e for l, e in zip(lams, es)) / lt
    es2_mix = sum(l * e for l, e in zip(lams, es2)) / lt
    fcfs = mg1(lt, es_mix, es2_mix).waiting_time
    assert float((rho * np.array([g.waiting for g in got])).sum()) == \
        pytest.approx(rho.sum() * fcfs, rel=1e-9)


def test_priority_pool_multi_core_equal_classes_matches_mmc_on_average():
    # with identical exponential classes the rate-weighted mean wait is M/M/c's
    c, lam = 4, [0.5] * 4
    got = pool_priority(lam, [1.0] * 4, [2.0] * 4, c)
    mean_wait = float(np.mean([g.waiting for g in got]))
    assert mean_wait == pytest.approx(mmc(2.0, 1.0, c).waiting_time, rel=1e-9)
    assert [g.waiting for g in got] == sorted(g.waiting for g in got)


def _simulate_priority(lams, es, n_jobs, seed):
    """Non-preemptive priority M/M/1, event by event; mean wait per class."""
    rng = np.random.default_rng(seed)
    lt = sum(lams)
    t = 0.0
    arrivals = []
    for _ in range(n_jobs):
        t += rng.exponential(1 / lt)
        k = rng.choice(len(lams), p=np.array(lams) / lt)
        arrivals.append((t, k, rng.exponential(es[k])))
    waits = [[] for _ in lams]
    queue: list = []
    i, clock = 0, 0.0
    import heapq
    while i < len(arrivals) or queue:
        if not queue:
            clock = max(clock, arrivals[i][0])
        while i < len(arrivals) and arrivals[i][0] <= clock:
            a = arrivals[i]
            heapq.heappush(queue, (a[1], a[0], a[2]))
            i += 1
        k, ta, s = heapq.heappop(queue)
        waits[k].append(clock - ta)
        clock += s
    return [float(np.mean(w[len(w) // 10:])) for w in waits]


def test_priority_pool_matches_small_simulation():
    lams, es = [0.3, 0.3], [1.0, 1.0]
    sim = _simulate_priority(lams, es, 60000, seed=7)
    got = pool_priority(lams, es, [2.0, 2.0], 1)
    for g, s in zip(got, sim):
        assert s == pytest.approx(g.waiting, rel=0.12)


def _fork_join_mc(n, k, lam, mu, jobs, seed):
    rng = np.random.default_rng(seed)
    inter = rng.exponential(1 / lam, jobs)
    arr = np.cumsum(inter)
    done = np.zeros(n)
    resp = np.empty(jobs)
    for j in range(jobs):
        s = rng.exponential(1 / mu, n)
        fin = np.maximum(done, arr[j]) + s
        done = fin
        resp[j] = np.sort(fin - arr[j])[k - 1]
    return float(resp[jobs // 10:].mean())


@pytest.mark.parametrize("n,k", [(2, 1), (3, 2), (4, 4)])
def test_fork_join_bounds_bracket_monte_carlo_and_quorum_wait(n, k):
    lam, mu = 0.5, 1.0
    b = fork_join_bounds(n, k, lam, mu)
    mc = _fork_join_mc(n, k, lam, mu, 40000, seed=3)
    assert b.lower * 0.97 <= mc <= b.upper * 1.03
    q = quorum_wait(n, k, lam, 1 / mu, round_trip=5.0)
    assert 5.0 + b.lower <= q <= 5.0 + b.upper


def test_timer_driven_open_and_saturated():
    # one connection: deterministic arrivals, exponential service: P-K with ca^2 = 0
    t = timer_driven(1, 100.0, 10.0)
    assert superposed_ca2(1) == 0.0 and t.throughput == pytest.approx(0.01)
    assert t.latency == pytest.approx(10.0 + 0.5 * mm1(0.01, 0.1).waiting_time)
    # many connections approach Poisson
    assert superposed_ca2(1000) == pytest.approx(0.999)
    # overload: completed = capacity, never more than offered
    sat = timer_driven(200, 100.0, 1.0, cores=1)
    assert sat.saturated and sat.throughput <= 1.0 + 1e-12 and sat.throughput <= sat.offered
    assert sat.throughput == pytest.approx(1.0, rel=0.02)
    # aligned bursts: half the burst ahead on average
    b = timer_driven(9, 1000.0, 10.0, cores=2, aligned=True)
    assert b.latency == pytest.approx(10.0 + 8 * 10.0 / 4)


def test_network_stack_and_overheads():
    ns = NetworkStack(delay=250.0, cpu_per_msg=5.0)
    assert ns.latency(2) == 500.0 and ns.cpu(6) == 30.0
    thr = [switch_cost("thread", n, 3, 2, 5.0, 1.0) for n in (1, 8, 32)]
    co = [switch_cost("coroutine", n, 3, 2, 5.0, 1.0) for n in (1, 8, 32)]
    assert thr == sorted(thr) and thr[-1] > thr[0] and len(set(co)) == 1
    assert contention_factor(100, 0.01) == 2.0
    assert scaling_factor(1, 0.5, 0.1, 0.01) == 1.0
    assert scaling_factor(16, 0.5, 0.1, 0.01) > scaling_factor(8, 0.5, 0.1, 0.01) > 1.5
    with pytest.raises(InputError):
        switch_cost("fiber", 1, 3, 1, 1.0, 1.0)


def test_bottleneck_is_the_largest_demand_per_core_and_the_knee_crosses_the_bounds():
    from model.blocks import bottleneck
    b = bottleneck(100.0, [10.0, 30.0, 40.0], [1, 1, 2])
    assert b.index == 1 and b.capacity == pytest.approx(1 / 30.0)
    assert b.knee == pytest.approx((100 + 80) / 30.0)
    # MVA never beats either bound, and approaches X_max far past the knee
    for n in (1, 3, 6, 12, 200):
        x = closed_loop(n, 100.0, [10.0, 30.0, 40.0], [1, 1, 2]).throughput
        assert x <= min(n / 180.0, b.capacity) * (1 + 1e-9)
    assert closed_loop(200, 100.0, [10.0, 30.0, 40.0], [1, 1, 2]).throughput == \
        pytest.approx(b.capacity, rel=0.01)


def test_aligned_burst_matches_a_seeded_monte_carlo():
    from model.blocks import aligned_burst
    rng = np.random.default_rng(11)
    n, w = 8, 10.0
    waits = []
    for _ in range(20000):
        s = rng.exponential(w, n)                 # cv2 = 1
        order = rng.permutation(n)
        start = np.concatenate(([0.0], np.cumsum(s[order])[:-1]))
        waits.append(start[rng.integers(n)])
    b = aligned_burst(n, w, 1, cv2=1.0)
    assert b.mean == pytest.approx(np.mean(waits), rel=0.03)
    assert b.std == pytest.approx(np.std(waits), rel=0.03)
    d = aligned_burst(n, w)                       # deterministic work: uniform positions
    assert d.std == pytest.approx(w * np.sqrt((n * n - 1) / 12))
    assert d.drain == n * w and aligned_burst(1, w).mean == 0.0


def test_wakeup_delay_fades_with_rate():
    from model.blocks import wakeup_delay
    assert wakeup_delay(100.0, 0.0, 50.0) == 100.0
    assert wakeup_delay(100.0, 0.02, 50.0) == pytest.approx(100 * np.exp(-1))
    with pytest.raises(InputError):
        wakeup_delay(-1.0, 0.0, 1.0)


def _periodic_fifo_waits(phases: np.ndarray, work: float, period: float,
                         periods: int = 12) -> np.ndarray:
    """Waits (work found queued) of bursts arriving at ``phases`` every
    ``period``, one server, after the first half of the periods."""
    arr = np.sort(np.concatenate([phases + k * period for k in range(periods)]))
    free, out = 0.0, []
    for a in arr:
        start = max(free, a)
        out.append(start - a)
        free = start + work
    return np.array(out[len(phases) * (periods // 2):])


@pytest.mark.parametrize("k,load", [(3, 1.0), (7, 1.0), (7, 0.6), (4, 0.9)])
def test_periodic_burst_wait_matches_a_seeded_multiplexer(k, load):
    """Benes' formula against periodic bursts at uniform random phases."""
    from model.blocks import periodic_burst_wait
    rng = np.random.default_rng(5)
    work, period = 2.0, 2.0 * k / load
    waits = np.concatenate([_periodic_fifo_waits(rng.uniform(0, period, k), work, period)
                            for _ in range(2500)])
    got = periodic_burst_wait(k, work, period)
    assert got.mean == pytest.approx(waits.mean(), rel=0.04)
    assert got.std == pytest.approx(waits.std(), rel=0.04)


def test_periodic_burst_wait_closed_cases_and_limits():
    from model.blocks import periodic_burst_wait
    assert periodic_burst_wait(1, 5.0, 5.0).mean == 0.0          # alone: never waits
    two = periodic_burst_wait(2, 1.0, 2.0)                         # W = max(0, 1 - gap), gap U(0, 2)
    assert two.mean == pytest.approx(0.25, abs=1e-9)
    assert two.std == pytest.approx(np.sqrt(1 / 6 - 1 / 16), abs=1e-9)
    assert periodic_burst_wait(3, 1.0, 3.0).mean == pytest.approx(4 / 9, abs=1e-9)
    # finite at load 1, growing with the load and in proportion to the work
    means = [periodic_burst_wait(7, 1.0, 7.0 / r).mean for r in (0.2, 0.5, 0.8, 1.0)]
    assert all(b > a for a, b in zip(means, means[1:])) and np.isfinite(means[-1])
    assert periodic_burst_wait(7, 3.0, 21.0).mean == pytest.approx(3 * means[-1], rel=1e-9)
    with pytest.raises(InputError):
        periodic_burst_wait(7, 1.0, 6.0)                            # load > 1
