"""The analytic solver against the fast simulator, regime by regime (issue 11).

For every regime of :mod:`sim.parity` (the mechanism regimes, and every
scenario of ``python -m sim.facts``): throughput within 10 %, each busy
worker's wait and process time within 15 % of the simulator's mean over the
workers with the same share, and the client latency's p50, p95 and p99
(:mod:`model.solvers.latency_tail`) within 25 % of the simulator's
(docs/model.md, "Parity" and "Latency percentiles"). The simulator defines
what a mechanism means; where a mean-value form does not reach the bound the
case is an expected failure here, with its size and cause in docs/model.md.
"""

import pytest

from sim.parity import compare, regimes
from runio.inputs import load_profile

SECONDS = 8.0

# The causes (docs/model.md, "Known misses"):
STOP = ("blocks on a worker-bound rack (a WAL switch, a sync, a write stop, a burst "
        "of drops): the analytic answer is the lower of two upper bounds, the threads "
        "away as a delay and the stopped rack (docs/model.md, section 3); where the "
        "workers themselves are the bottleneck neither is tight, and the simulator is lower")
IDLE = ("a worker's wait is its idle time between requests: in the simulator the "
        "workers idle through the rack-wide stops and the refill after them, and "
        "with few blocks per run where they fall decides the busiest worker's wait")

BODY = ("the latency's body: at a saturated rack Little's law fixes the threads' time; "
        "the simulator's buffers overflow in bursts and lose 10-40 % more requests than "
        "the mean-value form, each extra timeout taken out of the queues, so the requests "
        "that are not lost are faster in the simulator (docs/model.md)")
TAIL = ("the latency's tail: the simulator's losses and blocks come in bursts (a "
        "block piles the threads onto one worker, a full buffer drops the resends "
        "too), where the mean-value loss rate and held time are spread evenly over "
        "requests")

#: (regime, quantity) -> (why the mean-value form misses, the miss in % measured
#: with ``python -m sim.parity --seconds 8``)
KNOWN_MISSES = {
    ('default', 'wait_us'): (IDLE, 46.8),
    ('default', 'latency_p50'): (BODY, 31.7),
    ('nocache', 'wait_us'): (IDLE, 50.1),
    ('nocache', 'latency_p95'): (TAIL, 43.2),
    ('4 servers', 'latency_p50'): (BODY, 38.5),
    ('32 servers', 'wait_us'): (IDLE, 70.1),
    ('32 servers', 'latency_p50'): (BODY, 94.8),
    ('1 MiB memtable', 'throughput'): (STOP, 27.2),
    ('1 MiB memtable', 'wait_us'): (IDLE, 29.7),
    ('1 MiB memtable', 'latency_p95'): (TAIL, 33.1),
    ('1 MiB memtable', 'latency_p99'): (TAIL, 403.8),
    ('5 ms timeout', 'wait_us'): (IDLE, 50.2),
    ('5 ms timeout', 'latency_p50'): (BODY, 205.0),
    ('5 ms timeout', 'latency_p99'): (TAIL, 70.1),
    ('4096 clients, 32 KiB buffers', 'throughput'): (STOP, 20.4),
    ('4096 clients, 32 KiB buffers', 'wait_us'): (IDLE, 52.8),
    ('4096 clients, 32 KiB buffers', 'latency_p50'): (BODY, 29.5),
    ('4096 clients, 32 KiB buffers', 'latency_p95'): (TAIL, 46.1),
    ('loss + timeouts', 'wait_us'): (IDLE, 29.2),
    ('loss + timeouts', 'latency_p50'): (BODY, 49.8),
    ('loss + timeouts', 'latency_p99'): (TAIL, 36.6),
    ('flush stalls', 'wait_us'): (IDLE, 38.0),
    ('flush stalls', 'latency_p95'): (TAIL, 127.6),
    ('flush stalls', 'latency_p99'): (TAIL, 30.1),
    ('WAL switch + slowdown', 'throughput'): (STOP, 17.9),
    ('WAL switch + slowdown', 'wait_us'): (IDLE, 55.5),
    ('WAL switch + slowdown', 'latency_p50'): (BODY, 57.5),
    ('WAL switch + slowdown', 'latency_p95'): (TAIL, 50.0),
    ('WAL switch + slowdown', 'latency_p99'): (TAIL, 38.2),
    ('facts: 1024 clients', 'wait_us'): (IDLE, 46.8),
    ('facts: 1024 clients', 'latency_p50'): (BODY, 31.7),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'throughput'): (STOP, 20.4),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'wait_us'): (IDLE, 52.8),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p50'): (BODY, 29.5),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p95'): (TAIL, 46.1),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'wait_us'): (IDLE, 55.7),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p50'): (BODY, 172.7),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p99'): (TAIL, 63.7),
    ('facts: 4096 clients, 16 MiB buffers', 'wait_us'): (IDLE, 47.2),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p50'): (BODY, 303.6),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p95'): (TAIL, 90.3),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p99'): (TAIL, 45.9),
    ('facts: timeout 5 ms', 'wait_us'): (IDLE, 50.2),
    ('facts: timeout 5 ms', 'latency_p50'): (BODY, 205.0),
    ('facts: timeout 5 ms', 'latency_p99'): (TAIL, 70.1),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'wait_us'): (IDLE, 28.6),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'latency_p95'): (TAIL, 68.6),
    ('facts: write-only, 64 MiB memtables', 'latency_p50'): (BODY, 26.8),
}

BOUNDS = {"throughput": 0.10, "wait_us": 0.15, "process_us": 0.15,
          # the client latency's percentiles (docs/model.md, "Latency percentiles")
          "latency_p50": 0.25, "latency_p95": 0.25, "latency_p99": 0.25}


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


@pytest.fixture(scope="module")
def cache():
    return {}


def cases():
    out = []
    for name in regimes():
        for quantity in BOUNDS:
            miss = KNOWN_MISSES.get((name, quantity))
            marks = ([pytest.mark.xfail(reason=f"{miss[1]} % off: {miss[0]}", strict=True)]
                     if miss else [])
            out.append(pytest.param(name, quantity, marks=marks, id=f"{name}|{quantity}"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name, quantity", cases())
def test_analytic_agrees_with_the_simulator(profile, cache, name, quantity):
    if name not in cache:
        cache[name] = compare(name, profile, seconds=SECONDS, scenario=regimes()[name])
    c = cache[name]
    if quantity == "throughput":
        diff = c.throughput_diff
    elif quantity.startswith("latency_"):
        diff = c.percentile_diff(quantity.split("_")[1])
    else:
        diff = c.server_diff(quantity)
    assert diff <= BOUNDS[quantity], f"{name}: {quantity} differs by {100 * diff:.1f} %"
