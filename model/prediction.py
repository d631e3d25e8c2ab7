"""What a model says: the prediction.

Every solver of the rack (the analytic one and both simulator engines)
returns a :class:`Prediction`, built the same way from its
:class:`~model.rack.bottleneck.Outcome` by :func:`from_outcome`, so they can
be compared field by field. Field names carry their units.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .rack.bottleneck import Bottleneck, Outcome, classify
from .rack import clients as cl_mech, service as svc_mech
from .rack.arrays import per_worker


@dataclass(slots=True)       # slots: a rack can have thousands of workers
class ServerPrediction:
    share: float            # fraction of all requests that reach this worker (after the cache)
    utilization: float      # busy fraction of the worker, 0..1
    wait_us: float          # idle time + receive call between requests, as the notes define it
    process_us: float       # receive -> reply sent
    share_nocache: float = 0.0  # fraction without the cache


@dataclass
class ClientPrediction:
    send_us: float          # per-request client send cost
    latency_us: float       # mean response time seen by a client thread


@dataclass
class Prediction:
    engine: str                     # "analytic" or "sim"
    throughput_mops: float          # replies per second seen by clients, M/s
    cache_hit_ratio: float          # fraction of requests answered by the switch
    normalized_x: float             # workload-determined gain over NoCache
    bottleneck: Bottleneck          # what limits the rack (kind, workers, share, evidence)
    servers: list[ServerPrediction]
    client: ClientPrediction
    pktloss: float = 0.0            # packets lost per run
    false_pos: float = 0.0          # resent packets per run (the notes' false positives)
    stall_fraction: float = 0.0     # fraction of worker time writes are stopped or blocked
    details: dict[str, Any] = field(default_factory=dict)   # solver-specific extras (units in key names)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["bottleneck"]["text"] = self.bottleneck.text()
        return d


def from_outcome(spec, outcome: Outcome, engine: str, details: dict[str, Any]) -> Prediction:
    """The prediction of a solver's outcome on the compiled rack ``spec``."""
    pl = spec.placement
    n_srv = spec.servers
    # plain floats, one list per field, positional: a rack can have thousands
    # of workers
    wait = np.asarray(outcome.wait_us, dtype=float)[:n_srv]
    servers = list(map(ServerPrediction,
                       per_worker(pl, "shares")[:n_srv].tolist(),
                       np.fmin(1.0, np.asarray(outcome.util, dtype=float)[:n_srv]).tolist(),
                       np.where(np.isfinite(wait), wait, math.inf).tolist(),
                       np.asarray(outcome.process_us, dtype=float)[:n_srv].tolist(),
                       per_worker(pl, "shares_nocache")[:n_srv].tolist()))
    n = max(spec.servers, 1)
    # a worker is stopped or blocked, not both at once: the two mean-value
    # fractions can add past 1 at a rack that stalls nearly all the time
    stalled = float(np.sum(np.minimum(1.0, np.asarray(outcome.stall_frac)
                                      + np.asarray(outcome.block_frac))) / n)
    return Prediction(
        engine=engine, throughput_mops=float(outcome.throughput_mops),
        cache_hit_ratio=float(pl.hit_ratio), normalized_x=float(pl.normalized_x),
        bottleneck=classify(outcome, per_worker(pl, "shares"), spec.service.cores,
                            spec.clients.timeout_us / 1e3),
        servers=servers,
        client=ClientPrediction(send_us=float(spec.clients.send_us),
                                latency_us=float(outcome.latency_us)),
        pktloss=float(outcome.pktloss), false_pos=float(outcome.false_pos),
        stall_fraction=stalled, details=details)


def no_goodput(spec, engine: str, reason: str) -> Prediction:
    """The prediction of a rack where no request can complete (``reason``, from
    :func:`model.rack.clients.no_completion`): zero throughput, infinite
    latency, and the servers busy with the resends of the stuck threads.

    Each thread ends up stuck on a request drawn like any other, so worker i
    holds a fraction ``s_i / sum(s)`` of them, each resending one packet per
    send + timeout (plus the write-backs). A worker serves those packets at
    its cost with no load effects, up to being busy all the time; what it
    cannot serve overflows its buffer. Per-run counts (lost and resent
    packets) are infinite: the run never ends."""
    pl, sv, c = spec.placement, spec.service, spec.clients
    s = per_worker(pl, "shares")
    stuck = s / s.sum() if s.sum() > 0 else np.zeros_like(s)
    arrivals = c.threads * stuck * cl_mech.storm_packets_per_us(c) + \
        pl.evict_per_us * per_worker(pl, "evict_probs")
    S = svc_mech.first_cost(sv) + sv.recv_floor_us + sv.gap_us
    served = np.minimum(arrivals, 1.0 / S)
    util = served * S
    with np.errstate(divide="ignore"):
        wait = np.where(served > 0, np.maximum(1.0 / np.where(served > 0, served, 1.0)
                                               - (S - sv.recv_floor_us), sv.recv_floor_us),
                        math.inf)
    overflow = bool(np.any(arrivals > served * (1 + 1e-9)))
    zeros = np.zeros(spec.servers)
    outcome = Outcome(
        throughput_mops=0.0, util=util, wait_us=wait, process_us=S - sv.recv_floor_us - sv.gap_us,
        stall_frac=zeros, block_frac=zeros, stretch=np.ones(spec.servers), latency_us=math.inf,
        timeout_share=1.0, lost_per_request=math.inf,
        pktloss=math.inf if overflow else 0.0, false_pos=math.inf)
    pred = from_outcome(spec, outcome, engine, {"no_goodput": reason,
                                                "resend_packets_per_us": float(arrivals.sum())})
    shortest = cl_mech.shortest_reply_us(c, pl.hit_ratio)
    pred.bottleneck = Bottleneck("no-replies", [], 1.0, {"timeout_ms": c.timeout_us / 1e3,
                                                         "shortest_reply_us": float(shortest)})
    return pred


#: the client latency's percentiles every rack prediction carries (us)
LATENCY_PERCENTILES = ("p50", "p95", "p99")


def latency_columns(p: "Prediction", prefix: str = "latency",
                    keys: tuple[str, ...] = LATENCY_PERCENTILES) -> dict[str, float]:
    """The client latency: its mean (Little's law) and percentiles ``keys``, us
    (``latency_us``, ``latency_p50_us``, ...; NaN where a solver gives none)."""
    pc = (p.details or {}).get("latency_us_percentiles") or {}
    out = {f"{prefix}_us": p.client.latency_us}
    for k in keys:
        v = pc.get(k)
        out[f"{prefix}_{k}_us"] = float(v) if isinstance(v, (int, float)) else float("nan")
    return out
