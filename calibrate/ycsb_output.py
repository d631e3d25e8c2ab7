"""YCSB client output -> ``ycsb_runs`` rows (:mod:`runio.bench_runs`).

What is read is what YCSB's own code writes (brianfrankcooper/YCSB, ``core``):

* the final measurements, one ``[METRIC], MEASUREMENT, VALUE`` line each
  (``TextMeasurementsExporter``): ``[OVERALL], RunTime(ms)`` and
  ``[OVERALL], Throughput(ops/sec)`` (``Client.exportMeasurements``), then per
  operation (``READ``, ``UPDATE``, ``INSERT``, ``SCAN``,
  ``READ-MODIFY-WRITE``, ``DELETE``, ``CLEANUP``) ``Operations``,
  ``AverageLatency(us)``, ``MinLatency(us)``, ``MaxLatency(us)``,
  ``<N>thPercentileLatency(us)`` (``OneMeasurementHdrHistogram`` writes the
  ``hdrhistogram.percentiles``, ``99.9PercentileLatency(us)`` for a
  fraction; ``OneMeasurementHistogram`` the 95th and 99th at 1 ms
  resolution) and ``Return=<STATUS>`` counts (``OneMeasurement``). Lines whose
  measurement is a number are histogram buckets or, with
  ``measurementtype=timeseries``, the time series (``OneMeasurementTimeSeries``):
  checked, not kept. GC and JVM lines are checked, not kept.
* the status lines of ``-s`` (``StatusThread``, stderr, stdout too for time
  series): ``<date> 10 sec: 245678 operations; 24567.8 current ops/sec; ...``;
  they give the slowest interval (``throughput_min_ops``).
* ``Command line: ...`` (``Client.parseArguments``, stderr): ``-threads`` /
  ``-p threadcount``, ``-p recordcount`` and ``-p requestdistribution`` fill
  ``clients``, ``records`` and ``distribution`` unless given with ``--set``.

Everything else (banners, warnings, a binding's own logging) is skipped. A
malformed measurement line raises :class:`~model.errors.InputError` naming the
file, the line and the field (``[READ] AverageLatency(us)``).

What the model sees: YCSB's ``READ-MODIFY-WRITE`` is measured on top of its own
``READ`` and ``UPDATE``, so the requests of a run (``queries_m``) and the GET
fraction (``read_ratio``, scans counted as reads) come from ``READ``,
``UPDATE``, ``INSERT``, ``SCAN`` and ``DELETE``; ``latency_avg_us`` is their
count-weighted mean latency.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from runio.bench_runs import YCSB_OPS
from runio import safe_io
from model.errors import InputError

#: the operations that are requests to the store (READ-MODIFY-WRITE is a READ
#: plus an UPDATE, already measured as such; CLEANUP is the binding's shutdown)
REQUEST_OPS = ("READ", "UPDATE", "INSERT", "SCAN", "DELETE")
READ_OPS = ("READ", "SCAN")
OK_STATUS = ("OK", "BATCHED_OK")
# percentiles kept as columns: percentile -> column suffix
PERCENTILES = {50.0: "p50_us", 95.0: "p95_us", 99.0: "p99_us", 99.9: "p999_us"}

_MEASUREMENT = re.compile(r"^\[([^\]]+)\],(.*)$")
_PERCENTILE = re.compile(r"^(\d+(?:\.\d+)?)(?:st|nd|rd|th)?PercentileLatency\(us\)$")
# (?<!\d): a search tries each start once, not every digit of a long number
_STATUS = re.compile(r"(?<!\d)(\d+) sec: (\d+) operations;(?: ([0-9.,]+) current ops/sec;)?")
_BUCKET = re.compile(r"^>?\d+$")


@dataclass
class OpStats:
    """One operation's final measurements (latencies in us)."""
    count: int | None = None
    avg_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    percentiles: dict[float, float] = field(default_factory=dict)
    returns: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(n for s, n in self.returns.items() if s not in OK_STATUS)


