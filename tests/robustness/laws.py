"""The laws every prediction of the rack must obey, checked from its outputs.

:func:`violations` lists what a :class:`~model.prediction.Prediction` of a
compiled rack breaks (an empty list: nothing). The property tests and the
soak share it.

* Outputs are numbers, finite and non-negative; infinite only where they
  mean "never" (the latency and per-run counts when no request completes, the
  wait of a worker that gets no requests, the gain over NoCache when the
  switch answers every request).
* Little's law for the closed loop: ``N = X R``.
* Utilisation law: a worker's utilisation is at least ``X s_i S_i`` (the
  requests it serves, each taking its service ``S_i``; duplicates and
  write-backs only add) and at most 1. Hence the server-side bound
  ``X <= 1 / (s_i S_i)`` for every worker.
* Client-side bound: a request takes at least the send and its round trip
  (``think``), so ``X <= N / think``.
* Flow balance: every request is a cache hit or goes to one worker:
  ``hit ratio + sum(shares) = 1``, with and without the cache.
* RocksDB's counts over the run (``details["lsm"]``, both engines): every
  count finite and non-negative; a memtable holds ``LsmSpec.entries``
  writes (the writes fill at least the memtables sealed); a flush takes at
  least one memtable (flushes at most the memtables sealed less those still
  waiting); no instance stopped or slowed longer than the run, nor stopped
  longer than the rack had an instance stopped.
"""

from __future__ import annotations

import math

from model.rack.clients import think_us

TOL = 0.02          # relative slack of the mean-value solution (a fixed point, a mixture)


def violations(pred, spec, sampled: bool = False) -> list[str]:
    """What ``pred`` breaks. ``sampled``: a simulator's window, whose
    utilisation and throughput are samples (the utilisation law and the bounds
    hold to sampling error, which tests/sim checks with confidence intervals;
    a short window may see no completion at all)."""
    out: list[str] = []
    N = spec.clients.threads
    X = pred.throughput_mops
    R = pred.client.latency_us
    stuck = "no_goodput" in pred.details

    def bad(msg):
        out.append(msg)

    # ---- numbers
    scalars = {"throughput_mops": X, "cache_hit_ratio": pred.cache_hit_ratio,
               "send_us": pred.client.send_us, "stall_fraction": pred.stall_fraction}
    # the gain over NoCache is unbounded when the switch answers every request
    if any(x.share > 0 for x in pred.servers) or pred.normalized_x != math.inf:
        scalars["normalized_x"] = pred.normalized_x
    if not stuck:
        scalars.update(pktloss=pred.pktloss, false_pos=pred.false_pos)
    if X > 0:
        scalars.update(latency_us=R)
    for name, v in scalars.items():
        if not (isinstance(v, float) and math.isfinite(v) and v >= 0):
            bad(f"{name} = {v!r} is not a finite number >= 0")
    for i, s in enumerate(pred.servers):
        for name in ("share", "share_nocache", "utilization", "process_us"):
            v = getattr(s, name)
            if not (math.isfinite(v) and v >= 0):
                bad(f"server {i} {name} = {v!r}")
        # a worker that served nothing has no wait: none expected (no share,
        # no goodput) or none seen in a sampled window
        if not (s.wait_us >= 0 and (math.isfinite(s.wait_us) or s.share == 0 or stuck
                                    or sampled)):
            bad(f"server {i} wait_us = {s.wait_us!r} with share {s.share}")
        if s.utilization > 1 + 1e-9:
            bad(f"server {i} utilization {s.utilization} > 1")
    if pred.stall_fraction > 1 + 1e-9 or pred.cache_hit_ratio > 1 + 1e-9:
        bad("a fraction above 1")
    out += lsm_violations(pred.details.get("lsm"), spec)
    if out:
        return out
    # ---- flow balance
    shares = sum(s.share for s in pred.servers)
    if abs(pred.cache_hit_ratio + shares - 1.0) > 1e-6:
        bad(f"hit ratio {pred.cache_hit_ratio} + shares {shares} != 1")
    if abs(sum(s.share_nocache for s in pred.servers) - 1.0) > 1e-6:
        bad("shares without the cache do not add up to 1")
    if stuck:
        if X != 0 or R != math.inf:
            bad("no goodput, yet a throughput or a finite latency")
        return out
    # ---- Little's law
    if X > 0 and abs(X * R - N) > 1e-6 * N:
        bad(f"Little's law: X R = {X * R} != N = {N}")
    if sampled:
        return out
    if X == 0:
        bad("zero throughput without a reason")
    # ---- utilisation law and the bounds
    sv = spec.service
    for i, s in enumerate(pred.servers):
        if s.share <= 0:
            continue
        S = s.process_us + sv.recv_floor_us + sv.gap_us
        demand = X * s.share * S
        if demand > s.utilization * (1 + TOL) + 1e-6:
            bad(f"server {i}: X s S = {demand:.4g} > utilization {s.utilization:.4g}")
        if X > (1 + TOL) / (s.share * S):
            bad(f"server {i}: X = {X:.4g} above the server bound 1/(s S) = {1 / (s.share * S):.4g}")
    think = think_us(spec.clients, spec.placement.hit_ratio)
    if X > N / think * (1 + 1e-9):
        bad(f"X = {X:.4g} above the client bound N / think = {N / think:.4g}")
    return out


def lsm_violations(d, spec) -> list[str]:
    """What the LOG counts of a run (``details["lsm"]``; None: none given) break."""
    if not d:
        return []
    out = []
    keys = ("memtables", "flushes", "compactions", "stop_s", "slow_s", "immutables_end",
            "l0_files_end", "writes")
    for k in keys:
        for i, v in enumerate(d[k]):
            if not (math.isfinite(v) and v >= 0):
                out.append(f"lsm {k}[{i}] = {v!r} is not a finite number >= 0")
    if out:
        return out
    run_s, stopped_s = d["run_s"], d["stopped_s"]
    slack = 1e-9 * max(run_s, 1.0)
    entries = spec.lsm.entries
    for i in range(len(d["memtables"])):
        mem, fl, imm = d["memtables"][i], d["flushes"][i], d["immutables_end"][i]
        if d["writes"][i] < mem * entries * (1 - 1e-9) - 1e-6:
            out.append(f"instance {i}: {mem} memtables of {entries} writes from "
                       f"{d['writes'][i]:.6g} writes")
        if imm > mem or fl > mem - imm:
            out.append(f"instance {i}: {fl} flushes, {imm} immutables left of {mem} memtables")
        if d["stop_s"][i] + d["slow_s"][i] > run_s + slack:
            out.append(f"instance {i}: stopped {d['stop_s'][i]:.6g} s and slowed "
                       f"{d['slow_s'][i]:.6g} s in a run of {run_s:.6g} s")
        if d["stop_s"][i] > stopped_s + slack:
            out.append(f"instance {i}: stopped {d['stop_s'][i]:.6g} s, the rack only "
                       f"{stopped_s:.6g} s")
    return out
