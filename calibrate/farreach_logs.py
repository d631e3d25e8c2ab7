"""FarReach's own output formats -> runs rows.

Two formats of the public FarReach code (LGN520/farreach-public) are read;
docs/calibration.md describes them with the source files they come from.

**Client statistics JSON** (``benchmark/output/<workload>-statistics/
<db>-static<N>-client<i>.out`` or ``<db>-<rule>-client<i>.out``), written by
``StatisticsHelper.flush()`` of the YCSB client: a JSON array of objects,
one per rotation (static pattern) or per second (dynamic pattern), each with

* ``strid``, ``totalOpsdone`` (replies, hits + misses), ``executionMillis``;
* ``perserverOpsdone`` / ``perserverCachehits``: per logical server, cache
  misses answered by that server / cache hits of its keys;
* ``perserverCache{hit,miss}TotalLatency`` and ``...Latencynum``: per
  physical server, summed latency (us) and count;
* ``perserverCache{hit,miss}TotalHistogram``: per physical server, a
  histogram with one bucket per microsecond (10000 buckets; the last one
  also counts everything slower).

**Latency dumps** (server or client stdout), printed by ``dump_latency()``
of ``common/latency_helper.c``; the server prints one block per worker
(``worker_wait_latency_list <i>``, ``worker_process_latency_list <i>``) and
per-worker averages when built with ``DEBUG_SERVER``::

    [Latency Statistics of worker_process_latency_list 0 ]
    | min | max | avg | 90th | 99th | median | sum |
    | 9 | 950 | 14.2 | 18 | 40 | 13 | 1.42e+07 |

:func:`ingest` combines them with the configuration of the run into one
``farreach_runs`` row (mops, wait_us / process_us per ``wait_stat``,
send_us, normalized_x; pktloss and false_pos come from the switch counters
and are passed as configuration). Malformed input raises
:class:`~model.errors.InputError` naming file, line and field.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.toml_text import BOM
from runio.safe_io import input_path, read_text

FARREACH_RUNS_COLUMNS = (
    "id", "block", "setting", "system", "servers", "clients", "timeout_ms", "queries_m",
    "workload", "memtable_mb", "flushnum", "maxnum", "wal", "wal_bytes_per_sync_mb", "seq_check",
    "affinity", "rcvbuf", "db", "mops", "wait_us", "process_us", "wait_stat", "send_us",
    "pktloss", "false_pos", "runtime_x", "normalized_x", "note")

MAX_COUNT = 2 ** 63 - 1        # FarReach's client counts in Java longs
STAT_INT_LISTS = ("perserverOpsdone", "perserverCachehits")
STAT_LAT_LISTS = ("perserverCachehitTotalLatency", "perserverCachehitTotalLatencynum",
                  "perserverCachemissTotalLatency", "perserverCachemissTotalLatencynum")
STAT_HISTS = ("perserverCachehitTotalHistogram", "perserverCachemissTotalHistogram")


# ---------------------------------------------------------------------------
# client statistics JSON
# ---------------------------------------------------------------------------

@dataclass
class ClientStatistics:
    """A client statistics file, or several aggregated (one per physical client)."""
    sources: list[str]
    total_ops: int
    execution_ms: float
    per_second_mops: list[float]
    server_ops: list[int]            # cache misses per logical server
    cache_hits: list[int]            # cache hits per logical server
    histogram: list[int]             # per-us response histogram, hits + misses, all servers
    hit_histogram: list[int]
    miss_histogram: list[int]

    @property
    def mops(self) -> float:
        return self.total_ops / self.execution_ms / 1e3 if self.execution_ms > 0 else math.nan

    @property
    def cache_hit_ratio(self) -> float:
        return sum(self.cache_hits) / self.total_ops if self.total_ops else math.nan

    @property
    def load_ratio(self) -> list[float]:
        tot = sum(self.server_ops)
        return [x / tot for x in self.server_ops] if tot else []

    @property
    def normalized_x(self) -> float:
        top = max(self.server_ops) if self.server_ops else 0
        return self.total_ops / top if top else math.nan

    def latency_us(self, which: str = "all") -> dict[str, float]:
        h = {"all": self.histogram, "hit": self.hit_histogram, "miss": self.miss_histogram}[which]
        return histogram_stats(h)


def histogram_stats(h: Sequence[int]) -> dict[str, float]:
    """Mean and percentiles (us) of a one-bucket-per-us histogram."""
    n = sum(h)
    if n == 0:
        return {"count": 0, "mean_us": math.nan, "p50_us": math.nan, "p99_us": math.nan}
    mean = sum(i * c for i, c in enumerate(h)) / n
    out = {"count": n, "mean_us": mean}
    for q, key in ((0.5, "p50_us"), (0.9, "p90_us"), (0.99, "p99_us")):
        acc = 0
        for i, c in enumerate(h):
            acc += c
            if acc / n >= q:
                out[key] = float(i)
                break
    return out


def _no_constant(name: str):
    # Python's json reads NaN, Infinity and -Infinity, which are not JSON and
    # not a count: refuse them where they stand
    raise ValueError(f"{name} is not a number JSON allows here")


def _json_elements(text: str, source: str) -> list[tuple[int, Any]]:
    """Top-level array elements with the line each starts on."""
    dec = json.JSONDecoder(parse_constant=_no_constant)
    pos = 0
    n = len(text)

    def skip(p):
        while p < n and text[p] in " \t\r\n":
            p += 1
        return p

    def line_at(p):
        return text.count("\n", 0, p) + 1

    pos = skip(pos)
    if pos >= n or text[pos] != "[":
        raise InputError("expected a JSON array of statistics objects", source=source,
                         line=line_at(pos))
    pos = skip(pos + 1)
    out: list[tuple[int, Any]] = []
    if pos < n and text[pos] == "]":
        return out
    while True:
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=source, line=exc.lineno) from None
        except ValueError as exc:          # NaN / Infinity, or an integer too long to read
            raise InputError(f"not valid JSON: {exc}", source=source, line=line_at(pos)) from None
        except RecursionError:
            raise InputError("not valid JSON here: arrays or objects nested too deeply",
                             source=source, line=line_at(pos)) from None
        out.append((line_at(pos), obj))
        pos = skip(end)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < n and text[pos] == "]":
            if skip(pos + 1) < n:
                raise InputError("unexpected text after the JSON array", source=source,
                                 line=line_at(skip(pos + 1)))
            return out
        raise InputError("expected ',' or ']' in the JSON array", source=source, line=line_at(pos))


def _int_list(obj, key, source, line, idx) -> list[int]:
    v = obj.get(key)
    where = f"[{idx}].{key}"
    if not isinstance(v, list):
        raise InputError(f"expected a list of counts, got {type(v).__name__}", source=source,
                         line=line, field=where)
    for j, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_COUNT:
            raise InputError(f"expected an integer from 0 to 2**63 - 1, got {_short(x)}",
                             source=source, line=line, field=f"{where}[{j}]")
    return v


def _short(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 40 else f"{r[:20]}...({len(r)} characters)"


def _hist_list(obj, key, source, line, idx) -> list[list[int]]:
    v = obj.get(key)
    where = f"[{idx}].{key}"
    if not isinstance(v, list) or not all(isinstance(h, list) for h in v):
        raise InputError("expected a list of per-server histograms (lists of counts)",
                         source=source, line=line, field=where)
    return [_int_list({key: h}, key, source, line, idx) for h in v]


def read_client_statistics(paths: str | Path | Sequence[str | Path]) -> ClientStatistics:
    """Read one or more client statistics files (one per physical client) and aggregate."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    per_file = []
    for path in paths:
        src = str(path)
        text = read_text(path, "statistics file", "--stats")
        elems = _json_elements(text, src)
        if not elems:
            raise InputError("the statistics array is empty", source=src, line=1)
        objs = []
        for idx, (line, obj) in enumerate(elems):
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", source=src, line=line, field=f"[{idx}]")
            for key in ("totalOpsdone", "executionMillis"):
                v = obj.get(key)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                        not 0 <= v <= MAX_COUNT:
                    raise InputError(f"expected a number from 0 to 2**63 - 1, got {_short(v)}",
                                     source=src, line=line, field=f"[{idx}].{key}")
            if obj["executionMillis"] == 0 and obj["totalOpsdone"] > 0:
                raise InputError(f"{obj['totalOpsdone']} operations in 0 ms: no rate can be "
                                 "computed", source=src, line=line, field=f"[{idx}].executionMillis")
            lists = {k: _int_list(obj, k, src, line, idx) for k in STAT_INT_LISTS}
            if len(lists["perserverOpsdone"]) != len(lists["perserverCachehits"]):
                raise InputError("perserverOpsdone and perserverCachehits differ in length",
                                 source=src, line=line, field=f"[{idx}].perserverCachehits")
            hists = {k: _hist_list(obj, k, src, line, idx) for k in STAT_HISTS if k in obj}
            objs.append({"strid": obj.get("strid", f"#{idx}"), "ops": int(obj["totalOpsdone"]),
                         "ms": float(obj["executionMillis"]), **lists, **hists, "line": line})
        per_file.append((src, objs))
    # Aggregate physical clients object by object (as FarReach's scripts do).
    n_obj = len(per_file[0][1])
    for src, objs in per_file[1:]:
        if len(objs) != n_obj:
            raise InputError(f"has {len(objs)} statistics objects but {per_file[0][0]} has {n_obj}",
                             source=src, line=1)
    total_ops, total_ms, per_sec = 0, 0.0, []
    server_ops: list[int] = []
    hits: list[int] = []
    hh: list[int] = []
    mh: list[int] = []
    for i in range(n_obj):
        group = [objs[i] for _, objs in per_file]
        ops = sum(o["ops"] for o in group)
        ms = sum(o["ms"] for o in group) / len(group)
        total_ops += ops
        total_ms += ms
        per_sec.append(ops / ms / 1e3 if ms > 0 else math.nan)
        for o in group:
            server_ops = _add(server_ops, o["perserverOpsdone"])
            hits = _add(hits, o["perserverCachehits"])
            for h in o.get("perserverCachehitTotalHistogram", []):
                hh = _add(hh, h)
            for h in o.get("perserverCachemissTotalHistogram", []):
                mh = _add(mh, h)
    return ClientStatistics([s for s, _ in per_file], total_ops, total_ms, per_sec, server_ops,
                            hits, _add(list(hh), mh), hh, mh)


