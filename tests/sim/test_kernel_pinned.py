"""The fast kernel's output on a small hand-built rack, pinned to the bit.

The kernel is tuned for speed (sim.fast_kernel); tuning must not change what
it computes. This rack goes through every mechanism of the loop (switch
hits, two-slot and one-slot workers, full receive buffers, wire losses,
timeouts with FarReach re-arms, writes with WAL blocks, flushes, write stops
and slowdowns, compactions, CPU stretch, open write-backs:
tests/sim/racks.py). A change that is meant to alter its counters (a new
random stream, a new rule) updates them here, and says so:

* issue 12 (speed work): pinned first;
* issue 50 (RocksDB's write path by its rules, 2026-12): re-pinned. Every
  figure moved, as the rules are new: a write now adds its entry when it
  starts (it was when it ended) and the write that fills a memtable seals
  it (it was the next one); flushes and compactions are
  :mod:`model.rack.lsm_rules`' jobs (a flush writes one L0 file, L0->L1
  and level compactions by RocksDB's scores, on one flush and one
  compaction thread per machine: the old rack ran a compaction of every
  flush beside it), so the rack, which then stopped at two immutables
  with a flush of 250 us, now stops at three with a flush of 550 us and
  slows on three L0 files; fewer requests complete in the 0.2 s (3,888
  against 12,843), the stops and slowdowns hold the threads, and the
  latencies, resends and every station counter follow.

Only exponential service (cv = 1) is pinned: its draws come from the
kernel's own generator and logarithm, the same on every platform; a gamma
draw goes through numba's np.random and libm.
"""

import hashlib

import numpy as np

from sim import counters
from sim.run import run_config
from tests.sim.racks import pinned_rack

PINNED_GLOBALS = {
    "done": 3888.0, "lat": 11694785.66374059, "lat2": 357476370672.73114, "hits": 1199.0,
    "retried": 761.0, "stale": 744.0, "resends": 30652.0, "wire": 353.0, "issued": 3952.0,
    "switches": 198.0, "flushes": 186.0, "compactions": 107.0, "open_done": 267.0,
    "open_resp": 74977.96608002078,
}
# sha-256 of every station counter (float64, counters.STATION order) and the histogram (int64)
PINNED_REST = "97d574922046bb21e6d6b8b34bb003fe51b49f6678a95a85511f7da937c3e1b3"


def _rack():
    return pinned_rack()


# The counters pinned above; those added since (the client cores, the commit
# paths) are zero on this rack, whose mechanisms are off.
PINNED_STATION = ("arr", "drop", "compl", "busy", "block", "stall", "writes")


def test_the_kernel_computes_what_it_did_before_its_speed_work():
    totals = run_config(_rack(), 0.2, seed=3).totals
    got = {k: totals[k] for k in PINNED_GLOBALS}
    assert got == PINNED_GLOBALS
    digest = hashlib.sha256()
    for k in PINNED_STATION:
        digest.update(np.asarray(totals[k], dtype=np.float64).tobytes())
    digest.update(np.asarray(totals["hist"], dtype=np.int64).tobytes())
    assert digest.hexdigest() == PINNED_REST
    for k in set(counters.GLOBAL) - set(PINNED_GLOBALS):
        assert totals[k] == 0.0, k
    for k in set(counters.STATION) - set(PINNED_STATION):
        assert not np.any(totals[k]), k


def test_the_pinned_rack_goes_through_every_mechanism():
    t = run_config(_rack(), 0.2, seed=3).totals
    for k in ("hits", "retried", "stale", "resends", "wire", "switches", "flushes",
              "compactions", "open_done"):
        assert t[k] > 0, k
    for k in ("drop", "stall", "block", "writes"):
        assert t[k].sum() > 0, k
    d = run_config(_rack(), 0.2, seed=3).lsm
    assert max(d["stops"]) > 0 and max(d["slows"]) > 0, d