@dataclass
class YcsbRun:
    """What one YCSB output file says."""
    source: str
    runtime_ms: float | None = None
    throughput_ops: float | None = None
    ops: dict[str, OpStats] = field(default_factory=dict)          # by YCSB name
    interval_ops: list[float] = field(default_factory=list)        # status lines, ops/s
    threads: int | None = None
    records: int | None = None
    distribution: str | None = None

    def requests(self) -> int:
        return sum(self.ops[o].count or 0 for o in REQUEST_OPS if o in self.ops)

    def measured(self) -> dict[str, Any]:
        """The row's measured columns, and the configuration the file tells."""
        row: dict[str, Any] = {"runtime_ms": self.runtime_ms, "throughput_ops": self.throughput_ops,
                               "mops": self.throughput_ops / 1e6}
        n = self.requests()
        weighted = [(s.count, s.avg_us) for o, s in self.ops.items()
                    if o in REQUEST_OPS and s.count and s.avg_us is not None]
        total = sum(c for c, _ in weighted)
        row["latency_avg_us"] = sum(c * a for c, a in weighted) / total if total else None
        # the last status line covers a partial interval: leave it out when there are others
        intervals = self.interval_ops[:-1] if len(self.interval_ops) > 1 else self.interval_ops
        row["throughput_min_ops"] = min(intervals) if intervals else None
        for name, prefix in YCSB_OPS.items():
            s = self.ops.get(name)
            if s is None:
                continue
            row[f"{prefix}_count"] = s.count
            row[f"{prefix}_avg_us"] = s.avg_us
            row[f"{prefix}_min_us"] = s.min_us
            row[f"{prefix}_max_us"] = s.max_us
            for p, suffix in PERCENTILES.items():
                row[f"{prefix}_{suffix}"] = s.percentiles.get(p)
            row[f"{prefix}_failed"] = s.failed if s.returns else None
        config: dict[str, Any] = {
            "clients": self.threads, "records": self.records,
            "distribution": self.distribution,
            "queries_m": n / 1e6 if n else None,
            "read_ratio": sum(self.ops[o].count or 0 for o in READ_OPS if o in self.ops) / n
            if n else None,
        }
        return {"measured": row, "config": config}


def _number(text: str, src: str, line: int, where: str) -> float | None:
    """A Java-printed number (``1.5E7``, ``NaN`` for no operations -> None)."""
    t = text.strip()
    try:
        x = float(t)
    except ValueError:
        raise InputError(f"expected a number, got {t!r}", source=src, line=line,
                         field=where) from None
    if math.isnan(x):
        return None
    if math.isinf(x):
        raise InputError(f"expected a finite number, got {t!r}", source=src, line=line,
                         field=where)
    return x


def read_ycsb(path: str | Path) -> YcsbRun:
    """Parse one YCSB client output file (stdout, or stdout and stderr together)."""
    src = str(path)
    text = safe_io.read_text(path, "YCSB output file")
    run = YcsbRun(src)
    seen_overall: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("Command line:"):
            _command_line(run, line[len("Command line:"):], src, lineno)
            continue
        st = _STATUS.search(line)
        if st and not line.startswith("["):
            if st.group(3) is not None and int(st.group(1)) > 0:
                run.interval_ops.append(float(st.group(3).replace(",", ".")))
            continue
        m = _MEASUREMENT.match(line)
        if not m:
            continue                      # banners, warnings, a binding's logging
        metric = m.group(1).strip()
        parts = m.group(2).split(",")
        if len(parts) != 2:
            raise InputError("expected '[METRIC], MEASUREMENT, VALUE'", source=src, line=lineno,
                             field=f"[{metric}]")
        name, value = parts[0].strip(), parts[1]
        where = f"[{metric}] {name}"
        x = _number(value, src, lineno, where)
        if metric == "OVERALL":
            if name in seen_overall:
                raise InputError(f"a second [OVERALL] {name} (first on line {seen_overall[name]}): "
                                 "give one run per file", source=src, line=lineno, field=where)
            seen_overall[name] = lineno
            if name == "RunTime(ms)":
                run.runtime_ms = _non_negative(x, src, lineno, where)
            elif name == "Throughput(ops/sec)":
                if x is None:             # YCSB prints NaN when the run measured nothing
                    raise InputError("the throughput is NaN: YCSB finished no operations in "
                                     "this run", source=src, line=lineno, field=where)
                run.throughput_ops = _non_negative(x, src, lineno, where)
            continue
        if metric.startswith(("TOTAL_GC", "MAX_", "MIN_")) or _BUCKET.match(name):
            continue                      # JVM figures, histogram buckets, time series
        _op_measurement(run.ops.setdefault(metric, OpStats()), name, x, src, lineno, where)
    for name in ("RunTime(ms)", "Throughput(ops/sec)"):
        if name not in seen_overall:
            raise InputError(f"no '[OVERALL], {name}' line: not the text output of a finished "
                             "YCSB run (exporter TextMeasurementsExporter)", source=src)
    if not run.requests():
        raise InputError("no operations measured ([READ], [UPDATE], [INSERT], [SCAN] or "
                         "[DELETE] with 'Operations')", source=src)
    return run