def _add(a: list[int], b: Sequence[int]) -> list[int]:
    if len(a) < len(b):
        a = a + [0] * (len(b) - len(a))
    for i, x in enumerate(b):
        a[i] += x
    return a


# ---------------------------------------------------------------------------
# latency dumps (server / client stdout)
# ---------------------------------------------------------------------------

DUMP_FIELDS = ("min", "max", "avg", "90th", "99th", "median", "sum")
_TITLE = re.compile(r"^\[Latency Statistics of (.+?)\s*\]\s*$")
_WORKER = re.compile(r"^worker_(wait|process)_latency_list (\d+)$")


@dataclass
class LatencyDump:
    source: str
    blocks: dict[str, dict[str, float]] = field(default_factory=dict)   # label -> stats (us)

    def per_worker(self, what: str) -> list[float]:
        """Per-worker average of ``wait`` or ``process`` (us), in worker order."""
        found = {}
        for label, st in self.blocks.items():
            m = _WORKER.match(label)
            if m and m.group(1) == what:
                found[int(m.group(2))] = st["avg"]
        if not found:
            return []
        n = max(found) + 1
        return [found.get(i, math.nan) for i in range(n)]

    def overall(self, pattern: str) -> float | None:
        for label, st in self.blocks.items():
            if pattern in label and "overall" in label:
                return st["avg"]
        vals = [st["avg"] for label, st in self.blocks.items() if pattern in label]
        return sum(vals) / len(vals) if vals else None


