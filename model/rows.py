"""Reading one row of a runs CSV: cells, numbers and choices, with located errors.

Every run kind reads its rows through these, so a bad cell raises
:class:`~model.errors.InputError` naming the user's own column.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from model.errors import InputError

Row = Mapping[str, str]


def cell(row: Row, col: str, default: str | None = None) -> str | None:
    v = row.get(col)
    if v is None or str(v).strip() == "":
        return default
    return str(v).strip()


# A number as a measurement file writes it: digits, an optional point and
# exponent. Python's float() also takes "1_000", "inf", "nan" and
# "infinity", which in a CSV cell are a typo or a failed measurement.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse_number(text: str, col: str) -> float:
    """A finite number from a cell's text, or an error naming the column."""
    t = text.strip()
    if not _NUMBER.fullmatch(t):
        hint = " (no '_' separators in a CSV number)" if "_" in t else ""
        raise InputError(f"expected a number, got {text!r}{hint}", field=col)
    x = float(t)
    if not math.isfinite(x):
        raise InputError(f"expected a finite number, got {text!r}", field=col)
    return x


def number(row: Row, col: str, default: float | None = None, *, integer: bool = False,
           minimum: float | None = None) -> float | None:
    v = cell(row, col)
    if v is None:
        if default is None:
            raise InputError("missing value", field=col)
        return default
    x = parse_number(v, col)
    if integer:
        if not x.is_integer():
            raise InputError(f"expected an integer, got {v!r}", field=col)
        x = int(x)
    if minimum is not None and x < minimum:
        raise InputError(f"{v} is below the minimum {minimum}", field=col)
    return x


def choice(row: Row, col: str, mapping: Mapping[str, Any], default: str | None = None):
    v = cell(row, col, default)
    if v is None:
        raise InputError(f"missing value; allowed: {', '.join(mapping)}", field=col)
    if v not in mapping:
        raise InputError(f"{v!r} is not allowed; allowed: {', '.join(mapping)}", field=col)
    return mapping[v]


def scenario_from_columns(base: Any, changes: Mapping[str, Any], columns: Mapping[str, str]):
    """``base.updated(changes)`` for a row whose cells set scenario keys.

    ``columns`` maps each scenario key to the CSV column it came from, so an
    error (a value out of the key's range, flushnum not below maxnum) names
    the user's column, with the scenario key in the message."""
    try:
        return base.updated(changes)
    except InputError as exc:
        col = columns.get(exc.field or "")
        if col is None:
            raise
        raise InputError(f"{exc.detail} (scenario key {exc.field})", field=col) from None
