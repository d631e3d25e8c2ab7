"""Validation: predicted versus measured, with error statistics.

:func:`validate` predicts every row of one or more runs CSVs with a profile
(through the run kind's ``predict_row``, as ``python -m sim predict --runs``
does) and compares each measured column with its ``pred_<column>``:

* absolute percentage error per row and column,
  ``APE = |predicted - measured| / |measured| * 100`` (a ``|``-separated
  per-server list is compared element by element and averaged);
* per column: median and mean APE, and the Spearman rank correlation
  (:func:`scipy.stats.spearmanr`) over the rows, which says whether a sweep's
  ordering is right even where its level is off;
* the worst rows.

:func:`gate` turns the summary into a pass/fail check (``--max-error``).
Predictions run in parallel on a process pool or a Dask cluster for large
files (:mod:`calibrate.parallel`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scipy import stats as _stats

from model.errors import InputError
from model.profile import Profile

from runio import local_runs  # noqa: F401  (registers local_runs in worker processes too)
from model.units import unit_of

from .parallel import pmap
from .runs_io import load_runs

@dataclass
class ColumnSummary:
    column: str
    unit: str
    n: int
    median_ape: float
    mean_ape: float
    spearman: float | None
    spearman_p: float | None


@dataclass
class Validation:
    kind: str
    profile: str
    rows: list[dict[str, Any]]                     # input row + pred_<col> + ape_<col>
    columns: list[str]
    summary: dict[str, ColumnSummary]
    worst: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0                               # rows left out as disturbed (max_interference)
    unpredicted: list[str] = field(default_factory=list)   # measured, kept, not predicted


def _values(v: Any) -> list[float] | None:
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        vals = [float(x) for x in v]
        return vals if vals else None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return [float(v)] if math.isfinite(v) else None
    s = str(v).strip()
    if not s:
        return None
    try:
        vals = [float(x) for x in s.split("|")]
    except ValueError:
        return None
    return vals


def ape(measured: Any, predicted: Any) -> float | None:
    """Absolute percentage error (%), elementwise-averaged for per-server lists."""
    m, p = _values(measured), _values(predicted)
    if not m or not p or len(m) != len(p):
        return None
    errs = [abs(b - a) / abs(a) * 100.0 for a, b in zip(m, p)
            if a != 0 and math.isfinite(a) and math.isfinite(b)]
    return sum(errs) / len(errs) if errs else None


def _mean(v: Any) -> float | None:
    vals = _values(v)
    if not vals:
        return None
    fin = [x for x in vals if math.isfinite(x)]
    return sum(fin) / len(fin) if fin else None


def _predict_task(task: tuple) -> dict[str, Any]:
    kind_name, row, profile = task
    from runio.kinds import KINDS
    kind = KINDS[kind_name]
    try:
        return kind.predict_row(row, profile)
    except InputError as exc:
        raise exc.located(source=row.get("__source__"), line=int(row["__line__"])) from None


def _progress_line(what: str):
    """A ``progress(done, total)`` that rewrites one stderr line."""
    import sys

    def show(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{what}: {done}/{total} racks solved", end=end, file=sys.stderr, flush=True)
    return show


NOT_CONFIG = {"id", "note", "date", "repeat", "config_hash", "plan", "wait_stat",
              "completed", "elapsed_s", "worker_share", "external_cores", "response_us"}


def aggregate_repeats(rows: list[dict[str, Any]], measured: Sequence[str]) -> list[dict[str, Any]]:
    """One row per configuration: the median of each measured column over its repeats.

    Rows are grouped by every column that is not measured (nor an id, date,
    repeat index or hash). The first row of a group keeps its id, with the
    number of repeats appended (``default-001 (x3)``).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        key = tuple(sorted((c, str(v)) for c, v in r.items()
                           if c not in measured and c not in NOT_CONFIG and not c.startswith("__")))
        groups.setdefault(key, []).append(r)
    out = []
    for members in groups.values():
        row = dict(members[0])
        if len(members) > 1:
            for c in measured:
                vals = [_mean(m.get(c)) for m in members]
                vals = [v for v in vals if v is not None]
                if vals and not any("|" in str(m.get(c, "")) for m in members):
                    row[c] = repr(statistics.median(vals))
            row["id"] = f"{row.get('id') or _row_id(row)} (x{len(members)})"
        out.append(row)
    return out


