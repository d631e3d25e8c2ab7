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

#: How reports typeset the ASCII units of :mod:`model.units`. Memory sizes
#: are binary (a memtable_mb of 64 is RocksDB's 64 << 20 bytes; scenario keys
#: and profiles say MiB): a page said "MB" for its CSV columns beside "MiB"
#: for the same sizes in its scenario.
_DISPLAY = {"us": "µs", "x": "×", "KB": "KiB", "MB": "MiB", "GB": "GiB", "MB/s": "MiB/s"}

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
    """``pred_wait_us`` -> ``server wait``; a scenario key's section is dropped
    when the key is known (``storage.memtable_mb`` -> ``memtable``)."""
    name = base_name(column)
    key = name.rsplit(".", 1)[-1].lower()
    return _NAMES.get(name.lower()) or _NAMES.get(key) or name.replace("_", " ")


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
    """A number with its unit; fractions are shown as percentages (see :func:`num`)."""
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
        return pct(x)
    if unit == "×":
        return f"{num(x, digits)}×"
    return f"{num(x, digits)} {unit}".rstrip()


# Smallest magnitude shown as a number: below it a value is noise at this
# precision, and "3.5e-101" tells a reader nothing "< 0.0001" does not.
_FLOOR = 1e-4


def num(x: float, digits: int = 4) -> str:
    """A plain number for people: never an exponent.

    Whole numbers and anything of 1000 or more are shown as integers with
    thin-space thousands (``17 290``); smaller ones with ``digits``
    significant digits (``0.8314``, ``39.2``); magnitudes below 0.0001 as
    ``< 0.0001`` (or ``> -0.0001``), and exact zeros as ``0``.
    """
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax < _FLOOR:
        return "< 0.0001" if x > 0 else "> -0.0001"
    if ax >= 1000 or x == int(x):
        return f"{round(x):,}".replace(",", "\u202f")
    decimals = max(0, digits - 1 - math.floor(math.log10(ax)))
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def pct(fraction: float) -> str:
    """A fraction as a percentage: ``39.2 %``, ``0.06 %``; below 0.01 % ``< 0.01 %``."""
    p = fraction * 100.0
    if math.isnan(p):
        return "–"
    if p == 0:
        return "0 %"
    if abs(p) < 0.01:
        return "< 0.01 %" if p > 0 else "> -0.01 %"
    s = f"{p:.1f}" if abs(p) >= 10 else f"{p:.2f}"
    s = s.rstrip("0").rstrip(".")
    return f"{s} %"


def shown_unit(unit: str) -> str:
    """A unit as a table's unit column shows it: fractions are printed as %."""
    return "%" if unit == "fraction" else unit


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
