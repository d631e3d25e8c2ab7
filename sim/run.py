"""Discrete-event simulation of the rack: the simulator solvers and the chunk loop.

:class:`FastSimulator` and :class:`SimpySimulator` are solvers over a
compiled :class:`~model.rack.RackSpec`, like the analytic one, and return
the same :class:`~model.prediction.Prediction` (``engine="sim"``), plus a
per-second timeline, latency percentiles and a latency histogram in
``details``. What is simulated is what the mechanisms of :mod:`model.rack`
say, event by event; both engines run those rules, differing only in how
events are scheduled (:mod:`sim.fast` compiled, :mod:`sim.engine_simpy`
readable).

``simulate(scenario, profile, ...)`` compiles the rack and runs the fast
solver over the scenario's run: its ``workload.queries_m`` queries from the
database the run starts with (:func:`model.rack.lsm.initial_state`: the
loaded data in levels, memtables empty), through RocksDB's rules write by
write (:mod:`sim.write_path`), until the last query completes -- the run as
the analytic solver by phases (:mod:`model.solvers.trajectory`) predicts
it. ``seconds`` caps it: a cap shorter than the run simulates the run's
first ``seconds`` (``details["prefix_of_run"]`` is then true;
``details["run_queries"]`` is the whole run's). What RocksDB's LOG would
show per worker is ``details["lsm"]`` (the analytic solver's keys, from its
own function: :mod:`sim.run_lsm`), the run's throughput per second and its
phases ``details["trajectory"]``; the outcome's stall fraction per worker
is the time its instance was stopped over the simulated run.

Runs go in chunks of one simulated second, between which the load-dependent
inputs are updated (:class:`sim.dynamics.RackDynamics`; process times also
follow RocksDB's state within a chunk), the progress bar moves
(:mod:`runio.progress`) and Ctrl-C is honoured: an interrupted run returns
what was simulated so far with ``details["interrupted"] = True``. Each
chunk is a row of the timeline, with its ``phase``: ``stop`` when an
instance was stopped in it, ``slow`` when one was delayed, else ``run``.

:func:`run_config` runs a bare :class:`~sim.config.SimConfig` (for instance a
closed or open network of FCFS stations) for verification against queueing
closed forms (tests/sim).

Latency is by Little's law over the statistics window (every thread's time
in requests over the requests completed), so requests still in progress at
the end count; ``details["latency_completed_us"]`` is the mean of the
completed ones and the percentiles are theirs.

Counts: ``pktloss`` (dropped packets) and ``false_pos`` (resent packets) are
scaled to the scenario's run length like the analytic solver's;
``details["pktloss_sim"]`` / ``["false_pos_sim"]`` hold the raw counts.

The client machines' cores: their busy fraction is the outcome's
``client_util``, ``details["client_cores_utilization"]`` (as the analytic
solver names it) and the timeline's ``client_util`` per second;
``details["client_cores_us_per_request"]`` is the time threads spent there
(waiting and busy) per completed request. ``details["commit_us_per_write"]``
is each worker's time per write on its machine's commit path (waiting and
committing; part of its process time).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model.errors import InputError
from model.prediction import Prediction, from_outcome, no_goodput
from model.profile import Profile
from runio.safe_io import write_rows_csv
from model.rack import RackSpec, compile_rack
from model.rack.bottleneck import Outcome
from model.rack.clients import no_completion
from model.scenario import Scenario
from model.solvers.latency_tail import QUANTILES

from model.rack import lsm_rules

from . import counters, run_lsm
from .config import SimConfig, rack_config
from .dynamics import STATE_GAP_US, RackDynamics, initial_load
from runio.progress import bar as pbar, note_compiling, wanted

__all__ = ["FastSimulator", "SimpySimulator", "SimResult", "run_config", "simulate",
           "write_timeline", "interrupted_after", "hist_edges_us"]

hist_edges_us = counters.hist_edges_us


@dataclass
class SimResult:
    """Raw outcome of :func:`run_config`: counters summed over the statistics window."""
    span_us: float
    totals: dict[str, Any]          # counters.GLOBAL and counters.STATION by name, and "hist"
    end_queued: np.ndarray          # per station, at the end: waiting packets
    end_in_service: np.ndarray      # per station, at the end: packets held by servers
    end_in_flight: int              # packets on the wire at the end
    timeline: list[dict] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    engine: str = ""
    queries_left: float = math.inf  # the run's requests not completed
    end_us: float = 0.0             # where the simulation ended
    finished: bool = False          # the run's queries all completed
    stuck: bool = False             # a write stop no job could clear ended it
    lsm: dict | None = None         # details["lsm"] (cfg.lsm)
    trace: run_lsm.RunTrace = field(default_factory=run_lsm.RunTrace)

    def __getattr__(self, name):        # r.done, r.drop, r.busy ... read the counters
        totals = self.__dict__.get("totals")
        if totals is not None and name in totals:
            return totals[name]
        raise AttributeError(name)


def _make_engine(cfg: SimConfig, seed: int, engine: str):
    if engine == "fast":
        from .fast import FastEngine
        return FastEngine(cfg, seed)
    if engine == "simpy":
        from .engine_simpy import SimpyEngine
        return SimpyEngine(cfg, seed)
    raise InputError(f"unknown engine {engine!r}; allowed: fast, simpy", field="engine")


def run_config(cfg: SimConfig, seconds: float | None = None, *, seed: int = 1,
               engine: str = "fast", dynamics: RackDynamics | None = None,
               progress: bool = False, chunk_s: float = 1.0,
               warmup_s: float = 0.0) -> SimResult:
    """Run ``cfg`` until its run's ``cfg.queries`` requests have completed, or
    for ``seconds`` simulated seconds if that comes first (one of the two
    must be finite), in chunks of ``chunk_s``.

    Statistics cover ``(warmup_s, end]``; the per-chunk timeline covers all
    of it. Ctrl-C between or during chunks ends the run early with
    ``interrupted=True`` (the chunk in progress is discarded). A run whose
    write stop no job can clear (RocksDB's rules never leave one) ends
    there, ``stuck``.

    Time-weighted counters (a worker's busy time, write stops, blocks, the
    client cores' busy time) count in each chunk only the time spent in it
    (the engines' ``carry_over`` at every boundary the run goes on past);
    work still in progress when the run ends is left out.

    A fast-engine config too big for this machine's memory is refused
    before anything is allocated (:func:`sim.fast.check_memory`).
    """
    end_us = _horizon_us(cfg, seconds)
    eng = _make_engine(cfg, seed, engine)
    if dynamics is not None and cfg.lsm:
        # process times follow RocksDB's state within the chunks (sim.dynamics)
        eng.on_state, eng.state_gap_us = dynamics.state_changed, STATE_GAP_US
    totals: dict[str, Any] = {k: 0.0 for k in counters.GLOBAL}
    totals.update({k: np.zeros(cfg.stations) for k in counters.STATION})
    totals["hist"] = np.zeros(counters.HIST_BINS, dtype=np.int64)
    res = SimResult(span_us=0.0, totals=totals, end_queued=np.zeros(0),
                    end_in_service=np.zeros(0), end_in_flight=0, engine=engine,
                    queries_left=cfg.queries)
    if progress and engine == "fast":
        from .fast_kernel import cache_dir     # else the bar sits at 0 % for half a minute
        note_compiling("the simulator's kernel", cache_dir())
    bar = _bar(cfg, seconds, engine, dynamics) if progress else None
    t0 = time.perf_counter()
    try:
        _chunks(eng, cfg, res, end_us, chunk_s, warmup_s, dynamics, bar)
    except KeyboardInterrupt:
        res.interrupted = True
    finally:
        if bar is not None:
            bar.close()
    end = eng.end_state()
    res.end_queued, res.end_in_service = end["queued"], end["in_service"]
    res.end_in_flight = int(end["in_flight"])
    res.wall_s = time.perf_counter() - t0
    if cfg.lsm:
        # (at the engine's own time: a Ctrl-C can come after a chunk ran,
        # before it was counted)
        res.lsm = run_lsm.details(eng, max(res.end_us, eng.now), cfg.lsm_spec)
    return res


def _horizon_us(cfg: SimConfig, seconds: float | None) -> float:
    """The cap of a run (us): ``seconds``, or none (the run's queries end it)."""
    if seconds is None:
        if not math.isfinite(cfg.queries):
            raise InputError("a simulation needs seconds or a finite number of queries",
                             field="--seconds")
        return math.inf
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InputError(f"seconds must be a positive number, got {seconds!r}", field="--seconds")
    if seconds > 1e5:
        raise InputError(f"seconds must be at most 1e5 (got {seconds}); simulate a window",
                         field="--seconds")
    return seconds * 1e6


def _bar(cfg: SimConfig, seconds: float | None, engine: str, dynamics):
    """The progress bar: simulated seconds of a capped run, else millions of
    the run's queries done."""
    if seconds is not None:
        return pbar(round(seconds, 6), f"simulating ({engine})", "sim-s", True)
    return pbar(round(cfg.queries / 1e6, 6), f"simulating the run ({engine})", "M queries", True)


def _chunks(eng, cfg: SimConfig, res: SimResult, end_us: float, chunk_s: float,
            warmup_s: float, dynamics, bar) -> None:
    """The run's chunks into ``res``, until its queries are done, the cap,
    or a stop nothing can clear."""
    t_us = 0.0
    while True:
        nxt = min(end_us, t_us + chunk_s * 1e6)
        c = eng.run_until(nxt, res.queries_left)
        now = eng.now
        res.queries_left -= c["done"]
        finished = res.queries_left <= 1e-9 or now >= end_us - 1e-6
        stuck = not finished and cfg.lsm and _stuck(eng)
        if not (finished or stuck):
            # the run goes on: work in progress counts up to here in this
            # chunk, the rest in the next (else a service spanning the
            # boundary counts whole in one chunk: busy > span, negative waits)
            eng.carry_over(c)
        span = now - t_us
        row = _timeline_row(now / 1e6, span, c, cfg)
        lsm = eng.lsm() if cfg.lsm else None
        row["phase"] = res.trace.chunk(t_us, now, c["done"], lsm)
        res.timeline.append(row)
        if dynamics is not None:
            dynamics.update(span, c["busy"], c["writes"], lsm)
        if now > warmup_s * 1e6 + 1e-6:
            for k in res.totals:
                res.totals[k] = res.totals[k] + c[k]
            res.span_us += span
        t_us = now
        res.end_us = now
        if bar is not None:
            bar.update(round(span / 1e6, 6) if math.isfinite(end_us) else c["done"] / 1e6)
            bar.set_postfix_str(f"{row['throughput_mops']:.3f} MOPS")
        if finished or stuck:
            res.finished = res.queries_left <= 1e-9
            res.stuck = bool(stuck)
            return


def _stuck(eng) -> bool:
    """Is some instance stopped with no job running that could clear it?"""
    _p, st, jobs, _mach, _rack = eng.lsm()
    return bool(np.any(st["cond"] == lsm_rules.STOPPED)) and not lsm_rules.any_job(jobs)


def _timeline_row(t_s: float, span_us: float, c: dict, cfg: SimConfig) -> dict:
    row: dict[str, Any] = {
        "t_s": round(t_s, 6),
        "throughput_mops": c["done"] / span_us,          # requests per us == M/s
        "stalled_frac": float((c["stall"].sum() + c["block"].sum())
                              / (span_us * max(1, int(cfg.station_servers.sum())))),
        "pktloss": float(c["drop"].sum() + c["wire"]),
        "false_pos": float(c["resends"]),
        "latency_us": _latency(cfg, span_us, c["done"], c["lat"]),
        "client_util": _client_util(cfg, span_us, c["client_busy"]),
    }
    for i in range(cfg.stations):
        w, p, _ = _wait_process(span_us, c["compl"][i], c["busy"][i], cfg)
        row[f"wait_us_{i}"] = w
        row[f"process_us_{i}"] = p
    return row


def _latency(cfg: SimConfig, span_us: float, done: float, lat_sum_us: float) -> float:
    """Mean latency (us) of the requests completed in a window of ``span_us``.

    With client threads, by Little's law over the window: the time every
    thread spent in requests (all of the window: a thread always has one
    outstanding) over the requests completed. The mean of the completed
    requests alone leaves out those still in progress at the end: a small
    edge effect in a steady state, but everything when threads wait far
    longer than the window (a lost request waiting out a 1 s timeout, or a
    collapse: 690 quick hits while 1024 threads are stuck would read as a
    25 us latency). An open class alone has no such count: its completed mean."""
    if done <= 0:
        return math.nan if cfg.n_clients == 0 else math.inf
    if cfg.n_clients > 0:
        return cfg.n_clients * span_us / done
    return lat_sum_us / done


def _client_util(cfg: SimConfig, span_us: float, busy_us: float) -> float:
    """Busy fraction of the client machines' cores (0 without them)."""
    if cfg.client_cpu_us <= 0 or cfg.n_clients <= 0 or span_us <= 0:
        return 0.0
    cores = cfg.client_cores if cfg.client_cores > 0 else cfg.n_clients
    return float(busy_us / (cores * span_us))


def _wait_process(span_us: float, completions: float, busy_us: float, cfg: SimConfig):
    """Notes-style wait and process (us) of a worker, and its utilisation."""
    if completions <= 0:
        return math.nan, math.nan, busy_us / span_us if span_us > 0 else 0.0
    process = busy_us / completions - cfg.service_fixed_us
    wait = span_us / completions - process - cfg.gap_us
    return wait, process, busy_us / span_us


def _percentile(hist: np.ndarray, q: float) -> float:
    """The q-quantile of a latency histogram (us), log-linear inside its bucket
    (a bucket spans 12 %: the error is well below half of it)."""
    total = hist.sum()
    if total == 0:
        return math.nan
    edges = hist_edges_us()
    cum = np.cumsum(hist)
    k = int(np.searchsorted(cum, q * total, side="left"))
    k = min(k, len(hist) - 1)
    below = cum[k - 1] if k > 0 else 0
    frac = (q * total - below) / hist[k] if hist[k] > 0 else 0.5
    frac = min(max(frac, 0.0), 1.0)
    return float(edges[k] * (edges[k + 1] / edges[k]) ** frac)


class FastSimulator:
    """The rack on the compiled engine. ``solve(spec)`` -> :class:`Prediction`.

    ``seconds=None`` (the default) simulates the whole run, until its
    queries are done; a number caps it (the first ``seconds`` of the run
    when the run is longer: ``details["prefix_of_run"]``). ``chunk_s``: the
    timeline's step (and the load factors').

    Ctrl-C during a run raises ``KeyboardInterrupt`` after it, as anywhere
    else; with ``partial=True`` the prediction of the part completed is
    returned instead, marked ``details["interrupted"]`` (for a caller that
    reports partial results as such: :func:`simulate`).
    """
    engine = "fast"

    def __init__(self, seconds: float | None = None, seed: int = 1, *, progress: bool = False,
                 warmup_s: float = 0.0, keys: bool = False, chunk_s: float = 1.0,
                 partial: bool = False):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
                not 0 <= seed < 2 ** 63:
            # numpy's generators take non-negative seeds only
            raise InputError(f"the seed must be an integer from 0 to 2**63 - 1, got {seed!r}",
                             field="--seed")
        self.seconds = seconds
        self.seed = seed
        self.progress = progress
        self.warmup_s = warmup_s
        self.keys = keys
        self.chunk_s = chunk_s
        self.partial = partial

    def config(self, spec: RackSpec) -> tuple[SimConfig, RackDynamics]:
        cfg = rack_config(spec)
        if self.engine == "fast":
            # before the analytic solve that starts the dynamics: a rack whose
            # arrays would not fit is refused before any work
            from .fast import check_memory
            check_memory(cfg)
        if self.keys:                         # actual keys: only the SimPy engine samples them
            cfg.keyspace = spec.placement.keys
        return cfg, RackDynamics(spec, cfg, initial=initial_load(spec))

    def solve(self, spec: RackSpec) -> Prediction:
        why = no_completion(spec.clients, spec.placement.hit_ratio)
        if why:
            # the steady state is known; a window would show only the transient
            # before every thread is stuck (and break Little's law)
            return no_goodput(spec, "sim", why)
        cfg, dyn = self.config(spec)
        res = run_config(cfg, self.seconds, seed=self.seed, engine=self.engine, dynamics=dyn,
                         progress=self.progress, warmup_s=self.warmup_s, chunk_s=self.chunk_s)
        if res.interrupted and not self.partial:
            raise KeyboardInterrupt          # a caller that needs the whole run stops too
        return _prediction(res, cfg, spec)


class SimpySimulator(FastSimulator):
    """The rack on the SimPy reference engine, sampling actual keys."""
    engine = "simpy"

    def __init__(self, seconds: float | None = None, seed: int = 1, *, keys: bool = True, **kw):
        super().__init__(seconds, seed, keys=keys, **kw)


def _prediction(res: SimResult, cfg: SimConfig, spec: RackSpec) -> Prediction:
    span = res.span_us
    T = res.totals
    done = T["done"]
    x = done / span if span > 0 else 0.0           # requests per us == MOPS
    n = cfg.stations
    wait, proc, util = np.zeros(n), np.zeros(n), np.zeros(n)
    for i in range(n):
        w, p, u = _wait_process(span, T["compl"][i], T["busy"][i], cfg)
        if T["compl"][i] <= 0:
            w, p = math.inf, float(cfg.service_mean_us[i] - cfg.service_fixed_us)
        wait[i], proc[i], util[i] = w, p, u
    lat_done = T["lat"] / done if done > 0 else math.inf
    lat = _latency(cfg, span, done, T["lat"])
    scale = spec.queries / done if done > 0 else 0.0
    lost = float(T["drop"].sum() + T["wire"])
    # requests completed only by a resend waited out at least one timeout each
    timeout_share = T["retried"] * (spec.clients.send_us + spec.clients.timeout_us) / (done * lat) \
        if done > 0 and math.isfinite(spec.clients.timeout_us) else 0.0
    outcome = Outcome(
        throughput_mops=float(x), util=util, wait_us=wait, process_us=proc,
        stall_frac=_stopped_frac(res, n),
        block_frac=T["block"] / span if span > 0 else np.zeros(n),
        stretch=np.ones(n), latency_us=float(lat), timeout_share=float(timeout_share),
        lost_per_request=lost / done if done > 0 else 0.0,
        pktloss=lost * scale, false_pos=float(T["resends"]) * scale,
        client_util=_client_util(cfg, span, T["client_busy"]))
    hist = T["hist"]
    pct = {k: _percentile(hist, q) for k, q in QUANTILES.items()}
    details = {
        "timeline": res.timeline,
        "latency_us_percentiles": pct,
        "latency_hist": {"edges_us": hist_edges_us().tolist(), "counts": hist.tolist()},
        "requests": int(done),
        "sim_engine": res.engine,
        "simulated_s": span / 1e6,
        # the run's first seconds only: a cap (or Ctrl-C) ended it before its queries
        "prefix_of_run": not res.finished,
        "run_queries": float(spec.queries),
        "stuck": res.stuck,
        "wall_s": res.wall_s,
        "interrupted": res.interrupted,
        "measured_hit_ratio": T["hits"] / done if done > 0 else math.nan,
        "pktloss_sim": lost,
        "false_pos_sim": float(T["resends"]),
        "stale_replies_sim": float(T["stale"]),
        "retried_requests_sim": float(T["retried"]),
        "buffer_pkts": float(spec.network.buffer_pkts),
        "memtable_switches": float(T["switches"]),
        "flushes": float(T["flushes"]),
        "compactions": float(T["compactions"]),
        "stall_us_per_server": T["stall"].tolist(),
        "blocked_us_per_server": T["block"].tolist(),
        "latency_completed_us": lat_done,
        # the client cores and the commit paths, named as the analytic solver's details
        "client_cores_utilization": _client_util(cfg, span, T["client_busy"]),
        "client_cores_us_per_request": T["client_res"] / done if done > 0 else math.nan,
        "commit_us_per_write": [float(c / w) if w > 0 else 0.0
                                for c, w in zip(T["commit"], T["writes"])],
        "latency_sd_us": math.sqrt(max(0.0, T["lat2"] / done - lat_done * lat_done))
        if done > 0 else math.nan,
    }
    if res.lsm is not None:
        details["lsm"] = res.lsm
    details["trajectory"] = res.trace.trajectory()
    return from_outcome(spec, outcome, "sim", details)


def _stopped_frac(res: SimResult, n: int) -> np.ndarray:
    """Per worker, the time its instance was STOPPED over the simulated run
    (RocksDB's rules' counter); without RocksDB, its writers' stopped time
    over the statistics window."""
    if res.lsm is not None and res.end_us > 0:
        return np.asarray(res.lsm["stop_s"], dtype=float) * 1e6 / res.end_us
    span = res.span_us
    return res.totals["stall"] / span if span > 0 else np.zeros(n)


def simulate(scenario: Scenario, profile: Profile, seconds: float | None = None, seed: int = 1,
             engine: str = "fast", progress: bool | None = None, *,
             warmup_s: float = 0.0, chunk_s: float = 1.0) -> Prediction:
    """Simulate the scenario's run (``engine`` fast or simpy): its queries,
    or its first ``seconds`` when that cap comes first.

    ``progress``: a bar on stderr (default: when stderr is a terminal). Ctrl-C
    returns the part simulated, with ``details["interrupted"] = True``
    (:func:`interrupted_after` says how far it got)."""
    cls = {"fast": FastSimulator, "simpy": SimpySimulator}.get(engine)
    if cls is None:
        raise InputError(f"unknown engine {engine!r}; allowed: fast, simpy", field="engine")
    progress = wanted(progress)
    solver = cls(seconds, seed, progress=progress, warmup_s=warmup_s, chunk_s=chunk_s,
                 partial=True)
    return solver.solve(compile_rack(scenario, profile))


def interrupted_after(prediction: Prediction) -> float | None:
    """Simulated seconds completed before Ctrl-C, or None if the run finished."""
    if not prediction.details.get("interrupted"):
        return None
    tl = prediction.details.get("timeline") or []
    return float(tl[-1]["t_s"]) if tl else 0.0


def write_timeline(prediction: Prediction, path) -> None:
    """Write ``details["timeline"]`` as CSV (one row per simulated second).

    The seconds of an interrupted run are written too, each marked with a
    ``partial`` column (``true``); stopped before its first second, none is
    written."""
    rows = prediction.details.get("timeline")
    if rows is None:
        raise InputError("this prediction has no timeline (only simulations do)",
                         field="timeline")
    write_rows_csv(path, rows, lambda v: "" if v is None else f"{v:.6g}"
                   if isinstance(v, float) else str(v),
                   partial=interrupted_after(prediction) is not None)
