"""The run's write path: the analytic solver by phases and the simulator, phase kind by phase kind.

One small rack per kind of phase a run goes through (sim.parity_runs: never
flushes, flushes, slows, stops, L0 slowdown, L0 stop, a long run that
compacts), each engine over the same whole run from the same first state;
the simulator's mean over three seeds.

* Throughput within 10 %: the same bound as the queueing parity (issue 11).
  On this rack with no write-path event at all (``never flushes``) the
  analytic answer is 2.1 % below the simulator (its mean-value queueing);
  every kind but one is within 5 % (python -m sim.parity_runs with the
  profile refitted 2026-12-07: never flushes -2.1, flushes -1.3, slows
  -0.6, L0 slowdown -0.2, L0 stop +5.1, long run -1.5 %; stops +27.1 %, a
  known miss), so 10 % leaves room for the simulator's seeds (a stop
  or a long slowdown falls differently on each: five seeds of the L0
  slowdown rack range over 3 %, of an L0 stop rack with a stop one file
  nearer over 9 %) and for the base's own 1.6 %.
* Memtables sealed and flushes, per worker, within one of the simulator's
  mean over its seeds (a run's last memtable or flush can fall either side
  of its last query; and a seed's own count varies with the writes its
  draw sends each worker, about 0.6 of a memtable either way here).
* Seconds stopped and slowed within 25 % where over 0.1 s, averaged over the
  workers of equal share: on these racks all four are alike, and which of
  them a slowdown's longest stretch falls on is chance in both engines.

Where they miss, the analytic trajectory is what is off (the simulator is
the reference for what the rules mean); each miss is an expected failure
with its cause, the measured figure in its reason.
"""

import pytest

from sim.parity_runs import COUNTS, KINDS, TIMES, compare

pytestmark = pytest.mark.slow

TOL_THROUGHPUT = 0.10
TOL_COUNT = 1.0
TOL_TIME = 0.25

STOP_PHASES = (
    "the analytic stop phase (model/solvers/trajectory.py _run_on, _account_stop) serves "
    "N (1 - s) / s requests per phase, but their writes never reach the instances that are "
    "not stopped (rates 0 in a stop), and it halts every instance while one is stopped: its "
    "instances seal fewer memtables than the run's writes fill, and each instance's own "
    "stops are shorter")

#: (kind, quantity) -> (cause, the miss measured with python -m sim.parity_runs)
KNOWN_MISSES = {
    ("stops", "throughput"): (STOP_PHASES, "0.1197 vs 0.0941 MOPS (+27.1 %)"),
    ("stops", "memtables"): (STOP_PHASES, "94-95 vs 131 memtables"),
    ("stops", "flushes"): (STOP_PHASES, "93-94 vs 130 flushes"),
    ("stops", "stop_s"): (STOP_PHASES, "0.52 vs 1.02 s stopped per worker (49 %)"),
    ("L0 stop", "memtables"): (STOP_PHASES, "126-127 vs 131-132 memtables"),
    ("L0 stop", "flushes"): (STOP_PHASES, "126 vs 130-131 flushes"),
    ("L0 stop", "stop_s"): (STOP_PHASES, "stopped seconds 26 % apart over equal-share workers"),
}


def cases():
    out = []
    for kind in KINDS:
        for quantity in ("throughput", *COUNTS, *TIMES):
            miss = KNOWN_MISSES.get((kind, quantity))
            marks = ([pytest.mark.xfail(reason=f"{miss[1]}: {miss[0]}", strict=True)]
                     if miss else [])
            out.append(pytest.param(kind, quantity, marks=marks, id=f"{kind}|{quantity}"))
    return out


@pytest.fixture(scope="module")
def cache():
    return {}


@pytest.mark.parametrize("kind, quantity", cases())
def test_analytic_run_agrees_with_the_simulated_run(cache, kind, quantity):
    if kind not in cache:
        cache[kind] = compare(kind)
    c = cache[kind]
    if quantity == "throughput":
        assert abs(c.throughput_diff) <= TOL_THROUGHPUT, \
            f"{kind}: analytic {c.analytic.throughput_mops:.4f} vs simulator " \
            f"{c.sim_throughput:.4f} MOPS"
    elif quantity in COUNTS:
        assert c.count_diff(quantity) <= TOL_COUNT, (kind, quantity, c.counts(quantity))
    else:
        assert c.time_diff(quantity) <= TOL_TIME, (kind, quantity, c.counts(quantity))


def test_every_kind_goes_through_its_phase(cache):
    """Each rack does what its kind says, in the simulator (seed 1)."""
    got = {}
    for kind in KINDS:
        if kind not in cache:
            cache[kind] = compare(kind)
        d = cache[kind].sims[0].details["lsm"]
        got[kind] = (max(d["flushes"]), max(d["stop_s"]), max(d["slow_s"]),
                     max(d["compactions"]))
    assert got["never flushes"][0] == 0
    assert got["flushes"][0] > 10 and got["flushes"][1] == got["flushes"][2] == 0
    assert got["slows"][2] > 0.1 and got["slows"][1] == 0
    assert got["stops"][1] > 0.1
    assert got["L0 slowdown"][2] > 1.0 and got["L0 slowdown"][1] == 0
    assert got["L0 stop"][1] > 0.1
    assert got["long run, compacts"][3] > 0
