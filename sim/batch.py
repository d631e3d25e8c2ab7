"""Batch prediction over a runs CSV (docs/contracts.md).

Reads any CSV with the columns of one of the reference kinds, infers the
kind from the header, and writes every input row with all its input columns
plus ``pred_<column>`` for each measured column the kind can predict. Bad
input raises :class:`~model.errors.InputError` naming file, line and column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from model.errors import InputError
from model.safe_io import atomic_write, read_csv
from model.profile import Profile
from model.kinds import RunKind, detect
from model.row_prediction import predict_kind_rows


def read_runs(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a runs CSV (:func:`model.safe_io.read_csv`)."""
    return read_csv(path, "runs CSV", "--runs")


def predict_rows(kind: RunKind, rows: list[dict[str, str]], profile: Profile,
                 source: str, progress: bool = False,
                 intervals: bool = True) -> list[dict[str, Any]]:
    """``pred_`` columns of every row (rack kinds solved as one batch)."""
    show = None
    if progress and len(rows) > 20:
        from tqdm import tqdm
        bar = tqdm(desc=f"predicting {kind.name}", unit="rack" if kind.rack else "row")

        def show(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)
            if done >= total:
                bar.close()
    return predict_kind_rows(kind, rows, profile, source, intervals=intervals, progress=show)


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
              progress: bool = True, intervals: bool = True) -> tuple[RunKind, int]:
    header, rows = read_runs(runs)
    kind = detect(header, source=runs)
    profile = profile or Profile.load(kind.profile)
    pred_cols: list[str] = []
    results = []
    for preds in predict_rows(kind, rows, profile, runs, progress, intervals):
        for k in preds:
            if k in header:
                # Writing over it would lose the user's column; keeping it
                # would hide the new prediction.
                raise InputError(f"the input already has a column '{k}' (a previous "
                                 "prediction?); rename or remove it", source=runs, line=1, field=k)
            if k not in pred_cols:
                pred_cols.append(k)
        results.append(preds)
    with atomic_write(out) as fh:
        w = csv.writer(fh)
        w.writerow(header + pred_cols)
        for row, preds in zip(rows, results):
            w.writerow([row.get(h, "") for h in header] + [format_value(preds.get(c)) for c in pred_cols])
    return kind, len(rows)
