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

from model.prediction import Prediction
from model.rack import RackSpec

from .agreement_simulation import SimInfo

#: throughputs agree when the larger is within this factor of the smaller
AGREE = 1.10
#: a simulation noisier than this (relative standard error of its throughput)
#: cannot judge a 10 % difference: inconclusive
NOISY_SE = 0.10
#: timeouts a run must span where the analytic threads spend TIMEOUT_SHARE of
#: their time waiting them out (the first of which no thread returns from),
#: else it is inconclusive
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
    ``timeouts-unreached: ...``
        the analytic threads spend at least 5 % of their time waiting out
        timeouts, but the simulated run (cut by the wall budget) spans fewer
        than 3 of them: no thread's sleep and return is a steady part of it.

    ``stuck: ...``
        the simulation reached a write stop no job can clear (an L0 stop
        trigger below the compaction trigger): the run never ends, and
        neither engine's throughput over it means anything.

    (Both answers cover the same finite run, RocksDB's state from its
    start, so no write stop is out of the simulation's reach: the
    ``lsm-transient`` reason of a simulated horizon standing for a longer
    run is gone.)
    """
    if "no_goodput" in sim.details and "no_goodput" in analytic.details:
        return ""
    if info.stuck:
        return (f"stuck: an instance's writes stopped with no flush or compaction to clear "
                f"them after {info.seconds:.3g} simulated s (RocksDB raises "
                "level0_stop_writes_trigger to the compaction trigger; the scenario's "
                "storage.l0_stop below storage.l0_files is not): the run never ends")
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
                "timeouts: a thread's sleep and return is a state its run is too short to "
                "reach")
    return ""


def caveat_names(pred: Prediction) -> list[str]:
    """The names of the caveats the analytic answer carries (:mod:`model.regimes`)."""
    return [c["name"] for c in pred.details.get("caveats", []) or []]
