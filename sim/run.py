"""Discrete-event simulation of the FarReach rack: the public API.

``simulate(scenario, profile, seconds, seed, engine)`` runs the rack as
processes and returns a :class:`model.prediction.Prediction` with
``engine="sim"``, the same fields as the analytic model
(:func:`model.predict.predict`), plus a per-second timeline, latency
percentiles and a latency histogram in ``details``.

What is simulated (both engines, identical semantics; inputs come from
:func:`model.rack.derive`, so they match the analytic model):

* **Clients.** ``clients.threads`` closed-loop threads. A request picks its
  class: a cache hit with probability ``hit_ratio`` (answered by the switch
  ``hit_rtt`` after it is sent), else worker i with probability
  ``shares[i] / (1 - hit)``; it is a write with probability
  ``1 - read_ratio``. Sending costs ``send_us`` (for resends too). Each
  attempt arms a timer (``timeout_ms``); when it fires the client resends.
  A reply for an older attempt is dropped and counted as a false positive.
  A request's latency runs from the start of its first send to the reply,
  so Little's law N = X R holds exactly for the closed loop.
* **Network.** Constant delays: ``miss_rtt/2`` each way to a worker,
  ``hit_rtt`` for a hit; optional random wire loss ``network.loss_rate``
  on request packets.
* **Workers.** One FCFS worker per partition with a receive buffer of
  ``buffer_pkts`` packets (waiting packets; the one being served has been
  received). A packet arriving at a full buffer is dropped (``pktloss``);
  the client only notices by timeout. Service time is gamma with mean
  ``process_us(util) + recv_floor + gap`` and coefficient of variation
  ``profile.get("service_cv", 1.0)`` (exponential by default).
  ``process_us`` is :func:`model.rack.process_us` evaluated each simulated
  second at the utilisations measured in the previous second, and at the
  data volume written so far (per-request cost grows with data, so a long
  run's throughput decays).
* **RocksDB background work, per worker.** Every write adds
  ``storage.entry_bytes`` to the active memtable. The first write that
  finds it full switches memtables: the immutable count grows and, with the
  WAL on, that write is delayed by the WAL file switch (as
  :func:`model.storage.lsm_flow` computes it, from the machine's write rate
  in the previous second). With ``flushnum`` immutables a flush job takes
  all of them: a fixed ``flush_fixed_ms``, then ``bytes x compaction_wamp``
  written to the machine's disk, whose bandwidth ``disk_mbps`` is
  processor-shared by the flushes running on that machine. Writes stop
  (the worker blocks, head-of-line) while ``maxnum`` immutables wait, and
  are delayed to ``slowdown_mbps`` (default 16 MiB/s) when
  ``maxnum > 3`` and ``maxnum - 1`` wait (RocksDB's stop/delay rules).
* **Cores.** With ``servers.cores > 0``, a service that starts while more
  threads are runnable on its machine (busy workers + running flushes, at
  most ``bg_threads`` per worker) than there are cores is stretched by
  ``runnable / cores x (1 + context_switch_penalty)`` (processor sharing
  evaluated at service start).
* **Evictions.** The control plane writes evicted dirty values back to
  their servers: Poisson writes at ``profile.get("evict_writes_per_s", 0)``
  spread like the cached keys' home servers (default off, as in the
  analytic model).

Counts: ``pktloss`` and ``false_pos`` are scaled to the scenario's run
length (``workload.queries_m`` queries) like the analytic model's;
``details["pktloss_sim"]``/``["false_pos_sim"]`` hold the raw counts of the
simulated horizon.

Engines: ``"fast"`` (:mod:`sim.fast`, compiled with numba) and ``"simpy"``
(:mod:`sim.engine_simpy`, the readable reference). Both run in chunks of one
simulated second, between which load-dependent inputs are updated
(:class:`RackDynamics`), the progress bar moves and Ctrl-C is honoured: an
interrupted run returns the seconds completed so far with
``details["interrupted"] = True``.

A low-level entry point, :func:`run_config`, runs a bare :class:`SimConfig`
(a closed or open network of FCFS stations with c servers each) for
verification against queueing closed forms (tests/sim).
"""

