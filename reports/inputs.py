"""Reading report inputs: prediction JSON, sweep/validation CSVs, timelines.

Every reader raises :class:`model.errors.InputError` naming the file, the
line (1-based, the header is line 1) and the column when the input is bad,
so ``python -m reports build`` can print one line and exit with code 2.

Values come back as plain Python: numbers as ``float``, empty cells as
``None``, per-server lists (``"1.6|1.8|2.0"``) kept as strings in sweep rows
and split by :func:`as_list` where needed.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from model.errors import InputError
from runio.safe_io import open_input, read_text

# Measured columns of the reference data (data/README.md); with ``pred_*``
# columns these are the outputs of a row, everything else is an input.
MEASURED = frozenset({
    "mops", "wait_us", "process_us", "send_us", "pktloss", "false_pos",
    "runtime_x", "normalized_x", "kops", "ops", "latency_ns", "qps",
    "latency_us", "cpu_total_pct", "cpu_user_pct", "requests",
    "latency_mean_us", "latency_std_us", "best_qps", "clients_by_littles_law",
    "client_send_min", "client_send_max", "client_send_avg", "client_wait_min",
    "client_wait_max", "client_wait_avg", "server_wait_min", "server_wait_max",
    "server_wait_avg", "server_process_min", "server_process_max",
    "server_process_avg", "cache_hit", "load_ratio", "throughput_mops",
})
# Descriptive columns: neither an input parameter nor a measurement.
LABELS = frozenset({"id", "note", "block", "setting", "wait_stat", "series"})

Row = dict[str, Any]


def parse_cell(text: str) -> Any:
    """'' -> None, numbers -> float, anything else stays a string."""
    t = text.strip()
    if t == "":
        return None
    try:
        x = float(t)
    except ValueError:
        return t
    return x


def as_list(value: Any) -> list[float] | None:
    """A number or ``a|b|c`` per-server list as floats; None if not numeric."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(p) for p in value.split("|")]
        except ValueError:
            return None
    return None


def _negative(value: Any) -> bool:
    values = as_list(value)
    return values is not None and any(v < 0 for v in values)


def read_csv(path: str | Path, *, numeric: Iterable[str] = (), all_numeric: bool = False,
             required: Iterable[str] = ()) -> tuple[list[str], list[Row]]:
    """Read a CSV with a header. Returns (columns, rows).

    ``numeric`` columns (and every ``pred_*`` column, and known measured
    columns) must hold numbers, empty cells or ``|``-separated numbers;
    with ``all_numeric`` every column must hold a plain number.
    """
    src = str(path)
    with open_input(path, "CSV file", newline="", encoding="utf-8") as fh:
        try:
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            if header is None or not any(h.strip() for h in header):
                raise InputError("empty file: expected a header row", source=src, line=1)
            columns = [h.strip() for h in header]
            for i, name in enumerate(columns):
                if not name:
                    raise InputError(f"column {i + 1} has an empty name", source=src, line=1)
                if columns.index(name) != i:
                    raise InputError("duplicate column name", source=src, line=1, field=name)
            for req in required:
                if req not in columns:
                    raise InputError(f"missing required column '{req}'; columns are: "
                                     f"{', '.join(columns)}", source=src, line=1, field=req)
            must = set(numeric) | {c for c in columns if c.startswith("pred_") or c in MEASURED}
            rows: list[Row] = []
            for cells in reader:
                line = reader.line_num
                if not cells or (len(cells) == 1 and not cells[0].strip()):
                    continue  # blank line
                if len(cells) != len(columns):
                    col = columns[len(cells)] if len(cells) < len(columns) else None
                    raise InputError(
                        f"expected {len(columns)} fields, got {len(cells)}"
                        + (f" (first missing column '{col}')" if col else " (too many)"),
                        source=src, line=line, field=col)
                row: Row = {}
                for name, text in zip(columns, cells):
                    value = parse_cell(text)
                    if isinstance(value, float) and not math.isfinite(value):
                        raise InputError(f"{text.strip()!r} is not a finite number",
                                         source=src, line=line, field=name)
                    if all_numeric and isinstance(value, str):
                        raise InputError(f"expected a number, got {text.strip()!r}",
                                         source=src, line=line, field=name)
                    if name in must and isinstance(value, str):
                        lst = as_list(value)
                        if lst is None or not all(math.isfinite(v) for v in lst):
                            raise InputError(
                                f"expected a number or a '|'-separated list of numbers, "
                                f"got {text.strip()!r}", source=src, line=line, field=name)
                    if name in must and name not in numeric and _negative(value):
                        # throughputs, latencies, counts and ratios: never below zero
                        raise InputError(f"{text.strip()!r} is negative; a measured or "
                                         "predicted value is at least 0", source=src,
                                         line=line, field=name)
                    row[name] = value
                rows.append(row)
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", source=src, line=reader.line_num) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text: {exc.reason}", source=src) from None
    if not rows:
        raise InputError("no data rows after the header", source=src, line=2)
    return columns, rows


def read_sweep(path: str | Path) -> list[Row]:
    """A batch-prediction CSV: input columns, measured columns, ``pred_*`` columns."""
    columns, rows = read_csv(path)
    if not any(c.startswith("pred_") for c in columns) and not any(c in MEASURED for c in columns):
        raise InputError("no measured or pred_* columns; expected e.g. mops and pred_mops",
                         source=str(path), line=1)
    return rows


