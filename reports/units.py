"""Units and human labels inferred from column and field names.

Every axis, table header and number in a report carries a unit. The toolkit
puts units in names (``wait_us``, ``memtable_mb``, ``throughput_mops``), so
the unit is read off the name: a known full name first, then the suffix.

>>> unit_for("pred_wait_us")
'µs'
>>> label("mops")
'throughput (MOPS)'
>>> fmt(0.0395, "MOPS")
'0.0395 MOPS'
"""

from __future__ import annotations

import math

from model.units import PER_SERVER as _PER_SERVER, base_name, unit_of

#: How reports typeset the ASCII units of :mod:`model.units`.
_DISPLAY = {"us": "µs", "x": "×"}

# Friendlier names for the common measured columns.
_NAMES: dict[str, str] = {
    "mops": "throughput", "throughput_mops": "throughput", "kops": "throughput",
    "ops": "throughput", "qps": "throughput", "best_qps": "best throughput",
    "wait_us": "server wait", "process_us": "server process",
    "send_us": "client send", "latency_us": "latency", "latency_ns": "latency",
    "latency_mean_us": "mean latency", "latency_std_us": "latency std. dev.",
    "pktloss": "packet loss", "false_pos": "false positives",
    "normalized_x": "normalized throughput", "runtime_x": "runtime throughput gain",
    "cpu_total_pct": "server CPU (total)", "cpu_user_pct": "server CPU (user)",
    "stalled_frac": "stalled fraction", "t_s": "time", "clients": "clients",
    "servers": "servers", "memtable_mb": "memtable", "timeout_ms": "timeout",
    "queries_m": "queries", "cache_hit_ratio": "cache hit ratio",
}

def nice_name(column: str) -> str:
    name = base_name(column)
    return _NAMES.get(name.lower(), name.replace("_", " "))


def label(column: str, *, unit: str | None = None, prefix: str = "") -> str:
    """Axis or header label: ``"server wait (µs)"``; predicted columns say so."""
    u = unit_for(column) if unit is None else unit
    name = nice_name(column)
    if column.startswith("pred_"):
        name = "predicted " + name
    if prefix:
        name = f"{prefix} {name}"
    m = _PER_SERVER.match(column)
    if m:
        name = f"{name}, server {m.group(2)}"
    return f"{name} ({u})" if u else name


def fmt(value, unit: str = "", digits: int = 4) -> str:
    """A number with its unit; fractions are shown as percentages."""
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return f"{value} {unit}".strip() if unit and _looks_numeric(value) else value
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, "", digits) for v in value) + (f" {unit}" if unit else "")
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "–"
    if unit == "fraction":
        return f"{_num(x * 100, digits)} %"
    if unit == "×":
        return f"{_num(x, digits)}×"
    return f"{_num(x, digits)} {unit}".rstrip()


def _num(x: float, digits: int) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}".replace(",", "\u202f")
    s = f"{x:.{digits}g}"
    if "e" in s:
        return s
    return s


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def unit_for(column: str) -> str:
    """The unit of a column as reports show it ('' when dimensionless/unknown)."""
    u = unit_of(column)
    return _DISPLAY.get(u, u)
