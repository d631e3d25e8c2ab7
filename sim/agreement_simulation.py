"""The simulation behind ``python -m sim.agreement``: long enough to compare, bounded in time.

Both engines answer for the same finite run. :func:`simulate_for_check` runs
the fast engine on a rack from the run's start (the loaded database,
memtables empty) for a horizon of :func:`plan_seconds`, unless ``--seconds``
fixes it: long enough that 200,000 requests complete at the analytic
throughput, and, where a packet can be lost (a lossy wire, or a receive
buffer smaller than the other threads) or a reply can be late, 30 timeouts,
so the threads asleep after a loss and their resends reach their steady
state; at least 2 simulated seconds, at most what the wall-time budget
(``--sim-wall``, 7 s) allows at the speed the first chunk ran. The run is
the requests completed within the horizon (:attr:`SimInfo.queries`): the
analytic answer to compare with is that of the same rack over them
(:func:`same_run`), every RocksDB count of both over the same writes. The
simulator's own sampling error is estimated by batch means over its chunks
(:class:`SimInfo` ``rel_se``). As in :func:`sim.run.run_config`, the
load-dependent inputs (idle penalty, WAL-switch block length) are updated
from what each simulated second measured and process times follow RocksDB's
state, and the simulation starts from the analytic answer's utilisations
(:func:`sim.dynamics.initial_load`). :func:`simulate_bounded` runs it in a
forked child killed at the time limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from model.errors import InputError
from model.prediction import Prediction, no_goodput
from model.rack import RackSpec
from model.rack.clients import no_completion

#: seconds either engine may take per scenario
LIMIT_S = 10.0
#: wall seconds a simulation may plan for (below LIMIT_S: the first chunk's speed is a guess)
SIM_WALL_S = 7.0
#: requests a simulation should complete (sampling error about 1/sqrt of that, times
#: the correlation of a closed loop's cycles)
TARGET_REQUESTS = 200_000
#: timeouts a simulation should span where packets can be lost or replies be late
TIMEOUTS = 30
MIN_SECONDS = 2.0
MAX_SECONDS = 1e5
CHUNKS = 40
#: a simulation this noisy (relative standard error of its throughput) runs on
#: where the wall budget allows, up to EXTEND times its planned horizon
TARGET_SE = 0.03
EXTEND = 16.0


def _timeouts_matter(spec: RackSpec, x_mops: float) -> bool:
    """Can a thread wait out a timeout here: a lossy wire, a receive buffer
    smaller than the other threads (it can overflow), or a timeout within a
    few hundred round trips (a reply can be late)?"""
    c = spec.clients
    if not math.isfinite(c.timeout_us) or c.timeout_us >= 1e11:
        return False
    if spec.network.loss_rate > 0 or spec.network.buffer_pkts < c.threads - 1:
        return True
    r = c.threads / x_mops if x_mops > 0 else math.inf
    return c.timeout_us < 100.0 * min(r, 1e12)


def plan_seconds(spec: RackSpec, x_mops: float) -> float:
    """Simulated seconds wanted for ``spec`` at an expected throughput
    ``x_mops`` (before the wall-time cap): see the module docstring."""
    want = MIN_SECONDS
    if x_mops > 0 and math.isfinite(x_mops):
        want = max(want, TARGET_REQUESTS / (x_mops * 1e6))
    if _timeouts_matter(spec, x_mops):
        want = max(want, TIMEOUTS * (spec.clients.timeout_us + spec.clients.send_us) / 1e6)
    return min(want, MAX_SECONDS)


@dataclass
class SimInfo:
    planned_s: float = 0.0          # simulated seconds wanted
    seconds: float = 0.0            # simulated seconds run
    window_s: float = 0.0           # the statistics window (the whole run)
    rel_se: float = math.nan        # batch-means standard error of throughput, relative
    capped: bool = False            # the wall-time budget shortened the horizon
    extended: int = 0               # doublings of the horizon to bring the noise down
    queries: float = 0.0            # the run: the requests completed within the horizon
    stuck: bool = False             # a write stop no job can clear ended it
    chunk_mops: list = field(default_factory=list)


def same_run(spec: RackSpec, info: SimInfo) -> RackSpec:
    """``spec`` over the simulated run: its queries those the simulation
    completed (the analytic answer to compare with is this rack's)."""
    return replace(spec, queries=max(float(info.queries), 1.0))



def simulate_for_check(spec: RackSpec, analytic: Prediction, seed: int = 1,
                       seconds: float | None = None, wall_s: float = SIM_WALL_S,
                       ) -> tuple[Prediction, SimInfo]:
    """The fast simulator's prediction of ``spec`` over a horizon long enough
    to compare with ``analytic`` (:func:`plan_seconds`, or ``seconds``): the
    run of the requests completed within it (``info.queries``;
    :func:`same_run`)."""
    from .config import rack_config
    from .dynamics import STATE_GAP_US, RackDynamics, load_of
    from .run import _make_engine

    info = SimInfo()
    why = no_completion(spec.clients, spec.placement.hit_ratio)
    if why:
        return no_goodput(spec, "sim", why), info
    x_a = float(analytic.throughput_mops)
    fixed = seconds is not None
    H = float(seconds) if fixed else plan_seconds(spec, x_a)
    info.planned_s = H
    cfg = rack_config(spec)
    cfg.queries = math.inf                  # the horizon ends the run
    dyn = RackDynamics(spec, cfg, initial=load_of(spec, analytic))
    t0 = time.perf_counter()
    eng = _make_engine(cfg, seed, "fast")
    eng.on_state, eng.state_gap_us = dyn.state_changed, STATE_GAP_US
    chunks, H, t_us, trace = _run_chunks(eng, dyn, spec, x_a, H, fixed, wall_s, t0, info)
    return _chunks_prediction(eng, cfg, spec, chunks, H, t_us, t0, info, trace), info


def _run_chunks(eng, dyn, spec: RackSpec, x_a: float, H: float, fixed: bool, wall_s: float,
                t0: float, info: SimInfo):
    """Run ``eng`` in chunks to the horizon ``H`` s, which (unless ``fixed``)
    grows where the run is too noisy and shrinks to the wall budget; the
    chunks ``(start, end, counters)`` in us, the horizon reached, the
    simulated time run (us) and the run's trace (:class:`sim.run_lsm.RunTrace`)."""
    from .run import _stuck
    from .run_lsm import RunTrace

    chunks: list[tuple[float, float, dict]] = []      # (start, end, counters) in us
    trace = RunTrace()
    t_us = 0.0
    acc_span, acc_busy, acc_writes = 0.0, 0.0, 0.0
    # a tiny first chunk (about 2,000 requests, at most 20 ms: its wall time
    # is the first estimate of the speed), then steps that reach the horizon
    # in CHUNKS chunks
    first = min(0.02, 2000.0 / (x_a * 1e6)) if x_a > 0 else 0.02
    step = min(H / CHUNKS, max(1e-3, first)) * 1e6
    target = H                        # the horizon wanted (planned, or extended)
    while t_us < H * 1e6 - 1e-6:
        nxt = min(H * 1e6, t_us + step)
        if not fixed and nxt >= H * 1e6 - 1e-6 and len(chunks) >= CHUNKS // 2:
            # the last chunk is next: where the simulation is still too noisy
            # to measure its own mean and the wall budget allows it, run on
            # (the horizon doubles, at most EXTEND times the plan)
            se = _rel_se(chunks)
            spent = time.perf_counter() - t0
            if (not (se <= TARGET_SE) and H < EXTEND * info.planned_s
                    and spent * 1.1 < wall_s - spent):
                H *= 2.0
                target = H
                info.extended += 1
                nxt = min(H * 1e6, t_us + step)
        w0 = time.perf_counter()
        c = eng.run_until(nxt)
        if nxt < H * 1e6 - 1e-6:
            eng.carry_over(c)         # a service crossing the boundary is split at it
        rate = (time.perf_counter() - w0) / ((nxt - t_us) / 1e6)     # wall s per simulated s
        chunks.append((t_us, nxt, c))
        trace.chunk(t_us, nxt, c["done"], eng.lsm())
        # the load-dependent inputs move once per simulated second at least,
        # from what that second measured (as sim.run.run_config's chunks of
        # one second do): a short chunk's few writes would make a noisy
        # machine write rate, and from it a long WAL-switch block
        acc_span += nxt - t_us
        acc_busy = acc_busy + c["busy"]
        acc_writes = acc_writes + c["writes"]
        if acc_span >= 1e6 - 1e-3:
            dyn.update(acc_span, acc_busy, acc_writes, eng.lsm())
            acc_span, acc_busy, acc_writes = 0.0, 0.0, 0.0
        t_us = nxt
        if _stuck(eng):
            # a write stop no job can clear: nothing moves any more
            info.stuck = True
            H = t_us / 1e6
            break
        left = wall_s - (time.perf_counter() - t0)
        if not fixed:
            # unless --seconds fixes it, the horizon shrinks to what the wall
            # budget allows at the speed of the latest chunk, never below what
            # has been run (the first chunk touches the queues' memory, and a
            # rack whose threads soon sleep out timeouts runs slower at first)
            reach = t_us / 1e6 + max(left, 0.0) / max(rate, 1e-12)
            H = max(min(target, reach), t_us / 1e6)
        if not info.extended and len(chunks) < CHUNKS:
            step = max((H * 1e6 - t_us) / (CHUNKS - len(chunks)), 1.0)
        # (once extended, or past CHUNKS chunks after the horizon grew back,
        # the chunks keep their length: more of them); and no chunk is
        # planned to take more than half the wall time left
        if not fixed and left > 0:
            step = max(min(step, 0.5 * left / max(rate, 1e-12) * 1e6), 1.0)
    return chunks, H, t_us, trace


def _chunks_prediction(eng, cfg, spec: RackSpec, chunks: list[tuple[float, float, dict]],
                       H: float, t_us: float, t0: float, info: SimInfo, trace) -> Prediction:
    """The prediction of the whole simulated run (every chunk: the analytic
    answer covers the run from its first query) and its timeline; fills in
    ``info``."""
    from . import counters, run_lsm
    from .run import SimResult, _prediction, _timeline_row

    info.capped = H < info.planned_s * (1 - 1e-9)
    totals: dict[str, Any] = {k: 0.0 for k in counters.GLOBAL}
    totals.update({k: np.zeros(cfg.stations) for k in counters.STATION})
    totals["hist"] = np.zeros(counters.HIST_BINS, dtype=np.int64)
    timeline, span = [], 0.0
    for a_us, b_us, c in chunks:
        timeline.append(_timeline_row(b_us / 1e6, b_us - a_us, c, cfg))
        for key in totals:
            totals[key] = totals[key] + c[key]
        span += b_us - a_us
        info.chunk_mops.append(c["done"] / (b_us - a_us))
    info.queries = float(totals["done"])
    end = eng.end_state()
    res = SimResult(span_us=span, totals=totals, end_queued=end["queued"],
                    end_in_service=end["in_service"], end_in_flight=int(end["in_flight"]),
                    timeline=timeline, wall_s=time.perf_counter() - t0, engine="fast",
                    end_us=t_us, finished=True, lsm=run_lsm.details(eng, t_us, cfg.lsm_spec), trace=trace)
    pred = _prediction(res, cfg, same_run(spec, info))
    info.seconds = t_us / 1e6
    info.window_s = span / 1e6
    info.rel_se = _rel_se(chunks)
    return pred


def _rel_se(chunks) -> float:
    """Batch-means relative standard error of the throughput over the chunks
    (NaN with fewer than 4; 0 when none completes anything: a run with no
    completion at all measures zero exactly)."""
    xs = np.asarray([c["done"] / (b - a) for a, b, c in chunks if b > a])
    if len(xs) < 4:
        return math.nan
    if xs.mean() <= 0:
        return 0.0
    return float(xs.std(ddof=1) / math.sqrt(len(xs)) / xs.mean())


def _child(conn, spec, analytic, seed, seconds, wall_s) -> None:
    try:
        conn.send(("ok",) + simulate_for_check(spec, analytic, seed=seed, seconds=seconds,
                                               wall_s=wall_s))
    except InputError as exc:
        conn.send(("refused", exc.detail, exc.field))
    except BaseException as exc:                   # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def simulate_bounded(spec: RackSpec, analytic: Prediction, seed: int = 1,
                     seconds: float | None = None, wall_s: float = SIM_WALL_S,
                     hard_s: float = LIMIT_S) -> tuple[Prediction, SimInfo] | None:
    """:func:`simulate_for_check` in a forked child that is killed after
    ``hard_s`` wall seconds: None then (the rack is too slow to simulate to
    a meaningful horizon here). The budget within the simulation
    (``wall_s``) shortens the horizon from the speed of its chunks, but one
    chunk of a huge rack -- the first packets of 100,000 threads, say -- can
    take longer than the whole budget, and a compiled loop cannot be
    interrupted in-process. Where ``fork`` is not available it runs
    in-process, unbounded."""
    import multiprocessing as mp
    try:
        ctx = mp.get_context("fork")
    except ValueError:
        return simulate_for_check(spec, analytic, seed=seed, seconds=seconds, wall_s=wall_s)
    rd, wr = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(wr, spec, analytic, seed, seconds, wall_s),
                       daemon=True)
    proc.start()
    wr.close()
    try:
        if not rd.poll(hard_s):
            return None
        try:
            msg = rd.recv()
        except EOFError:
            raise RuntimeError(f"the simulation died (exit code {proc.exitcode})") from None
    finally:
        if proc.is_alive() and not rd.poll(0):
            proc.kill()
        proc.join(5.0)
        if proc.is_alive():
            proc.kill()
            proc.join()
        rd.close()
    if msg[0] == "refused":
        raise InputError(msg[1], field=msg[2])
    if msg[0] == "error":
        raise RuntimeError(msg[1])
    return msg[1], msg[2]
