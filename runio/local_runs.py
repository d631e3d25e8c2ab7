"""The ``local_runs`` kind: runs of the native KV server on one machine.

``python -m calibrate run`` writes these rows; this module says how such a
row becomes a :class:`~model.scenario.Scenario` and which columns the model
predicts, and registers the kind with :mod:`model.registry` so batch prediction,
fitting and validation treat it like the reference kinds.

The native set-up differs from the Tofino rack in ways the scenario can
state: no switch (cache off, clients address each worker directly, hash
partitioning), one machine whose ``cores`` cores are shared by workers,
RocksDB background threads *and* the load generator's client threads,
unpinned workers unless ``pinned`` is 1, and a plain DB unless ``db`` is
``txn``. The load generator runs on the same machine and keeps about one
core busy sending and receiving (:data:`CLIENT_CORES`), so the scenario
gives the workers ``cores - 1`` cores (at least 1): with more busy workers
than that, the model's core-sharing term stretches their process time, as
the measurements show (2 workers on this 2-core machine process ~1.5x
slower than 1).

Columns (configuration, then measured):

========================  ==========================================================
``id``, ``plan``          row id and the plan it came from
``repeat``                repetition index of the same configuration
``workers``               server worker threads (= RocksDB instances)
``clients``               closed-loop client threads
``timeout_ms``            client resend timeout, ms
``memtable_mb`` ...       ``flushnum``, ``maxnum``, ``wal`` (on/off), ``db`` (normal/txn),
                          ``seq_check`` (disk-get/none/evicted-only: the server's
                          option; the load generator sends no sequence numbers,
                          so these runs are predicted without the check)
``pinned``                1 if workers are pinned to cores
``distribution``          zipf (YCSB scrambled zipfian 0.99) or uniform
``read_ratio``            GET fraction
``records``, ``value_bytes``  key space and PUT value size (B)
``duration_s``            measured run length bound, s; ``warmup_s`` before it
``max_requests``          request bound of the measured run
``cores``                 CPU cores of the machine
``flush_threads``         RocksDB flush threads (HIGH pool, shared by the workers)
``compaction_threads``    RocksDB compaction threads (LOW pool, shared)
``wal_bytes_per_sync_mb`` WAL writeback every this many MiB; 0 = off
``delayed_write_rate_mbps``  write rate while writes are delayed, MiB/s; 0 = RocksDB's
                          (16 MiB/s, or ``bg_write_mbps`` when that is set)
``bg_write_mbps``         flush + compaction write bandwidth (one rate limiter for all
                          workers, a disk's), MiB/s; 0 = unlimited
``l0_compaction_trigger`` ``l0_slowdown_trigger``, ``l0_stop_trigger``: RocksDB's
                          level0_* triggers in L0 files; 0 = RocksDB's 4, 20, 36
``preload``               1 if ``records`` records of ``value_bytes`` were loaded and
                          every DB closed and reopened before the run
``config_hash``           hash of the configuration columns (resume key)
``mops``                  replies per second seen by the clients, M/s
``wait_us``, ``process_us``   server wait / process per ``wait_stat`` (avg over busy workers)
``send_us``               client sendto() time, us
``response_us``           client response time, us (mean)
``response_p50_us`` ...   its p50, p90 and p99, us (``response_p90_us``, ``response_p99_us``)
``pktloss``               client timeouts in the run (lost requests or replies)
``false_pos``             replies that did not match the outstanding request
``completed``, ``elapsed_s``  requests answered and measured wall time, s
``worker_share``          per-worker fraction of requests, ``|``-separated
``external_cores``        cores kept busy by other processes during the run (interference)
``date``                  when the run ended (UTC, ISO 8601)
``per_second_kops``       completions in each whole second of the run, k ops/s,
                          ``|``-separated (the load generator's count)
(per worker, ``|``)       RocksDB's write path over the run, one value per worker
                          (= instance), from the server's listener and properties:
``memtables``             memtables sealed (memtable switches)
``flushes``, ``flush_mb``     flushes completed and the MB (10^6 B) of L0 files they wrote
``compactions``, ``compaction_mb``  compactions completed (trivial moves included) and
                          the MB they wrote
``flush_s``, ``compaction_s``  time spent in flushes and compactions, s
``stop_s``, ``stops``     s in RocksDB's Stopped write condition, and entries into it
``slow_s``, ``slows``     s in the Delayed condition, and entries into it
``stall_s``               s the worker's writes waited in RocksDB (STALL_MICROS)
``l0_files``              L0 files at the end of the run
``pending_compaction_mb`` estimate-pending-compaction-bytes at the end, MB
``l0_files_start``        L0 files when the run started (after the preload)
``pending_compaction_mb_start``  pending compaction MB when the run started
``sst_mb_start``          SST MB in the DB when the run started
``preload_s``             wall time of the preload (load, close, reopen), s; 0 without
========================  ==========================================================
"""

