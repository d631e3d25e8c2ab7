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
STOP_PHASES = ("the analytic stop phase (model/solvers/trajectory.py) serves N (1 - s) / s "
               "requests per phase without writing them into the instances not stopped, and "
               "halts every instance while one is stopped: its stops and flushes fall "
               "otherwise than the simulated run's (tests/parity/test_write_path.py)")

CLIENT_BOUND = ("the client machine's cores hold the rack (client_cpu_us 49.5 us on 48 cores "
                "in the profile refitted 2026-12-07: about 0.97 MOPS; both engines name the "
                "clients): the simulated threads queue for a core in turn, so every request "
                "waits about as long (p50 to p99 within 1.6x), where the analytic tail spreads "
                "the wait as a server queue's; its busiest worker's process and wait gap in "
                "these regimes is not yet separated")
LOSS_4096 = ("4096 clients with 1 s timeouts: both engines lose about 0.4 % of requests, "
             "spend 71-73 % of the threads' time on timeouts and keep the workers 97-98 % "
             "busy, yet the analytic answer completes 20 % fewer requests (its lower bound, "
             "docs/model.md section 3); new with the receive buffers of the 2026-12-07 "
             "profile (rcvbuf_pkt_bytes 490 B: 67 packets in 32 KiB, 14 before), not yet "
             "explained")

#: (regime, quantity) -> (why the mean-value form misses, the miss in % measured
#: with ``python -m sim.parity --seconds 8``: both solvers on the regime's run
#: of 8 analytic seconds from its first state, 2026-12-07, the shipped profile)
KNOWN_MISSES = {
    ('default', 'wait_us'): (IDLE, 16.8),
    ('default', 'latency_p50'): (BODY, 35.0),
    ('nocache', 'wait_us'): (IDLE, 21.1),
    ('32 servers', 'wait_us'): (CLIENT_BOUND, 21.0),
    ('32 servers', 'process_us'): (CLIENT_BOUND, 16.6),
    ('32 servers', 'latency_p50'): (CLIENT_BOUND, 45.6),
    ('32 servers', 'latency_p95'): (CLIENT_BOUND, 62.6),
    ('32 servers', 'latency_p99'): (CLIENT_BOUND, 113.5),
    ('1 MiB memtable', 'wait_us'): (IDLE, 35.0),
    ('1 MiB memtable', 'latency_p50'): (BODY, 44.8),
    ('1 MiB memtable', 'latency_p95'): (TAIL, 165.1),
    ('1 MiB memtable', 'latency_p99'): (TAIL, 30.4),
    ('5 ms timeout', 'wait_us'): (IDLE, 60.3),
    ('5 ms timeout', 'latency_p50'): (BODY, 26.1),
    ('5 ms timeout', 'latency_p95'): (TAIL, 38.4),
    ('5 ms timeout', 'latency_p99'): (TAIL, 38.2),
    ('4096 clients, 32 KiB buffers', 'throughput'): (LOSS_4096, 19.7),
    ('4096 clients, 32 KiB buffers', 'wait_us'): (IDLE, 207.3),
    ('4096 clients, 32 KiB buffers', 'latency_p99'): (TAIL, 46.6),
    ('loss + timeouts', 'latency_p50'): (BODY, 51.5),
    ('loss + timeouts', 'latency_p99'): (TAIL, 30.4),
    ('flush stalls', 'wait_us'): (IDLE, 47.0),
    ('flush stalls', 'process_us'): (STOP_PHASES, 25.1),
    ('flush stalls', 'latency_p99'): (TAIL, 75.6),
    ('WAL switch + slowdown', 'wait_us'): (IDLE, 24.3),
    ('WAL switch + slowdown', 'latency_p50'): (BODY, 53.7),
    ('facts: 1024 clients', 'wait_us'): (IDLE, 16.8),
    ('facts: 1024 clients', 'latency_p50'): (BODY, 35.0),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'throughput'): (LOSS_4096, 19.7),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'wait_us'): (IDLE, 207.3),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'latency_p99'): (TAIL, 46.6),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'wait_us'): (IDLE, 20.7),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p50'): (BODY, 51.2),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'latency_p95'): (TAIL, 53.5),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p50'): (BODY, 49.2),
    ('facts: 4096 clients, 16 MiB buffers', 'latency_p99'): (TAIL, 129.0),
    ('facts: timeout 5 ms', 'wait_us'): (IDLE, 60.3),
    ('facts: timeout 5 ms', 'latency_p50'): (BODY, 26.1),
    ('facts: timeout 5 ms', 'latency_p95'): (TAIL, 38.4),
    ('facts: timeout 5 ms', 'latency_p99'): (TAIL, 38.2),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'throughput'): (STOP_PHASES, 22.9),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'wait_us'): (IDLE, 96.8),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'process_us'): (STOP_PHASES, 81.8),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'latency_p50'): (BODY, 599.1),
    ('facts: 16 MiB memtables, 10M queries', 'wait_us'): (CLIENT_BOUND, 63.2),
    ('facts: 16 MiB memtables, 10M queries', 'process_us'): (CLIENT_BOUND, 19.9),
    ('facts: 16 MiB memtables, 10M queries', 'latency_p50'): (CLIENT_BOUND, 33.7),
    ('facts: 16 MiB memtables, 10M queries', 'latency_p95'): (CLIENT_BOUND, 158.8),
    ('facts: 16 MiB memtables, 10M queries', 'latency_p99'): (CLIENT_BOUND, 220.1),
    ('facts: 16 MiB memtables, 100M queries', 'wait_us'): (CLIENT_BOUND, 63.5),
    ('facts: 16 MiB memtables, 100M queries', 'process_us'): (CLIENT_BOUND, 20.4),
    ('facts: 16 MiB memtables, 100M queries', 'latency_p50'): (CLIENT_BOUND, 30.8),
    ('facts: 16 MiB memtables, 100M queries', 'latency_p95'): (CLIENT_BOUND, 150.2),
    ('facts: 16 MiB memtables, 100M queries', 'latency_p99'): (CLIENT_BOUND, 210.6),
    ('facts: T36', 'wait_us'): (WAL_STATIONARY, 80.8),
    ('facts: T38', 'latency_p50'): (CLIENT_BOUND, 27.3),
    ('facts: T38', 'latency_p95'): (CLIENT_BOUND, 138.8),
    ('facts: T38', 'latency_p99'): (CLIENT_BOUND, 221.1),
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
