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

Memory: the engine's arrays are sized from the config once, when it is
created (:func:`sizing`, :func:`layout`: the client threads, the event rings
of packets on the wire, the workers' receive queues). A large rack with big
receive buffers needs tens of GiB; :func:`check_memory` refuses such a config
with an :class:`~model.errors.InputError` before anything is allocated (the
engine calls it first), naming the scenario keys that drive the size.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from model.errors import InputError
from model.rack import lsm_rules, placement as pl_mech

from . import counters, write_path
from . import fast_kernel as K
from .config import SimConfig

__all__ = ["FastEngine", "Sizing", "sizing", "layout", "memory_bytes", "memory_parts",
           "check_memory", "memory_limit", "MEMORY_LIMIT_ENV"]


# ---- what the engine allocates -------------------------------------------------------------

#: environment variable: the most memory (MiB) a fast engine may take, instead
#: of half of what the machine has available
MEMORY_LIMIT_ENV = "KVPERF_SIM_MEMORY_LIMIT_MB"

_F, _I, _U = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64)


@dataclass(frozen=True)
class Sizing:
    """The sizes the engine's arrays are made from (:func:`sizing`)."""
    clients: int            # client threads (N)
    stations: int           # workers (n)
    slots: int              # servers over all stations
    machines: int
    tree: int               # leaves of the service-end tournament tree (a power of 2 >= slots)
    per: int                # a client's packets that can be on the wire at once
    fifo: int               # ring of the hit and the arrival FIFOs
    fifo_rsp: int           # ring of the reply FIFO
    queue: int              # ring of every station's receive queue (its largest capacity)
    queue_total: int        # the stations' queue capacities summed
    client_cores: int       # client cores that can be busy at once


def sizing(cfg: SimConfig) -> Sizing:
    """The sizes of the engine's arrays for ``cfg``, computed once here for
    :class:`FastEngine` and for :func:`memory_bytes` alike.

    FIFO sizes: a client sends at most one packet per (send + timeout) and a
    packet spends at most ``delay`` on the wire, so at most ``per`` of its
    packets are on the wire at once. Replies on the wire left a worker
    within the last rtt/2: they were queued or in service then, or arrived
    since: bounded by the queues, the slots and ``per`` per client.
    """
    N = int(cfg.n_clients)
    slots = int(cfg.station_servers.astype(np.int64).sum())
    tsize = 1
    while tsize < slots:
        tsize *= 2
    delay = cfg.send_us + cfg.miss_rtt_us + cfg.hit_rtt_us
    per = 2 + (0 if not math.isfinite(cfg.timeout_us)
               else int(math.ceil(2 * delay / max(cfg.send_us + cfg.timeout_us, 1e-3))))
    cap = max(N * per + 1024, 1024)
    qcaps = cfg.queue_capacity()
    qcap = int(max(1, int(np.max(qcaps))))
    qsum = int(qcaps.sum())
    return Sizing(clients=N, stations=cfg.stations, slots=slots, machines=int(cfg.machines),
                  tree=tsize, per=per, fifo=cap, fifo_rsp=cap + qsum + slots, queue=qcap,
                  queue_total=qsum, client_cores=int(cfg.client_cores_used))