from __future__ import annotations

from typing import Any

from model.prediction import latency_columns

from .columns import farreach_columns
from .farreach_kinds import wait_stat
from model.profile import Profile
from model.registry import KINDS, RackForm, RunKind, register
from model.rows import choice, number, scenario_from_columns
from model.scenario import Scenario
from model.solvers import predict

CONFIG_COLUMNS = (
    "workers", "clients", "timeout_ms", "memtable_mb", "flushnum", "maxnum", "wal", "db",
    "seq_check", "pinned", "distribution", "read_ratio", "records", "value_bytes",
    "duration_s", "warmup_s", "max_requests", "cores", "repeat",
) + (
    # the write path (issue 50)
    "flush_threads", "compaction_threads", "wal_bytes_per_sync_mb", "delayed_write_rate_mbps",
    "bg_write_mbps", "l0_compaction_trigger", "l0_slowdown_trigger", "l0_stop_trigger",
    "preload",
)
#: measured per worker, ``|``-separated like ``worker_share``
WRITE_PATH_COLUMNS = ("memtables", "flushes", "compactions", "stop_s", "slow_s", "stops",
                      "slows", "stall_s", "l0_files", "pending_compaction_mb", "flush_mb",
                      "compaction_mb", "flush_s", "compaction_s", "l0_files_start",
                      "pending_compaction_mb_start", "sst_mb_start")
MEASURED_COLUMNS = ("mops", "wait_us", "process_us", "wait_stat", "send_us", "response_us",
                    "response_p50_us", "response_p90_us", "response_p99_us", "pktloss",
                    "false_pos", "completed", "elapsed_s", "worker_share", "external_cores",
                    "date", "per_second_kops") + WRITE_PATH_COLUMNS + ("preload_s",)
COLUMNS = ("id", "plan") + CONFIG_COLUMNS + ("config_hash",) + MEASURED_COLUMNS
CLIENT_CORES = 1          # cores the co-located load generator keeps busy
#: what RocksDB did per worker, predicted by the run's trajectory: column ->
#: (key of the prediction's details["lsm"], factor)
WRITE_PATH_PREDICTED = {"memtables": ("memtables", 1.0), "flushes": ("flushes", 1.0),
                        "compactions": ("compactions", 1.0), "stop_s": ("stop_s", 1.0),
                        "slow_s": ("slow_s", 1.0), "stops": ("stops", 1.0),
                        "slows": ("slows", 1.0), "l0_files": ("l0_files_end", 1.0),
                        # MiB -> MB, as the server counts them
                        "flush_mb": ("flush_mib", 1.048576),
                        "compaction_mb": ("compaction_mib", 1.048576)}
PREDICTED = ("mops", "wait_us", "process_us", "send_us", "pktloss", "false_pos", "response_us",
             "response_p50_us", "response_p90_us", "response_p99_us",
             *WRITE_PATH_PREDICTED)
#: the response-time percentiles the load generator's histogram gives
#: (``response_<p>_us``; the keys of ``details["latency_us_percentiles"]``)
RESPONSE_PERCENTILES = ("p50", "p90", "p99")

