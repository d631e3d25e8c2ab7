"""Run kinds: how a row of a reference CSV becomes a scenario and predictions.

Each file in ``data/`` has a kind, recognised by its header. A
:class:`RunKind` knows the columns that identify it, the profile its system
is calibrated by, and how to predict the measured columns of one row; the
result is a dict ``{"pred_<column>": value}``. Batch prediction
(``python -m sim predict --runs``), fitting and validation all go through
this registry, so a kind is defined once.

The FarReach kinds live here; the other reference systems register theirs
from :mod:`model.systems`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .errors import InputError
from .predict import predict
from .prediction import Prediction
from .profile import Profile
from .scenario import Scenario

Row = Mapping[str, str]


@dataclass(frozen=True)
class RunKind:
    name: str
    signature: frozenset[str]            # columns that identify the kind
    profile: str                         # embedded profile calibrated for it
    measured: tuple[str, ...]            # columns it can predict
    predict_row: Callable[[Row, Profile], dict[str, Any]]
    description: str = ""
    extra: dict = field(default_factory=dict)


KINDS: dict[str, RunKind] = {}


def register(kind: RunKind) -> RunKind:
    KINDS[kind.name] = kind
    return kind


def detect(header: list[str], source: str | None = None) -> RunKind:
    """Pick the kind whose signature columns are all in the header (most specific wins)."""
    _load_all()
    cols = set(h.strip() for h in header)
    matches = [k for k in KINDS.values() if k.signature <= cols]
    if not matches:
        raise InputError(
            "cannot tell what kind of runs this is from its header; known kinds and "
            "their key columns: " + "; ".join(
                f"{k.name} ({', '.join(sorted(k.signature))})" for k in KINDS.values()),
            source=source, line=1)
    return max(matches, key=lambda k: len(k.signature))


def _load_all() -> None:
    # Other systems and the local native runs register on import; imported
    # here, not at module load, to keep `python -m sim predict` start-up fast.
    from . import local_runs, systems  # noqa: F401


# ---------------------------------------------------------------------------
# helpers for reading a row
# ---------------------------------------------------------------------------

def cell(row: Row, col: str, default: str | None = None) -> str | None:
    v = row.get(col)
    if v is None or str(v).strip() == "":
        return default
    return str(v).strip()


def number(row: Row, col: str, default: float | None = None, *, integer: bool = False,
           minimum: float | None = None) -> float | None:
    v = cell(row, col)
    if v is None:
        if default is None:
            raise InputError("missing value", field=col)
        return default
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"expected a number, got {v!r}", field=col) from None
    if not math.isfinite(x):
        raise InputError(f"expected a finite number, got {v!r}", field=col)
    if integer:
        if not x.is_integer():
            raise InputError(f"expected an integer, got {v!r}", field=col)
        x = int(x)
    if minimum is not None and x < minimum:
        raise InputError(f"{v} is below the minimum {minimum}", field=col)
    return x


def choice(row: Row, col: str, mapping: Mapping[str, Any], default: str | None = None):
    v = cell(row, col, default)
    if v is None:
        raise InputError(f"missing value; allowed: {', '.join(mapping)}", field=col)
    if v not in mapping:
        raise InputError(f"{v!r} is not allowed; allowed: {', '.join(mapping)}", field=col)
    return mapping[v]


# ---------------------------------------------------------------------------
# FarReach rack
# ---------------------------------------------------------------------------

SYSTEMS = {"nocache": False, "farreach-nocache": False, "farreach": True, "netcache": True}
WORKLOADS = {"zipf": "zipf", "uniform": "uniform", "uniform-seq": "sequential"}
WAL = {"flush": True, "off": False, "on": True}
RCVBUF_KB = {"default": 208, "large": 16384}
AFFINITY = {"0": False, "1": True}


def farreach_scenario(row: Row, base: Scenario | None = None) -> Scenario:
    """Scenario of one farreach_runs / farreach_tuning / farreach_breakdown row."""
    base = base or Scenario.default()
    ch: dict[str, Any] = {
        "switch.cache": choice(row, "system", SYSTEMS),
        "switch.mode": "read-only" if cell(row, "system") == "netcache" else "write-back",
        "servers.count": number(row, "servers", integer=True, minimum=1),
        "clients.threads": number(row, "clients", integer=True, minimum=1),
        "workload.queries_m": number(row, "queries_m", 10.0, minimum=0.001),
    }
    if "timeout_ms" in row:
        ch["clients.timeout_ms"] = number(row, "timeout_ms", base.clients.timeout_ms, minimum=1e-3)
    if "workload" in row:
        ch["workload.distribution"] = choice(row, "workload", WORKLOADS, "zipf")
    for col, key in (("memtable_mb", "storage.memtable_mb"), ("flushnum", "storage.flushnum"),
                     ("maxnum", "storage.maxnum"),
                     ("wal_bytes_per_sync_mb", "storage.wal_bytes_per_sync_mb")):
        if col in row and cell(row, col) is not None:
            ch[key] = number(row, col, integer=col in ("flushnum", "maxnum"))
    if "wal" in row:
        ch["storage.wal"] = choice(row, "wal", WAL, "flush")
    if "db" in row:
        ch["storage.db"] = choice(row, "db", {"txn": "txn", "normal": "normal"}, "txn")
    if "seq_check" in row:
        ch["servers.seq_check"] = choice(
            row, "seq_check", {k: k for k in ("disk-get", "none", "seq-cache", "evicted-only")},
            "evicted-only")
    if "affinity" in row:
        ch["servers.pinned"] = choice(row, "affinity", AFFINITY, "0")
    if "rcvbuf" in row:
        ch["servers.rcvbuf_kb"] = choice(row, "rcvbuf", RCVBUF_KB, "default")
    if "variant" in row:
        # The tuning series pins workers and keeps RocksDB threads off their cores.
        ch["servers.pinned"] = True
    try:
        return base.updated(ch, source=None)
    except InputError as exc:
        # name the CSV column rather than the scenario key where they differ
        raise exc.located() from None


def _stat(values: list[float], shares: list[float], stat: str):
    live = [v for v, s in zip(values, shares) if s > 0 and math.isfinite(v)]
    if not live:
        return float("nan")
    if stat == "min":
        return min(live)
    if stat == "max":
        return max(live)
    if stat == "per-server":
        return "|".join(f"{v:.4g}" if math.isfinite(v) else "inf" for v in values)
    return sum(live) / len(live)


def farreach_outputs(p: Prediction, stat: str) -> dict[str, Any]:
    shares = [s.share for s in p.servers]
    return {
        "mops": p.throughput_mops,
        "wait_us": _stat([s.wait_us for s in p.servers], shares, stat),
        "process_us": _stat([s.process_us for s in p.servers], shares, stat),
        "send_us": p.client.send_us,
        "pktloss": p.pktloss,
        "false_pos": p.false_pos,
        "normalized_x": p.normalized_x,
    }


def wait_stat(row: Row) -> str:
    """How a row reports server wait/process: avg, min, max or per-server."""
    stat = cell(row, "wait_stat", "avg")
    if stat not in ("avg", "min", "max", "per-server"):
        raise InputError(f"{stat!r} is not allowed; allowed: avg, min, max, per-server",
                         field="wait_stat")
    return stat


def _runs_row(row: Row, profile: Profile) -> dict[str, Any]:
    sc = farreach_scenario(row)
    p = predict(sc, profile)
    out = {f"pred_{k}": v for k, v in farreach_outputs(p, wait_stat(row)).items()}
    if sc.switch.cache:
        base = predict(sc.updated({"switch.cache": False}), profile)
        out["pred_runtime_x"] = p.throughput_mops / base.throughput_mops
    else:
        out["pred_runtime_x"] = 1.0
        out["pred_normalized_x"] = 1.0
    return out


def _tuning_row(row: Row, profile: Profile) -> dict[str, Any]:
    p = predict(farreach_scenario(row), profile)
    return {"pred_mops": p.throughput_mops}


def _breakdown_row(row: Row, profile: Profile) -> dict[str, Any]:
    p = predict(farreach_scenario(row), profile)
    shares = [s.share for s in p.servers]
    out = {"pred_mops": p.throughput_mops, "pred_client_send_avg": p.client.send_us,
           "pred_cache_hit": p.cache_hit_ratio}
    for stat in ("min", "max", "avg"):
        out[f"pred_server_wait_{stat}"] = _stat([s.wait_us for s in p.servers], shares, stat)
        out[f"pred_server_process_{stat}"] = _stat([s.process_us for s in p.servers], shares, stat)
    return out


register(RunKind(
    name="farreach_runs",
    signature=frozenset({"system", "servers", "clients", "memtable_mb", "seq_check", "wait_stat"}),
    profile="tofino-testbed",
    measured=("mops", "wait_us", "process_us", "send_us", "pktloss", "false_pos",
              "runtime_x", "normalized_x"),
    predict_row=_runs_row,
    description="summarised runs of the switch-cached KV rack"))

register(RunKind(
    name="farreach_tuning",
    signature=frozenset({"system", "servers", "clients", "memtable_mb", "variant"}),
    profile="tofino-testbed",
    measured=("mops",),
    predict_row=_tuning_row,
    description="16-server memtable tuning series"))

register(RunKind(
    name="farreach_breakdown",
    signature=frozenset({"system", "servers", "clients", "server_wait_avg", "server_process_avg"}),
    profile="tofino-testbed",
    measured=("mops", "client_send_avg", "server_wait_min", "server_wait_max",
              "server_wait_avg", "server_process_min", "server_process_max",
              "server_process_avg", "cache_hit"),
    predict_row=_breakdown_row,
    description="client/server min-max-avg breakdowns"))