def layout(cfg: SimConfig, sz: Sizing | None = None) -> dict[str, tuple[str, tuple, np.dtype]]:
    """Every array :class:`FastEngine` allocates: name -> (part, shape, dtype).

    The engine makes its zeroed arrays from this table; the rest (the alias
    tables, the timer lists, the RocksDB state, the counters) come from the
    mechanisms' own constructors, whose shapes are listed here as they make
    them (tests/sim/test_sim_memory.py checks the total against a built
    engine's ``nbytes``). ``part`` groups them for :func:`memory_parts`."""
    sz = sz or sizing(cfg)
    N, n, slots, mc = sz.clients, sz.stations, sz.slots, sz.machines
    nodes = N + K.T_LISTS
    cc = max(sz.client_cores, 1)
    out: dict[str, tuple[str, tuple, np.dtype]] = {}

    def add(part, dtype, shape, *names):
        for name in names:
            out[name] = (part, shape if isinstance(shape, tuple) else (shape,), dtype)

    # parameters, scalar state, the global counters, the generator
    add("fixed", _F, K.P_NP, "P")
    add("fixed", _I, K.I_NP, "IP")
    add("fixed", _I, K.S_NS, "IS")
    add("fixed", _F, K.F_NF, "FS")
    add("fixed", _F, counters.G_N, "G")
    add("fixed", _I, counters.HIST_BINS, "hist")
    add("fixed", _U, 4, "rs")
    add("fixed", np.dtype(lsm_rules.LSM_PARAMS), 1, "lp")
    add("fixed", _F, write_path.R_N, "rack")
    # per station
    add("stations", _F, (n, counters.C_N), "C")
    add("stations", _F, n, "st_acc", "open_acc", "block_carry")
    add("stations", _I, n, "st_alias", "open_alias", "st_c", "st_slot0", "st_buf", "q_h", "q_n")
    add("stations", _F, n, "synced")
    add("stations", np.dtype(lsm_rules.INSTANCE), n, "st")
    add("stations", np.dtype(lsm_rules.JOB), len(cfg.lsm_jobs), "jobs")
    # the workers' receive queues: one ring per station, of the largest capacity
    add("queues", _I, (n, sz.queue), "q_c", "q_a", "q_w")
    add("queues", _F, (n, sz.queue), "q_t")
    # the worker slots and the tournament tree of their service ends
    add("slots", _I, slots, "sl_st", "sl_busy", "sl_c", "sl_a", "sl_w", "sl_next")
    add("slots", _F, slots, "sl_arr", "sl_start", "sl_since", "sl_cst", "sl_bend")
    add("slots", _F, 2 * sz.tree, "tv")
    add("slots", _I, 2 * sz.tree, "ti")
    # scratch of the kernel: the slots that start in one event (at most every
    # stopped writer of a station and one more), and their start times
    add("slots", _I, slots + 1, "sl_go")
    add("slots", _F, slots + 1, "sl_go_t")
    # per machine
    add("machines", np.dtype(lsm_rules.MACHINE), mc, "mach")
    add("machines", _I, mc, "m_busy")
    add("machines", _I, (mc, K.L_N), "m_lock")
    # per client thread: its request, its timer, its time at the client cores
    add("clients", _I, N, "cl_att", "cl_first", "cl_cls", "cl_write", "cl_started", "cl_cs")
    add("clients", _F, N, "cl_start", "cl_ask", "cl_cstart")
    add("clients", _I, nodes, "tl_next", "tl_prev")
    add("clients", _F, nodes, "cl_dl")
    add("clients", _I, max(N, 1), "cq")
    add("clients", _F, cc, "ch_t")
    add("clients", _I, cc, "ch_c")
    # packets on the wire: the hit and arrival FIFOs, the reply FIFO
    add("wire", _F, sz.fifo, "hit_t", "arr_t")
    add("wire", _I, sz.fifo, "hit_c", "hit_a", "arr_c", "arr_a", "arr_s", "arr_w")
    add("wire", _F, sz.fifo_rsp, "rsp_t")
    add("wire", _I, sz.fifo_rsp, "rsp_c", "rsp_a")
    return out


def _nbytes(shape: tuple, dtype: np.dtype) -> int:
    return int(math.prod(shape)) * dtype.itemsize


def memory_parts(cfg: SimConfig) -> dict[str, int]:
    """Bytes :class:`FastEngine` allocates for ``cfg``, by part of :func:`layout`."""
    sz = sizing(cfg)
    out: dict[str, int] = {}
    for part, shape, dtype in layout(cfg, sz).values():
        out[part] = out.get(part, 0) + _nbytes(shape, dtype)
    return out


def memory_bytes(cfg: SimConfig) -> int:
    """Bytes a fast engine of ``cfg`` would allocate (:func:`memory_parts`, summed)."""
    return sum(memory_parts(cfg).values())


