"""Do the analytic solver and the simulator tell one story? (issue 43)

``python -m sim.agreement --n 500 --seed 1 [--seconds S] [--jobs N]
[--space full|fast] [--csv out.csv] [--limit 10]``

Draws ``--n`` random valid scenarios over the declared scenario space
(:func:`model.scenario_space.random_scenarios`, the same ones for the same
seed), and for each:

* solves it analytically (:func:`model.solvers.analytic.solve`) and
  simulates it on the fast engine (:func:`simulate_for_check`), each timed;
* checks both answers: finite numbers, and Little's law for the closed loop,
  ``X R = N`` (relative 1e-6, as tests/robustness/laws.py states it: both
  solvers give the latency of the loop by Little's law, the simulator over
  its statistics window);
* compares throughputs: they *agree* when ``max / min <= 1.10``; where they
  do not, the disagreement is *named* when the analytic prediction carries
  a caveat (:mod:`model.regimes`, ``details["caveats"]``: a regime where the
  mean-value form is known to be off, pointing to ``--engine sim``), else
  *unnamed*.

It prints one line per scenario with the counts so far, and a summary.
Exit 0 only when no answer is non-finite, none breaks Little's law, none
takes longer than ``--limit`` seconds (either engine), and at most 5 % of
the scenarios disagree unnamed; else 1.

How long a simulation runs (:func:`plan_seconds`), unless ``--seconds``
fixes it: long enough that 200,000 requests complete at the analytic
throughput, and, where a packet can be lost (a lossy wire, or a receive
buffer smaller than the other threads) or a reply can be late, 30 timeouts,
so the threads asleep after a loss and their resends reach their steady
state; at least 2 simulated seconds, at most what the wall-time budget
(``--sim-wall``, 7 s) allows at the speed the first chunk ran. The first
10 % of the horizon is a warm-up the statistics leave out (the rack starts
empty and no timer fires before one timeout has passed). The simulator's
own sampling error is estimated by batch means over the statistics chunks
(``sim_rel_se``, in the CSV). As in :func:`sim.run.run_config`, the
load-dependent inputs (idle penalty, WAL-switch block length) are updated
from what each simulated second measured, and the simulation starts from the
analytic answer's utilisations (:func:`sim.dynamics.initial_load`).
"""

from __future__ import annotations

import csv
import functools
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model.errors import InputError
from model.prediction import Prediction, no_goodput
from model.profile import Profile
from model.rack import RackSpec, compile_rack
from model.rack.clients import no_completion
from model.scenario_space import DIMENSIONS, FAST, FULL, scenario_from_unit
from runio.inputs import load_profile

#: throughputs agree when the larger is within this factor of the smaller
AGREE = 1.10
#: the share of scenarios that may disagree without a named caveat
UNNAMED_SHARE = 0.05
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
WARMUP = 0.1

#: a simulation noisier than this (relative standard error of its throughput)
#: cannot judge a 10 % difference: inconclusive
NOISY_SE = 0.10
#: the analytic write-stop share from which an unreachable stop makes it inconclusive
LSM_STOP = 0.01
#: timeouts a run must span where the analytic threads spend TIMEOUT_SHARE of
#: their time waiting them out (two are warm-up), else it is inconclusive
UNREACHED_TIMEOUTS = 3.0
TIMEOUT_SHARE = 0.05
#: seconds kept back from the limit for the fork and the answer's way back
HARD_MARGIN_S = 0.3

SPACES = {"fast": FAST, "full": FULL}


# ---------------------------------------------------------------- the simulation
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
    seconds: float = 0.0            # simulated seconds run (warm-up included)
    window_s: float = 0.0           # the statistics window
    rel_se: float = math.nan        # batch-means standard error of throughput, relative
    capped: bool = False            # the wall-time budget shortened the horizon
    extended: int = 0               # doublings of the horizon to bring the noise down
    chunk_mops: list = field(default_factory=list)


