"""Values as JSON can hold them: every non-finite float as null.

JSON has no NaN or infinity, and a prediction has both (no goodput, an
unbounded latency). Every ``--json`` output and ``to_dict`` passes its
values through :func:`finite_or_none`.
"""

from __future__ import annotations

import math
from typing import Any


def finite_or_none(x: Any) -> Any:
    """``x`` with every non-finite float as None, through dicts, lists and
    tuples (a tuple becomes a list) and numpy values (``tolist``)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    if hasattr(x, "tolist"):
        return finite_or_none(x.tolist())
    return x
