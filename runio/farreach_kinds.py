"""The FarReach rack's run kinds: how a row of its CSVs becomes a scenario and predictions.

Three kinds, recognised by their headers: ``farreach_runs`` (summarised
runs), ``farreach_tuning`` (the 16-server memtable series) and
``farreach_breakdown`` (client/server min-max-avg breakdowns). Every row
describes the lab's rack, so its scenario names the lab's calibrated
workload profile (``workload.profile = "lab"``, docs/workload.md) and the
range partitioning the notes used, besides the row's own settings. Predicted columns come from
:func:`runio.columns.farreach_columns`.
"""

from __future__ import annotations

from typing import Any

from .columns import farreach_columns
from model.errors import InputError
from model.registry import RackForm, RunKind, register
from .row_prediction import rack_predict_row
from model.rows import Row, cell, choice, number, scenario_from_columns
from model.scenario import Scenario

FITTER = "calibrate.farreach:FarReachFitter"
LAB_WORKLOAD = "lab"
LAB_MACHINES = 2
LAB_CORES = 24
TUNING_CLIENT_MACHINES = 2
TUNING_TIMEOUT_MS = 5000.0
#: (flush threads, compaction threads) of the tuning series' variants: bg12
#: and bg16 set them, the later variants keep bg16's (data README)
TUNING_BG_THREADS = {"bg12": (12, 4), "bg16": (16, 4)}
TUNING_L0_FILES = 16
TUNING_L1_MB = 16 * 512.0

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
        # the lab's rack: its key popularity and layout, range partitioning,
        # its two server machines of 24 cores each ("128 workers on 48
        # cores", docs/domain.md)
        "workload.profile": LAB_WORKLOAD,
        "switch.partition": "range",
        "servers.machines": LAB_MACHINES,
        "servers.cores": LAB_CORES,
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
        # The tuning series pins workers and keeps RocksDB threads off their
        # cores (from its first variant, rocksdb-affinity, on).
        ch["servers.pinned"] = True
        ch["servers.bg_on_worker_cores"] = False
        # bg12 / bg16: 12 or 16 flush threads and 4 compaction threads, kept
        # by every later variant (the data README)
        threads = TUNING_BG_THREADS.get(cell(row, "variant"))
        if threads is None and cell(row, "variant") not in ("rocksdb-affinity",):
            threads = TUNING_BG_THREADS["bg16"]
        if threads is not None:
            ch["servers.flush_threads"], ch["servers.compaction_threads"] = threads
            # ... with 512 MB SST files and 16 L0/L1 files: an L0 compaction
            # at 16 files, L1 of 16 x 512 MB
            ch["storage.l0_files"] = TUNING_L0_FILES
            ch["storage.l1_mb"] = TUNING_L1_MB
        # ... and its clients sent from two machines: its plain-DB runs reach
        # 1.4-1.7 MOPS (T18, T38), while the F series' runs level off at
        # 1.05-1.08 MOPS from 512 to 1,024 threads with their servers not
        # saturated (F096, F108, F112: more than one client machine sends;
        # docs/domain.md, "clients ran on one or two machines").
        ch["clients.machines"] = TUNING_CLIENT_MACHINES
        # It is the late series (after the v6 runs, all with enlarged receive
        # buffers): "as loss was rare once buffers were enlarged, the lab kept
        # a long default timeout" -- the public client's 5 s
        # (CLIENT_SOCKET_TIMEOUT_SECS, docs/domain.md section 5). Its CSV has
        # neither column; a row that has them keeps its own.
        if "rcvbuf" not in row:
            ch["servers.rcvbuf_kb"] = RCVBUF_KB["large"]
        if "timeout_ms" not in row:
            ch["clients.timeout_ms"] = TUNING_TIMEOUT_MS
    return scenario_from_columns(base, ch, COLUMN_OF)