def simulate_for_check(spec: RackSpec, analytic: Prediction, seed: int = 1,
                       seconds: float | None = None, wall_s: float = SIM_WALL_S,
                       ) -> tuple[Prediction, SimInfo]:
    """The fast simulator's prediction of ``spec`` over a horizon long enough
    to compare with ``analytic`` (:func:`plan_seconds`, or ``seconds``), its
    first 10 % left out as warm-up; the data of the whole run spread over
    the horizon as :func:`sim.run.simulate` does."""
    from . import counters
    from .config import rack_config
    from .dynamics import RackDynamics, load_of
    from .run import SimResult, _make_engine, _prediction, _timeline_row, _whole_run_scale

    info = SimInfo()
    why = no_completion(spec.clients, spec.placement.hit_ratio)
    if why:
        return no_goodput(spec, "sim", why), info
    x_a = float(analytic.throughput_mops)
    fixed = seconds is not None
    H = float(seconds) if fixed else plan_seconds(spec, x_a)
    info.planned_s = H
    cfg = rack_config(spec)
    initial = load_of(spec, analytic)
    x0 = initial[2] if initial[2] > 0 else None
    dyn = RackDynamics(spec, cfg, data_scale=_whole_run_scale(spec, H, x0), initial=initial)
    t0 = time.perf_counter()
    eng = _make_engine(cfg, seed, "fast")
    chunks: list[tuple[float, float, dict]] = []      # (start, end, counters) in us
    t_us = 0.0
    acc_span, acc_busy, acc_writes = 0.0, 0.0, 0.0
    # a short first chunk, then steps that reach the horizon in CHUNKS chunks;
    # unless --seconds fixes it, the horizon shrinks to what the wall budget
    # allows at the speed of the latest chunk (the first chunk touches the
    # queues' memory, and a rack whose threads soon sleep out timeouts runs
    # slower at first than later), never below what has been run
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
            se = _rel_se(chunks, _warm_s(spec, x_a, H), H)
            spent = time.perf_counter() - t0
            if (not (se <= TARGET_SE) and H < EXTEND * info.planned_s
                    and spent * 1.1 < wall_s - spent):
                H *= 2.0
                target = H
                dyn.data_scale = _whole_run_scale(spec, H, x0)
                info.extended += 1
                nxt = min(H * 1e6, t_us + step)
        w0 = time.perf_counter()
        c = eng.run_until(nxt)
        if nxt < H * 1e6 - 1e-6:
            eng.carry_over(c)         # a service crossing the boundary is split at it
        rate = (time.perf_counter() - w0) / ((nxt - t_us) / 1e6)     # wall s per simulated s
        chunks.append((t_us, nxt, c))
        # the load-dependent inputs move once per simulated second at least,
        # from what that second measured (as sim.run.run_config's chunks of
        # one second do): a short chunk's few writes would make a noisy
        # machine write rate, and from it a long WAL-switch block
        acc_span += nxt - t_us
        acc_busy = acc_busy + c["busy"]
        acc_writes = acc_writes + c["writes"]
        if acc_span >= 1e6 - 1e-3:
            dyn.update(acc_span, acc_busy, acc_writes)
            acc_span, acc_busy, acc_writes = 0.0, 0.0, 0.0
        t_us = nxt
        left = wall_s - (time.perf_counter() - t0)
        if not fixed:
            # unless --seconds fixes it, the horizon shrinks to what the wall
            # budget allows at the speed of the latest chunk, never below what
            # has been run (the first chunk touches the queues' memory, and a
            # rack whose threads soon sleep out timeouts runs slower at first)
            reach = t_us / 1e6 + max(left, 0.0) / max(rate, 1e-12)
            H_new = max(min(target, reach), t_us / 1e6)
            if H_new != H:
                H = H_new
                dyn.data_scale = _whole_run_scale(spec, H, x0)
        if not info.extended and len(chunks) < CHUNKS:
            step = max((H * 1e6 - t_us) / (CHUNKS - len(chunks)), 1.0)
        # (once extended, or past CHUNKS chunks after the horizon grew back,
        # the chunks keep their length: more of them); and no chunk is
        # planned to take more than half the wall time left
        if not fixed and left > 0:
            step = max(min(step, 0.5 * left / max(rate, 1e-12) * 1e6), 1.0)
    info.capped = H < info.planned_s * (1 - 1e-9)
    warm_s = _warm_s(spec, x_a, H)
    totals: dict[str, Any] = {k: 0.0 for k in counters.GLOBAL}
    totals.update({k: np.zeros(cfg.stations) for k in counters.STATION})
    totals["hist"] = np.zeros(counters.HIST_BINS, dtype=np.int64)
    timeline, span_stat = [], 0.0
    for a_us, b_us, c in chunks:
        timeline.append(_timeline_row(b_us / 1e6, b_us - a_us, c, cfg))
        if a_us >= warm_s * 1e6 - 1e-6 or b_us >= H * 1e6 - 1e-6:
            for key in totals:
                totals[key] = totals[key] + c[key]
            span_stat += b_us - a_us
            info.chunk_mops.append(c["done"] / (b_us - a_us))
    wall = time.perf_counter() - t0
    end = eng.end_state()
    res = SimResult(span_us=span_stat, totals=totals, end_queued=end["queued"],
                    end_in_service=end["in_service"], end_in_flight=int(end["in_flight"]),
                    timeline=timeline, wall_s=wall, engine="fast")
    pred = _prediction(res, cfg, spec, dyn.data_scale)
    info.seconds = t_us / 1e6
    info.window_s = span_stat / 1e6
    info.rel_se = _rel_se(chunks, warm_s, H)
    return pred, info


