"""Batch prediction over a runs CSV (docs/contracts.md).

Reads any CSV with the columns of one of the reference kinds, infers the
kind from the header, and writes every input row with all its input columns
plus ``pred_<column>`` for each measured column the kind can predict. A kind
that measures columns the model cannot predict (latency percentiles, stall
counters) keeps them as they are and names them, per row, in an
``unpredicted`` column. Bad input raises :class:`~model.errors.InputError`
naming file, line and column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterator

from model.errors import InputError
from model.safe_io import atomic_write, read_csv
from model.profile import Profile
from model.kinds import RunKind, detect
from model.row_prediction import WARNING, check_rows, predict_kind_rows


def read_runs(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a runs CSV (:func:`model.safe_io.read_csv`)."""
    return read_csv(path, "runs CSV", "--runs")


def predict_rows(kind: RunKind, rows: list[dict[str, str]], profile: Profile,
                 source: str, progress: bool = False,
                 intervals: bool = True, chunk: int = 256) -> Iterator[dict[str, Any]]:
    """``pred_`` columns of every row, in order. Rack kinds are solved in
    batches of ``chunk`` rows (shared racks once per batch), so a Ctrl-C
    keeps every batch finished before it."""
    from .progress import bar
    check_rows(kind, rows, source)        # a bad row 2,000 is reported before any work
    with bar(len(rows), f"predicting {kind.name}", "row", progress) as b:
        step = chunk if kind.rack is not None else 1    # row by row: keep every finished row
        for a in range(0, len(rows), step):
            part = rows[a:a + step]

            def moved(done: int, total: int, a=a, part=part) -> None:
                # racks solved within the chunk, shown as a share of its rows, so
                # a chunk of slow racks does not look like a hang
                b.n = a + int(len(part) * done / max(total, 1))
                b.refresh()

            for preds in predict_kind_rows(kind, part, profile, source, intervals=intervals,
                                           progress=moved):
                yield preds
            b.n = a + len(part)
            b.refresh()


def format_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):              # per-server values, as the notes write them
        return "|".join(format_value(float(x)) or "inf" for x in v)
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def run_batch(runs: str, out: str, profile: Profile | None = None,
              progress: bool = False, intervals: bool = True) -> tuple[RunKind, int]:
    """Predict every row of ``runs`` into ``out``; returns the kind and the row count.

    Ctrl-C writes the rows predicted so far, each with ``partial`` = ``true``,
    and raises :class:`sim.progress.Interrupted`."""
    from .progress import Interrupted
    header, rows = read_runs(runs)
    kind = detect(header, source=runs)
    profile = profile or Profile.load(kind.profile)
    for col in ([UNPREDICTED] if kind.unpredicted else []) + ["partial"]:
        if col in header:
            raise InputError(f"the input already has a column '{col}' (a previous "
                             "prediction?); rename or remove it", source=runs, line=1, field=col)
    pred_cols: list[str] = []
    results = []
    try:
        for preds in predict_rows(kind, rows, profile, runs, progress, intervals):
            for k in preds:
                if k in header:
                    # Writing over it would lose the user's column; keeping it
                    # would hide the new prediction.
                    raise InputError(f"the input already has a column '{k}' (a previous "
                                     "prediction?); rename or remove it", source=runs, line=1,
                                     field=k)
                if k not in pred_cols:
                    pred_cols.append(k)
            results.append(preds)
    except KeyboardInterrupt:
        _write(out, kind, header, rows, results, pred_cols, partial=True)
        raise Interrupted(len(results), len(rows), "rows",
                          f"the rows predicted so far are in {out} (column partial)") from None
    _write(out, kind, header, rows, results, pred_cols)
    unsettled = sum(1 for r in results if r.get(WARNING))
    if unsettled:
        import sys
        print(f"WARNING: {unsettled} of {len(rows)} rows did not settle (column {WARNING} "
              f"in {out}); their figures are the solver's last iterate", file=sys.stderr)
    return kind, len(rows)


def _write(out: str, kind: RunKind, header: list[str], rows: list[dict[str, str]],
           results: list[dict[str, Any]], pred_cols: list[str], partial: bool = False) -> None:
    extra = [UNPREDICTED] if kind.unpredicted else []
    if partial:
        extra.append("partial")
    with atomic_write(out) as fh:
        w = csv.writer(fh)
        w.writerow(header + pred_cols + extra)
        for row, preds in zip(rows, results):
            w.writerow([row.get(h, "") for h in header] + [format_value(preds.get(c)) for c in pred_cols]
                       + ([unpredicted(kind, row)] if kind.unpredicted else [])
                       + (["true"] if partial else []))


UNPREDICTED = "unpredicted"


def unpredicted(kind: RunKind, row: dict[str, str]) -> str:
    """The measured columns of ``row`` the model does not predict, ``|``-separated."""
    return "|".join(c for c in kind.unpredicted if str(row.get(c, "")).strip())
