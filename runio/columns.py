"""A prediction as the measured columns of the reference CSVs, written once.

Batch prediction, fitting and validation all turn a
:class:`~model.prediction.Prediction` into the columns a row measured
through :func:`farreach_columns`; a per-server quantity follows the row's
``wait_stat`` (``avg`` / ``min`` / ``max`` over busy workers, or
``per-server``: one value per worker, as a list).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from model.errors import InputError
from model.prediction import Prediction

STATS = ("avg", "min", "max", "per-server")


def stat(values: Sequence[float], shares: Sequence[float], how: str):
    """Summarise a per-worker quantity as a row reports it (idle workers left out
    of min/max/avg; a per-server list keeps every worker)."""
    if how == "per-server":
        return [float(v) for v in values]
    live = [v for v, s in zip(values, shares) if s > 0 and math.isfinite(v)]
    if not live:
        return float("nan")
    if how == "min":
        return min(live)
    if how == "max":
        return max(live)
    if how == "avg":
        return sum(live) / len(live)
    raise InputError(f"{how!r} is not allowed; allowed: {', '.join(STATS)}", field="wait_stat")


def farreach_columns(p: Prediction, how: str = "avg") -> dict[str, Any]:
    """Every column of the FarReach rack's runs, breakdowns and tuning files."""
    shares = [s.share for s in p.servers]
    waits = [s.wait_us for s in p.servers]
    procs = [s.process_us for s in p.servers]
    out: dict[str, Any] = {
        "mops": p.throughput_mops,
        "wait_us": stat(waits, shares, how),
        "process_us": stat(procs, shares, how),
        "send_us": p.client.send_us,
        "client_send_avg": p.client.send_us,
        "pktloss": p.pktloss,
        "false_pos": p.false_pos,
        "normalized_x": p.normalized_x,
        "cache_hit": p.cache_hit_ratio,
    }
    for s in ("min", "max", "avg"):
        out[f"server_wait_{s}"] = stat(waits, shares, s)
        out[f"server_process_{s}"] = stat(procs, shares, s)
    return out