from __future__ import annotations

import csv
import dataclasses
import inspect
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model import rack, storage
from model.errors import InputError
from model.prediction import ClientPrediction, Prediction, ServerPrediction
from model.profile import Profile
from model.queueing import Station, mva
from model.scenario import Scenario

__all__ = ["SimConfig", "SimResult", "RackDynamics", "build_config", "run_config",
           "simulate", "write_timeline", "hist_edges_us"]

MIB = storage.MIB
HIST_PER_DECADE = 20
HIST_LO_DECADE = -1
HIST_BINS = 9 * HIST_PER_DECADE + 1


def hist_edges_us() -> np.ndarray:
    """Lower edges of the latency histogram buckets (us): 20 per decade from 0.1 us."""
    return 10.0 ** (HIST_LO_DECADE + np.arange(HIST_BINS + 1) / HIST_PER_DECADE)


@dataclass
class SimConfig:
    """Everything an engine needs, as plain numbers (times in us, sizes in bytes).

    Stations are FCFS queues with ``station_servers[i]`` identical servers
    and a buffer of ``buffer_pkts[i]`` waiting packets. ``n_clients = 0``
    gives an open network fed only by the Poisson source (``open_rate_per_us``
    spread by ``open_probs``). Arrays that :class:`RackDynamics` updates
    between chunks: ``service_mean_us``, ``wal_block_us``, ``wamp``.
    """
    n_clients: int
    station_probs: np.ndarray                 # per station, given a miss (sums to 1)
    service_mean_us: np.ndarray               # per station: mean service time
    hit_ratio: float = 0.0
    send_us: float = 0.0
    hit_rtt_us: float = 0.0
    miss_rtt_us: float = 0.0
    timeout_us: float = math.inf
    loss_rate: float = 0.0
    write_frac: float = 0.0
    service_cv: float = 1.0
    station_servers: np.ndarray | None = None  # default 1 each
    buffer_pkts: np.ndarray | None = None      # default: effectively unbounded
    open_rate_per_us: float = 0.0
    open_probs: np.ndarray | None = None
    open_write: bool = True
    lsm: bool = False
    entry_bytes: float = 188.0
    memtable_bytes: float = 64 * MIB
    flushnum: int = 4
    maxnum: int = 5
    wal: bool = False
    station_machine: np.ndarray | None = None
    machines: int = 1
    disk_bytes_per_us: float = 500 * MIB / 1e6
    wamp: np.ndarray | None = None
    flush_fixed_us: float = 50e3
    wal_block_us: np.ndarray | None = None     # per machine
    slowdown_bytes_per_us: float = 16 * MIB / 1e6
    cores: int = 0
    ctx_penalty: float = 0.0
    bg_cap: int = 1 << 30                      # busy background threads per machine counted
    start_spread_us: float = 0.0               # clients start uniformly over [0, spread)
    recv_floor_us: float = 0.0                 # part of each service (reported as wait)
    gap_us: float = 0.0                        # part of each service (neither wait nor process)
    # open-queue buffers are capped so the queue ring stays bounded
    queue_cap_limit: int = 1 << 16
    # exact key sampler (sim.engine_simpy.RecordKeys) for the SimPy engine
    keyspace: Any = None

    def __post_init__(self):
        n = len(self.station_probs)
        self.station_probs = np.asarray(self.station_probs, dtype=float)
        self.service_mean_us = np.asarray(self.service_mean_us, dtype=float).copy()
        if self.station_servers is None:
            self.station_servers = np.ones(n, dtype=np.int64)
        self.station_servers = np.asarray(self.station_servers, dtype=np.int64)
        if self.buffer_pkts is None:
            self.buffer_pkts = np.full(n, 1 << 40, dtype=np.int64)
        self.buffer_pkts = np.asarray(self.buffer_pkts, dtype=np.int64)
        if self.open_probs is None:
            self.open_probs = self.station_probs.copy()
        self.open_probs = np.asarray(self.open_probs, dtype=float)
        if self.station_machine is None:
            self.station_machine = np.zeros(n, dtype=np.int64)
        self.station_machine = np.asarray(self.station_machine, dtype=np.int64)
        if self.wamp is None:
            self.wamp = np.ones(n)
        self.wamp = np.asarray(self.wamp, dtype=float).copy()
        if self.wal_block_us is None:
            self.wal_block_us = np.zeros(self.machines)
        self.wal_block_us = np.asarray(self.wal_block_us, dtype=float).copy()
        if self.service_cv <= 0:
            raise InputError(f"service_cv must be > 0, got {self.service_cv}", field="service_cv")
        if self.n_clients == 0 and self.open_rate_per_us <= 0:
            raise InputError("an open network (no clients) needs open_rate_per_us > 0",
                             field="open_rate_per_us")

    @property
    def stations(self) -> int:
        return len(self.station_probs)

    def queue_capacity(self) -> np.ndarray:
        """Ring size per station: the buffer, bounded by what can ever be queued."""
        if self.n_clients > 0:
            # A client has one live attempt; older attempts linger only until
            # served, at most one per timeout period while queued.
            per = 2 + (0 if not math.isfinite(self.timeout_us)
                       else int(math.ceil(1e6 / max(self.timeout_us, 1.0))))
            bound = self.n_clients * min(per, 64) + 1024
        else:
            bound = self.queue_cap_limit
        if self.open_rate_per_us > 0 and self.n_clients > 0:
            bound += 1024
        return np.minimum(self.buffer_pkts, bound)


