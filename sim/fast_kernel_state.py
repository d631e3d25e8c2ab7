"""What the fast kernel works on: the indices of its parameter and scalar
state arrays, its groups of state arrays, and the counters' binning.

The engine (:class:`sim.fast.FastEngine`) owns every array. It hands them to
:func:`sim.fast_kernel_loop.run_chunk` in a few named tuples, one per part of
the rack (numba passes a named tuple of arrays as one argument, and the loop
takes each array out of it at no cost), instead of some seventy positional
arrays. A field's name is the array's without its group's prefix: the
engine's ``cl_first`` is ``Clients.first``, its ``sl_busy`` ``Slots.busy``.
"""

from __future__ import annotations

from collections import namedtuple

from numba import njit

from . import counters as K
# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import _f64_bits

# ---- float parameters (P) ----
P_SEND, P_HIT_RTT, P_HALF_RTT, P_TIMEOUT, P_LOSS, P_HIT, P_SHAPE, P_OPEN_RATE, P_CTX, \
    P_CORES, P_FIXED, P_CPU, P_TXN, P_SYNC_BYTES, P_SYNC_US, P_BG_CORES, P_NP = range(17)
# ---- int parameters (IP) ----
I_CLIENTS, I_ST, I_SLOTS, I_LSM, I_OPEN_WRITE, I_TREE, I_RETRY, I_CCORES, I_NP = range(9)
# ---- scalar int state (IS) ----
S_HIT_H, S_HIT_N, S_ARR_H, S_ARR_N, S_RSP_H, S_RSP_N, \
    S_BG_JOB, S_STATUS, S_CQ_H, S_CQ_N, S_CH_N, S_NS = range(12)
# ---- scalar float state (FS): now, the next open arrival, the next job event
# (of job S_BG_JOB), the time the jobs were last advanced to ----
F_NOW, F_NEXT_OPEN, F_NEXT_BG, F_BG_LAST, F_NF = range(5)
# ---- timer lists: the first sends (staggered starts), send deadlines, re-arms;
# and the parked: threads at the client cores, whose timer is not armed ----
T_START, T_SEND, T_REARM, T_PARK = range(4)
T_LISTS = 4
# ---- a client thread at the client cores (cl_cs) ----
CS_OUT, CS_RESEND, CS_NEW = 0, 1, 2      # not there; there for a resend; for a new request
#: cl_first of a request none of whose attempts has left yet: no reply is its
NO_ATT = 1 << 62
# ---- a machine's commit path (m_lock columns): held?, first and last waiting slot ----
L_HELD, L_HEAD, L_TAIL, L_N = range(4)
# ---- a worker slot (sl_busy) ----
SL_FREE, SL_SERVING, SL_STOPPED, SL_COMMIT = 0, 1, 2, 3

# ---- the groups of state arrays (run_chunk's arguments after the scalars) ----
#: the chunk's counters (sim.counters): global, per station, the latency histogram
Counts = namedtuple("Counts", "G C hist")
#: per station: the placement's alias tables (closed, open), mean service, write
#: fraction, servers, first slot, receive buffer, machine; per machine its WAL block
Stations = namedtuple("Stations", "acc alias open_acc open_alias svc_mean wfrac servers slot0 "
                                  "buf machine wal_block")
#: per client thread: its request (attempts, first attempt of the request, station
#: or -1 for a hit, write?, start), started?, its timer (deadline, the lists'
#: links: sim.fast_kernel_queues.timer_lists), its time at the client cores (state
#: there, when it asked, when its core time began); the ring of threads waiting
#: for a core, the heap of the held cores' ends (time, thread)
Clients = namedtuple("Clients", "att first cls write start started dl tl_next tl_prev "
                                "cs ask cstart cq ch_t ch_c")
#: packets on the wire, three FIFO rings: switch hits (time, client, attempt),
#: arrivals at a worker (time, client, attempt, station, write), replies
Wire = namedtuple("Wire", "hit_t hit_c hit_a arr_t arr_c arr_a arr_s arr_w rsp_t rsp_c rsp_a")
#: the workers' receive queues, one ring per station: client, attempt, write,
#: arrival time of each packet; head and length of each ring
Queues = namedtuple("Queues", "c a w t h n")
#: per worker slot: station, state (SL_*), the packet it holds (client, attempt,
#: write, arrival), when its service began, when its write stop began, when its
#: commit began, when its block ends, the next slot waiting for the commit lock;
#: the tournament tree of service ends (times, slots); scratch for the slots
#: that start in one event (slot, start time)
Slots = namedtuple("Slots", "st busy c a w arr start since cst bend next tv ti go go_t")
#: RocksDB (model.rack.lsm_rules: its parameters as a one-record array, the
#: instances (one per station), the job table, the machines), the busy workers
#: of each machine, each machine's commit path (L_* columns), each station's
#: WAL bytes since its last sync, the rack's stop count (sim.write_path)
Storage = namedtuple("Storage", "lp st jobs mach m_busy m_lock synced rack")

#: the scalar parameters, read once per chunk from P and IP, with the rings' capacities
Params = namedtuple("Params", "send hit_rtt half timeout loss hit_p shape open_rate ctx cores "
                              "fixed cpu txn sync_bytes sync_us bg_cores n_cl cpu_on txn_on ccores "
                              "lsm_on "
                              "open_write tsize retry cap_hit cap_arr cap_rsp cap_cq qcap")


@njit(cache=True, inline="always")
def params(P, IP, cl, w, q):
    """The chunk's :data:`Params`."""
    n_cl = IP[I_CLIENTS]
    cpu = P[P_CPU]
    txn = P[P_TXN]
    return Params(
        P[P_SEND], P[P_HIT_RTT], P[P_HALF_RTT], P[P_TIMEOUT], P[P_LOSS], P[P_HIT], P[P_SHAPE],
        P[P_OPEN_RATE], P[P_CTX], P[P_CORES], P[P_FIXED], cpu, txn, P[P_SYNC_BYTES],
        P[P_SYNC_US], P[P_BG_CORES], n_cl,
        cpu > 0.0 and n_cl > 0,     # the client cores (else: every send at once)
        txn > 0.0,                  # the machines' commit paths
        IP[I_CCORES], IP[I_LSM] != 0, IP[I_OPEN_WRITE], IP[I_TREE], IP[I_RETRY],
        w.hit_t.shape[0], w.arr_t.shape[0], w.rsp_t.shape[0], cl.cq.shape[0], q.c.shape[1])


HIST_BINS = K.HIST_BINS
_CELLS = K.HIST_CELLS
_EDGES = K.HIST_EDGES_PAD
_CELL_BITS = K.CELL_BITS
_CELL_LO = (K.CELL_E0 + 1023) << K.CELL_BITS          # biased exponent and cell of the first row
_CELL_N = K.CELL_ROWS << K.CELL_BITS


@njit(cache=True, inline="always")
def hist_bin(lat):
    """:func:`sim.counters.hist_bin`, compiled: the cell of the float's
    exponent and top mantissa bits, then one comparison with the next edge."""
    if not lat >= _EDGES[1]:
        return 0
    j = (_f64_bits(lat) >> (52 - _CELL_BITS)) - _CELL_LO
    if j >= _CELL_N:
        return HIST_BINS - 1
    k = _CELLS[j]
    return k + (1 if _EDGES[k + 1] <= lat else 0)