DISTRIBUTIONS = {"zipf": "zipf", "zipfian": "zipf", "uniform": "uniform"}
WAL = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False,
       "flush": True}
DB = {"normal": "normal", "txn": "txn"}
SEQ = {"disk-get": "disk-get", "none": "none", "evicted-only": "evicted-only"}
PINNED = {"0": False, "1": True, "false": False, "true": True}


def worker_cores(cores: int) -> int:
    """Cores left to the workers next to the load generator (0 = unknown: no limit)."""
    return 0 if cores <= 0 else max(1, cores - CLIENT_CORES)


def _effective_seq_check(row) -> str:
    """The seq check these runs really had. The ``seq_check`` column is the
    server's option (checked for a valid value), but no write of a local run
    carries a sequence number: the native load generator sends seq 0, which
    the server never checks (native/kv/handler.cpp, ``seq_checked``). So what
    ran is a server without the check, whatever the column says; predicting
    a seq GET per write (as until 2026-11-24) charged 60 of the 62 runs of
    calibrate/runs/local.csv for work they did not do."""
    choice(row, "seq_check", SEQ, "disk-get")
    return "none"


#: RocksDB's defaults a write-path column's 0 stands for (level0 triggers)
L0_DEFAULTS = {"l0_compaction_trigger": 4, "l0_slowdown_trigger": 20, "l0_stop_trigger": 36}
#: RocksDB's delayed_write_rate when none is set: the rate limiter's, else 16 MiB/s
DEFAULT_DELAYED_MBPS = 16.0


def _write_path_changes(row: Any) -> dict[str, Any]:
    """The write-path columns of a row (``calibrate/plans/writepath.toml``) as
    scenario keys; a row written before they existed reads as the server's
    defaults then (one flush and one compaction thread, no sync, no limiter,
    RocksDB's triggers, an empty database)."""
    limiter = number(row, "bg_write_mbps", 0.0, minimum=0.0)
    delayed = number(row, "delayed_write_rate_mbps", 0.0, minimum=0.0)
    ch: dict[str, Any] = {
        "servers.flush_threads": number(row, "flush_threads", 1, integer=True, minimum=1),
        "servers.compaction_threads": number(row, "compaction_threads", 1, integer=True,
                                             minimum=1),
        # one machine: RocksDB's threads share the workers' cores
        "servers.bg_on_worker_cores": True,
        "storage.wal_bytes_per_sync_mb": number(row, "wal_bytes_per_sync_mb", 0.0, minimum=0.0),
        "storage.rate_limit_mbps": limiter,
        # RocksDB takes the limiter's rate for an unset delayed_write_rate
        "storage.delayed_write_rate_mbps": delayed if delayed > 0 else
        (limiter if limiter > 0 else DEFAULT_DELAYED_MBPS),
        "storage.preloaded": choice(row, "preload", PINNED, "0"),
    }
    for col, key in (("l0_compaction_trigger", "storage.l0_files"),
                     ("l0_slowdown_trigger", "storage.l0_slowdown"),
                     ("l0_stop_trigger", "storage.l0_stop")):
        v = number(row, col, 0, integer=True, minimum=0)
        ch[key] = v if v > 0 else L0_DEFAULTS[col]
    return ch