def _available_bytes() -> int:
    """Memory this machine has available: MemAvailable of /proc/meminfo, else
    its physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return 0


def memory_limit() -> tuple[int, str]:
    """(bytes, what it is) a fast engine may allocate: ``$KVPERF_SIM_MEMORY_LIMIT_MB``
    MiB when set, else half of the memory this machine has available."""
    raw = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            mb = math.nan
        if not (mb > 0 and math.isfinite(mb)):
            raise InputError(f"{MEMORY_LIMIT_ENV} must be a number of MiB > 0, got {raw!r}",
                             field=MEMORY_LIMIT_ENV)
        return int(mb * 2 ** 20), f"the limit of {_size(mb * 2 ** 20)} set by {MEMORY_LIMIT_ENV}"
    avail = _available_bytes()
    if avail <= 0:
        return 0, ""
    return avail // 2, f"half of the {_size(avail)} this machine has available"


def _size(b: float) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 2 ** k:
            return f"{b / 2 ** k:.1f} {unit}"
    return f"{b:.0f} B"


def check_memory(cfg: SimConfig) -> None:
    """Refuse ``cfg`` (:class:`~model.errors.InputError`) when a fast engine of it
    would allocate more than :func:`memory_limit`, naming what drives the size:
    the workers' receive queues (their buffers, or the client threads that
    bound them, times the workers) or the client threads (their state and
    packets on the wire). The scenario keys are those of
    :func:`sim.config.rack_config` (``cfg.extra["keys"]``), else the config's
    field names."""
    limit, what = memory_limit()
    if limit <= 0:
        return                                  # the machine does not say: nothing to compare
    need = memory_bytes(cfg)
    if need <= limit:
        return
    keys = {"stations": "stations", "clients": "n_clients", "buffer": "buffer_pkts",
            **cfg.extra.get("keys", {})}
    sz = sizing(cfg)
    parts = memory_parts(cfg)
    wire_rsp = _nbytes((1,), _F) + 2 * _nbytes((1,), _I)       # one reply-FIFO entry
    by_queues = parts["queues"] + sz.queue_total * wire_rsp
    by_clients = parts["clients"] + parts["wire"] - sz.queue_total * wire_rsp
    n, N = sz.stations, sz.clients
    if by_queues >= by_clients:
        workers = f"{n} workers ({keys['stations']})"
        if int(np.max(cfg.buffer_pkts)) <= sz.queue:
            field = keys["buffer"]
            why = f"{field} ({sz.queue} packets a worker) × {workers}"
        else:
            field = keys["clients"]
            why = f"{field}={N} (up to {sz.queue} packets queued a worker) × {workers}"
        fix = f"lower {field} or {keys['stations']}"
    else:
        field = keys["clients"]
        why = f"{field}={N} ({_size(by_clients / max(N, 1))} each)"
        fix = f"lower {field}"
    raise InputError(f"the simulator would need {_size(need)} for {why}, more than {what}; "
                     f"{fix}, or use the analytic engine", field=field)


def _parameters(cfg: SimConfig, sz: Sizing, new) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's float and int parameters (P, IP: :mod:`sim.fast_kernel_state`)."""
    P = new("P")
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
    P[K.P_SYNC_BYTES] = cfg.sync_bytes
    P[K.P_SYNC_US] = cfg.sync_block_us
    P[K.P_BG_CORES] = 1.0 if cfg.bg_shares_cores else 0.0
    IP = new("IP")
    IP[K.I_CLIENTS] = sz.clients
    IP[K.I_ST] = cfg.stations
    IP[K.I_SLOTS] = sz.slots
    IP[K.I_LSM] = int(cfg.lsm)
    IP[K.I_OPEN_WRITE] = int(cfg.open_write)
    IP[K.I_RETRY] = int(cfg.retry)
    IP[K.I_CCORES] = sz.client_cores
    IP[K.I_TREE] = sz.tree
    return P, IP


def _stations(cfg: SimConfig, sz: Sizing, new) -> K.Stations:
    """The stations' tables: the placement's alias tables (the open class's
    shares, when it has its own), servers, first slots, receive buffers
    (at most a queue's ring: :func:`sizing`)."""
    c = new("st_c")
    c[:] = cfg.station_servers
    st_acc, st_alias = pl_mech.station_table(cfg.station_probs)
    op = cfg.open_probs if cfg.open_probs.sum() > 0 else cfg.station_probs
    open_acc, open_alias = pl_mech.station_table(op)
    slot0 = new("st_slot0")
    slot0[1:] = np.cumsum(c)[:-1]
    st_buf = new("st_buf")
    st_buf[:] = np.minimum(cfg.buffer_pkts, sz.queue)
    return K.Stations(acc=st_acc, alias=st_alias, open_acc=open_acc, open_alias=open_alias,
                      svc_mean=cfg.service_mean_us, wfrac=cfg.write_frac, servers=c,
                      slot0=slot0, buf=st_buf, machine=cfg.station_machine,
                      wal_block=cfg.wal_block_us)


def _clients(cfg: SimConfig, sz: Sizing, new, rng: np.random.Generator) -> K.Clients:
    """The client threads, every one in the first timer list: they start at
    staggered times (drawn from ``rng``)."""
    N = sz.clients
    start = np.sort(rng.random(N) * cfg.start_spread_us) if N else np.zeros(0)
    tl_next, tl_prev, cl_dl = K.timer_lists(start)
    return K.Clients(
        att=new("cl_att"), first=new("cl_first"), cls=new("cl_cls"), write=new("cl_write"),
        start=new("cl_start"), started=new("cl_started"), dl=cl_dl, tl_next=tl_next,
        tl_prev=tl_prev, cs=new("cl_cs"), ask=new("cl_ask"), cstart=new("cl_cstart"),
        cq=new("cq"), ch_t=new("ch_t"), ch_c=new("ch_c"))


