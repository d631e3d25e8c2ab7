"""The analytic solver against the fast simulator, regime by regime (issue 11).

For every regime of :mod:`sim.parity` (the mechanism regimes, and every
scenario of ``python -m sim.facts``): throughput within 10 %, and each busy
worker's wait and process time within 15 % of the simulator's mean over the
workers with the same share (docs/model.md, "Parity"). The simulator defines
what a mechanism means; where a mean-value form does not reach the bound the
case is an expected failure here, with its size and cause in docs/model.md.
"""

import pytest

from model.profile import Profile
from sim.parity import compare, regimes

SECONDS = 8.0

# The causes (docs/model.md, "Known misses"):
STOP = ("blocks on a worker-bound rack (a WAL switch, a sync, a write stop, a burst "
        "of drops): the analytic answer is the lower of two upper bounds, the threads "
        "away as a delay and the stopped rack (docs/model.md, section 3); where the "
        "workers themselves are the bottleneck neither is tight, and the simulator is lower")
IDLE = ("a worker's wait is its idle time between requests: in the simulator the "
        "workers idle through the rack-wide stops and the refill after them, and "
        "with few blocks per run where they fall decides the busiest worker's wait")

#: (regime, quantity) -> (why the mean-value form misses, the miss in % measured
#: with ``python -m sim.parity --seconds 8``)
KNOWN_MISSES = {
    ('default', 'wait_us'): (IDLE, 46.8),
    ('nocache', 'wait_us'): (IDLE, 50.1),
    ('32 servers', 'wait_us'): (IDLE, 70.1),
    ('1 MiB memtable', 'throughput'): (STOP, 27.2),
    ('1 MiB memtable', 'wait_us'): (IDLE, 29.7),
    ('5 ms timeout', 'wait_us'): (IDLE, 50.2),
    ('4096 clients, 32 KiB buffers', 'throughput'): (STOP, 20.4),
    ('4096 clients, 32 KiB buffers', 'wait_us'): (IDLE, 52.8),
    ('loss + timeouts', 'wait_us'): (IDLE, 29.2),
    ('flush stalls', 'wait_us'): (IDLE, 38.0),
    ('WAL switch + slowdown', 'throughput'): (STOP, 17.9),
    ('WAL switch + slowdown', 'wait_us'): (IDLE, 55.5),
    ('facts: 1024 clients', 'wait_us'): (IDLE, 46.8),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'throughput'): (STOP, 20.4),
    ('facts: 4096 clients, 32 KiB buffers, timeout 1000 ms', 'wait_us'): (IDLE, 52.8),
    ('facts: 4096 clients, 32 KiB buffers, timeout 20 ms', 'wait_us'): (IDLE, 55.7),
    ('facts: 4096 clients, 16 MiB buffers', 'wait_us'): (IDLE, 47.2),
    ('facts: timeout 5 ms', 'wait_us'): (IDLE, 50.2),
    ('facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2', 'wait_us'): (IDLE, 28.6),
}

BOUNDS = {"throughput": 0.10, "wait_us": 0.15, "process_us": 0.15}


@pytest.fixture(scope="module")
def profile():
    return Profile.load("tofino-testbed")


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
    diff = c.throughput_diff if quantity == "throughput" else c.server_diff(quantity)
    assert diff <= BOUNDS[quantity], f"{name}: {quantity} differs by {100 * diff:.1f} %"