class RackDynamics:
    """Load-dependent inputs of the rack, updated once per simulated second.

    * process time = :func:`model.rack.process_us` at last second's
      utilisations (idle slowdown, CPU sharing of unpinned workers) and at
      the data volume written so far (``data_scale`` writes per simulated
      write, to preview a long run in a short simulation);
    * WAL switch block per machine from last second's machine write rate
      (:func:`model.storage.lsm_flow`).
    Cores are handled by the engine itself (runnable threads vs cores), so
    ``process_us`` is evaluated with ``servers.cores = 0`` here.
    """

    def __init__(self, inputs: rack.RackInputs, cfg: SimConfig, util0: np.ndarray,
                 machine_mbps0: np.ndarray, data_scale: float = 1.0):
        sc = inputs.scenario
        self.inputs = inputs
        self.cfg = cfg
        self.data_scale = float(data_scale)
        self._inputs_nc = dataclasses.replace(
            inputs, scenario=sc.updated({"servers.cores": 0}) if sc.servers.cores else sc)
        self.util = np.asarray(util0, dtype=float)
        self.machine_mbps = np.asarray(machine_mbps0, dtype=float)
        self.writes = np.zeros(inputs.servers)
        self.apply()

    def _costs(self):
        inp = self.inputs
        return tuple(cost_now(inp.scenario, inp.profile, c.p_mem, self.writes[i] * self.data_scale)
                     for i, c in enumerate(inp.costs))

    def apply(self) -> None:
        inp = self.inputs
        nc = dataclasses.replace(self._inputs_nc, costs=self._costs())
        proc = rack.process_us(nc, self.util)
        self.cfg.service_mean_us[:] = proc + inp.recv_floor_us + inp.gap_us
        sc, pf = inp.scenario, inp.profile
        for m in range(self.cfg.machines):
            f = storage.lsm_flow(sc, pf, writes_per_s=1.0,
                                 workers_per_machine=inp.workers_per_machine,
                                 machine_write_mbps=float(self.machine_mbps[m]), run_s=1.0)
            self.cfg.wal_block_us[m] = f.switch_block_s * 1e6

    def update(self, span_us: float, busy_us: np.ndarray, writes: np.ndarray) -> None:
        if span_us <= 0:
            return
        self.util = np.clip(busy_us / span_us, 0.0, 1.0)
        self.writes = self.writes + writes
        mb = np.zeros(self.cfg.machines)
        np.add.at(mb, self.cfg.station_machine, writes * self.cfg.entry_bytes)
        self.machine_mbps = mb / MIB / (span_us / 1e6)
        self.apply()


