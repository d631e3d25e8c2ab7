"""The fast engine: a :class:`sim.config.SimConfig` on the compiled kernel.

:class:`FastEngine` owns the simulation state as numpy arrays, seeds the
kernel's random stream and runs it chunk by chunk
(:func:`sim.fast_kernel.run_chunk`). It has the same small interface as
:class:`sim.engine_simpy.SimpyEngine` (``run_until``, ``end_state``), so
:func:`sim.run.run_config` drives either.

The two engines follow the same rules (the mechanisms' per-event forms) and
agree statistically, not draw for draw. The first run on a machine compiles
the kernel (10-20 s); the compiled code is cached on disk
(:func:`sim.fast_kernel.cache_dir`), so later runs start at once.

The kernel draws from its own generator, whose state the engine holds (so
engines do not share a stream). Gamma service times (``service_cv`` other
than 1) still come from numba's per-thread random state, which
:class:`FastEngine` seeds when it is created: with those, run one engine at
a time per thread (as :func:`sim.run.run_config` does) for reproducible
output.
"""

from __future__ import annotations

import math

import numpy as np

from model.rack import lsm as lsm_mech, placement as pl_mech

from . import counters
from . import fast_kernel as K
from .config import SimConfig

__all__ = ["FastEngine"]


class FastEngine:
    """Compiled discrete-event engine for one :class:`SimConfig`."""

    def __init__(self, cfg: SimConfig, seed: int):
        self.cfg = cfg
        n = cfg.stations
        N = int(cfg.n_clients)
        c = cfg.station_servers.astype(np.int64)
        slots = int(c.sum())
        K.seed(int(seed) & 0x7FFFFFFF)
        rng = np.random.default_rng(seed)   # only for the clients' staggered start

        P = np.zeros(K.P_NP)
        P[K.P_SEND] = cfg.send_us
        P[K.P_HIT_RTT] = cfg.hit_rtt_us
        P[K.P_HALF_RTT] = cfg.miss_rtt_us / 2.0
        P[K.P_TIMEOUT] = cfg.timeout_us if math.isfinite(cfg.timeout_us) else K.INF
        P[K.P_LOSS] = cfg.loss_rate
        P[K.P_HIT] = cfg.hit_ratio
        P[K.P_SHAPE] = cfg.service_shape
        P[K.P_OPEN_RATE] = cfg.open_rate_per_us
        P[K.P_CTX] = cfg.ctx_penalty
        P[K.P_CORES] = float(cfg.cores)
        P[K.P_FIXED] = cfg.service_fixed_us
        P[K.P_CPU] = cfg.client_cpu_us
        P[K.P_TXN] = cfg.txn_commit_us
        IP = np.zeros(K.I_NP, dtype=np.int64)
        IP[K.I_CLIENTS] = N
        IP[K.I_ST] = n
        IP[K.I_SLOTS] = slots
        IP[K.I_LSM] = int(cfg.lsm)
        IP[K.I_OPEN_WRITE] = int(cfg.open_write)
        IP[K.I_RETRY] = int(cfg.retry)
        ccores = cfg.client_cores_used
        IP[K.I_CCORES] = ccores
        tsize = 1
        while tsize < slots:
            tsize *= 2
        IP[K.I_TREE] = tsize
        IS = np.zeros(K.S_NS, dtype=np.int64)
        FS = np.zeros(K.F_NF)
        FS[K.F_NEXT_BG] = K.INF
        FS[K.F_NEXT_OPEN] = (rng.exponential(1.0 / cfg.open_rate_per_us)
                             if cfg.open_rate_per_us > 0 else K.INF)
        IS[K.S_BG_ST] = -1

        # FIFO sizes. A client sends at most one packet per (send + timeout)
        # and a packet spends at most `delay` on the wire, so at most `per`
        # of its packets are on the wire at once. Replies on the wire left a
        # worker within the last rtt/2: they were queued or in service then,
        # or arrived since: bounded by the queues, the slots and `per` per client.
        delay = cfg.send_us + cfg.miss_rtt_us + cfg.hit_rtt_us
        per = 2 + (0 if not math.isfinite(cfg.timeout_us)
                   else int(math.ceil(2 * delay / max(cfg.send_us + cfg.timeout_us, 1e-3))))
        cap = max(N * per + 1024, 1024)
        qcaps = cfg.queue_capacity()
        qcap = int(max(1, int(np.max(qcaps))))
        cap_rsp = cap + int(qcaps.sum()) + slots

        st_acc, st_alias = pl_mech.station_table(cfg.station_probs)
        op = cfg.open_probs if cfg.open_probs.sum() > 0 else cfg.station_probs
        open_acc, open_alias = pl_mech.station_table(op)
        slot0 = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
        sl_st = np.repeat(np.arange(n, dtype=np.int64), c)

        # clients start at staggered times through the first timer list
        start = np.sort(rng.random(N) * cfg.start_spread_us) if N else np.zeros(0)
        tl_next, tl_prev, cl_dl = K.timer_lists(start)
        # the client timers (sim.fast_kernel.timer_lists), kept by name for checks
        self._tl_next, self._tl_prev, self._cl_dl = tl_next, tl_prev, cl_dl

        tv = np.zeros(2 * tsize)
        ti = np.zeros(2 * tsize, dtype=np.int64)
        K.tree_init(tv, ti, tsize)
        self.G, self.C, self.hist = counters.new_chunk(n)
        ls, li, mach = lsm_mech.new_state(n, cfg.machines, cfg.lsm_params[lsm_mech.P_MEM], rng,
                                          cfg.lsm_params[lsm_mech.P_SYNC_BYTES])
        i64 = lambda k: np.zeros(k, dtype=np.int64)  # noqa: E731
        m_lock = np.zeros((cfg.machines, K.L_N), dtype=np.int64)
        m_lock[:, K.L_HEAD] = -1
        m_lock[:, K.L_TAIL] = -1
        self._q_n = i64(n)
        self._sl_busy = i64(slots)
        self._sl_st = sl_st
        self.IS = IS
        self.args = [
            P, IP, IS, FS, self.G, self.C, self.hist,
            st_acc, st_alias, open_acc, open_alias, cfg.service_mean_us, cfg.write_frac, c, slot0,
            np.minimum(cfg.buffer_pkts, qcap).astype(np.int64), cfg.station_machine,
            cfg.wal_block_us,
            # clients
            i64(N), i64(N), i64(N), i64(N), np.zeros(N), cl_dl, i64(N), tl_next, tl_prev,
            # FIFOs
            np.zeros(cap), i64(cap), i64(cap),
            np.zeros(cap), i64(cap), i64(cap), i64(cap), i64(cap),
            np.zeros(cap_rsp), i64(cap_rsp), i64(cap_rsp),
            # station queues
            np.zeros((n, qcap), dtype=np.int64), np.zeros((n, qcap), dtype=np.int64),
            np.zeros((n, qcap), dtype=np.int64), np.zeros((n, qcap)), i64(n), self._q_n,
            # slots
            sl_st, self._sl_busy, i64(slots), i64(slots), i64(slots), np.zeros(slots),
            np.zeros(slots), np.zeros(slots), tv, ti,
            # RocksDB background state (model.rack.lsm) and busy workers per machine
            cfg.lsm_params, ls, li, mach, i64(cfg.machines),
            K.seed_state(seed),
            # the client cores: each client's state there, when it asked, when its
            # core time began; the FIFO ring of waiting clients; the heap of core ends
            i64(N), np.zeros(N), np.zeros(N), i64(max(N, 1)),
            np.zeros(max(ccores, 1)), i64(max(ccores, 1)),
            # the machines' commit paths: waiting slots' links, their services' ends,
            # per machine (held, first waiting, last waiting)
            np.full(slots, -1, dtype=np.int64), np.zeros(slots), m_lock,
        ]

    def run_until(self, t_us: float) -> dict:
        self.G[:] = 0.0
        self.C[:] = 0.0
        self.hist[:] = 0
        status = K.run_chunk(float(t_us), *self.args)
        if status != 0:
            raise RuntimeError(f"fast engine: event ring {status} overflowed (a sizing bug)")
        return counters.as_dict(self.G, self.C, self.hist)

    def end_state(self) -> dict:
        n = self.cfg.stations
        in_service = np.bincount(self._sl_st[self._sl_busy != 0], minlength=n)
        return {"queued": self._q_n.copy(), "in_service": in_service,
                "in_flight": int(self.IS[K.S_HIT_N] + self.IS[K.S_ARR_N] + self.IS[K.S_RSP_N])}
