"""Runs measured by standard benchmark tools: the YCSB client and RocksDB's db_bench.

``python -m calibrate ingest --format ycsb|dbbench`` turns their output into
rows of these two kinds (:mod:`calibrate.ycsb_output`,
:mod:`calibrate.dbbench_output`); this module says what the columns mean,
how a row becomes a :class:`~model.scenario.Scenario`, what the model
predicts of it, and registers both kinds so batch prediction and validation
read them like the reference kinds.

``ycsb_runs`` -- a YCSB run against the switch-cached rack. The scenario is
the embedded default (FarReach's default build as the public code runs it:
hash partitioning, stock YCSB keys) with the row's settings. Predicted:
``mops`` (YCSB's overall throughput) and ``latency_avg_us`` (the
operation-weighted mean of YCSB's per-operation average latency, against the
model's client response time), and each operation's p50, p95 and p99
latency (``read_p99_us`` ...) against the percentiles of the model's client
latency over all operations (:mod:`model.solvers.latency_tail`; the model
does not tell a read's response time from a write's). Kept but not
predicted: per-operation averages, min/max and p99.9, failed operations,
and the slowest status interval's throughput.

``dbbench_runs`` -- one db_bench benchmark (``readrandom``, ``fillrandom``,
...) on one RocksDB instance, no network. It is modelled as one worker of
the local native server (profile ``local``) doing the benchmark's op mix
back to back: ``op_us`` (db_bench's micros/op, per-thread time per
operation) is the worker's storage cost per request, and
``throughput_ops`` is ``threads`` such workers in parallel (capped at
``cores`` when given). Kept but not predicted: latency percentiles and the
write-stall counters of ``** DB Stats **`` / ``Stalls(count)``.
"""

from __future__ import annotations

from typing import Any, Mapping

from model.errors import InputError
from model.profile import Profile
from model.registry import RunKind, register
from model.rows import Row, cell, choice, number
from model.scenario import Scenario

# ---------------------------------------------------------------------------
# YCSB
# ---------------------------------------------------------------------------

#: YCSB measurement names -> column prefixes (other operations still count in
#: the totals and the mean latency).
YCSB_OPS = {"READ": "read", "UPDATE": "update", "INSERT": "insert", "SCAN": "scan",
            "READ-MODIFY-WRITE": "rmw"}
#: per-operation statistics: column suffix -> meaning
YCSB_OP_STATS = ("count", "avg_us", "min_us", "max_us", "p50_us", "p95_us", "p99_us",
                 "p999_us", "failed")
YCSB_CONFIG = ("id", "block", "system", "servers", "clients", "timeout_ms", "records",
               "read_ratio", "queries_m", "distribution", "memtable_mb", "flushnum", "maxnum",
               "wal", "seq_check", "db", "value_bytes", "source", "note")
#: per-operation percentiles predicted: the client latency's percentiles of
#: all operations (the rack model does not tell a read's response time from a
#: write's: both wait in the same worker queues, which dominate at load)
YCSB_PERCENTILES = ("p50_us", "p95_us", "p99_us")
YCSB_PREDICTED = ("mops", "latency_avg_us") + tuple(
    f"{op}_{st}" for op in YCSB_OPS.values() for st in YCSB_PERCENTILES)
YCSB_UNPREDICTED = tuple(f"{op}_{st}" for op in YCSB_OPS.values() for st in YCSB_OP_STATS
                         if st != "count" and st not in YCSB_PERCENTILES) + \
    ("throughput_min_ops",)
YCSB_COLUMNS = YCSB_CONFIG + ("runtime_ms", "throughput_ops", "mops", "latency_avg_us") + \
    ("throughput_min_ops",) + tuple(f"{op}_{st}" for op in YCSB_OPS.values()
                                    for st in YCSB_OP_STATS)

SYSTEMS = {"farreach": (True, "write-back"), "netcache": (True, "read-only"),
           "nocache": (False, "write-back"), "farreach-nocache": (False, "write-back")}
DISTRIBUTIONS = {"zipf": "zipf", "zipfian": "zipf", "uniform": "uniform",
                 "sequential": "sequential"}
ON_OFF = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False,
          "flush": True}