def read_validation(path: str | Path) -> list[Row]:
    """Rows with measured ``<col>`` and predicted ``pred_<col>`` pairs."""
    columns, rows = read_csv(path)
    pairs = [c for c in columns if c.startswith("pred_") and c[5:] in columns]
    if not pairs:
        raise InputError("no column pairs to compare: expected a measured column and its "
                         "pred_<column>, e.g. mops and pred_mops", source=str(path), line=1)
    return rows


TIMELINE_REQUIRED = ("t_s", "throughput_mops")


def read_timeline(path: str | Path) -> list[Row]:
    """A simulator per-second timeline; every cell must be a number."""
    _, rows = read_csv(path, all_numeric=True, required=TIMELINE_REQUIRED)
    src = str(path)
    for i, row in enumerate(rows):
        if row["t_s"] is None:
            raise InputError("t_s is empty", source=src, line=i + 2, field="t_s")
    check_timeline(rows, src)
    return rows


def check_timeline(rows: list[Mapping[str, Any]], source: str = "<timeline>") -> None:
    if not rows:
        raise InputError("the timeline has no rows", source=source)
    for req in TIMELINE_REQUIRED:
        if req not in rows[0]:
            raise InputError(f"missing required column '{req}'", source=source, line=1, field=req)
    for i, row in enumerate(rows):
        for k, v in row.items():
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not math.isfinite(v)):
                raise InputError(f"expected a number, got {v!r}", source=source,
                                 line=i + 2, field=k)


# ---- prediction JSON ------------------------------------------------------

_PRED_FIELDS = ("throughput_mops", "cache_hit_ratio", "normalized_x", "bottleneck",
                "servers", "client")


def read_prediction(path: str | Path) -> tuple[dict, dict | None, dict | None]:
    """Read a Prediction JSON, bare or ``{"prediction", "scenario", "profile"}``."""
    return split_prediction(read_json(path), str(path))


def is_rotation(data: Any) -> bool:
    """Is ``data`` a server rotation's result (``predict --measure rotation --json``)?"""
    return isinstance(data, dict) and data.get("measure") == "rotation"


def read_json(path: str | Path) -> Any:
    """The JSON of ``--prediction`` (a prediction's or a server rotation's)."""
    src = str(path)
    text = read_text(path, "prediction JSON", "--prediction")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (column {exc.colno})",
                         source=src, line=exc.lineno) from None
    except RecursionError:
        raise InputError("not valid JSON here: arrays or objects nested too deeply",
                         source=src) from None
    except ValueError as exc:        # an integer past Python's 4,300-digit limit
        raise InputError(f"not valid JSON: {str(exc)[:120]}", source=src) from None
    return data


def split_prediction(data: Any, source: str = "<prediction>") -> tuple[dict, dict | None, dict | None]:
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", source=source)
    if "prediction" in data:
        pred, scen, prof = data["prediction"], data.get("scenario"), data.get("profile")
        where = "prediction."
    else:
        pred, scen, prof = data, None, None
        where = ""
    check_prediction(pred, source, where)
    if scen is not None and not isinstance(scen, dict):
        raise InputError("expected an object (Scenario.to_dict())", source=source, field="scenario")
    if prof is not None:
        check_profile(prof, source)
    return pred, scen, prof


def check_prediction(pred: Any, source: str = "<prediction>", where: str = "") -> None:
    if not isinstance(pred, dict):
        raise InputError("expected an object (Prediction.to_dict())", source=source,
                         field=where.rstrip(".") or None)
    for key in _PRED_FIELDS:
        if key not in pred:
            raise InputError("missing field", source=source, field=where + key)
    for key in ("throughput_mops", "cache_hit_ratio", "normalized_x"):
        _number(pred[key], source, where + key)
    if not isinstance(pred["servers"], list):
        raise InputError("expected a list of servers", source=source, field=where + "servers")
    for i, s in enumerate(pred["servers"]):
        f = f"{where}servers[{i}]"
        if not isinstance(s, dict):
            raise InputError("expected an object", source=source, field=f)
        for key in ("share", "utilization", "wait_us", "process_us"):
            if key not in s:
                raise InputError("missing field", source=source, field=f"{f}.{key}")
            _number(s[key], source, f"{f}.{key}")
    if not isinstance(pred["client"], dict):
        raise InputError("expected an object", source=source, field=where + "client")
    for key in ("send_us", "latency_us"):
        if key in pred["client"]:
            _number(pred["client"][key], source, f"{where}client.{key}")


def check_profile(prof: Any, source: str = "<profile>") -> None:
    if not isinstance(prof, dict):
        raise InputError("expected an object {name, meta, params}", source=source, field="profile")
    params = prof.get("params", {})
    if not isinstance(params, dict):
        raise InputError("expected an object of parameters", source=source, field="profile.params")
    for k, p in params.items():
        if not isinstance(p, dict) or "value" not in p:
            raise InputError("expected {value, unit, source, stderr}", source=source,
                             field=f"profile.params.{k}")


def _number(v: Any, source: str, field: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"expected a finite number, got {v!r}", source=source, field=field)
    # every number of a prediction is a throughput, a ratio, a time or a share
    if v < 0:
        raise InputError(f"expected a number >= 0, got {v!r}", source=source, field=field)
