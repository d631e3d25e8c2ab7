"""Reading one row of a runs CSV: cells, numbers and choices, with located errors.

Every run kind reads its rows through these, so a bad cell raises
:class:`~model.errors.InputError` naming the user's own column.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .errors import InputError

Row = Mapping[str, str]


def cell(row: Row, col: str, default: str | None = None) -> str | None:
    v = row.get(col)
    if v is None or str(v).strip() == "":
        return default
    return str(v).strip()


def number(row: Row, col: str, default: float | None = None, *, integer: bool = False,
           minimum: float | None = None) -> float | None:
    v = cell(row, col)
    if v is None:
        if default is None:
            raise InputError("missing value", field=col)
        return default
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"expected a number, got {v!r}", field=col) from None
    if not math.isfinite(x):
        raise InputError(f"expected a finite number, got {v!r}", field=col)
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
