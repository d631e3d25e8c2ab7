"""Units of the toolkit's columns and fields, read off their names.

The toolkit puts units in names (``wait_us``, ``memtable_mb``,
``throughput_mops``); this is the one table that says what they mean, used
by command-line output, validation summaries and reports alike. Units are
plain ASCII here (``us``, ``x``); reports typeset them (``µs``, ``×``).

>>> unit_of("pred_wait_us_3")
'us'
>>> unit_of("kops")
'Kops'
>>> unit_of("server_wait_min")
'us'
"""

from __future__ import annotations

import re

# Whole names (after stripping ``pred_``) whose unit is not in a suffix.
NAMED: dict[str, str] = {
    "mops": "MOPS", "throughput_mops": "MOPS", "kops": "Kops", "ops": "ops/s",
    "qps": "QPS", "best_qps": "QPS", "offered_qps": "QPS",
    "qps_limit_per_core": "QPS",
    "clients": "threads", "client_threads": "threads", "threads": "threads",
    "servers": "workers", "count": "workers",
    "server_cores": "cores", "client_cores": "cores", "server_vcpus": "vCPUs",
    "cores": "cores", "connections": "connections",
    "conns_per_client": "connections", "conns_per_core": "connections",
    "flushnum": "memtables", "maxnum": "memtables",
    "pktloss": "packets", "false_pos": "responses",
    "requests": "requests", "queries_m": "M queries",
    "normalized_x": "x", "runtime_x": "x",
    "cache_hit_ratio": "fraction", "cache_hit": "fraction", "stall_fraction": "fraction",
    "stalled_frac": "fraction", "share": "fraction", "share_nocache": "fraction",
    "utilization": "fraction", "load_ratio": "fraction", "read_ratio": "fraction",
    "loss_rate": "fraction", "zipf_theta": "", "groups": "groups",
    "replicas": "replicas", "client_machines": "machines",
    "clients_by_littles_law": "clients", "t_s": "s", "step": "step",
    "matrix_size": "", "value_bytes": "B", "key_bytes": "B", "payload": "B",
    "records": "keys", "cache_keys": "keys", "hash_buckets": "buckets",
    "rcvbuf_kb": "KiB", "flush_threads": "threads", "compaction_threads": "threads",
    "l0_files": "files", "l0_slowdown": "files", "l0_stop": "files", "l0_files_end": "files",
    "memtables": "memtables", "memtables_written": "memtables", "flushes": "flushes", "compactions": "compactions",
    "stops": "stops", "slows": "slowdowns", "immutables_end": "memtables", "writes": "writes",
    "instances": "instances", "solves": "solves", "stopped_s": "s", "run_s": "s",
    "flush_mib": "MiB", "compaction_mib": "MiB", "pending_compaction_mib_end": "MiB",
    "seconds": "s",
    "rate_mb_s": "MB/s", "operations": "ops", "found": "keys",
}

# Suffix rules, tried in order.
SUFFIX: list[tuple[str, str]] = [
    ("_us", "us"), ("_ns", "ns"), ("_ms", "ms"), ("_s", "s"),
    ("_mops", "MOPS"), ("_kops", "Kops"), ("_qps", "QPS"), ("_ops", "ops/s"),
    ("_pct", "%"), ("_mb", "MB"), ("_kb", "KB"), ("_gb", "GB"), ("_bytes", "B"),
    ("_frac", "fraction"), ("_fraction", "fraction"), ("_probability", "fraction"),
    ("_ratio", "fraction"), ("_x", "x"),
    ("_count", "ops"), ("_failed", "ops"), ("_delays", "stalls"), ("_stops", "stalls"),
]

PER_SERVER = re.compile(r"^(.*_(?:us|ms|ns|s))_(\d+)$")


def base_name(column: str) -> str:
    """``pred_wait_us`` -> ``wait_us``; ``wait_us_3`` -> ``wait_us``."""
    name = column[5:] if column.startswith("pred_") else column
    m = PER_SERVER.match(name)
    return m.group(1) if m else name


def unit_of(column: str) -> str:
    """The unit of a column ('' when dimensionless or unknown)."""
    name = base_name(column).lower()
    if name in NAMED:
        return NAMED[name]
    for suffix, unit in SUFFIX:
        if name.endswith(suffix):
            return unit
    # farreach_breakdown's min/max/avg columns: client_send_avg, server_wait_min, ...
    if name.startswith(("client_send_", "client_wait_", "server_wait_", "server_process_")):
        return "us"
    return ""
