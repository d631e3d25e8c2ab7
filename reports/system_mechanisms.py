"""What sets a system's saturation, peak and collapse, in words (:func:`mechanisms`).

The texts of a system page's summary: per reference system of
:mod:`model.systems`, what its model (the docstrings of ``model/systems/*.py``)
says limits throughput, with the profile's numbers filled in; for another
system, the first paragraph of its curves' module docstring.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Sequence

from model.profile import Profile
from model.systems.base import System

from .units import fmt


def _p(prof: Profile, key: str, unit: str, scale: float = 1.0) -> str:
    # a profile value with its unit, or its name where the profile lacks it
    return fmt(prof.get(key, float("nan")) * scale, unit) if key in prof else f"{key} (not set)"


def mechanisms(sysm: System, prof: Profile, pred: Sequence[Mapping[str, Any]]) -> list[str]:
    """Short texts naming what sets saturation, peak and collapse (from the model docstrings)."""
    caps: dict[str, float] = {}
    for r in pred:
        for k in ("capacity_kops", "capacity_ops"):
            if isinstance(r.get(k), (int, float)):
                caps[f"{r['series']}|{k}"] = r[k]
    name = sysm.name
    if name == "morphling-c":
        cap = next((v for k, v in caps.items() if k.startswith("unreplicated|")), None)
        return [
            "Saturation: every read queues at one single-threaded serving replica thread that "
            f"spends server_us = {_p(prof, 'server_us', 'µs')} of CPU per read, so throughput "
            f"levels off at 1/server_us ≈ {fmt(cap, 'Kops') if cap else '–'} however many client "
            "threads there are. The knee is the balanced-bound N* = (Z + D) / D_max client "
            f"threads, with Z the client + network delay (net_us = {_p(prof, 'net_us', 'µs')}; "
            f"guidance reads take the shorter guidance_net_us = {_p(prof, 'guidance_net_us', 'µs')}"
            ", so they saturate at fewer threads).",
            "No peak or collapse: nothing in this closed loop gets slower with load.",
            "Source: model/systems/morphling.py (C implementation).",
        ]
    if name == "morphling-go":
        capl = "; ".join(f"{k.split('|')[0]} {fmt(round(v), 'ops/s')}" for k, v in caps.items())
        who = {r["series"]: r.get("bottleneck", "") for r in pred if r.get("bottleneck")}
        return [
            "Closed loop of clients = 2 × conns_per_client connections on 2 client machines "
            "(Little's law: clients = ops/s × latency). Who serves a read: an unreplicated read "
            "crosses 2 network hops and the server node's pool of "
            f"{_p(prof, 'server_cores', 'cores')} (an assumption: one serial loop cannot carry "
            f"the measured 33-34 Kops; read_us = {_p(prof, 'read_us', 'µs')} each); a Morphling "
            "read crosses the same 2 hops and is "
            f"served by one of {_p(prof, 'morphling_replicas', 'replicas')} (an assumption "
            "that matches the public benchmark's plateau), skipping the log, and its "
            "guidance check adds "
            f"morphling_extra_us = {_p(prof, 'morphling_extra_us', 'µs')} of delay; a Raft read "
            "crosses 4 hops (client → leader → followers → leader → client) plus a quorum delay "
            f"(quorum_us = {_p(prof, 'quorum_us', 'µs')}): the leader's pool serves the read and "
            "one exchange with each follower (the entry out, the ack back), so it does "
            f"{_p(prof, 'replicas', '')} × read_us per Raft read. The client machines' CPU "
            f"(client_cpu_us = {_p(prof, 'client_cpu_us', 'µs')} per read) caps Morphling reads, "
            "the server's pool unreplicated reads: both costs come from the peaks the notes "
            "state (44 and 40 Kops at 50 connections per client machine), not from the rows.",
            f"Network stack: each hop costs hop_us = {_p(prof, 'hop_us', 'µs')} of pure delay, "
            f"plus wake_us = {_p(prof, 'wake_us', 'µs')} when the receiving node's threads are "
            "parked; that extra falls as exp(−rate × spin_us) under load, which is why Raft "
            "latency drops from 2 to 8 clients.",
            "Saturation: the resource with the largest demand per core sets the ceiling, and "
            "past the knee N* = (Z + D)/D_max latency grows linearly with clients. A loop's "
            "time per read is a fixed code path (loop_scv = "
            f"{_p(prof, 'loop_scv', '')}), so below the knee a read waits at most about half a "
            "read for the one in service and the curve bends late: " + capl
            + " (" + "; ".join(f"{k}: {v}" for k, v in who.items()) + "). No collapse: "
            "nothing in this loop gets slower per read with load.",
            "Source: model/systems/morphling.py (Go implementation).",
        ]
    if name == "runtimes":
        return [
            "Saturation: the server's c cores are busy; QPS reaches 90 % of the pool capacity "
            "c/s, where one request costs s = (service_us + per_kb_us × KB) × scaling(c) × "
            "(1 + kappa × N/c). Before that every connection is a closed loop whose ~2.3 ms "
            "client + network delay sets QPS = connections / latency.",
            "Peak: kappa is per-connection contention (poll set, buffers, cache footprint per "
            "core), so the saturated throughput c/s falls as connections grow and each "
            "runtime peaks; the runtime's best QPS is that maximum.",
            "Collapse: past the peak, the first point below 90 % of the peak. Tokio shares a "
            "work-stealing scheduler between cores (a multi-thread penalty plus USL serial and "
            "coherency terms), so it scales poorly past 8 cores; Glommio and Monoio are "
            "thread-per-core (scaling = 1).",
            "Source: model/systems/runtimes.py.",
        ]
    if name == "thread-coroutine":
        return [
            "Each connection sends on a timer and all timers fire in phase, so every interval "
            "brings a burst of N requests that must drain through the scheduler.",
            "Saturation (thread model): every one of the 3 stage handoffs is a kernel context "
            "switch whose cost grows with the runnable threads per core, so the serial cost "
            "per request grows with connections and the burst wait with N²; at a few tens of "
            f"connections (16–32 measured; server_cores = {_p(prof, 'server_cores', 'cores')}) "
            "the burst no longer drains within the interval and latency explodes.",
            "Coroutine model: a constant user-space switch "
            f"(coroutine_switch_us = {_p(prof, 'coroutine_switch_us', 'µs')}), so latency stays "
            "low and no saturation is predicted in range. Priorities: below saturation each "
            "class waits the non-preemptive priority M/G/c time; past it (1 vCPU) the client's "
            "one poll thread runs late, every tick period stretches to the pool's capacity, "
            "and each class's connections arrive as one burst: the mean wait over the classes "
            "is that of periodic bursts at load 1 (Benes), the top class waits for its own "
            "burst only, and the classes between step up linearly.",
            "Source: model/systems/threads.py.",
        ]
    mod = sys.modules.get(getattr(sysm.curves, "__module__", ""), None)
    doc = (getattr(mod, "__doc__", "") or "").strip().split("\n\n")
    return [" ".join(doc[0].split())] if doc and doc[0] else []
