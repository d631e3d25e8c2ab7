"""TOML as text, in and out: parsing with located errors, the line that sets a key, values written back.

Pure: no file is read or written here (:mod:`runio.safe_io` reads the files).
"""

from __future__ import annotations

import re
import tomllib

from typing import Any

from .errors import InputError


def toml_value(v: Any) -> str:
    """One TOML value: booleans, numbers, strings (escaped), lists of them."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    s = str(v)
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


BOM = "\ufeff"

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """``tomllib.loads`` with every failure an :class:`InputError` naming the line."""
    if text.startswith(BOM):
        text = text[1:]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _TOML_AT.search(msg)
        line = int(m.group(1)) if m else (text.count("\n") + 1 if _TOML_END.search(msg) else None)
        msg = _TOML_END.sub("", _TOML_AT.sub("", msg))
        raise InputError(f"not valid TOML: {msg}", source=source, line=line) from None
    except RecursionError:
        # tomllib recurses once per nested array or inline table
        raise InputError("not valid TOML here: arrays or tables nested too deeply",
                         source=source) from None
    except ValueError:
        # int() past Python's 4,300-digit limit, raised by tomllib as it is
        m = re.search(r"\d{4301,}", text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise InputError("a number of more than 4,300 digits; no value here is that large",
                         source=source, line=line) from None



_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _bare(key: str) -> str:
    return key.strip().strip('"').strip("'")


def toml_line(text: str, dotted: str) -> int | None:
    """The line that sets ``dotted`` (e.g. ``servers.count``, ``params.disk_mbps.value``).

    The best match wins: the ``key = ...`` line that sets the value (or the
    inline table holding it), else the header of the deepest ``[table]`` on
    its path. List indices (``factors.clients[2]``) point at the list's
    line. Returns None when nothing on the path is found."""
    parts = [_bare(p) for p in re.sub(r"\[\d+\]", "", dotted).split(".") if p.strip()]
    best: tuple[float, int] | None = None
    table: list[str] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(raw)
        if m:
            table = [_bare(p) for p in m.group(1).split(".")]
            score = float(len(table))
        elif "=" in raw and not raw.lstrip().startswith("#"):
            key = table + [_bare(p) for p in raw.split("=", 1)[0].split(".")]
            table_or_key, score = key, len(key) + 0.5     # a key beats a header as deep
        else:
            continue
        path = table if m else table_or_key
        if path and parts[:len(path)] == path and (best is None or score > best[0]):
            best = (score, n)
    return best[1] if best else None


def locate_in_toml(exc: InputError, text: str, source: str) -> InputError:
    """``exc`` with the file and, from its field, the line filled in."""
    line = exc.line
    if line is None and exc.field:
        line = toml_line(text, exc.field)
    return exc.located(source=source, line=line)


