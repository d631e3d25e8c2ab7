"""The simulator against queueing closed forms and exact MVA.

Tolerances come from confidence intervals: runs are cut into batches (the
engine's chunks) much longer than the queue's relaxation time, the batch
means are treated as independent, and a check allows 4 standard errors of
the batch mean (a false alarm rate below 1e-4 per check), plus the 2 %
model tolerance where the issue asks for it (exact MVA).
"""

import math

import numpy as np
import pytest

from model.closed_forms import mmc, mm1
from sim.run import SimConfig, run_config
from tests.oracles.queueing import Station, mva_exact


def batch_stats(res, key):
    x = np.array([row[key] for row in res.timeline])
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


def open_queue(lam, mean_s, c=1, seconds=3.0, seed=1, engine="fast"):
    cfg = SimConfig(n_clients=0, station_probs=np.array([1.0]),
                    service_mean_us=np.array([mean_s]), station_servers=np.array([c]),
                    open_rate_per_us=lam, open_write=False)
    return run_config(cfg, seconds, seed=seed, engine=engine, chunk_s=0.1)


@pytest.mark.parametrize("engine,seconds", [("fast", 3.0), ("simpy", 0.6)])
def test_mm1_response_time(engine, seconds):
    lam, s = 0.07, 10.0                  # per us, us: rho = 0.7
    res = open_queue(lam, s, seconds=seconds, engine=engine)
    want = mm1(lam, 1 / s)
    mean, se = batch_stats(res, "latency_us")
    assert abs(mean - want.response_time) <= 4 * se, (mean, se, want.response_time)
    util = res.busy[0] / res.span_us
    assert util == pytest.approx(want.utilization, abs=4 * se / want.response_time + 0.01)


def test_mmc_response_time():
    lam, s, c = 0.24, 10.0, 3            # rho = 0.8 per server
    res = open_queue(lam, s, c=c, seconds=3.0, seed=2)
    want = mmc(lam, 1 / s, c)
    mean, se = batch_stats(res, "latency_us")
    assert abs(mean - want.response_time) <= 4 * se, (mean, se, want.response_time)


@pytest.mark.parametrize("hit", [0.0, 0.3])
def test_exact_mva_product_form(hit):
    # exponential service, no timeouts, unbounded buffers, no LSM: BCMP
    probs = np.array([0.4, 0.3, 0.2, 0.1])
    svc = np.array([10.0, 12.0, 20.0, 30.0])
    send, hit_rtt, miss_rtt, N = 3.0, 8.0, 20.0, 24
    cfg = SimConfig(n_clients=N, station_probs=probs, service_mean_us=svc, hit_ratio=hit,
                    send_us=send, hit_rtt_us=hit_rtt, miss_rtt_us=miss_rtt)
    res = run_config(cfg, 4.0, seed=3, chunk_s=0.25)
    think = send + hit * hit_rtt + (1 - hit) * miss_rtt
    st = [Station(f"s{i}", "fcfs", float((1 - hit) * probs[i] * svc[i])) for i in range(4)]
    ref = mva_exact(st, N, think_time=think)
    x, se = batch_stats(res, "throughput_mops")     # requests per us
    assert x == pytest.approx(ref.throughput, rel=0.02)
    assert abs(x - ref.throughput) <= 4 * se + 0.02 * ref.throughput
    util = res.busy / res.span_us
    np.testing.assert_allclose(util, ref.utilization, rtol=0.02)
    r = res.lat / res.done
    assert r == pytest.approx(N / ref.throughput, rel=0.02)