def _warm_s(spec: RackSpec, x_a: float, H: float) -> float:
    """The warm-up of a horizon of ``H`` s: a tenth of it, and where timeouts
    matter two of them (no timer fires before one has passed), up to 30 %."""
    warm_s = WARMUP * H
    if _timeouts_matter(spec, x_a):
        warm_s = max(warm_s, min(2.0 * spec.clients.timeout_us / 1e6, 0.3 * H))
    return warm_s


def _rel_se(chunks, warm_s: float, H: float) -> float:
    """Batch-means relative standard error of the throughput over the
    statistics chunks (NaN with fewer than 4; 0 when none completes anything:
    a window with no completion at all measures zero exactly)."""
    xs = np.asarray([c["done"] / (b - a) for a, b, c in chunks
                     if (a >= warm_s * 1e6 - 1e-6 or b >= H * 1e6 - 1e-6) and b > a])
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


# ---------------------------------------------------------------- the checks
def nonfinite(pred: Prediction) -> list[str]:
    """Outputs that are not finite numbers >= 0 where they must be (the
    latency and per-run counts may be infinite only when no request
    completes: ``details["no_goodput"]``)."""
    out = []
    stuck = "no_goodput" in pred.details
    vals = {"throughput_mops": pred.throughput_mops, "cache_hit_ratio": pred.cache_hit_ratio,
            "stall_fraction": pred.stall_fraction, "send_us": pred.client.send_us}
    if not stuck:
        vals.update(pktloss=pred.pktloss, false_pos=pred.false_pos)
    if pred.throughput_mops > 0:
        vals["latency_us"] = pred.client.latency_us
    for k, v in vals.items():
        if not (isinstance(v, float) and math.isfinite(v) and v >= 0):
            out.append(f"{k}={v!r}")
    for i, s in enumerate(pred.servers):
        for k in ("share", "utilization", "process_us"):
            v = getattr(s, k)
            if not (math.isfinite(v) and v >= 0):
                out.append(f"server {i} {k}={v!r}")
                break
    return out


def little(pred: Prediction, threads: int) -> list[str]:
    """Little's law for the closed loop, ``X R = N`` (relative 1e-6). As in
    tests/robustness/laws.py, a simulated window may see no completion at
    all (every thread waiting out a timeout longer than the window): no
    throughput to check it by; the analytic answer must have one."""
    X, R = pred.throughput_mops, pred.client.latency_us
    if "no_goodput" in pred.details:
        return [] if (X == 0 and R == math.inf) else [f"no goodput, yet X={X} R={R}"]
    if X <= 0:
        return [] if pred.engine == "sim" else [f"zero throughput without a reason (R={R})"]
    if abs(X * R - threads) > 1e-6 * threads:
        return [f"X R = {X * R:.6g} != N = {threads}"]
    return []


def agree(xa: float, xs: float) -> bool:
    if xa == xs:
        return True
    lo, hi = min(xa, xs), max(xa, xs)
    return lo > 0 and hi / lo <= AGREE


