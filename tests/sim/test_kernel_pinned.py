"""The fast kernel's output on a small hand-built rack, pinned to the bit.

The kernel is tuned for speed (sim.fast_kernel); tuning must not change what
it computes. This rack goes through every mechanism of the loop (switch
hits, two-slot and one-slot workers, full receive buffers, wire losses,
timeouts with FarReach re-arms, writes with WAL blocks, flushes, write stops
and compactions, CPU stretch, open write-backs), and its counters are the
ones the kernel gave before its speed work of issue 12. A change that is
meant to alter them (a new random stream, a new rule) updates them here,
and says so.

Only exponential service (cv = 1) is pinned: its draws come from the
kernel's own generator and logarithm, the same on every platform; a gamma
draw goes through numba's np.random and libm.
"""

import hashlib

import numpy as np

from model.rack import clients as cl_mech, lsm as L
from sim import counters
from sim.config import SimConfig
from sim.run import run_config

PINNED_GLOBALS = {
    "done": 12843.0, "lat": 12574976.226400841, "lat2": 84738952454.21266, "hits": 3940.0,
    "retried": 2474.0, "stale": 1787.0, "resends": 28350.0, "wire": 422.0, "issued": 12907.0,
    "switches": 555.0, "flushes": 554.0, "compactions": 553.0, "open_done": 296.0,
    "open_resp": 57129.44196695405,
}
# sha-256 of every station counter (float64, counters.STATION order) and the histogram (int64)
PINNED_REST = "2baa7030055a93368d5b11c04a6072eaff42d407c3737110a4696ad6ca829639"


def _lsm_params() -> np.ndarray:
    """Ten writes fill a memtable and a flush of one takes 250 us on a slow disk,
    so writers stop now and then (maxnum 2)."""
    p = np.zeros(L.P_N)
    p[L.P_ENTRY], p[L.P_MEM], p[L.P_FLUSHNUM], p[L.P_MAXNUM] = 200.0, 2_000.0, 1, 2
    p[L.P_WAL], p[L.P_FIXED], p[L.P_DISK], p[L.P_FWF] = 1.0, 50.0, 10.0, 1.0
    p[L.P_WAMP], p[L.P_SLOW], p[L.P_BG] = 2.0, 50.0, 2
    return p


def _rack() -> SimConfig:
    return SimConfig(
        n_clients=64, station_probs=np.array([0.4, 0.35, 0.25]),
        service_mean_us=np.array([20.0, 25.0, 30.0]), hit_ratio=0.3, send_us=2.0, hit_rtt_us=6.0,
        miss_rtt_us=12.0, timeout_us=400.0, retry=cl_mech.RETRY_FARREACH, loss_rate=0.01,
        write_frac=0.5, service_cv=1.0, station_servers=np.array([2, 1, 1]),
        buffer_pkts=np.array([32, 32, 32]), open_rate_per_us=0.002, lsm=True,
        lsm_params=_lsm_params(), station_machine=np.array([0, 0, 1]), machines=2,
        wal_block_us=np.array([5.0, 5.0]), cores=2, ctx_penalty=0.1, start_spread_us=14.0,
        recv_floor_us=1.5, gap_us=0.5)


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