def read_latency_dump(path: str | Path) -> LatencyDump:
    """Parse every ``dump_latency`` block of a server or client log."""
    src = str(path)
    # a log may hold stray bytes besides the blocks: read it leniently
    text = input_path(path, "log file").read_text(errors="replace")
    lines = text.removeprefix(BOM).splitlines()
    dump = LatencyDump(src)
    i = 0
    while i < len(lines):
        m = _TITLE.match(lines[i].strip())
        if not m:
            i += 1
            continue
        label = m.group(1).strip()
        if i + 2 >= len(lines):
            raise InputError(f"latency block '{label}' is cut short", source=src, line=i + 1)
        head = [c.strip() for c in lines[i + 1].strip().strip("|").split("|")]
        if head != list(DUMP_FIELDS):
            raise InputError(f"expected the header | {' | '.join(DUMP_FIELDS)} |", source=src,
                             line=i + 2, field=label)
        cells = [c.strip() for c in lines[i + 2].strip().strip("|").split("|")]
        if len(cells) != len(DUMP_FIELDS):
            raise InputError(f"expected {len(DUMP_FIELDS)} values, got {len(cells)}",
                             source=src, line=i + 3, field=label)
        st = {}
        for name, c in zip(DUMP_FIELDS, cells):
            try:
                x = float(c)
            except ValueError:
                raise InputError(f"expected a number, got {c!r}", source=src, line=i + 3,
                                 field=f"{label}.{name}") from None
            if not math.isfinite(x) or x < 0:
                raise InputError(f"expected a finite non-negative latency, got {c!r}",
                                 source=src, line=i + 3, field=f"{label}.{name}")
            st[name] = x
        dump.blocks[label] = st
        i += 3
    if not dump.blocks:
        raise InputError("no '[Latency Statistics of ...]' blocks found", source=src)
    return dump