DBS = {"txn": "txn", "normal": "normal"}
SEQ = {k: k for k in ("disk-get", "none", "seq-cache", "evicted-only")}


def _scenario(base: Scenario, changes: Mapping[str, tuple[Any, str]]) -> Scenario:
    """``base`` with ``{scenario key: (value, CSV column)}``; an out-of-range value
    is reported under the user's column, not the scenario key."""
    try:
        return base.updated({k: v for k, (v, _) in changes.items()})
    except InputError as exc:
        col = changes.get(exc.field or "", (None, exc.field))[1]
        raise InputError(exc.detail, field=col) from None


def _optional(row: Row, ch: dict, col: str, key: str, **kw) -> None:
    if cell(row, col) is not None:
        ch[key] = (number(row, col, **kw), col)


def ycsb_scenario(row: Row, base: Scenario | None = None) -> Scenario:
    """Scenario of one ycsb_runs row: the default rack with the row's settings."""
    cache, mode = choice(row, "system", SYSTEMS, "farreach")
    ch: dict[str, tuple[Any, str]] = {
        "switch.cache": (cache, "system"), "switch.mode": (mode, "system"),
        "servers.count": (number(row, "servers", integer=True, minimum=1), "servers"),
        "clients.threads": (number(row, "clients", integer=True, minimum=1), "clients"),
        "workload.read_ratio": (number(row, "read_ratio", 0.5, minimum=0.0), "read_ratio"),
        "workload.distribution": (choice(row, "distribution", DISTRIBUTIONS, "zipf"),
                                  "distribution"),
    }
    _optional(row, ch, "timeout_ms", "clients.timeout_ms", minimum=1e-3)
    _optional(row, ch, "records", "workload.records", integer=True, minimum=1)
    _optional(row, ch, "queries_m", "workload.queries_m", minimum=0.001)
    _optional(row, ch, "value_bytes", "workload.value_bytes", integer=True, minimum=0)
    _storage(row, ch)
    if cell(row, "seq_check") is not None:
        ch["servers.seq_check"] = (choice(row, "seq_check", SEQ), "seq_check")
    return _scenario(base or Scenario.default(), ch)


def _storage(row: Row, ch: dict) -> None:
    _optional(row, ch, "memtable_mb", "storage.memtable_mb", minimum=0.0625)
    _optional(row, ch, "flushnum", "storage.flushnum", integer=True, minimum=1)
    _optional(row, ch, "maxnum", "storage.maxnum", integer=True, minimum=2)
    if cell(row, "wal") is not None:
        ch["storage.wal"] = (choice(row, "wal", ON_OFF), "wal")
    if cell(row, "db") is not None:
        ch["storage.db"] = (choice(row, "db", DBS), "db")


def _predict_ycsb(row: Row, profile: Profile) -> dict[str, Any]:
    from model.prediction import latency_columns
    from model.solvers import predict
    p = predict(ycsb_scenario(row), profile)
    out = {"pred_mops": p.throughput_mops, "pred_latency_avg_us": p.client.latency_us}
    lat = latency_columns(p)
    for op in YCSB_OPS.values():
        if cell(row, f"{op}_count") is not None:        # the operations the run did
            for st in YCSB_PERCENTILES:
                out[f"pred_{op}_{st}"] = lat[f"latency_{st}"]
    return out


YCSB_KIND = register(RunKind(
    name="ycsb_runs",
    signature=frozenset({"system", "servers", "clients", "throughput_ops", "latency_avg_us"}),
    profile="tofino-testbed", measured=YCSB_PREDICTED, unpredicted=YCSB_UNPREDICTED,
    predict_row=_predict_ycsb,
    description="YCSB client runs against the rack (calibrate ingest --format ycsb)"))

# ---------------------------------------------------------------------------
# db_bench
# ---------------------------------------------------------------------------

#: benchmark -> GET fraction (None: the row must say, as ``read_ratio``)
DBBENCH_READS = {"readrandom": 1.0, "readseq": 1.0, "readreverse": 1.0, "readhot": 1.0,
                 "readmissing": 1.0, "multireadrandom": 1.0, "fillrandom": 0.0,
                 "fillseq": 0.0, "fillsync": 0.0, "filluniquerandom": 0.0, "fill100K": 0.0,
                 "overwrite": 0.0, "updaterandom": 0.5, "readrandomwriterandom": None,
                 "readwhilewriting": None}