def cost_now(scenario: Scenario, profile: Profile, p_mem: float, writes_so_far: float):
    """Per-request cost of a worker that has taken ``writes_so_far`` writes.

    :func:`model.storage.request_cost` gives the *run-average* cost; its
    SST-file term averages ``log2(1 + files flushed so far)`` over the run
    (:func:`model.storage.sst_shape`). The simulator needs the cost *now*,
    so it asks for the run length whose average equals today's value
    (found by bisection; ``sst_shape`` is increasing). Older storage models
    that take the data volume directly are supported too.
    """
    params = inspect.signature(storage.request_cost).parameters
    if "flushes" in params:
        files = storage.flush_jobs(scenario, profile, writes_so_far)
        target = math.log2(1.0 + files)
        if target <= 0:
            return storage.request_cost(scenario, profile, p_mem=p_mem, flushes=0.0)
        lo, hi = 0.0, max(1.0, files)
        while storage.sst_shape(hi) < target:
            hi *= 4.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if storage.sst_shape(mid) < target:
                lo = mid
            else:
                hi = mid
        return storage.request_cost(scenario, profile, p_mem=p_mem, flushes=0.5 * (lo + hi))
    base = scenario.workload.records / scenario.servers.count
    return storage.request_cost(scenario, profile, p_mem=p_mem,
                                data_entries=base + writes_so_far)


def _mva_estimate(inputs: rack.RackInputs):
    """Product-form estimate used only to start the load-dependent inputs."""
    n = inputs.servers
    proc = rack.process_us(inputs, np.ones(n))
    svc = proc + inputs.recv_floor_us + inputs.gap_us
    h = inputs.hit_ratio
    think = inputs.send_us + h * inputs.hit_rtt_us + (1 - h) * inputs.miss_rtt_us
    active = inputs.shares > 0
    st = [Station(f"w{i}", "fcfs", float(inputs.shares[i] * svc[i])) for i in range(n) if active[i]]
    util = np.zeros(n)
    if not st:
        return util, 0.0
    res = mva(st, inputs.scenario.clients.threads, think_time=think)
    util[active] = np.minimum(np.asarray(res.utilization), 1.0)
    return util, float(res.throughput)


def build_config(scenario: Scenario, profile: Profile, *, data_scale: float = 1.0
                 ) -> tuple[SimConfig, RackDynamics, rack.RackInputs]:
    """The rack scenario as a :class:`SimConfig` plus its per-second dynamics."""
    inp = rack.derive(scenario, profile)
    sc, pf = scenario, profile
    n = inp.servers
    h = inp.hit_ratio
    miss = float(inp.shares.sum())
    probs = inp.shares / miss if miss > 0 else np.full(n, 1.0 / n)
    wpm = inp.workers_per_machine
    machine = np.arange(n) // wpm
    machines = int(machine.max()) + 1
    evict = pf.get("evict_writes_per_s", 0.0) / 1e6
    ev_probs = np.clip(inp.shares_nocache - inp.shares, 0.0, None)
    ev_probs = ev_probs / ev_probs.sum() if ev_probs.sum() > 0 else np.full(n, 1.0 / n)
    cfg = SimConfig(
        n_clients=sc.clients.threads, station_probs=probs,
        service_mean_us=np.zeros(n), hit_ratio=h if miss > 0 else 1.0,
        send_us=inp.send_us, hit_rtt_us=inp.hit_rtt_us, miss_rtt_us=inp.miss_rtt_us,
        timeout_us=inp.timeout_us, loss_rate=sc.network.loss_rate, write_frac=inp.write_frac,
        service_cv=pf.get("service_cv", 1.0),
        buffer_pkts=np.full(n, max(0, int(math.floor(inp.buffer_pkts))), dtype=np.int64),
        open_rate_per_us=evict, open_probs=ev_probs, open_write=True,
        lsm=True, entry_bytes=storage.entry_bytes(sc, pf),
        memtable_bytes=sc.storage.memtable_mb * MIB, flushnum=sc.storage.flushnum,
        maxnum=sc.storage.maxnum, wal=sc.storage.wal, station_machine=machine,
        machines=machines, disk_bytes_per_us=pf["disk_mbps"] * MIB / 1e6,
        wamp=np.full(n, pf["compaction_wamp"]), flush_fixed_us=pf["flush_fixed_ms"] * 1e3,
        slowdown_bytes_per_us=pf.get("slowdown_mbps", 16.0) * MIB / 1e6,
        cores=sc.servers.cores, ctx_penalty=pf["context_switch_penalty"],
        bg_cap=sc.servers.bg_threads * wpm,
        start_spread_us=inp.send_us + inp.miss_rtt_us,
        recv_floor_us=inp.recv_floor_us, gap_us=inp.gap_us)
    from .engine_simpy import RecordKeys   # exact keys for the reference engine
    cfg.keyspace = RecordKeys(sc, pf)
    util0, x0 = _mva_estimate(inp)
    mbps0 = np.zeros(machines)
    np.add.at(mbps0, machine, x0 * 1e6 * inp.shares * inp.write_frac * cfg.entry_bytes / MIB)
    dyn = RackDynamics(inp, cfg, util0, mbps0, data_scale=data_scale)
    return cfg, dyn, inp


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------

