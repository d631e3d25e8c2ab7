"""The fast engine: :class:`sim.run.SimConfig` on the compiled kernel.

:class:`FastEngine` owns the simulation state as numpy arrays, seeds the
kernel's random stream, and runs it chunk by chunk
(:func:`sim.fast_kernel.run_chunk`); it has the same small interface as
:class:`sim.engine_simpy.SimpyEngine` (``run_until``, ``refresh``,
``end_state``), so :func:`sim.run.run_config` drives either.

Semantics are identical to the SimPy engine; one difference in how the
randomness is consumed (class per request from the hit ratio and the shares,
rather than sampled records) means the two agree statistically, not draw
for draw. The first call in a process compiles the kernel (10-20 s)
unless numba's on-disk cache (``sim/__pycache__``, else numba's user-wide
cache) already holds it.

The kernel draws from numba's per-thread random state, which
:class:`FastEngine` seeds when it is created: run one engine at a time per
thread (as :func:`sim.run.run_config` does) for reproducible output.
"""

from __future__ import annotations

import math

import numpy as np

from . import fast_kernel as K
from .run import HIST_BINS, SimConfig

__all__ = ["FastEngine"]

if K.HIST_BINS != HIST_BINS:  # the two modules must agree on the histogram layout
    raise ImportError("sim.fast_kernel and sim.run disagree on the latency histogram")


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
        P[K.P_WRITE] = cfg.write_frac
        P[K.P_SHAPE] = 1.0 / (cfg.service_cv ** 2)
        P[K.P_OPEN_RATE] = cfg.open_rate_per_us
        P[K.P_ENTRY] = cfg.entry_bytes
        P[K.P_MEM] = cfg.memtable_bytes
        P[K.P_FLUSH_FIXED] = cfg.flush_fixed_us
        P[K.P_DISK] = cfg.disk_bytes_per_us
        P[K.P_SLOW] = cfg.slowdown_bytes_per_us
        P[K.P_CTX] = cfg.ctx_penalty
        P[K.P_CORES] = float(cfg.cores)
        P[K.P_BG_CAP] = float(min(cfg.bg_cap, 1 << 30))
        IP = np.zeros(K.I_NP, dtype=np.int64)
        IP[K.I_CLIENTS] = N
        IP[K.I_ST] = n
        IP[K.I_SLOTS] = slots
        IP[K.I_FLUSHNUM] = cfg.flushnum
        IP[K.I_MAXNUM] = cfg.maxnum
        IP[K.I_LSM] = int(cfg.lsm)
        IP[K.I_WAL] = int(cfg.wal)
        IP[K.I_MACH] = cfg.machines
        IP[K.I_OPEN_WRITE] = int(cfg.open_write)
        tsize = 1
        while tsize < slots:
            tsize *= 2
        IP[K.I_TREE] = tsize
        IS = np.zeros(K.S_NS, dtype=np.int64)
        FS = np.zeros(K.F_NF)
        FS[K.F_NEXT_FLUSH] = K.INF
        FS[K.F_NEXT_OPEN] = (rng.exponential(1.0 / cfg.open_rate_per_us)
                             if cfg.open_rate_per_us > 0 else K.INF)
        IS[K.S_NEXT_FLUSH_ST] = -1

        # FIFO sizes. A client sends at most one packet per (send + timeout)
        # and a packet spends at most `delay` on the wire, so at most `per`
        # of its packets are on the wire at once. Replies on the wire left a
        # worker within the last rtt/2: they were queued or in service then,
        # or arrived since (sent by clients within the window): bounded by
        # the queues, the slots and `per` per client.
        delay = cfg.send_us + cfg.miss_rtt_us + cfg.hit_rtt_us
        per = 2 + (0 if not math.isfinite(cfg.timeout_us)
                   else int(math.ceil(2 * delay / max(cfg.send_us + cfg.timeout_us, 1e-3))))
        cap = max(N * per + 1024, 1024)
        qcaps = cfg.queue_capacity()
        qcap = int(max(1, int(np.max(qcaps))))
        cap_rsp = cap + int(qcaps.sum()) + slots

        st_cum = np.cumsum(cfg.station_probs / cfg.station_probs.sum())
        st_cum[-1] = 1.0 + 1e-12
        op = cfg.open_probs / cfg.open_probs.sum() if cfg.open_probs.sum() > 0 else cfg.station_probs
        open_cum = np.cumsum(op)
        open_cum[-1] = 1.0 + 1e-12
        slot0 = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
        sl_st = np.repeat(np.arange(n, dtype=np.int64), c)

        # clients start at staggered times through the timer list
        start = np.sort(rng.random(N) * cfg.start_spread_us) if N else np.zeros(0)
        tl_next = np.arange(1, N + 1, dtype=np.int64)
        if N:
            tl_next[-1] = -1
        tl_prev = np.arange(-1, N - 1, dtype=np.int64)
        IS[K.S_TL_HEAD] = 0 if N else -1
        IS[K.S_TL_TAIL] = N - 1 if N else -1

        tv = np.zeros(2 * tsize)
        ti = np.zeros(2 * tsize, dtype=np.int64)
        K.tree_init(tv, ti, tsize)
        self.G = np.zeros(K.G_NG)
        self.C = np.zeros((n, K.C_NC))
        self.hist = np.zeros(K.HIST_BINS, dtype=np.int64)
        i64 = lambda k: np.zeros(k, dtype=np.int64)  # noqa: E731
        m = cfg.machines
        self.args = [
            P, IP, IS, FS, self.G, self.C, self.hist,
            st_cum, open_cum, cfg.service_mean_us, c, slot0,
            np.minimum(cfg.buffer_pkts, qcap).astype(np.int64), cfg.station_machine,
            cfg.wamp, cfg.wal_block_us,
            # clients
            i64(N), i64(N), i64(N), np.zeros(N), start.astype(float), i64(N), tl_next, tl_prev,
            # FIFOs
            np.zeros(cap), i64(cap), i64(cap),
            np.zeros(cap), i64(cap), i64(cap), i64(cap), i64(cap),
            np.zeros(cap_rsp), i64(cap_rsp), i64(cap_rsp),
            # station queues
            np.zeros((n, qcap), dtype=np.int64), np.zeros((n, qcap), dtype=np.int64),
            np.zeros((n, qcap), dtype=np.int64), np.zeros((n, qcap)), i64(n), i64(n),
            # slots
            sl_st, i64(slots), i64(slots), i64(slots), i64(slots), np.zeros(slots),
            np.zeros(slots), np.zeros(slots), tv, ti,
            # LSM per station
            np.zeros(n), i64(n), i64(n), i64(n), np.full(n, K.INF), np.zeros(n), np.zeros(n),
            # machines
            i64(m), i64(m), i64(m), np.zeros(m), np.zeros(m),
        ]
        self.IS, self.FS = IS, FS
        self._q_n = self.args[40]
        self._sl_busy = self.args[42]
        self._sl_st = sl_st

    def run_until(self, t_us: float) -> dict:
        self.G[:] = 0.0
        self.C[:] = 0.0
        self.hist[:] = 0
        status = K.run_chunk(float(t_us), *self.args)
        if status != 0:
            raise RuntimeError(f"fast engine: event ring {status} overflowed (a sizing bug)")
        G, C = self.G, self.C
        return {
            "done": G[K.G_DONE], "lat": G[K.G_LAT_SUM], "lat2": G[K.G_LAT_SQ],
            "hits": G[K.G_HITS], "fp": G[K.G_FP], "resends": G[K.G_RESENDS],
            "wire": G[K.G_WIRE_LOSS], "issued": G[K.G_ISSUED], "switches": G[K.G_SWITCHES],
            "flushes": G[K.G_FLUSHES], "open_done": G[K.G_OPEN_DONE],
            "open_resp": G[K.G_OPEN_RESP],
            "arr": C[:, K.C_ARR].copy(), "drop": C[:, K.C_DROP].copy(),
            "compl": C[:, K.C_DONE].copy(), "busy": C[:, K.C_BUSY].copy(),
            "block": C[:, K.C_BLOCK].copy(), "stall": C[:, K.C_STALL].copy(),
            "writes": C[:, K.C_WRITES].copy(), "hist": self.hist.copy(),
        }

    def refresh(self) -> None:
        """Dynamics changed cfg arrays in place; the kernel reads them directly."""

    def end_state(self) -> dict:
        n = self.cfg.stations
        in_service = np.bincount(self._sl_st[self._sl_busy != 0], minlength=n)
        return {"queued": self._q_n.copy(), "in_service": in_service,
                "in_flight": int(self.IS[K.S_HIT_N] + self.IS[K.S_ARR_N] + self.IS[K.S_RSP_N])}
