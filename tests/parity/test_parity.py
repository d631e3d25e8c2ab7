"""The analytic solver against the fast simulator, regime by regime (issue 11).

For every regime of :mod:`sim.parity` (the mechanism regimes, and every
scenario of ``python -m sim.facts``), both solvers on the same run (the
regime's rack over the queries the analytic solver says take 8 s, from the
run's first state): throughput within 10 %, each busy
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

WAL_STATIONARY = ("the analytic solver charges every write its share of a WAL switch (the "
                  "stationary wal_block_us / entries of balance._evaluate, with the threads "
                  "gathered behind it) even in a run that seals no memtable: T36's 8 s run "
                  "seals none (its 64 MiB memtables), the simulated run never blocks")
WAL_GATHER = ("WAL switches of about 70 ms (5 ms and 6.2 ms per MiB/s its machine writes): "
              "the analytic answer charges each write its share and gathers the threads "
              "behind each switch (network.block_gather); the simulated switches, one "
              "worker's at a time, cost the rack less")
STOP_PHASES = ("the analytic stop phase (model/solvers/trajectory.py) serves N (1 - s) / s "
               "requests per phase without writing them into the instances not stopped, and "
               "halts every instance while one is stopped: its stops and flushes fall "
               "otherwise than the simulated run's (tests/parity/test_write_path.py)")

#: (regime, quantity) -> (why the mean-value form misses, the miss in % measured
#: with ``python -m sim.parity --seconds 8``: both solvers on the regime's run
#: of 8 analytic seconds from its first state, 2026-12)
KNOWN_MISSES = {
    ('default', 'wait_us'): (IDLE, 22.5),
    ('nocache', 'wait_us'): (IDLE, 24.6),
    ('nocache', 'latency_p95'): (TAIL, 44.9),
    ('1 MiB memtable', 'throughput'): (WAL_GATHER, 13.4),
    ('1 MiB memtable', 'wait_us'): (IDLE, 46.5),
    ('1 MiB memtable', 'latency_p50'): (BODY, 39.0),
    ('1 MiB memtable', 'latency_p95'): (TAIL, 44.1),
    ('1 MiB memtable', 'latency_p99'): (TAIL, 285.9),
    ('5 ms timeout', 'latency_p50'): (BODY, 132.1),
    ('5 ms timeout', 'latency_p99'): (TAIL, 69.4),
    ('4096 clients, 32 KiB buffers', 'wait_us'): (IDLE, 32.0),
    ('4096 clients, 32 KiB buffers', 'latency_p50'): (BODY, 29.2),
    ('4096 clients, 32 KiB buffers', 'latency_p95'): (TAIL, 48.8),
    ('4096 clients, 32 KiB buffers', 'latency_p99'): (TAIL, 25.6),
    ('loss + timeouts', 'wait_us'): (IDLE, 22.0),
    ('loss + timeouts', 'latency_p50'): (BODY, 50.5),
    ('loss + timeouts', 'latency_p99'): (TAIL, 36.4),
    ('flush stalls', 'throughput'): (STOP_PHASES, 15.0),
    ('flush stalls', 'process_us'): (STOP_PHASES, 37.1),
    ('flush stalls', 'latency_p99'): (TAIL, 86.1),
    ('WAL switch + slowdown', 'throughput'): (STOP, 16.2),
    ('WAL switch + slowdown', 'wait_us'): (IDLE, 22.9),
    ('WAL switch + slowdown', 'latency_p50'): (BODY, 51.2),
    ('WAL switch + slowdown', 'latency_p95'): (TAIL, 50.8),
    ('WAL switch + slowdown', 'latency_p99'): (TAIL, 37.3),
    ('facts: 1024 clients', 'wait_us'): (IDLE, 22.5),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'wait_us'): (IDLE, 32.0),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p50'): (BODY, 29.2),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p95'): (TAIL, 48.8),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p99'): (TAIL, 25.6),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'wait_us'): (IDLE, 21.2),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p50'): (BODY, 78.3),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p99'): (TAIL, 50.5),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p50'): (BODY, 27.6),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p99'): (TAIL, 100.5),
    ('facts: timeout 5 ms', 'latency_p50'): (BODY, 132.1),
    ('facts: timeout 5 ms', 'latency_p99'): (TAIL, 69.4),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'throughput'): (STOP_PHASES, 12.9),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'wait_us'): (IDLE, 98.2),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'process_us'): (STOP_PHASES, 199.6),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'latency_p50'): (BODY, 374.5),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'latency_p95'): (TAIL, 90.7),
    ('facts: write-only, 64 MiB memtables', 'latency_p50'): (BODY, 26.4),
    ('facts: T36', 'throughput'): (WAL_STATIONARY, 12.6),
    ('facts: T36', 'wait_us'): (WAL_STATIONARY, 105.2),
    ('facts: T36', 'latency_p95'): (WAL_STATIONARY, 35.1),
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
