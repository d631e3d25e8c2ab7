"""RocksDB ``db_bench`` output -> ``dbbench_runs`` rows (:mod:`runio.bench_runs`).

What is read is what RocksDB's own code prints (facebook/rocksdb):

* the header (``Benchmark::PrintHeader``, ``tools/db_bench_tool.cc``):
  ``Keys:       16 bytes each``, ``Values:     100 bytes each (...)``,
  ``Entries:    1000000`` fill ``key_bytes``, ``value_bytes`` and ``num``
  unless given with ``--set``;
* one result line per benchmark (``Stats::Report``)::

    readrandom   :       3.446 micros/op 290186 ops/sec 3.446 seconds 1000000 operations;   32.1 MB/s (1000000 of 1000000 found)

  (older releases print no ``seconds``/``operations``), each a row;
* with ``--histogram``, ``Microseconds per read:`` and the histogram's
  ``Count: ... Average: ...``, ``Min: ... Median: ... Max: ...`` and
  ``Percentiles: P50: ... P75: ... P99: ... P99.9: ... P99.99: ...``
  (``HistogramStat::ToString``, ``monitoring/histogram.cc``); a mixed
  benchmark prints one per operation type and the one with most operations
  fills the ``op_*`` columns (``hist_op`` says which);
* with ``--statistics``, ``rocksdb.db.get.micros P50 : ... P95 : ... P99 : ...``
  (and ``rocksdb.db.write.micros``) give the 95th percentile the histogram
  lacks, and ``rocksdb.stall.micros COUNT : N`` the stall time (to the
  microsecond, so it is preferred to the DB Stats' H:M:S);
* the ``stats`` benchmark or ``--stats_per_interval`` (``db/internal_stats.cc``):
  ``Cumulative stall: 00:00:1.234 H:M:S, 2.1 percent`` of ``** DB Stats **``,
  and the stall counters, in any of RocksDB's three spellings:
  ``Stalls(count): 0 level0_slowdown, 0 level0_numfiles, 0 memtable_compaction,
  0 leveln_slowdown_soft, 0 leveln_slowdown_hard`` (old),
  ``Stalls(count): 0 level0_slowdown, 0 level0_slowdown_with_compaction, ...,
  0 memtable_slowdown, interval 0 total count`` (5.x-7.x) and
  ``Write Stall (count): l0-file-count-limit-delays: 0, ..., total-stops: 0``
  (8.x on).

Statistics and stall dumps are cumulative since the DB was opened; a dump
belongs to the benchmark reported last before it (the first one if none yet),
and a benchmark's stall columns are the difference to the previous
benchmark's dump (``stall_pct``: its stall time over its own ``elapsed_s``,
or RocksDB's printed percent of uptime when db_bench prints no seconds).
Malformed lines of these kinds raise :class:`~model.errors.InputError`
naming the file, the line and the field; anything else is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runio import safe_io
from model.errors import InputError

_RESULT = re.compile(r"^(\S+)\s*:\s*(\S+) micros/op (\S+) ops/sec"
                     r"(?: (\S+) seconds (\S+) operations)?;(.*)$")
_RATE = re.compile(r"([0-9.]+) MB/s")
_FOUND = re.compile(r"\((\d+) of (\d+) found\)")
_HIST_TITLE = re.compile(r"^Microseconds per (\S+):$")
_HEADER = {"Keys:": ("key_bytes", re.compile(r"^Keys:\s+(\d+) bytes each")),
           "Values:": ("value_bytes", re.compile(r"^Values:\s+(\d+) bytes each")),
           "Entries:": ("num", re.compile(r"^Entries:\s+(\d+)\s*$"))}
_PAIR = re.compile(r"(P[0-9.]+|Count|Average|StdDev|Min|Median|Max):\s*(\S+)")
_STAT_HIST = re.compile(r"^rocksdb\.db\.(get|write)\.micros\s+(.*)$")
_STAT_PAIR = re.compile(r"(P\d+|COUNT|SUM)\s*:\s*(\S+)")
_CUM_STALL = re.compile(r"^Cumulative stall:\s*(\d+):(\d+):([0-9.]+) H:M:S,\s*([0-9.]+) percent\s*$")

#: percentile label -> column
PERCENTILE_COLUMNS = {"P50": "op_p50_us", "P75": "op_p75_us", "P95": "op_p95_us",
                      "P99": "op_p99_us", "P99.9": "op_p999_us", "P99.99": "op_p9999_us"}
#: statistics histogram name -> the histogram title it describes
STAT_OPS = {"get": "read", "write": "write"}

#: RocksDB's stall counter names, all spellings -> (column, is the total)
STALL_NAMES = {
    # 8.x on: "Write Stall (count): name: N, ..."
    "l0-file-count-limit-delays": "stall_l0_delays", "l0-file-count-limit-stops": "stall_l0_stops",
    "memtable-limit-delays": "stall_memtable_delays", "memtable-limit-stops": "stall_memtable_stops",
    "pending-compaction-bytes-delays": "stall_pending_delays",
    "pending-compaction-bytes-stops": "stall_pending_stops",
    "total-delays": "stall_delays", "total-stops": "stall_stops",
    # 5.x-7.x and older: "Stalls(count): N name, ..."
    "level0_slowdown": "stall_l0_delays", "level0_numfiles": "stall_l0_stops",
    "memtable_slowdown": "stall_memtable_delays", "memtable_compaction": "stall_memtable_stops",
    "slowdown for pending_compaction_bytes": "stall_pending_delays",
    "stop for pending_compaction_bytes": "stall_pending_stops",
    "leveln_slowdown_soft": "stall_pending_delays", "leveln_slowdown_hard": "stall_pending_stops",
}
#: counted elsewhere already (subsets, interval figures, other subsystems)
STALL_IGNORED = ("with_compaction", "with-ongoing-compaction", "interval ", "total count",
                 "write-buffer-manager")


@dataclass
class Benchmark:
    """One benchmark result of a db_bench output and what followed it."""
    name: str
    line: int
    values: dict[str, Any] = field(default_factory=dict)
    hists: dict[str, dict[str, float]] = field(default_factory=dict)   # op -> figures
    stat_hists: dict[str, dict[str, float]] = field(default_factory=dict)
    stalls: dict[str, Any] = field(default_factory=dict)


@dataclass
class DbBenchOutput:
    source: str
    header: dict[str, int] = field(default_factory=dict)
    benchmarks: list[Benchmark] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """One row per benchmark: its configuration (from the header) and measured columns."""
        out = []
        before: dict[str, float] = {}     # cumulative stall figures at the previous benchmark
        for b in self.benchmarks:
            row: dict[str, Any] = {"benchmark": b.name, **self.header,
                                   **{k: v for k, v in b.values.items() if k != "stall_micros"}}
            if b.hists:
                op = max(b.hists, key=lambda k: b.hists[k].get("Count", 0.0))
                h = b.hists[op]
                row["hist_op"] = op
                row["op_avg_us"] = h.get("Average")
                row["op_max_us"] = h.get("Max")
                for label, col in PERCENTILE_COLUMNS.items():
                    if label in h:
                        row[col] = h[label]
                st = next((v for k, v in b.stat_hists.items() if STAT_OPS[k] == op), None)
                if st and "P95" in st and row.get("op_p95_us") is None:
                    row["op_p95_us"] = st["P95"]
            cum = dict(b.stalls)
            if "stall_micros" in b.values:      # to the microsecond: better than H:M:S
                cum["stall_s"] = b.values["stall_micros"] / 1e6
            printed_pct = cum.pop("stall_pct", None)
            # RocksDB's counters run from the DB's opening: a benchmark's own stalls
            # are the difference to the previous benchmark's dump
            for k, v in cum.items():
                row[k] = v - before.get(k, 0) if k in before or not before else None
            if "stall_s" in row and row["stall_s"] is not None:
                el = row.get("elapsed_s")
                row["stall_pct"] = 100 * row["stall_s"] / el if el else \
                    (printed_pct if not before else None)
            before.update(cum)
            out.append(row)
        return out


def _num(text: str, src: str, line: int, where: str, *, integer: bool = False) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}", source=src, line=line,
                         field=where) from None
    if x != x or x in (float("inf"), float("-inf")) or x < 0:
        raise InputError(f"expected a finite non-negative number, got {text!r}", source=src,
                         line=line, field=where)
    if integer and not x.is_integer():
        raise InputError(f"expected an integer, got {text!r}", source=src, line=line, field=where)
    return int(x) if integer else x


def read_dbbench(path: str | Path) -> DbBenchOutput:
    """Parse one db_bench output file (stdout, or stdout and stderr together)."""
    src = str(path)
    lines = safe_io.read_text(path, "db_bench output file").splitlines()
    out = DbBenchOutput(src)
    before = Benchmark("", 0)            # stats printed before the first result line
    hist_op: str | None = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        current = out.benchmarks[-1] if out.benchmarks else None
        target = current or before
        first = line.split(" ", 1)[0]
        if first in _HEADER:
            col, rx = _HEADER[first]
            m = rx.match(line)
            if not m:
                raise InputError(f"expected '{first} <number> ...'", source=src, line=lineno,
                                 field=first.rstrip(":"))
            out.header[col] = int(m.group(1))
            continue
        if "micros/op" in line and "[AVG" not in line and "[MEDIAN" not in line:
            b = _result(line, src, lineno)
            if current is None:           # what was dumped during the first benchmark
                b.stalls, b.stat_hists = before.stalls, before.stat_hists
                b.values.update(before.values)
            out.benchmarks.append(b)
            hist_op = None
            continue
        m = _HIST_TITLE.match(line)
        if m:
            hist_op = m.group(1)
            if current is not None:
                current.hists[hist_op] = {}
            continue
        if hist_op and current is not None and line.startswith(("Count:", "Min:", "Percentiles:")):
            _hist_line(current.hists[hist_op], line, src, lineno, hist_op)
            continue
        if line.startswith("Cumulative stall:"):
            m = _CUM_STALL.match(line)
            if not m:
                raise InputError("expected 'Cumulative stall: H:M:S H:M:S, P percent'",
                                 source=src, line=lineno, field="Cumulative stall")
            h, mi, s, pct = m.groups()
            target.stalls["stall_s"] = int(h) * 3600 + int(mi) * 60 + float(s)
            target.stalls["stall_pct"] = float(pct)
            continue
        if line.startswith(("Stalls(count):", "Write Stall (count):")):
            _stall_counts(target.stalls, line, src, lineno)
            continue
        m = _STAT_HIST.match(line)
        if m:
            figures = {}
            for label, val in _STAT_PAIR.findall(m.group(2)):
                figures[label] = _num(val, src, lineno, f"rocksdb.db.{m.group(1)}.micros {label}")
            target.stat_hists[m.group(1)] = figures
            continue
        if line.startswith("rocksdb.stall.micros"):
            m = re.match(r"^rocksdb\.stall\.micros\s+COUNT\s*:\s*(\S+)", line)
            if not m:
                raise InputError("expected 'rocksdb.stall.micros COUNT : N'", source=src,
                                 line=lineno, field="rocksdb.stall.micros")
            target.values["stall_micros"] = _num(m.group(1), src, lineno, "rocksdb.stall.micros",
                                                 integer=True)
    if not out.benchmarks:
        raise InputError("no benchmark result line ('<name> : <x> micros/op <y> ops/sec ...'): "
                         "not a db_bench output", source=src)
    return out


def _result(line: str, src: str, lineno: int) -> Benchmark:
    m = _RESULT.match(line)
    if not m:
        raise InputError("expected '<benchmark> : <x> micros/op <y> ops/sec[ <s> seconds <n> "
                         "operations]; ...'", source=src, line=lineno, field="micros/op")
    name, us, ops, secs, n, rest = m.groups()
    b = Benchmark(name, lineno)
    b.values["op_us"] = _num(us, src, lineno, f"{name} micros/op")
    b.values["throughput_ops"] = _num(ops, src, lineno, f"{name} ops/sec")
    if secs is not None:
        b.values["elapsed_s"] = _num(secs, src, lineno, f"{name} seconds")
        b.values["operations"] = _num(n, src, lineno, f"{name} operations", integer=True)
    r = _RATE.search(rest)
    if r:
        b.values["rate_mb_s"] = float(r.group(1))
    f = _FOUND.search(rest)
    if f:
        b.values["found"] = int(f.group(1))
    return b


def _hist_line(h: dict[str, float], line: str, src: str, lineno: int, op: str) -> None:
    head = line.split(":", 1)[0]
    pairs = _PAIR.findall(line)
    if not pairs:
        raise InputError(f"expected '{head}: <label>: <number> ...'", source=src, line=lineno,
                         field=f"{op} {head}")
    for label, val in pairs:
        h[label] = _num(val, src, lineno, f"{op} {label}")


def _stall_counts(stalls: dict[str, Any], line: str, src: str, lineno: int) -> None:
    head, body = line.split(":", 1)
    new_style = head.startswith("Write Stall")
    for item in (p.strip() for p in body.split(",")):
        if not item or any(s in item for s in STALL_IGNORED):
            continue
        if new_style:
            name, _, val = item.rpartition(":")
        else:
            val, _, name = item.partition(" ")
        name, val = name.strip(), val.strip()
        col = STALL_NAMES.get(name)
        if col is None:
            continue                      # a cause this RocksDB release adds: not a column
        # counters are cumulative: a later dump replaces an earlier one
        stalls[col] = _num(val, src, lineno, f"{head} {name}", integer=True)
    if not new_style:
        # the old spellings have no totals: the sum of the causes
        stalls["stall_delays"] = sum(stalls.get(c, 0) for c in
                                     ("stall_l0_delays", "stall_memtable_delays",
                                      "stall_pending_delays"))
        stalls["stall_stops"] = sum(stalls.get(c, 0) for c in
                                    ("stall_l0_stops", "stall_memtable_stops",
                                     "stall_pending_stops"))