#: the CSV column each scenario key of a row comes from (errors name the column)
COLUMN_OF = {
    "switch.cache": "system", "switch.mode": "system", "servers.count": "servers",
    "clients.threads": "clients", "workload.queries_m": "queries_m",
    "clients.timeout_ms": "timeout_ms", "workload.distribution": "workload",
    "storage.memtable_mb": "memtable_mb", "storage.flushnum": "flushnum",
    "storage.maxnum": "maxnum", "storage.wal_bytes_per_sync_mb": "wal_bytes_per_sync_mb",
    "storage.wal": "wal", "storage.db": "db", "servers.seq_check": "seq_check",
    "servers.pinned": "affinity", "servers.rcvbuf_kb": "rcvbuf",
    "servers.bg_on_worker_cores": "variant", "servers.flush_threads": "variant",
    "servers.compaction_threads": "variant", "storage.l0_files": "variant",
    "storage.l1_mb": "variant",
}


def wait_stat(row: Row) -> str:
    """How a row reports server wait/process: avg, min, max or per-server."""
    stat = cell(row, "wait_stat", "avg")
    if stat not in ("avg", "min", "max", "per-server"):
        raise InputError(f"{stat!r} is not allowed; allowed: avg, min, max, per-server",
                         field="wait_stat")
    return stat


def _runs_scenarios(row: Row) -> list[Scenario]:
    sc = farreach_scenario(row)
    wait_stat(row)                       # checked before any solving
    # A cached row's runtime_x is against NoCache with the same settings; rows
    # that share those settings share the baseline (solved once per batch).
    return [sc, sc.updated({"switch.cache": False})] if sc.switch.cache else [sc]


def _runs_columns(row: Row, preds: list) -> dict[str, Any]:
    p = preds[0]
    out = {k: v for k, v in farreach_columns(p, wait_stat(row)).items() if k in RUNS_MEASURED}
    if len(preds) > 1:
        out["runtime_x"] = p.throughput_mops / preds[1].throughput_mops
    else:
        out["runtime_x"] = 1.0
        out["normalized_x"] = 1.0
    return out


def _one_scenario(row: Row) -> list[Scenario]:
    return [farreach_scenario(row)]


def _tuning_columns(row: Row, preds: list) -> dict[str, Any]:
    return {"mops": preds[0].throughput_mops}


def _breakdown_columns(row: Row, preds: list) -> dict[str, Any]:
    cols = farreach_columns(preds[0])
    return {k: cols[k] for k in BREAKDOWN_MEASURED}


RUNS_MEASURED = ("mops", "wait_us", "process_us", "send_us", "pktloss", "false_pos",
                 "runtime_x", "normalized_x")
BREAKDOWN_MEASURED = ("mops", "client_send_avg", "server_wait_min", "server_wait_max",
                      "server_wait_avg", "server_process_min", "server_process_max",
                      "server_process_avg", "cache_hit")

register(RunKind(
    name="farreach_runs",
    signature=frozenset({"system", "servers", "clients", "memtable_mb", "seq_check", "wait_stat"}),
    profile="tofino-testbed",
    measured=RUNS_MEASURED,
    predict_row=rack_predict_row("farreach_runs"), fitter=FITTER,
    rack=RackForm(_runs_scenarios, _runs_columns),
    description="summarised runs of the switch-cached KV rack"))

register(RunKind(
    name="farreach_tuning",
    signature=frozenset({"system", "servers", "clients", "memtable_mb", "variant"}),
    profile="tofino-testbed",
    measured=("mops",),
    predict_row=rack_predict_row("farreach_tuning"), fitter=FITTER,
    rack=RackForm(_one_scenario, _tuning_columns),
    description="16-server memtable tuning series"))

register(RunKind(
    name="farreach_breakdown",
    signature=frozenset({"system", "servers", "clients", "server_wait_avg", "server_process_avg"}),
    profile="tofino-testbed",
    measured=BREAKDOWN_MEASURED,
    predict_row=rack_predict_row("farreach_breakdown"), fitter=FITTER,
    rack=RackForm(_one_scenario, _breakdown_columns),
    description="client/server min-max-avg breakdowns"))
