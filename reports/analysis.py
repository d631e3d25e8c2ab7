"""Pure data work behind the reports: no HTML, no plotting.

* which columns of a sweep are inputs, measurements and predictions;
* which input plays "clients" and which "servers" for throughput curves;
* which pairs of numeric inputs form a two-parameter grid (for heatmaps);
* percentage errors of predictions against measurements, and their summary
  (median and mean absolute percentage error, share within ±10 % / ±20 %).
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .inputs import LABELS, MEASURED, Row, as_list

THROUGHPUT_COLUMNS = ("mops", "throughput_mops", "kops", "ops", "qps", "best_qps", "requests")
CLIENT_AXES = ("clients", "client_threads", "connections", "conns_per_client",
               "conns_per_core", "client_cores", "step")
SERVER_AXES = ("servers", "server_cores", "server_vcpus", "replicas")
GROUP_COLUMNS = ("system", "runtime", "read_mode", "model", "workload", "engine", "variant")


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class SweepColumns:
    columns: list[str]
    inputs: list[str]            # parameters of a row
    numeric_inputs: list[str]    # inputs with only numbers (or empty)
    varying: list[str]           # numeric inputs taking at least two values
    outputs: list[str]           # measured or predicted metrics, base names
    throughput: str | None       # the throughput metric's base name

    def has(self, rows: Sequence[Row], col: str) -> bool:
        return any(r.get(col) is not None for r in rows)


def classify(rows: Sequence[Row]) -> SweepColumns:
    columns: list[str] = []
    for r in rows:
        for c in r:
            if c not in columns:
                columns.append(c)
    preds = {c[5:] for c in columns if c.startswith("pred_")}
    outputs = [c for c in columns if not c.startswith("pred_") and (c in preds or c in MEASURED)]
    outputs += [p for p in preds if p not in outputs]
    inputs = [c for c in columns if not c.startswith("pred_") and c not in outputs
              and c not in LABELS]
    numeric = [c for c in inputs
               if all(r.get(c) is None or is_num(r.get(c)) for r in rows)
               and any(r.get(c) is not None for r in rows)]
    varying = [c for c in numeric if len({r.get(c) for r in rows if r.get(c) is not None}) >= 2]
    thr = None
    for t in THROUGHPUT_COLUMNS:
        if t in outputs and any(is_num(r.get(t)) or is_num(r.get("pred_" + t)) for r in rows):
            thr = t
            break
    return SweepColumns(columns, inputs, numeric, varying, outputs, thr)


def first_present(candidates: Iterable[str], cols: SweepColumns) -> str | None:
    for c in candidates:
        if c in cols.varying:
            return c
    return None


def group_key(row: Row, cols: Iterable[str]) -> str:
    parts = [f"{c}={_short(row.get(c))}" for c in cols]
    return ", ".join(parts) if parts else "all rows"


def _short(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "–" if v is None else str(v)


def series(rows: Sequence[Row], x: str, by: list[str], y: str) -> dict[str, list[tuple[float, float, str]]]:
    """Group rows into {label: [(x, y, row id)]} sorted by x; rows without y skipped."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for i, r in enumerate(rows):
        xv, yv = r.get(x), r.get(y)
        if not is_num(xv) or not is_num(yv):
            continue
        out.setdefault(group_key(r, by), []).append((xv, yv, str(r.get("id", f"row {i + 1}"))))
    for pts in out.values():
        pts.sort(key=lambda p: p[0])
    return out


@dataclass
class Grid:
    x: str
    y: str
    fixed: dict[str, Any]            # the other inputs, held constant
    xs: list[float]
    ys: list[float]
    z: list[list[float | None]]      # z[j][i] at (xs[i], ys[j]); mean if repeated
    metric: str
    cells: int