def inconclusive(spec: RackSpec, analytic: Prediction, sim: Prediction, info: SimInfo) -> str:
    """Why the simulation cannot measure the steady state the analytic answer
    describes ("" when it can): not a disagreement of the models, and not an
    agreement either.

    ``noisy: ...``
        the simulated throughput's own relative standard error (batch means
        over its statistics chunks, after running on where the wall budget
        allowed) is above the agreement tolerance, 10 %: the simulation
        cannot tell a 10 % difference from its own noise;
    ``lsm-transient: ...``
        the analytic answer has writes stopped (at least 1 % of the time, by
        the whole run's memtables: :func:`model.rack.lsm.cycle_stats`), but at
        the simulated rate the simulation fills fewer than ``maxnum``
        memtables on every stopping instance -- the stop is a state the run
        is too short to reach (the simulator's data scale grows the data, not
        the memtables);
    ``timeouts-unreached: ...``
        the analytic threads spend at least 5 % of their time waiting out
        timeouts, but the simulated run (cut by the wall budget) spans fewer
        than 3 of them, two of which are warm-up: no thread's sleep and
        return fits in its statistics.
    """
    if "no_goodput" in sim.details and "no_goodput" in analytic.details:
        return ""
    se = info.rel_se
    if not (se <= NOISY_SE):
        return (f"noisy: the simulated throughput's relative standard error is "
                f"{'unknown (fewer than 4 statistics chunks)' if math.isnan(se) else f'{100 * se:.0f} %'}"
                f" over {info.seconds:.3g} simulated s (at most {100 * NOISY_SE:.0f} % to judge)")
    c = spec.clients
    share = analytic.details.get("timeout_delay_us_per_request", 0.0) or 0.0
    share = share * analytic.throughput_mops / c.threads if c.threads else 0.0
    if (share >= TIMEOUT_SHARE and math.isfinite(c.timeout_us)
            and info.seconds < UNREACHED_TIMEOUTS * c.timeout_us / 1e6):
        return (f"timeouts-unreached: the analytic answer has the threads waiting out "
                f"{c.timeout_us / 1e6:.3g} s timeouts {100 * share:.0f} % of their time, but "
                f"the simulation ran {info.seconds:.3g} s, fewer than {UNREACHED_TIMEOUTS:g} "
                "timeouts (two of them warm-up): a thread's sleep and return is a state its "
                "run is too short to reach")
    xa, xs = analytic.throughput_mops, sim.throughput_mops
    stop = np.asarray(analytic.details.get("write_stop_fraction", []) or [], dtype=float)
    fill = np.asarray(analytic.details.get("memtable_fill_s", []) or [], dtype=float)
    if (analytic.stall_fraction >= LSM_STOP and xa > 0 and stop.size == fill.size
            and stop.size > 0):
        on = (stop > 0) & np.isfinite(fill) & (fill > 0)
        if on.any():
            filled = info.seconds * (max(xs, 0.0) / xa) / fill[on]
            most = float(filled.max())
            if most < spec.lsm.maxnum:
                return (f"lsm-transient: the analytic answer has writes stopped "
                        f"{100 * analytic.stall_fraction:.0f} % of the time, but at the simulated "
                        f"rate the {info.seconds:.3g} s simulation fills at most {most:.3g} "
                        f"memtables per instance, fewer than the {spec.lsm.maxnum} that stop "
                        "writes")
    return ""


def caveat_names(pred: Prediction) -> list[str]:
    return [c["name"] for c in pred.details.get("caveats", []) or []]


# ---------------------------------------------------------------- one scenario
@functools.lru_cache(maxsize=1)
def _profile() -> Profile:
    return load_profile("tofino-testbed")


def _flat(sc) -> dict[str, Any]:
    return {f"{sec}.{k}": v for sec, vals in sc.to_dict().items() if isinstance(vals, dict)
            for k, v in vals.items()}


def _warm() -> None:
    """Compile (or load) both engines before anything is timed."""
    from model.scenario import Scenario
    from model.solvers.analytic import solve
    spec = compile_rack(Scenario.default().updated({"clients.threads": 4}), _profile())
    a = solve(spec)
    simulate_for_check(spec, a, seconds=0.01)