def local_scenario(row: Any, base: Scenario | None = None) -> Scenario:
    """Scenario of one local_runs row (one machine, no switch)."""
    base = base or Scenario.default()
    completed = number(row, "completed", 0.0, minimum=0)
    bound = number(row, "max_requests", 1e5, minimum=1)
    queries = completed if completed and completed > 0 else bound
    ch: dict[str, Any] = {
        "switch.cache": False,
        "switch.partition": "hash",
        "servers.count": number(row, "workers", integer=True, minimum=1),
        "servers.machines": 1,
        "servers.cores": worker_cores(number(row, "cores", 0, integer=True, minimum=0)),
        "servers.pinned": choice(row, "pinned", PINNED, "0"),
        "servers.seq_check": _effective_seq_check(row),
        "clients.threads": number(row, "clients", integer=True, minimum=1),
        "clients.timeout_ms": number(row, "timeout_ms", 10.0, minimum=1e-3),
        "clients.retry": "strict",          # the native load generator's own rule
        # ... and its keys and their layout (docs/protocol.md): with YCSB's
        # instead the model split two workers' load 49/51 where they measured
        # 55/45 (calibrate/runs/writepath.csv, worker_share)
        "workload.generator": "kvperf",
        "storage.memtable_mb": number(row, "memtable_mb", 64.0, minimum=0.0625),
        "storage.flushnum": number(row, "flushnum", 1, integer=True, minimum=1),
        "storage.maxnum": number(row, "maxnum", 2, integer=True, minimum=2),
        "storage.wal": choice(row, "wal", WAL, "on"),
        "storage.db": choice(row, "db", DB, "normal"),
        "workload.distribution": choice(row, "distribution", DISTRIBUTIONS, "zipf"),
        "workload.read_ratio": number(row, "read_ratio", 0.5, minimum=0.0),
        "workload.records": number(row, "records", 1_000_000, integer=True, minimum=1),
        "workload.value_bytes": number(row, "value_bytes", 128, integer=True, minimum=0),
        "workload.queries_m": max(queries / 1e6, 0.001),
        **_write_path_changes(row),
    }
    return scenario_from_columns(base, ch, COLUMN_OF)


#: the CSV column each scenario key of a row comes from (errors name the column)
COLUMN_OF = {
    "servers.count": "workers", "servers.cores": "cores", "servers.pinned": "pinned",
    "servers.seq_check": "seq_check", "clients.threads": "clients",
    "clients.timeout_ms": "timeout_ms", "storage.memtable_mb": "memtable_mb",
    "storage.flushnum": "flushnum", "storage.maxnum": "maxnum", "storage.wal": "wal",
    "storage.db": "db", "workload.distribution": "distribution",
    "workload.read_ratio": "read_ratio", "workload.records": "records",
    "workload.value_bytes": "value_bytes", "workload.queries_m": "max_requests",
    "servers.flush_threads": "flush_threads", "servers.compaction_threads": "compaction_threads",
    "storage.wal_bytes_per_sync_mb": "wal_bytes_per_sync_mb",
    "storage.rate_limit_mbps": "bg_write_mbps",
    "storage.delayed_write_rate_mbps": "delayed_write_rate_mbps",
    "storage.preloaded": "preload", "storage.l0_files": "l0_compaction_trigger",
    "storage.l0_slowdown": "l0_slowdown_trigger", "storage.l0_stop": "l0_stop_trigger",
}


def _predict_local(row: Any, profile: Profile) -> dict[str, Any]:
    return {f"pred_{k}": v for k, v in _local_columns(row, [predict(local_scenario(row),
                                                                    profile)]).items()}


def _local_scenarios(row: Any) -> list[Scenario]:
    sc = local_scenario(row)
    wait_stat(row)                       # checked before any solving
    return [sc]


def _local_columns(row: Any, preds: list) -> dict[str, Any]:
    # the same outputs as the rack's runs, without its cache gain
    out = {**farreach_columns(preds[0], wait_stat(row)),
           **latency_columns(preds[0], "response", RESPONSE_PERCENTILES)}
    lsm = preds[0].details.get("lsm") or {}
    for col, (key, factor) in WRITE_PATH_PREDICTED.items():
        out[col] = [factor * v for v in lsm[key]] if key in lsm else None
    return {k: out[k] for k in PREDICTED}


LOCAL_KIND = RunKind(
    name="local_runs",
    signature=frozenset({"workers", "clients", "read_ratio", "config_hash"}),
    profile="local",
    measured=PREDICTED,
    predict_row=_predict_local, fitter="calibrate.local_fit:LocalFitter",
    per_worker=tuple(WRITE_PATH_PREDICTED),
    description="native KV server runs on one machine (python -m calibrate run)",
    # batch prediction and validation check every row, then solve them as one batch
    rack=RackForm(_local_scenarios, _local_columns))

if "local_runs" not in KINDS:
    register(LOCAL_KIND)
