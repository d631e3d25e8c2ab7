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

LOSS_WAVES = ("loss in waves: the clients dropped together time out together, so the "
              "simulator's throughput swings 0.85-1.02 MOPS second by second; the analytic's "
              "steady loss gives 11 % more than the four-seed mean")

#: (regime, quantity) -> why the mean-value form misses (docs/model.md, "Known misses")
KNOWN_MISSES = {
    ("5 ms timeout", "wait_us"): "collapsed workers: how many collapse is random",
    ("facts: timeout 5 ms", "wait_us"): "collapsed workers: how many collapse is random",
    ("4096 clients, 32 KiB buffers", "wait_us"): "idle time of workers between block-driven loss",
    ("facts: 4096 clients, 32 KiB buffers, timeout 1000 ms", "wait_us"):
        "idle time of workers between block-driven loss",
    ("4096 clients, 32 KiB buffers", "throughput"): LOSS_WAVES,
    ("facts: 4096 clients, 32 KiB buffers, timeout 1000 ms", "throughput"): LOSS_WAVES,
    ("facts: write-only, 0.125 MiB memtables, flushnum 1, maxnum 2", "wait_us"):
        "flush-capacity limit: the simulator loses 12-14k packets per run behind its stops, "
        "the analytic none; the analytic's waits are up to 17 % below its mean",
    ("WAL switch + slowdown", "wait_us"): "pile-up behind WAL blocks with 64 clients",
    ("facts: T36", "wait_us"): "loss during WAL blocks: the analytic loses 26k packets per run, "
                               "the simulator 50k; waits up to 33 % lower, worst on the idlest worker",
    ("nocache", "wait_us"): "the hot worker's queue under NoCache imbalance",
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
            why = KNOWN_MISSES.get((name, quantity))
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
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