def check_one(job) -> dict[str, Any]:
    """One scenario (``(index, unit vector, bounds, seconds, seed)``): both
    engines, the checks, and a row of figures."""
    idx, u, bounds, seconds, seed, limit, wall_s = job
    from model.solvers.analytic import solve
    _warm_once()
    sc = scenario_from_unit(u, bounds)
    spec = compile_rack(sc, _profile())
    N = spec.clients.threads
    t = time.perf_counter()
    a = solve(spec)
    ta = time.perf_counter() - t
    t = time.perf_counter()
    row: dict[str, Any] = {"index": idx}
    base = {"caveats": ";".join(caveat_names(a)), "x_analytic": a.throughput_mops,
            "x_sim": math.nan, "ratio": math.nan, "t_analytic_s": ta,
            "slow": ta > limit, "nonfinite": "; ".join(nonfinite(a)),
            "law": "; ".join(little(a, N)), "sim_s": 0.0, "sim_rel_se": math.nan,
            "inconclusive": "", "servers": spec.servers, "threads": N}
    try:
        got = simulate_bounded(spec, a, seed=seed, seconds=seconds, wall_s=wall_s,
                               hard_s=max(limit - ta - HARD_MARGIN_S, 0.5))
    except InputError as exc:
        # the simulator refuses a rack too big for this machine's memory
        # (sim.fast.check_memory): nothing to compare with
        row.update(base)
        row.update({"outcome": "refused", "t_sim_s": time.perf_counter() - t,
                    "refused": str(exc)})
        row.update(_flat(sc))
        return row
    if got is None:
        # killed at the wall limit: one chunk of this rack takes longer than
        # the budget, so no meaningful horizon can be simulated here
        row.update(base)
        row.update({"outcome": "too-slow", "t_sim_s": time.perf_counter() - t,
                    "too_slow": f"{spec.servers:,} workers on {spec.placement.machines:,} "
                                f"machines, {N:,} client threads: the simulation did not "
                                f"finish within {limit:g} s"})
        row.update(_flat(sc))
        return row
    s, info = got
    ts = time.perf_counter() - t
    xa, xs = a.throughput_mops, s.throughput_mops
    bad_a, bad_s = nonfinite(a), nonfinite(s)
    law_a, law_s = little(a, N), little(s, N)
    caveats = caveat_names(a)
    if not agree(xa, xs):
        outcome = "named" if caveats else "unnamed"
    else:
        outcome = "agree"
    why = inconclusive(spec, a, s, info)
    if why:
        outcome = "inconclusive"
    ad, sd = a.details, s.details
    row.update({
        "outcome": outcome, "caveats": ";".join(caveats),
        "x_analytic": xa, "x_sim": xs,
        "ratio": xa / xs if xs > 0 else (1.0 if xa == 0 else math.inf),
        "t_analytic_s": ta, "t_sim_s": ts, "slow": ta > limit or ts > limit,
        "nonfinite": "; ".join([f"analytic {m}" for m in bad_a] + [f"sim {m}" for m in bad_s]),
        "law": "; ".join([f"analytic {m}" for m in law_a] + [f"sim {m}" for m in law_s]),
        "sim_planned_s": info.planned_s, "sim_s": info.seconds, "sim_window_s": info.window_s,
        "sim_rel_se": info.rel_se, "sim_capped": info.capped, "sim_extended": info.extended,
        "inconclusive": why, "servers": spec.servers, "threads": N,
        "sim_requests": sd.get("requests", 0),
        "a_latency_us": a.client.latency_us, "s_latency_us": s.client.latency_us,
        "s_latency_completed_us": sd.get("latency_completed_us", math.nan),
        "a_lost_per_req": _per_req(a, spec), "s_lost_per_req": _per_req(s, spec),
        "a_resends_per_req": _per_req(a, spec, "false_pos"),
        "s_resends_per_req": _per_req(s, spec, "false_pos"),
        "a_timeout_share": ad.get("timeout_delay_us_per_request", 0.0) * xa / N if N else 0.0,
        "a_util_max": max((x.utilization for x in a.servers), default=0.0),
        "s_util_max": max((x.utilization for x in s.servers), default=0.0),
        "a_client_util": ad.get("client_cores_utilization", 0.0),
        "s_client_util": sd.get("client_cores_utilization", 0.0),
        "a_stall": a.stall_fraction, "s_stall": s.stall_fraction,
        "a_bottleneck": a.bottleneck.kind, "s_bottleneck": s.bottleneck.kind,
        "a_running_fraction": ad.get("running_fraction", 1.0),
        "a_jump": ad.get("jump", False), "a_saturated": ad.get("saturated", False),
        "hit_ratio": spec.placement.hit_ratio, "buffer_pkts": spec.network.buffer_pkts,
        "timeout_us": spec.clients.timeout_us, "client_cores": spec.clients.cores,
        "service_cores": spec.service.cores,
    })
    row.update(_flat(sc))
    return row


