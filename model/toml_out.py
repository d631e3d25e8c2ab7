"""Writing TOML values: the standard library's ``tomllib`` only reads.

Scenarios and profiles are written back as TOML (``Scenario.to_toml``,
``Profile.save``); both render their values here.
"""

from __future__ import annotations

from typing import Any


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
