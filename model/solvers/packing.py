"""The analytic solver's arrays: their columns, and a rack packed into them.

The compiled solver (:mod:`model.solvers.root` and what it calls) reads and
writes plain float arrays, one row per rack or per worker; the constants here
name their columns:

* ``R_*``: a rack's inputs (``RS``, one row per rack);
* ``W_*``: a worker's inputs (``WS``, one row per worker, the racks' workers
  one after another);
* ``O_*``: a rack's outputs (``RO``);
* ``V_*``: a worker's outputs (``WO``);
* ``K_*``: a worker's scratch columns in the workspace a rack is solved in.

:func:`pack` fills a rack's ``R_*`` and ``W_*`` rows from its
:class:`model.rack.RackSpec`. The compiled code has these constants compiled
in, so this file is in the solver's cache digest (:mod:`model.solvers._jit`).
"""

from __future__ import annotations

import math

import numpy as np

from ..rack import RackSpec, clients as cl_mech
from ..rack.arrays import per_worker
from ..rack.service import first_cost

# ---- per-rack inputs (RS columns) ----
(R_N, R_T, R_SEND, R_HIT_RTT, R_MISS_RTT, R_HIT, R_CPU, R_CCORES, R_K, R_WIRE, R_FLOOR, R_GAP,
 R_IP, R_SP, R_CORES, R_CTX, R_TXN, R_MACH, R_EVICT, R_E, R_EB, R_WAL, R_WALBASE, R_WALPER,
 R_SYNCB, R_SYNCUS, R_CV2, R_STRICT, R_PERIOD, R_NCOL) = range(30)
# ---- per-worker inputs (WS columns) ----
# W_A, W_PACE and W_BG are a phase's: the worker's process time in its
# instance's state, its pacing per write while RocksDB delays writes, the
# background jobs running on its machine (model.solvers.trajectory)
W_S, W_WF, W_A, W_EV, W_MACH, W_PACE, W_BG, W_NCOL = range(8)
# ---- per-rack outputs (RO columns) ----
(O_X, O_CYCLE, O_LOST, O_RESENDS, O_SLEEP, O_CLIENT_U, O_CLIENT_RES, O_EVALS, O_JUMP,
 O_SATURATED, O_WIDTH, O_RUN, O_NCOL) = range(13)
# ---- per-worker outputs (WO columns) ----
# V_STALL (writes stopped) and V_FLUSH_BUSY (a flush running) are the run's,
# filled in by the trajectory; a phase's solve leaves them 0
(V_U, V_S, V_PROC, V_SERVED, V_STALL, V_BLOCK, V_STRETCH, V_Q, V_R, V_DUP, V_LOST, V_HELD,
 V_FLUSH_BUSY, V_NCOL) = range(14)
# ---- per-worker scratch columns (K_*) of the workspace a rack is solved in ----
(K_LAM, K_OPN, K_W, K_RUN, K_EXTRA, K_DUP, K_U, K_S, K_A, K_STRT, K_WFRAC, K_MACH, K_WALEV,
 K_NCOL) = range(14)


def pack(spec: RackSpec) -> tuple[np.ndarray, np.ndarray]:
    """The rack's inputs row (``R_*``) and its workers' rows (``W_*``)."""
    c, nw, pl, sv, ls = spec.clients, spec.network, spec.placement, spec.service, spec.lsm
    rs = np.zeros(R_NCOL)
    rs[R_N] = c.threads
    rs[R_T] = c.timeout_us if math.isfinite(c.timeout_us) else math.inf
    rs[R_SEND] = c.send_us
    rs[R_HIT_RTT] = c.hit_rtt_us
    rs[R_MISS_RTT] = c.miss_rtt_us
    rs[R_HIT] = pl.hit_ratio
    rs[R_CPU] = c.cpu_us
    rs[R_CCORES] = max(1, c.cores)
    # the simulators admit whole packets: a buffer of less than one holds none
    # (above one the fractional size stays, so a fit of rcvbuf_pkt_bytes
    # sees a smooth answer)
    rs[R_K] = nw.buffer_pkts if nw.buffer_pkts >= 1.0 else 0.0
    rs[R_WIRE] = nw.loss_rate
    rs[R_FLOOR] = sv.recv_floor_us
    rs[R_GAP] = sv.gap_us
    rs[R_IP] = sv.idle_penalty
    rs[R_SP] = sv.share_penalty
    rs[R_CORES] = sv.cores
    rs[R_CTX] = sv.ctx_penalty
    rs[R_TXN] = sv.txn_commit_us
    rs[R_MACH] = pl.machines
    rs[R_EVICT] = pl.evict_per_us
    rs[R_E] = ls.entries
    rs[R_EB] = ls.entry_bytes
    rs[R_WAL] = 1.0 if ls.wal else 0.0
    rs[R_WALBASE] = ls.wal_block_base_us
    rs[R_WALPER] = ls.wal_block_us_per_mbps
    rs[R_SYNCB] = ls.sync_bytes
    rs[R_SYNCUS] = ls.sync_block_us
    rs[R_CV2] = sv.cv ** 2
    rs[R_STRICT] = 1.0 if c.retry == cl_mech.RETRY_STRICT else 0.0
    # send + timeout, as the clients' mechanism defines it (compiled code
    # cannot take a ClientSpec, so its value travels in the row)
    rs[R_PERIOD] = cl_mech.retry_period_us(c)
    m = spec.servers
    ws = np.zeros((m, W_NCOL))
    ws[:, W_S] = per_worker(pl, "shares")
    ws[:, W_WF] = per_worker(pl, "write_frac")
    ws[:, W_A] = first_cost(sv)          # the run's first state; phases set their own
    ws[:, W_EV] = per_worker(pl, "evict_probs")
    ws[:, W_MACH] = per_worker(pl, "machine_of")
    return rs, ws