def validate(profile: Profile, runs: str | Sequence[str], *, kind: str | None = None,
             cluster: Any = None, n_jobs: int | None = None, progress: bool = False,
             worst: int = 5, aggregate: bool = False,
             max_interference: float | None = None,
             where: Mapping[str, str] | None = None) -> Validation:
    """Predict every row of ``runs`` with ``profile`` and summarise the errors.

    With ``max_interference``, runs during which other processes kept more
    than that many cores busy (column ``external_cores`` of local runs) are
    left out. With ``aggregate``, repeats of a configuration are then reduced
    to the median of each measured column (:func:`aggregate_repeats`).
    """
    k, rows = load_runs(runs, kind, where=where)
    dropped = 0
    if max_interference is not None:
        kept = []
        for r in rows:
            try:
                ext = float(r.get("external_cores") or 0.0)
            except ValueError:
                raise InputError(f"expected a number, got {r.get('external_cores')!r}",
                                 source=r.get("__source__"), line=int(r["__line__"]),
                                 field="external_cores") from None
            if ext > max_interference:
                dropped += 1
            else:
                kept.append(r)
        if not kept:
            raise InputError(f"every run had external_cores > {max_interference:g} cores",
                             field="--max-interference")
        rows = kept
    if aggregate:
        rows = aggregate_repeats(rows, k.measured)
    if n_jobs is None:
        n_jobs = 1 if len(rows) < 16 else None
    if k.rack is not None:
        # Rack kinds are solved as one batch (shared racks once), which beats
        # spreading single solves over processes.
        from runio.notes import note
        from runio.row_prediction import predict_kind_rows
        for option, given in (("--jobs", n_jobs not in (None, 1)), ("--cluster", cluster)):
            if given:
                note(f"{option} is ignored: {k.name} rows are solved as one batch in this "
                     "process")
        preds = predict_kind_rows(k, rows, profile,
                                  progress=_progress_line("predicting") if progress else None)
    else:
        preds = pmap(_predict_task, [(k.name, r, profile) for r in rows], cluster=cluster,
                     n_jobs=n_jobs, progress=progress, desc="predicting")
    cols = [c for c in k.measured if any(_values(r.get(c)) for r in rows)]
    out_rows = []
    for r, p in zip(rows, preds):
        row = dict(r)
        row.update(p)
        for c in cols:
            row[f"ape_{c}"] = ape(r.get(c), p.get(f"pred_{c}"))
        out_rows.append(row)
    summary = {}
    for c in cols:
        pairs = [(_mean(r.get(c)), _mean(r.get(f"pred_{c}")), r[f"ape_{c}"]) for r in out_rows]
        pairs = [t for t in pairs if t[0] is not None and t[1] is not None and t[2] is not None]
        if not pairs:
            continue
        apes = [t[2] for t in pairs]
        rho = p_rho = None
        ms, ps = [t[0] for t in pairs], [t[1] for t in pairs]
        if len(pairs) >= 3 and len(set(ms)) > 1 and len(set(ps)) > 1:
            res = _stats.spearmanr(ms, ps)
            rho, p_rho = float(res.statistic), float(res.pvalue)
        summary[c] = ColumnSummary(c, unit_of(c), len(pairs), statistics.median(apes),
                                   sum(apes) / len(apes), rho, p_rho)
    flat = [{"id": _row_id(r), "column": c, "measured": r.get(c), "predicted": r.get(f"pred_{c}"),
             "ape": r[f"ape_{c}"]} for r in out_rows for c in cols if r.get(f"ape_{c}") is not None]
    flat.sort(key=lambda d: -d["ape"])
    kept = [c for c in k.unpredicted if any(_values(r.get(c)) for r in rows)]
    return Validation(k.name, profile.name, out_rows, cols, summary, flat[:worst], dropped, kept)


def _row_id(r: Mapping[str, Any]) -> str:
    return str(r.get("id") or f"{r.get('__source__')}:{r.get('__line__')}")


def _fmt(v: Any, unit: str) -> str:
    if isinstance(v, str) and "|" in v:
        return v + (f" {unit}" if unit else "")
    x = _mean(v)
    if x is None:
        return "-"
    return f"{x:.4g} {unit}".rstrip()


def format_report(v: Validation, per_row: bool = True) -> str:
    lines = [f"validation of profile '{v.profile}' on {len(v.rows)} {v.kind} rows"]
    if v.dropped:
        lines.append(f"({v.dropped} runs left out: other processes kept too many cores busy)")
    lines.append("")
    if per_row:
        lines.append(f"  {'row':<16} {'column':<14} {'measured':>18} {'predicted':>18} {'error':>9}")
        for r in v.rows:
            for c in v.columns:
                if _values(r.get(c)) is None:
                    continue
                u = unit_of(c)
                e = r.get(f"ape_{c}")
                err = f"{e:8.1f}%" if e is not None else "       -"
                lines.append(f"  {_row_id(r):<16} {c:<14} {_fmt(r.get(c), u):>18} "
                             f"{_fmt(r.get(f'pred_{c}'), u):>18} {err}")
        lines.append("")
    lines.append(f"  {'column':<14} {'unit':<12} {'rows':>5} {'median APE':>11} {'mean APE':>10} "
                 f"{'Spearman':>9}")
    for c, s in v.summary.items():
        rho = f"{s.spearman:9.3f}" if s.spearman is not None else f"{'-':>9}"
        lines.append(f"  {c:<14} {s.unit:<12} {s.n:>5} {s.median_ape:10.1f}% {s.mean_ape:9.1f}% {rho}")
    if v.unpredicted:
        lines += ["", "  measured but not predicted by the model (kept in the rows as they are): "
                  + ", ".join(v.unpredicted)]
    if v.worst:
        lines += ["", "  worst rows:"]
        for w in v.worst:
            u = unit_of(w["column"])
            lines.append(f"    {w['id']:<16} {w['column']:<14} measured {_fmt(w['measured'], u)}, "
                         f"predicted {_fmt(w['predicted'], u)} ({w['ape']:.1f}% off)")
    return "\n".join(lines)


def gate(v: Validation, max_error_pct: float) -> list[str]:
    """Messages for every column whose median APE exceeds ``max_error_pct``."""
    return [f"median error of {c} is {s.median_ape:.1f}% > {max_error_pct:g}% "
            f"(over {s.n} rows)" for c, s in v.summary.items() if s.median_ape > max_error_pct]


def report_rows(v: Validation) -> list[dict[str, Any]]:
    """Rows for reports.write_validation_report: numbers as numbers, empty as None."""
    out = []
    for r in v.rows:
        d: dict[str, Any] = {}
        for k, val in r.items():
            if k.startswith("__"):
                continue
            if isinstance(val, str):
                s = val.strip()
                if s == "":
                    d[k] = None
                    continue
                try:
                    d[k] = float(s) if "|" not in s else s
                except ValueError:
                    d[k] = s
            elif isinstance(val, float) and not math.isfinite(val):
                d[k] = None
            else:
                d[k] = val
        out.append(d)
    return out