def _slots(cfg: SimConfig, sz: Sizing, new, servers: np.ndarray) -> K.Slots:
    """The worker slots, free, each of its station (``servers`` a station, in
    station order), and the tournament tree of their service ends (none)."""
    sl_st = new("sl_st")
    sl_st[:] = np.repeat(np.arange(cfg.stations, dtype=np.int64), servers)
    sl_next = new("sl_next")
    sl_next[:] = -1                     # no slot waits for a commit lock
    tv, ti = new("tv"), new("ti")
    K.tree_init(tv, ti, sz.tree)
    return K.Slots(st=sl_st, busy=new("sl_busy"), c=new("sl_c"), a=new("sl_a"), w=new("sl_w"),
                   arr=new("sl_arr"), start=new("sl_start"), since=new("sl_since"),
                   cst=new("sl_cst"), bend=new("sl_bend"), next=sl_next, tv=tv, ti=ti,
                   go=new("sl_go"), go_t=new("sl_go_t"))


def _storage(cfg: SimConfig, new) -> K.Storage:
    """RocksDB's state as the run starts (copies of the config's:
    :func:`sim.config.rack_config`), no WAL bytes since a sync, no instance
    stopped, the machines' busy workers and their commit paths (free)."""
    m_lock = new("m_lock")
    m_lock[:, K.L_HEAD] = -1
    m_lock[:, K.L_TAIL] = -1
    lp, st, jobs, mach = (a.copy().view(np.recarray) for a in
                          (cfg.lsm_params, cfg.lsm_state, cfg.lsm_jobs, cfg.lsm_machines))
    return K.Storage(lp=lp, st=st, jobs=jobs, mach=mach, m_busy=new("m_busy"), m_lock=m_lock,
                     synced=new("synced"), rack=new("rack"))