def _per_req(p: Prediction, spec: RackSpec, what: str = "pktloss") -> float:
    """Lost (``pktloss``) or resent (``false_pos``) packets per completed request."""
    if p.engine == "sim":
        q = p.details.get("requests")
        raw = p.details.get("pktloss_sim" if what == "pktloss" else "false_pos_sim", 0.0)
        return raw / q if q else math.nan
    return getattr(p, what) / spec.queries if spec.queries else math.nan


_WARMED = False


def _warm_once() -> None:
    global _WARMED
    if not _WARMED:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _warm()
        _WARMED = True


# ---------------------------------------------------------------- the command
COUNTS = ("nonfinite", "law", "slow", "agree", "named", "unnamed", "inconclusive",
          "too-slow", "refused")


def _tally(counts: dict, named_by: dict, row: dict) -> None:
    counts["nonfinite"] += bool(row["nonfinite"])
    counts["law"] += bool(row["law"])
    counts["slow"] += bool(row["slow"])
    counts[row["outcome"]] += 1
    if row["outcome"] == "named":
        for c in row["caveats"].split(";"):
            named_by[c] = named_by.get(c, 0) + 1


def _line(k: int, n: int, row: dict, counts: dict) -> str:
    xa, xs = row["x_analytic"], row["x_sim"]
    r = row["ratio"]
    diff = f"{100 * (r - 1):+.1f}%" if math.isfinite(r) else ("n/a" if math.isnan(r) else "inf")
    flag = "".join([" NONFINITE" if row["nonfinite"] else "", " LAW" if row["law"] else "",
                    " SLOW" if row["slow"] else ""])
    cav = f" [{row['caveats']}]" if row["caveats"] else ""
    so_far = " ".join(f"{c}={counts[c]}" for c in COUNTS)
    if row.get("inconclusive"):
        flag += f" ({row['inconclusive'].split(':')[0]})"
    return (f"{k:4d}/{n} #{row['index']:<4d} {row['outcome']:7s} analytic {xa:.4g} sim {xs:.4g} "
            f"MOPS ({diff}; sim {row['sim_s']:.3g} s, se {100 * row['sim_rel_se']:.1f}%) "
            f"t {row['t_analytic_s']:.2f}/{row['t_sim_s']:.2f} s{flag}{cav} | {so_far}")