DBBENCH_CONFIG = ("id", "block", "benchmark", "threads", "num", "key_bytes", "value_bytes",
                  "read_ratio", "memtable_mb", "flushnum", "maxnum", "wal", "cores", "source",
                  "note")
DBBENCH_PREDICTED = ("op_us", "throughput_ops")
DBBENCH_STALLS = ("stall_s", "stall_pct", "stall_delays", "stall_stops", "stall_l0_delays",
                  "stall_l0_stops", "stall_memtable_delays", "stall_memtable_stops",
                  "stall_pending_delays", "stall_pending_stops")
DBBENCH_LATENCY = ("op_avg_us", "op_p50_us", "op_p75_us", "op_p95_us", "op_p99_us",
                   "op_p999_us", "op_p9999_us", "op_max_us")
DBBENCH_UNPREDICTED = DBBENCH_LATENCY + DBBENCH_STALLS
DBBENCH_COLUMNS = DBBENCH_CONFIG + DBBENCH_PREDICTED + \
    ("rate_mb_s", "elapsed_s", "operations", "found", "hist_op") + DBBENCH_UNPREDICTED


def dbbench_read_ratio(row: Row) -> float:
    """The GET fraction of a row: its ``read_ratio``, else what its benchmark does."""
    if cell(row, "read_ratio") is not None:
        return number(row, "read_ratio", minimum=0.0)
    bench = cell(row, "benchmark")
    known = DBBENCH_READS.get(bench or "")
    if known is None:
        raise InputError(f"give read_ratio for benchmark {bench!r} (kvperf knows the mix of "
                         + ", ".join(k for k, v in DBBENCH_READS.items() if v is not None) + ")",
                         field="read_ratio")
    return known


def dbbench_scenario(row: Row, base: Scenario | None = None) -> Scenario:
    """Scenario of one dbbench_runs row: one unpinned worker, no switch, uniform keys."""
    ops = number(row, "operations", 0.0, minimum=0.0) or number(row, "num", 1e6, minimum=1.0)
    ch: dict[str, tuple[Any, str]] = {
        "switch.cache": (False, "benchmark"), "switch.partition": ("hash", "benchmark"),
        "servers.count": (1, "threads"), "servers.machines": (1, "threads"),
        "servers.pinned": (False, "threads"),
        # db_bench writes without reading a sequence number first, into a plain DB
        "servers.seq_check": ("none", "benchmark"), "storage.db": ("normal", "benchmark"),
        "workload.distribution": ("uniform", "benchmark"),
        "workload.read_ratio": (dbbench_read_ratio(row), "read_ratio"),
        "workload.records": (number(row, "num", 1_000_000, integer=True, minimum=1), "num"),
        "workload.queries_m": (max(ops / 1e6, 0.001), "operations"),
    }
    _optional(row, ch, "key_bytes", "workload.key_bytes", integer=True, minimum=1)
    _optional(row, ch, "value_bytes", "workload.value_bytes", integer=True, minimum=0)
    _storage(row, ch)
    return _scenario(base or Scenario.default(), ch)


def _predict_dbbench(row: Row, profile: Profile) -> dict[str, Any]:
    from model.rack import compile_rack
    from model.rack.service import first_cost
    threads = number(row, "threads", 1, integer=True, minimum=1)
    cores = number(row, "cores", 0, integer=True, minimum=0)
    cost_us = float(first_cost(compile_rack(dbbench_scenario(row), profile).service)[0])
    parallel = min(threads, cores) if cores else threads
    return {"pred_op_us": cost_us, "pred_throughput_ops": parallel * 1e6 / cost_us}


DBBENCH_KIND = register(RunKind(
    name="dbbench_runs",
    signature=frozenset({"benchmark", "threads", "op_us", "throughput_ops"}),
    profile="local", measured=DBBENCH_PREDICTED, unpredicted=DBBENCH_UNPREDICTED,
    predict_row=_predict_dbbench,
    description="RocksDB db_bench benchmarks (calibrate ingest --format dbbench)"))