def _non_negative(x: float | None, src: str, line: int, where: str) -> float | None:
    if x is not None and x < 0:
        raise InputError(f"expected a non-negative number, got {x:g}", source=src, line=line,
                         field=where)
    return x


def _op_measurement(s: OpStats, name: str, x: float | None, src: str, line: int,
                    where: str) -> None:
    if name == "Operations":
        if x is None or x < 0 or not float(x).is_integer():
            raise InputError(f"expected a count of operations, got {x!r}", source=src,
                             line=line, field=where)
        s.count = int(x)
        return
    if name.startswith("Return="):
        if x is None or x < 0 or not float(x).is_integer():
            raise InputError(f"expected a count, got {x!r}", source=src, line=line, field=where)
        s.returns[name[len("Return="):]] = int(x)
        return
    # MinLatency is -1 for an operation that never ran (OneMeasurementHistogram)
    if x is not None and x < 0 and not (x == -1 and name in ("MinLatency(us)", "MaxLatency(us)")):
        raise InputError(f"expected a non-negative latency, got {x:g}", source=src, line=line,
                         field=where)
    val = x if x is None or x >= 0 else None
    pm = _PERCENTILE.match(name)
    if name == "AverageLatency(us)":
        s.avg_us = val
    elif name == "MinLatency(us)":
        s.min_us = val
    elif name == "MaxLatency(us)":
        s.max_us = val
    elif pm:
        if val is not None:
            s.percentiles[float(pm.group(1))] = val
    # other measurements (LatencyVariance(us), a binding's extras) are checked, not kept


def _command_line(run: YcsbRun, args: str, src: str, line: int) -> None:
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    props: dict[str, str] = {}
    for i, w in enumerate(words[:-1]):
        if w == "-threads":
            props["threadcount"] = words[i + 1]
        elif w == "-p" and "=" in words[i + 1]:
            k, v = words[i + 1].split("=", 1)
            props[k] = v
    for key, attr in (("threadcount", "threads"), ("recordcount", "records")):
        if key in props:
            try:
                setattr(run, attr, int(props[key]))
            except ValueError:
                raise InputError(f"expected an integer, got {props[key]!r}", source=src,
                                 line=line, field=key) from None
    dist = props.get("requestdistribution")
    if dist:
        run.distribution = {"zipfian": "zipf"}.get(dist, dist)


def combine(runs: Sequence[YcsbRun]) -> YcsbRun:
    """The physical clients of one run as one: counts and throughputs add up,
    averages are weighted by operations, min/max over clients, and a
    percentile is the largest client's (percentiles do not add up; the largest
    is an upper bound of the run's)."""
    out = YcsbRun(" + ".join(r.source for r in runs))
    out.runtime_ms = max(r.runtime_ms or 0.0 for r in runs)
    out.throughput_ops = sum(r.throughput_ops or 0.0 for r in runs)
    threads = [r.threads for r in runs]
    out.threads = sum(threads) if all(t is not None for t in threads) else None  # type: ignore[misc]
    out.records = runs[0].records
    out.distribution = runs[0].distribution
    for name in dict.fromkeys(n for r in runs for n in r.ops):
        parts = [r.ops[name] for r in runs if name in r.ops]
        s = OpStats(count=sum(p.count or 0 for p in parts))
        w = [(p.count, p.avg_us) for p in parts if p.count and p.avg_us is not None]
        s.avg_us = sum(c * a for c, a in w) / sum(c for c, _ in w) if w else None
        mins = [p.min_us for p in parts if p.min_us is not None]
        maxs = [p.max_us for p in parts if p.max_us is not None]
        s.min_us, s.max_us = (min(mins) if mins else None), (max(maxs) if maxs else None)
        for p in parts:
            for q, v in p.percentiles.items():
                s.percentiles[q] = max(v, s.percentiles.get(q, v))
            for st, n in p.returns.items():
                s.returns[st] = s.returns.get(st, 0) + n
        out.ops[name] = s
    return out