def run(n: int, seed: int, space: str = "full", seconds: float | None = None, jobs: int = 1,
        csv_path: str | None = None, limit: float = LIMIT_S, sim_seed: int = 1,
        wall_s: float = SIM_WALL_S, quiet: bool = False) -> tuple[dict, dict, list[dict]]:
    """Check ``n`` random scenarios; (counts, disagreements named by caveat, rows)."""
    units = np.random.default_rng(seed).random((n, DIMENSIONS))
    bounds = SPACES[space]
    jobs_in = [(i, units[i], bounds, seconds, sim_seed, limit, wall_s) for i in range(n)]
    counts = {c: 0 for c in COUNTS}
    named_by: dict[str, int] = {}
    rows: list[dict] = []
    t0 = time.time()
    if jobs > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
        pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"))
        results = pool.map(check_one, jobs_in)
    else:
        pool, results = None, map(check_one, jobs_in)
    try:
        for k, row in enumerate(results, 1):
            rows.append(row)
            _tally(counts, named_by, row)
            if not quiet:
                print(_line(k, n, row, counts), flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    if csv_path:
        cols: list[str] = []
        for r in rows:
            cols += [c for c in r if c not in cols]
        from runio.safe_io import atomic_write
        with atomic_write(csv_path) as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    if not quiet:
        print(summary(n, seed, space, counts, named_by, time.time() - t0, rows))
        for r in rows:
            if r["outcome"] in ("inconclusive", "too-slow"):
                print(f"  {r['outcome'].upper()} #{r['index']}: analytic {r['x_analytic']:.4g} "
                      f"sim {r['x_sim']:.4g} MOPS; {r.get('inconclusive') or r.get('too_slow')}")
        for r in rows:
            if r["outcome"] == "unnamed":
                print(f"  UNNAMED #{r['index']}: analytic {r['x_analytic']:.4g} sim "
                      f"{r['x_sim']:.4g} MOPS; " + " ".join(
                          f"{k}={v}" for k, v in r.items() if "." in k))
    return counts, named_by, rows


def passed(counts: dict, n: int) -> bool:
    return (counts["nonfinite"] == 0 and counts["law"] == 0 and counts["slow"] == 0
            and counts["unnamed"] <= UNNAMED_SHARE * n)


def rule_table(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per caveat: the disagreements it names, and the agreeing scenarios it
    flags anyway (false flags)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        for c in filter(None, (r.get("caveats") or "").split(";")):
            e = out.setdefault(c, {"named": 0, "false_flags": 0, "other": 0})
            key = {"named": "named", "agree": "false_flags"}.get(r["outcome"], "other")
            e[key] += 1
    return out


def reasons(rows: list[dict]) -> dict[str, int]:
    """Inconclusive scenarios per reason (the word before the colon)."""
    out: dict[str, int] = {}
    for r in rows:
        if r["outcome"] == "inconclusive":
            k = str(r.get("inconclusive", "")).split(":")[0]
            out[k] = out.get(k, 0) + 1
    return out


def summary(n: int, seed: int, space: str, counts: dict, named_by: dict, wall: float,
            rows: list[dict] | None = None) -> str:
    pct = lambda c: f"{counts[c]} ({100 * counts[c] / max(n, 1):.1f} %)"  # noqa: E731
    named = ", ".join(f"{k} {v}" for k, v in sorted(named_by.items(), key=lambda kv: -kv[1]))
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons(rows or []).items(),
                                                  key=lambda kv: -kv[1]))
    table = rule_table(rows or [])
    lines = [
        f"DONE {n} scenarios (seed {seed}, space {space}) in {wall:.0f} s",
        f"  non-finite answers        {counts['nonfinite']}",
        f"  Little's law violations   {counts['law']}",
        f"  over {LIMIT_S:g} s (either engine) {counts['slow']}",
        f"  agree within {100 * (AGREE - 1):.0f} %          {pct('agree')}",
        f"  disagree, named           {pct('named')}" + (f": {named}" if named else ""),
        f"  disagree, unnamed         {pct('unnamed')} (at most {100 * UNNAMED_SHARE:.0f} % allowed)",
        f"  inconclusive (simulation cannot measure it) {pct('inconclusive')}"
        + (f": {why}" if why else ""),
        f"  too slow to simulate (killed at {LIMIT_S:g} s) {counts['too-slow']}",
        f"  simulator refused (memory) {counts['refused']} (analytic answer checked only)",
    ]
    agreeing = counts["agree"]
    for name, e in sorted(table.items()):
        lines.append(f"  rule {name:15s} names {e['named']}, flags {e['false_flags']} of "
                     f"{agreeing} agreeing ({100 * e['false_flags'] / max(agreeing, 1):.1f} %), "
                     f"on {e['other']} inconclusive/too slow/refused")
    lines.append("PASS" if passed(counts, n) else "FAIL")
    return "\n".join(lines)


def main(argv=None) -> int:
    from runio.exits import ArgumentParser, at_least, run_command
    from runio.safe_io import output_path, output_type
    ap = ArgumentParser(prog="python -m sim.agreement", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=at_least(1, int), default=500, help="random scenarios")
    ap.add_argument("--seed", type=at_least(0, int), default=1, help="seed of the scenario sample")
    ap.add_argument("--seconds", type=at_least(0, exclusive=True), default=None,
                    help="simulated seconds per scenario (default: planned per scenario)")
    ap.add_argument("--jobs", type=at_least(1, int), default=1, help="processes")
    ap.add_argument("--space", choices=tuple(SPACES), default="full")
    ap.add_argument("--csv", default=None, help="write one row per scenario")
    ap.add_argument("--limit", type=at_least(0, exclusive=True), default=LIMIT_S,
                    help="seconds per engine")
    ap.add_argument("--sim-wall", type=at_least(0, exclusive=True), default=SIM_WALL_S,
                    help="wall seconds a simulation plans for")
    args = ap.parse_args(argv)

    def action() -> int:
        if args.csv is not None:          # checked before the first scenario
            output_type(args.csv, (".csv",), "--csv")
            output_path(args.csv, "--csv")
        counts, _named, _rows = run(args.n, args.seed, args.space, args.seconds, args.jobs,
                                    args.csv, args.limit, wall_s=args.sim_wall)
        return 0 if passed(counts, args.n) else 1

    return run_command(action)


if __name__ == "__main__":
    sys.exit(main())