def find_grids(rows: Sequence[Row], cols: SweepColumns, metric: str,
               limit: int = 3) -> list[Grid]:
    """Two-parameter sweeps hidden in a table.

    For each pair of varying numeric inputs, rows are grouped by every
    other input; the group covering the most (x, y) cells, with at least two
    values on each axis and four cells, is a grid. Returns the best grids
    by cell count (pairs with known meaning first on ties).
    """
    others_all = [c for c in cols.inputs]
    found: list[Grid] = []
    for a, b in itertools.combinations(cols.varying, 2):
        others = [c for c in others_all if c not in (a, b)]
        groups: dict[tuple, list[Row]] = {}
        for r in rows:
            if not is_num(r.get(a)) or not is_num(r.get(b)) or not is_num(r.get(metric)):
                continue
            groups.setdefault(tuple(r.get(c) for c in others), []).append(r)
        best = None
        for key, members in groups.items():
            xs = sorted({r[a] for r in members})
            ys = sorted({r[b] for r in members})
            cells = len({(r[a], r[b]) for r in members})
            if len(xs) < 2 or len(ys) < 2 or cells < 4:
                continue
            if best is None or cells > best[0]:
                best = (cells, key, members, xs, ys)
        if best is None:
            continue
        cells, key, members, xs, ys = best
        acc: dict[tuple, list[float]] = {}
        for r in members:
            acc.setdefault((r[a], r[b]), []).append(r[metric])
        z = [[statistics.fmean(acc[(xv, yv)]) if (xv, yv) in acc else None for xv in xs]
             for yv in ys]
        # Put the axis with more values on x.
        if len(ys) > len(xs):
            a, b, xs, ys = b, a, ys, xs
            z = [list(col) for col in zip(*z)]
        fixed = {c: v for c, v in zip(others, key) if v is not None}
        found.append(Grid(a, b, fixed, xs, ys, z, metric, cells))
    found.sort(key=lambda g: -g.cells)
    return found[:limit]


# ---- prediction errors -----------------------------------------------------

_EPS = 1e-9   # percentage points: 4.4 vs 4.0 is "within 10 %" despite rounding


@dataclass
class Comparison:
    row: str          # row id (with [i] for a per-server list element)
    metric: str       # base column name, e.g. "mops"
    measured: float
    predicted: float

    @property
    def error_pct(self) -> float | None:
        if self.measured == 0:
            return None
        return round((self.predicted - self.measured) / abs(self.measured) * 100.0, 9)


def compare(rows: Sequence[Row]) -> list[Comparison]:
    """All (measured, predicted) pairs in rows with ``col`` and ``pred_col``.

    Per-server lists are compared element by element when both sides list
    the same number of servers, and by their means otherwise.
    """
    out: list[Comparison] = []
    cols: list[str] = []
    for r in rows:
        for c in r:
            if c.startswith("pred_") and c[5:] in r and c not in cols:
                cols.append(c)
    for i, r in enumerate(rows):
        rid = str(r.get("id") or f"row {i + 1}")
        for pc in cols:
            m, p = as_list(r.get(pc[5:])), as_list(r.get(pc))
            if not m or not p:
                continue
            if len(m) == len(p) == 1:
                out.append(Comparison(rid, pc[5:], m[0], p[0]))
            elif len(m) == len(p):
                out.extend(Comparison(f"{rid}[{k}]", pc[5:], mv, pv)
                           for k, (mv, pv) in enumerate(zip(m, p)))
            else:
                out.append(Comparison(rid + " (mean)", pc[5:], statistics.fmean(m),
                                      statistics.fmean(p)))
    return out


@dataclass
class ErrorSummary:
    metric: str
    n: int
    mdape: float | None    # median absolute percentage error, %
    mape: float | None     # mean absolute percentage error, %
    bias: float | None     # mean signed percentage error, %
    within10: float | None  # share of points within ±10 %, fraction
    within20: float | None
    worst: str | None      # row with the largest absolute error


def summarize(comps: Sequence[Comparison]) -> list[ErrorSummary]:
    by: dict[str, list[Comparison]] = {}
    for c in comps:
        by.setdefault(c.metric, []).append(c)
    out = []
    for metric, cs in by.items():
        errs = [(abs(c.error_pct), c.error_pct, c.row) for c in cs if c.error_pct is not None]
        if errs:
            a = [e[0] for e in errs]
            worst = max(errs, key=lambda e: e[0])
            out.append(ErrorSummary(metric, len(cs), statistics.median(a), statistics.fmean(a),
                                    statistics.fmean(e[1] for e in errs),
                                    sum(x <= 10 + _EPS for x in a) / len(a),
                                    sum(x <= 20 + _EPS for x in a) / len(a), worst[2]))
        else:
            out.append(ErrorSummary(metric, len(cs), None, None, None, None, None, None))
    return out


