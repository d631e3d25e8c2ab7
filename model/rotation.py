"""FarReach's server rotation: how its static-pattern experiments measure a
rack of many servers with two physical server machines.

What the public code does (``scripts/local/calculate_statistics_helper.py``,
``staticprocess``, in ``LGN520/farreach-public``; docs/domain.md, "Server
rotation"):

* The bottleneck partition b (the one with the most requests after the
  cache) runs alone first; then, for every other partition i in turn, b and
  i run together, b on one machine and i on the other. The clients generate
  the whole workload and send only the requests of the partitions running.
* Each rotation's statistics count every partition's requests answered
  (switch hits plus server replies). The throughput of b is averaged over
  all rotations; each other partition's throughput in its rotation is
  scaled by (b's average / b's throughput in that rotation), removing the
  run-to-run variance; the aggregate throughput is b's average plus the sum
  of the scaled others. The normalized throughput is the aggregate over the
  largest per-partition server throughput (server replies only).

The model does the same with its racks: each rotation is a rack of the
running partitions (one or two workers, one per machine), whose workload is
the full workload restricted to them
(:meth:`model.workload.WorkloadResult.restricted`: each partition keeps its
own popularity, hot keys and hit ratio), each worker holding one N-th of the
records. A rotation rack's throughput splits over its partitions in
proportion to their requests (one closed loop of clients, each request to b
or i with the workload's odds). The rotation racks are solved by any solver
of a list of racks (the analytic batch by default).

Why it matters: a rack of N concurrent workers and a rotation of N
partitions are different measurements. In rotation only two workers ever
run, so the machines' contention of many busy workers (and their packet
loss under many clients) never appears, and the aggregate grows with N for
an evenly loaded cache (FarReach's published scalability experiment:
about 1.4, 2.9, 5.8 and 12 MOPS at 16, 32, 64 and 128 servers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .errors import InputError
from .json_values import finite_or_none
from .profile import Profile
from .scenario import Scenario

#: the server-rotation result's columns and units
UNITS = {"throughput_mops": "MOPS", "normalized_x": "x", "partition_mops": "MOPS",
         "partition_server_mops": "MOPS"}


@dataclass(frozen=True)
class Rotation:
    """What FarReach's statistics script reports for a server-rotation run."""
    engine: str                     # the solver of the rotation racks: analytic or sim
    servers: int                    # logical servers (partitions)
    bottleneck: int                 # the partition run in every rotation
    throughput_mops: float          # aggregate throughput, switch hits included
    normalized_x: float             # aggregate / largest per-partition server throughput
    cache_hit_ratio: float          # of all requests
    partition_mops: list[float]     # each partition's throughput (hits + replies), scaled
    partition_server_mops: list[float]   # ... its server replies only
    rotations: int                  # racks solved: b alone, then b beside each other
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The ``predict --measure rotation --json`` object (non-finite -> null)."""
        return finite_or_none({
            "measure": "rotation", "engine": self.engine, "servers": self.servers,
            "bottleneck": self.bottleneck,
            "throughput_mops": self.throughput_mops, "normalized_x": self.normalized_x,
            "cache_hit_ratio": self.cache_hit_ratio, "partition_mops": list(self.partition_mops),
            "partition_server_mops": list(self.partition_server_mops),
            "rotations": self.rotations, "units": dict(UNITS), "details": dict(self.details)})


def rotation_plan(scenario: Scenario):
    """What a rotation runs, whatever the profile: (bottleneck, the partitions
    run in each rotation, each rotation's scenario and its workload, the full
    workload result). Built once, compiled under every profile of an interval
    (the restricted popularity tables are then the same objects, and the
    memtable-window cache finds them)."""
    from .workload import evaluate_scenario
    n = scenario.servers.count
    if n < 2:
        raise InputError("server rotation needs at least 2 servers (partitions)",
                         field="servers.count")
    full = evaluate_scenario(scenario)
    shares = np.nan_to_num(np.asarray(full.shares, dtype=float))
    nocache = np.nan_to_num(np.asarray(full.shares_nocache, dtype=float))
    b = int(np.argmax(shares))
    runs = [(b,)] + [(b, i) for i in range(n) if i != b and nocache[i] > 0]
    subs = []
    for part in runs:
        sub = scenario.updated({
            "servers.count": len(part),
            # b on one machine, the rotated partition on the other
            "servers.machines": min(len(part), scenario.servers.machines),
            # each instance holds its partition: one N-th of the records, and
            # takes its partition's requests of the run (as many writes, and
            # as much data growth, as in the whole run)
            "workload.records": max(1, int(round(scenario.workload.records * len(part) / n))),
            "workload.queries_m": max(1e-3, scenario.workload.queries_m
                                      * float(nocache[list(part)].sum()))})
        subs.append((sub, full.restricted(part)))
    return b, runs, subs, full


def compile_rotation(subs, profile: Profile) -> list:
    """The rotation racks of :func:`rotation_plan` under ``profile``."""
    from .rack.params import ProfileReader
    from .rack.spec import compile_with
    return [compile_with(sub, ProfileReader(profile), wres=wres) for sub, wres in subs]


def rotation_racks(scenario: Scenario, profile: Profile):
    """(bottleneck, partitions run in each rotation, their compiled racks,
    the full workload result)."""
    b, runs, subs, full = rotation_plan(scenario)
    return b, runs, compile_rotation(subs, profile), full


def aggregate(b: int, runs: Sequence[tuple], rack_mops: Sequence[float], nocache: np.ndarray,
              shares: np.ndarray, n: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    """FarReach's ``staticprocess`` on model racks: (aggregate MOPS, normalized
    throughput, each partition's throughput, each partition's server
    throughput). ``rack_mops[k]``: the throughput of rotation k's rack (hits
    included); a partition's part of it is its share of the rack's requests
    (``nocache``); its server part is its share after the cache (``shares``)."""
    part = np.zeros(n)
    server = np.zeros(n)
    b_tot, b_srv = [], []
    for run, x in zip(runs, rack_mops):
        idx = list(run)
        total = float(nocache[idx].sum())
        b_tot.append(x * nocache[b] / total)
        b_srv.append(x * shares[b] / total)
    avg_b, avg_b_srv = float(np.mean(b_tot)), float(np.mean(b_srv))
    part[b], server[b] = avg_b, avg_b_srv
    for k, (run, x) in enumerate(zip(runs, rack_mops)):
        if len(run) < 2:
            continue
        i = run[1]
        total = float(nocache[list(run)].sum())
        # the rotated partition, scaled by b's variance in this rotation
        part[i] = x * nocache[i] / total * (avg_b / b_tot[k]) if b_tot[k] > 0 else 0.0
        server[i] = (x * shares[i] / total * (avg_b_srv / b_srv[k])) if b_srv[k] > 0 else 0.0
    agg = float(part.sum())
    top = float(server.max())
    return agg, (agg / top if top > 0 else float("nan")), part, server


def predict_rotation(scenario: Scenario, profile: Profile,
                     solve: Callable[[list], list] | None = None,
                     intervals: bool = False,
                     progress: Callable[[int, int], None] | None = None) -> Rotation:
    """A server-rotation measurement of ``scenario``'s rack: every rotation's
    rack solved (``solve``: racks -> predictions; the analytic batch by
    default) and aggregated as FarReach's statistics script does.

    ``intervals``: the aggregate's 90 % interval, as for one rack
    (:mod:`model.intervals`): the rotation again at each of the profile's
    sigma points (all racks in one batch), plus the run-to-run noise of a
    FarReach run's throughput (``details["throughput_interval"]``).
    ``progress(done, total)`` follows the profiles solved."""
    if solve is None:
        from .solvers.analytic import solve_many as solve
    from .intervals import sigma_profiles, throughput_interval
    profiles = [profile, *(sigma_profiles(profile)[0] if intervals else [])]
    b, runs, subs, full = rotation_plan(scenario)
    # batches of about 128 racks (a rotation's racks are alike; one batch for
    # everything was 2x faster than one per profile at 16 servers), so that
    # progress can follow the profiles
    per = max(1, -(-128 // len(runs)))
    preds_all = []
    for j in range(0, len(profiles), per):
        preds_all += solve([r for p in profiles[j:j + per] for r in compile_rotation(subs, p)])
        if progress is not None:
            progress(min(j + per, len(profiles)), len(profiles))
    shares = np.nan_to_num(np.asarray(full.shares, dtype=float))
    nocache = np.nan_to_num(np.asarray(full.shares_nocache, dtype=float))
    n = scenario.servers.count
    aggs = [aggregate(b, runs, [p.throughput_mops for p in preds_all[k:k + len(runs)]],
                      nocache, shares, n) for k in range(0, len(preds_all), len(runs))]
    preds = preds_all[:len(runs)]
    agg, nx, part, server = aggs[0]
    details: dict[str, Any] = {}
    iv = throughput_interval(agg, [a[0] for a in aggs[1:]], profile) if len(aggs) > 1 else None
    if iv:
        details["throughput_interval"] = iv
    alone = preds[0]
    return Rotation(
        engine=alone.engine,
        servers=scenario.servers.count, bottleneck=b, throughput_mops=agg, normalized_x=nx,
        cache_hit_ratio=float(full.hit_ratio), partition_mops=part.tolist(),
        partition_server_mops=server.tolist(), rotations=len(runs),
        details={**details, "bottleneck_alone_mops": float(alone.throughput_mops),
                 "bottleneck_alone_process_us": float(alone.servers[0].process_us),
                 "bottleneck_alone_wait_us": float(alone.servers[0].wait_us),
                 "rotation_pktloss_max": float(max(p.pktloss for p in preds)),
                 "workload_normalized_x": float(full.normalized_x)})
