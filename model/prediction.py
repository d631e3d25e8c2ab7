"""What a model says: the prediction.

Both engines, the analytic model (:func:`model.predict.predict`) and the
simulator (``sim``), return a :class:`Prediction`, so they can be compared
field by field. Field names carry their units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
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
    bottleneck: str                 # e.g. "server 3 (CPU)" or "clients"
    servers: list[ServerPrediction]
    client: ClientPrediction
    pktloss: float = 0.0            # packets lost per run
    false_pos: float = 0.0          # duplicate responses per run
    stall_fraction: float = 0.0     # fraction of time writes are stalled by RocksDB
    details: dict[str, Any] = field(default_factory=dict)   # engine-specific extras (units in key names)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