# ---------------------------------------------------------------------------
# -> a farreach_runs row
# ---------------------------------------------------------------------------

def _stat(values: list[float], stat: str) -> Any:
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return None
    if stat == "min":
        return min(vals)
    if stat == "max":
        return max(vals)
    if stat == "per-server":
        return "|".join(f"{v:.4g}" for v in values)
    return sum(vals) / len(vals)


def ingest(config: Mapping[str, Any], *, stats: Sequence[str] = (), server_log: str | None = None,
           client_log: str | None = None, wait_stat: str = "avg") -> dict[str, Any]:
    """One farreach_runs row from a run's configuration and FarReach output files."""
    if wait_stat not in ("avg", "min", "max", "per-server"):
        raise InputError(f"{wait_stat!r} is not allowed; allowed: avg, min, max, per-server",
                         field="--wait-stat")
    unknown = [k for k in config if k not in FARREACH_RUNS_COLUMNS]
    if unknown:
        raise InputError(f"unknown column; allowed: {', '.join(FARREACH_RUNS_COLUMNS)}",
                         field=unknown[0])
    row: dict[str, Any] = {k: config.get(k) for k in FARREACH_RUNS_COLUMNS}
    notes = []
    if stats:
        cs = read_client_statistics(stats)
        if cs.total_ops == 0 or cs.execution_ms <= 0:
            raise InputError("no operations over no time: these statistics measured nothing",
                             source=str(stats[0]), line=1, field="totalOpsdone")
        row["mops"] = cs.mops
        if row.get("servers") in (None, ""):
            row["servers"] = len(cs.server_ops)
        if row.get("system") == "farreach" or (row.get("system") in (None, "") and
                                                sum(cs.cache_hits) > 0):
            row["normalized_x"] = cs.normalized_x
        if row.get("queries_m") in (None, ""):
            row["queries_m"] = cs.total_ops / 1e6
        lat = cs.latency_us()
        notes.append(f"client latency mean {lat['mean_us']:.1f} us; cache hit "
                     f"{100 * cs.cache_hit_ratio:.1f}%")
    if server_log:
        dump = read_latency_dump(server_log)
        waits, procs = dump.per_worker("wait"), dump.per_worker("process")
        if not waits or not procs:
            raise InputError("no worker_wait_latency_list / worker_process_latency_list blocks "
                             "(build the server with DEBUG_SERVER)", source=server_log)
        row["wait_us"] = _stat(waits, wait_stat)
        row["process_us"] = _stat(procs, wait_stat)
        row["wait_stat"] = wait_stat
    if client_log:
        dump = read_latency_dump(client_log)
        send = dump.overall("send_latency_list")
        if send is None:
            raise InputError("no send_latency_list block", source=client_log)
        row["send_us"] = send
    if notes and not row.get("note"):
        row["note"] = "; ".join(notes)
    row.setdefault("block", "ingested")
    if not row.get("block"):
        row["block"] = "ingested"
    try:
        check_row(row)
    except InputError as exc:
        raise exc.located(source="--set" if exc.field in config else None) from None
    return row


#: stand-ins for configuration columns a row may leave empty (only while checking)
_REQUIRED = {"system": "nocache", "servers": "1", "clients": "1"}


def check_row(row: Mapping[str, Any]) -> None:
    """Check an ingested row as a farreach_runs reader will read it, before it is
    written: every configuration value it gives (``--set servers=-5`` is an
    error naming ``servers``) and every measured value (a finite number >= 0)."""
    from runio.farreach_kinds import farreach_scenario
    from runio.kinds import get

    from .runs_io import check_measured, format_cell
    cells = {k: format_cell(v) for k, v in row.items()}
    farreach_scenario({**cells, **{k: v for k, v in _REQUIRED.items() if not cells.get(k)}})
    check_measured(get("farreach_runs"), cells)