@dataclass
class SimResult:
    """Raw outcome of :func:`run_config` (counts over the horizon, times in us)."""
    span_us: float
    done: float                     # client requests completed (open mode: open packets served)
    latency_sum_us: float
    latency_sq_us2: float
    hits: float
    false_pos: float
    resends: float
    wire_loss: float
    issued: float                   # client requests started
    switches: float
    flushes: float
    open_done: float
    open_resp_sum_us: float
    arrivals: np.ndarray            # per station: packets that reached the socket
    drops: np.ndarray               # per station: buffer overflows
    completions: np.ndarray         # per station: services completed
    busy_us: np.ndarray             # per station: busy time incl. blocking (sum over servers)
    block_us: np.ndarray            # per station: WAL switch + slowdown delay
    stall_us: np.ndarray            # per station: write-stop time
    writes: np.ndarray              # per station: writes applied
    hist: np.ndarray                # latency histogram counts (edges: hist_edges_us())
    end_queued: np.ndarray          # per station, at the end: waiting packets
    end_in_service: np.ndarray      # per station, at the end: packets held by servers
    end_in_flight: int              # packets on the wire at the end (to workers + replies + hits)
    timeline: list[dict] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    engine: str = ""


def _make_engine(cfg: SimConfig, seed: int, engine: str):
    if engine == "fast":
        from .fast import FastEngine
        return FastEngine(cfg, seed)
    if engine == "simpy":
        from .engine_simpy import SimpyEngine
        return SimpyEngine(cfg, seed)
    raise InputError(f"unknown engine {engine!r}; allowed: fast, simpy", field="engine")