class FastEngine:
    """Compiled discrete-event engine for one :class:`SimConfig`.

    Creating one first checks that its arrays fit (:func:`check_memory`)."""

    def __init__(self, cfg: SimConfig, seed: int):
        check_memory(cfg)
        self.cfg = cfg
        sz = sizing(cfg)
        lay = layout(cfg, sz)

        def new(name: str) -> np.ndarray:       # a zeroed array of the layout
            _part, shape, dtype = lay[name]
            return np.zeros(shape, dtype=dtype)

        K.seed(int(seed) & 0x7FFFFFFF)
        # only for the first open arrival and the clients' staggered start,
        # drawn in that order
        rng = np.random.default_rng(seed)
        P, IP = _parameters(cfg, sz, new)
        IS = new("IS")
        FS = new("FS")
        FS[K.F_NEXT_BG] = K.INF                 # no job runs when the run starts
        FS[K.F_NEXT_OPEN] = (rng.exponential(1.0 / cfg.open_rate_per_us)
                             if cfg.open_rate_per_us > 0 else K.INF)
        IS[K.S_BG_JOB] = -1
        stations = _stations(cfg, sz, new)
        clients = _clients(cfg, sz, new, rng)
        slots = _slots(cfg, sz, new, stations.servers)
        self.G, self.C, self.hist = counters.new_chunk(cfg.stations)
        storage = _storage(cfg, new)
        wire = K.Wire(*(new(name) for name in K.Wire._fields))
        queues = K.Queues(*(new(f"q_{name}") for name in K.Queues._fields))
        self.IS = IS
        self._FS = FS
        self.storage = storage
        #: called with :meth:`lsm` when RocksDB's state changed (run_until)
        self.on_state = None
        self.state_gap_us = 0.0
        self._refresh_at = 0.0
        #: run_chunk's arguments after the chunk's end (sim.fast_kernel_state's groups)
        self.kernel_args = (P, IP, IS, FS, K.seed_state(seed),
                            K.Counts(self.G, self.C, self.hist), stations, clients, wire,
                            queues, slots, storage)
        # the client timers (sim.fast_kernel.timer_lists), kept by name for checks
        self._tl_next, self._tl_prev, self._cl_dl = clients.tl_next, clients.tl_prev, clients.dl
        self._q_n = queues.n
        self._sl_busy = slots.busy
        self._sl_st = slots.st
        # for the chunk boundaries (carry_over): when each slot's service (or
        # its wait at a write stop) began, when its block ends; the client
        # cores' holders and when their core time began
        self._sl_start, self._sl_since, self._sl_bend = slots.start, slots.since, slots.bend
        self._cl_cstart, self._ch_c = clients.cstart, clients.ch_c
        # blocks that run past a chunk's end, counted in the next chunk (carry_over)
        self._block_carry = new("block_carry")

    @property
    def args(self) -> list[np.ndarray]:
        """Every array the kernel takes, one list (the groups' arrays in order)."""
        out: list[np.ndarray] = []
        for a in self.kernel_args:
            out.extend(a if isinstance(a, tuple) else (a,))
        return out

    @property
    def now(self) -> float:
        """Where the last chunk ended (us): its ``t_us``, or the completion of
        the run's last query."""
        return float(self._FS[K.F_NOW])

    def lsm(self) -> tuple:
        """RocksDB's state now (:mod:`model.rack.lsm_rules`): (params,
        instances, jobs, machines, the rack's stop count of
        :mod:`sim.write_path`), the engine's own arrays."""
        s = self.storage
        return s.lp[0], s.st, s.jobs, s.mach, s.rack

    def run_until(self, t_us: float, done_cap: float = math.inf) -> dict:
        """Run to ``t_us``, or until ``done_cap`` requests completed in this
        chunk (then it ends there: :attr:`now`); the chunk's counters.

        With :attr:`on_state` set, the kernel stops at the first event at
        least :attr:`state_gap_us` after the last such stop once RocksDB's
        state has changed (a seal, a finished job), hands the state to
        ``on_state`` (the dynamics: process times in the new state) and
        runs on."""
        self.G[:] = 0.0
        self.C[:] = 0.0
        self.hist[:] = 0
        cap = float(min(done_cap, 1e300))
        rack = self.storage.rack
        while True:
            at = self._refresh_at if self.on_state is not None else K.INF
            status = K.run_chunk(float(t_us), cap, at, *self.kernel_args)
            if status != 0:
                raise RuntimeError(f"fast engine: event ring {status} overflowed (a sizing bug)")
            now = self.now
            if now >= t_us or self.G[counters.G_DONE] >= cap or self.on_state is None:
                break
            rack[write_path.R_CHANGES] = 0.0
            self.on_state(self.lsm())
            self._refresh_at = now + self.state_gap_us
        # the parts of blocks begun before this chunk that ran into it (carry_over)
        self.C[:, counters.C_BLOCK] += self._block_carry
        self._block_carry[:] = 0.0
        return counters.as_dict(self.G, self.C, self.hist)

    def carry_over(self, chunk: dict) -> None:
        """The run goes on past the chunk just run (``chunk``: its counters from
        :meth:`run_until`): count in it the part, up to its end, of what is still
        in progress there, and only the rest in the chunks after.

        The kernel counts a worker's busy time (and a write stop's) when it
        ends, a block when its service starts, and a client core's busy time
        when it ends; so a long service (a write stopped for a flush, a long
        WAL-switch block) that spans a chunk boundary would put its whole
        time into one chunk, more than the chunk's length (and a negative
        per-worker wait in the timeline). Here the busy time and the stop of
        every busy slot up to ``now`` go into ``chunk`` and their start moves
        to ``now``; a block's part after ``now`` moves to the next chunk. Not
        called at the end of a run: there, work still in progress is left
        out (as it always was)."""
        now = float(self._FS[K.F_NOW])             # the chunk's end
        n = self.cfg.stations
        on = self._sl_busy != 0
        st = self._sl_st[on]
        chunk["busy"] = chunk["busy"] + np.bincount(st, weights=now - self._sl_start[on],
                                                    minlength=n)
        self._sl_start[on] = now
        stopped = self._sl_busy == K.SL_STOPPED
        chunk["stall"] = chunk["stall"] + np.bincount(
            self._sl_st[stopped], weights=now - self._sl_since[stopped], minlength=n)
        self._sl_since[stopped] = now
        after = np.where(on, np.maximum(self._sl_bend - now, 0.0), 0.0)
        later = np.bincount(self._sl_st, weights=after, minlength=n)
        chunk["block"] = chunk["block"] - later
        self._block_carry += later
        held = self._ch_c[:int(self.IS[K.S_CH_N])]
        if len(held):
            chunk["client_busy"] = chunk["client_busy"] + float(np.sum(now - self._cl_cstart[held]))
            self._cl_cstart[held] = now

    def end_state(self) -> dict:
        n = self.cfg.stations
        in_service = np.bincount(self._sl_st[self._sl_busy != 0], minlength=n)
        return {"queued": self._q_n.copy(), "in_service": in_service,
                "in_flight": int(self.IS[K.S_HIT_N] + self.IS[K.S_ARR_N] + self.IS[K.S_RSP_N])}
