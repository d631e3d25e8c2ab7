"""The checks of ``python -m sim.agreement`` on one scenario's two answers.

Each engine's answer must be finite (:func:`nonfinite`) and keep Little's law
for the closed loop (:func:`little`); the two throughputs *agree* within 10 %
(:func:`agree`); where they do not, the analytic answer's caveats
(:func:`caveat_names`, :mod:`model.regimes`) may name the disagreement; and
:func:`inconclusive` says when the simulation cannot measure the steady state
the analytic answer describes at all.
"""

from __future__ import annotations

import math

import numpy as np

from model.prediction import Prediction
from model.rack import RackSpec

from .agreement_simulation import SimInfo

#: throughputs agree when the larger is within this factor of the smaller
AGREE = 1.10
#: a simulation noisier than this (relative standard error of its throughput)
#: cannot judge a 10 % difference: inconclusive
NOISY_SE = 0.10
#: the analytic write-stop share from which an unreachable stop makes it inconclusive
LSM_STOP = 0.01
#: timeouts a run must span where the analytic threads spend TIMEOUT_SHARE of
#: their time waiting them out (two are warm-up), else it is inconclusive
UNREACHED_TIMEOUTS = 3.0
TIMEOUT_SHARE = 0.05


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
    """Throughputs ``xa`` and ``xs`` within a factor :data:`AGREE` of each other."""
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
    """The names of the caveats the analytic answer carries (:mod:`model.regimes`)."""
    return [c["name"] for c in pred.details.get("caveats", []) or []]