def bottleneck_servers(pred: Mapping[str, Any]) -> set[int]:
    """The workers the prediction's structured bottleneck names (may be empty)."""
    b = pred.get("bottleneck") or {}
    n = len(pred.get("servers") or [])
    return {int(i) for i in (b.get("servers") or []) if 0 <= int(i) < n} \
        if isinstance(b, Mapping) else set()


def bottleneck_text(pred: Mapping[str, Any]) -> str:
    """The bottleneck as one line of text (rendered by the model, not parsed)."""
    b = pred.get("bottleneck")
    if isinstance(b, Mapping):
        return str(b.get("text") or b.get("kind") or "–")
    return str(b or "–")


# What each kind of bottleneck (model/rack/bottleneck.py) means for a user:
# which settings move it. Shown under the model's own one-line text.
_MEANING = {
    "server": "Throughput is what the named workers can serve of their share of the "
              "requests: more servers (if the partition spreads the load), a shorter "
              "service time or a more even partition raise it; more clients only add "
              "queueing.",
    "clients": "The servers have spare capacity: more client threads (or a cheaper client "
               "send) would raise throughput.",
    "timeouts": "Clients sit idle waiting out lost requests before resending: how many "
                "packets are lost (receive buffers, load) and the timeout set how much "
                "time that costs.",
    "write-stall": "Writes stop while full memtables wait to be flushed: larger or more "
                   "memtables (storage.memtable_mb, storage.maxnum) or a faster disk "
                   "shorten the stops.",
    "wal-switch": "The worker blocks while RocksDB switches WAL files or slows writes "
                  "down, and clients queue behind it: the WAL settings "
                  "(storage.wal_bytes_per_sync_mb, storage.wal) move it.",
    "cores": "There are more threads than cores, so services are stretched by context "
             "switches: fewer workers per machine or more cores help.",
}


def bottleneck_kind(pred: Mapping[str, Any]) -> str:
    b = pred.get("bottleneck")
    return str(b.get("kind") or "") if isinstance(b, Mapping) else ""


def bottleneck_meaning(pred: Mapping[str, Any]) -> str:
    """What the bottleneck means and which settings move it ('' if unknown)."""
    return _MEANING.get(bottleneck_kind(pred), "")


def sample_step(t: Sequence[float]) -> float:
    """The sampling step of a timeline (median spacing; 1 s for one sample)."""
    steps = [b - a for a, b in zip(t, t[1:]) if b > a]
    return statistics.median(steps) if steps else 1.0


def mean_interval(values: Sequence[float], level: float = 0.95) -> float | None:
    """Half-width of the ``level`` confidence interval of the mean of ``values``.

    Each value is the mean over one sampling period (batch means), so the
    periods are treated as independent; None for fewer than three values.
    """
    vals = [v for v in values if is_num(v)]
    if len(vals) < 3:
        return None
    from scipy.stats import t as student_t
    q = float(student_t.ppf(0.5 + level / 2, len(vals) - 1))
    return q * statistics.stdev(vals) / math.sqrt(len(vals))


def stall_spans(t: Sequence[float], frac: Sequence[float | None], threshold: float = 0.0
                ) -> list[tuple[float, float, float]]:
    """Contiguous seconds with stalled fraction above threshold: (start, end, peak).

    A row at ``t`` covers ``[t - dt, t]`` where ``dt`` is the sampling step
    (the timeline reports the second that just ended).
    """
    spans: list[tuple[float, float, float]] = []
    if not t:
        return spans
    dt = sample_step(t)
    cur = None
    for tv, f in zip(t, frac):
        on = f is not None and f > threshold
        if on:
            if cur is None:
                cur = [tv - dt, tv, f]
            else:
                cur[1], cur[2] = tv, max(cur[2], f)
        elif cur is not None:
            spans.append(tuple(cur))
            cur = None
    if cur is not None:
        spans.append(tuple(cur))
    return spans