def run_config(cfg: SimConfig, seconds: float, *, seed: int = 1, engine: str = "fast",
               dynamics: RackDynamics | None = None, progress: bool = False,
               chunk_s: float = 1.0, warmup_s: float = 0.0) -> SimResult:
    """Run ``cfg`` for ``seconds`` simulated seconds in chunks of ``chunk_s``.

    Statistics cover ``(warmup_s, seconds]``; the per-chunk timeline covers
    all of it. Ctrl-C between or during chunks ends the run early with
    ``interrupted=True`` (the chunk in progress is discarded).
    """
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InputError(f"seconds must be a positive number, got {seconds!r}", field="seconds")
    if seconds > 1e5:
        raise InputError(f"seconds must be at most 1e5 (got {seconds}); simulate a window",
                         field="seconds")
    eng = _make_engine(cfg, seed, engine)
    n = cfg.stations
    acc = {k: 0.0 for k in ("done", "lat", "lat2", "hits", "fp", "resends", "wire", "issued",
                            "switches", "flushes", "open_done", "open_resp")}
    per = {k: np.zeros(n) for k in ("arr", "drop", "compl", "busy", "block", "stall", "writes")}
    hist = np.zeros(HIST_BINS, dtype=np.int64)
    timeline: list[dict] = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=round(seconds, 6), unit="sim-s", file=sys.stderr, leave=False,
                   desc=f"simulating ({engine})", disable=None)
    t0 = time.perf_counter()
    interrupted = False
    t_us = 0.0
    stat_span = 0.0
    end_us = seconds * 1e6
    try:
        while t_us < end_us - 1e-6:
            nxt = min(end_us, t_us + chunk_s * 1e6)
            c = eng.run_until(nxt)
            span = nxt - t_us
            row = _timeline_row(nxt / 1e6, span, c, cfg)
            timeline.append(row)
            if dynamics is not None:
                dynamics.update(span, c["busy"], c["writes"])
                eng.refresh()
            if nxt > warmup_s * 1e6 + 1e-6:
                for k in acc:
                    acc[k] += c[k]
                for k in per:
                    per[k] += c[k]
                hist += c["hist"]
                stat_span += span
            t_us = nxt
            if bar is not None:
                bar.update(round(span / 1e6, 6))
                bar.set_postfix_str(f"{row['throughput_mops']:.3f} MOPS")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
    end = eng.end_state()
    return SimResult(
        span_us=stat_span, done=acc["done"], latency_sum_us=acc["lat"],
        latency_sq_us2=acc["lat2"], hits=acc["hits"], false_pos=acc["fp"],
        resends=acc["resends"], wire_loss=acc["wire"], issued=acc["issued"],
        switches=acc["switches"], flushes=acc["flushes"], open_done=acc["open_done"],
        open_resp_sum_us=acc["open_resp"], arrivals=per["arr"], drops=per["drop"],
        completions=per["compl"], busy_us=per["busy"], block_us=per["block"],
        stall_us=per["stall"], writes=per["writes"], hist=hist,
        end_queued=end["queued"], end_in_service=end["in_service"],
        end_in_flight=int(end["in_flight"]), timeline=timeline, interrupted=interrupted,
        wall_s=time.perf_counter() - t0, engine=engine)


def _timeline_row(t_s: float, span_us: float, c: dict, cfg: SimConfig) -> dict:
    n = cfg.stations
    row: dict[str, Any] = {
        "t_s": round(t_s, 6),
        "throughput_mops": c["done"] / span_us,          # requests per us == M/s
        "stalled_frac": float((c["stall"].sum() + c["block"].sum())
                              / (span_us * max(1, int(cfg.station_servers.sum())))),
        "pktloss": float(c["drop"].sum() + c["wire"]),
        "false_pos": float(c["fp"]),
        "latency_us": c["lat"] / c["done"] if c["done"] > 0 else math.nan,
    }
    for i in range(n):
        w, p, _ = _wait_process(span_us, c["compl"][i], c["busy"][i], cfg)
        row[f"wait_us_{i}"] = w
        row[f"process_us_{i}"] = p
    return row


def _wait_process(span_us: float, completions: float, busy_us: float, cfg: SimConfig):
    """Notes-style wait and process (us) of a worker, and its utilisation."""
    if completions <= 0:
        return math.nan, math.nan, busy_us / span_us if span_us > 0 else 0.0
    process = busy_us / completions - cfg.recv_floor_us - cfg.gap_us
    wait = span_us / completions - process - cfg.gap_us
    return wait, process, busy_us / span_us


# ---------------------------------------------------------------------------
# the rack simulation
# ---------------------------------------------------------------------------

def simulate(scenario: Scenario, profile: Profile, seconds: float = 10.0, seed: int = 1,
             engine: str = "fast", progress: bool = True, *, data_scale: float = 1.0,
             warmup_s: float = 0.0) -> Prediction:
    """Simulate ``seconds`` of the rack; the Prediction has ``engine="sim"``."""
    cfg, dyn, inp = build_config(scenario, profile, data_scale=data_scale)
    res = run_config(cfg, seconds, seed=seed, engine=engine, dynamics=dyn,
                     progress=progress, warmup_s=warmup_s)
    return _prediction(res, cfg, inp)


def _percentile(hist: np.ndarray, q: float) -> float:
    total = hist.sum()
    if total == 0:
        return math.nan
    edges = hist_edges_us()
    k = int(np.searchsorted(np.cumsum(hist), q * total, side="left"))
    k = min(k, len(hist) - 1)
    # geometric mid-point of the bucket: error at most half a bucket (6 %)
    return float(math.sqrt(edges[k] * edges[k + 1]))


def _prediction(res: SimResult, cfg: SimConfig, inp: rack.RackInputs) -> Prediction:
    span = res.span_us
    x = res.done / span if span > 0 else 0.0           # requests per us == MOPS
    n = cfg.stations
    servers = []
    for i in range(n):
        w, p, u = _wait_process(span, res.completions[i], res.busy_us[i], cfg)
        share = float(inp.shares[i])
        if res.completions[i] <= 0:
            w, p = math.inf, float(cfg.service_mean_us[i] - cfg.recv_floor_us - cfg.gap_us)
        servers.append(ServerPrediction(share=share, utilization=float(min(1.0, u)),
                                        wait_us=float(w), process_us=float(p),
                                        share_nocache=float(inp.shares_nocache[i])))
    lat = res.latency_sum_us / res.done if res.done > 0 else math.inf
    scale = inp.queries / res.done if res.done > 0 else 0.0
    pktloss_sim = float(res.drops.sum() + res.wire_loss)
    stall_frac = float((res.stall_us.sum() + res.block_us.sum()) / (span * n)) if span > 0 else 0.0
    util = [s.utilization for s in servers]
    busiest = int(np.argmax(util))
    # client time spent sitting out timeouts after lost packets
    timeout_share = pktloss_sim * inp.timeout_us / (res.done * lat) \
        if res.done > 0 and math.isfinite(inp.timeout_us) else 0.0
    if timeout_share > 0.3:
        bottleneck = (f"timeouts: clients spend {100 * min(timeout_share, 1):.0f}% of their "
                      f"time waiting out lost requests")
    elif util[busiest] < 0.8:
        bottleneck = (f"clients: too few threads to saturate the servers (busiest worker "
                      f"{busiest} at {100 * util[busiest]:.0f}%)")
    else:
        bottleneck = (f"server {busiest} ({100 * util[busiest]:.0f}% busy, "
                      f"{100 * servers[busiest].share:.1f}% of requests)")
    hist = res.hist
    pct = {f"p{k}": _percentile(hist, q) for k, q in
           (("50", 0.5), ("90", 0.9), ("99", 0.99), ("999", 0.999))}
    details = {
        "timeline": res.timeline,
        "latency_us_percentiles": pct,
        "latency_hist": {"edges_us": hist_edges_us().tolist(), "counts": hist.tolist()},
        "requests": int(res.done),
        "sim_engine": res.engine,
        "simulated_s": span / 1e6,
        "wall_s": res.wall_s,
        "interrupted": res.interrupted,
        "measured_hit_ratio": res.hits / res.done if res.done > 0 else math.nan,
        "pktloss_sim": pktloss_sim,
        "false_pos_sim": float(res.false_pos),
        "resends_sim": float(res.resends),
        "buffer_pkts": float(inp.buffer_pkts),
        "memtable_switches": float(res.switches),
        "flushes": float(res.flushes),
        "stall_us_per_server": res.stall_us.tolist(),
        "blocked_us_per_server": res.block_us.tolist(),
        "latency_sd_us": math.sqrt(max(0.0, res.latency_sq_us2 / res.done - lat * lat))
        if res.done > 0 else math.nan,
    }
    return Prediction(
        engine="sim", throughput_mops=float(x), cache_hit_ratio=float(inp.hit_ratio),
        normalized_x=float(inp.normalized_x), bottleneck=bottleneck, servers=servers,
        client=ClientPrediction(send_us=float(inp.send_us), latency_us=float(lat)),
        pktloss=pktloss_sim * scale, false_pos=float(res.false_pos) * scale,
        stall_fraction=stall_frac, details=details)


def write_timeline(prediction: Prediction, path) -> None:
    """Write ``details["timeline"]`` as CSV (one row per simulated second)."""
    rows = prediction.details.get("timeline")
    if rows is None:
        raise InputError("this prediction has no timeline (only simulations do)",
                         field="timeline")
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
