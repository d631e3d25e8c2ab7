"""What ``python -m sim tune`` may change: the dimensions of the search
space (``--vary KEY=LO:HI`` or ``KEY=V1,V2,...``), each a numeric range
(integer, or float on a log scale when it spans a factor of 10 or more) or
a set of values, and the settings they stand for.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.scenario import SECTIONS, Scenario, parse_value, resolve_key


@dataclass(frozen=True)
class Dimension:
    """One setting the search may change, and over what: a numeric range or a set of values."""

    key: str                       # canonical section.field
    kind: str                      # "float", "int" or "choice"
    lo: float = 0.0
    hi: float = 0.0
    choices: tuple = ()
    log: bool = False

    @property
    def bounds(self) -> tuple[float, float]:
        if self.kind == "choice":
            return (0.0, float(len(self.choices) - 1))
        if self.log:
            return (math.log(self.lo), math.log(self.hi))
        return (float(self.lo), float(self.hi))

    @property
    def integral(self) -> bool:
        return self.kind in ("int", "choice")

    def value(self, x: float) -> Any:
        """The setting at coordinate ``x`` of the search space."""
        if self.kind == "choice":
            return self.choices[int(round(min(max(x, 0), len(self.choices) - 1)))]
        v = math.exp(x) if self.log else x
        v = min(max(v, self.lo), self.hi)
        if self.kind == "int":
            return int(round(v))
        return float(f"{v:.4g}")        # settings people would write

    def describe(self) -> str:
        if self.kind == "choice":
            return ", ".join(show_value(c) for c in self.choices)
        return f"{show_value(self.lo)} to {show_value(self.hi)}" + (" (log scale)" if self.log else "")


def show_value(v: Any) -> str:
    """A setting as written on the command line and in tables (``true``, ``64``, ``0.5``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def scenario_field(key: str):
    """The dataclass field of ``section.field`` (its type and unit)."""
    from dataclasses import fields
    sec, name = key.split(".")
    return {f.name: f for f in fields(SECTIONS[sec])}[name]


def parse_dimension(text: str, source: str = "--vary") -> Dimension:
    """``KEY=LO:HI`` or ``KEY=V1,V2,...`` -> a :class:`Dimension`."""
    if "=" not in text:
        raise InputError(f"expected KEY=LO:HI or KEY=V1,V2,..., got {text!r}", source=source)
    key, raw = (s.strip() for s in text.split("=", 1))
    canonical = resolve_key(key, source)
    if canonical == "name":
        raise InputError("the scenario name cannot be tuned", source=source, field=key)
    f = scenario_field(canonical)
    typ = f.type if isinstance(f.type, str) else f.type.__name__
    if ":" in raw:
        if typ not in ("int", "float"):
            raise InputError(f"a LO:HI range needs a numeric key; {canonical} takes "
                             f"{_allowed(canonical)}: list its values as V1,V2,...",
                             source=source, field=key)
        parts = raw.split(":")
        if len(parts) != 2:
            raise InputError(f"expected LO:HI, got {raw!r}", source=source, field=key)
        try:
            lo, hi = (float(p) for p in parts)
        except ValueError:
            raise InputError(f"expected two numbers LO:HI, got {raw!r}", source=source,
                             field=key) from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise InputError(f"the range {raw!r} is empty: LO must be below HI", source=source,
                             field=key)
        # both ends must be allowed values of the key
        for v in (lo, hi):
            Scenario.default().updated({canonical: int(v) if typ == "int" and v.is_integer()
                                        else v}, source=source)
        if typ == "int":
            if not (lo.is_integer() and hi.is_integer()):
                raise InputError(f"{canonical} is an integer; give integer ends, got {raw!r}",
                                 source=source, field=key)
            return Dimension(canonical, "int", lo, hi)
        log = lo > 0 and hi / lo >= 10.0
        return Dimension(canonical, "float", lo, hi, log=log)
    vals = [p.strip() for p in raw.split(",")]
    if not raw.strip() or any(v == "" for v in vals):
        raise InputError(f"expected LO:HI or a comma-separated list of values, got {raw!r}",
                         source=source, field=key)
    choices = tuple(parse_value(v) for v in vals)
    for v in choices:
        Scenario.default().updated({canonical: v}, source=source)
    if len(set(choices)) < 2:
        raise InputError("give at least two different values to choose from", source=source,
                         field=key)
    return Dimension(canonical, "choice", choices=choices)


def _allowed(key: str) -> str:
    from model.scenario import describe
    sec, name = key.split(".")
    return describe(SECTIONS[sec], name)


def parse_dimensions(texts: Sequence[str] | Mapping[str, Any], source: str = "--vary"
                     ) -> list[Dimension]:
    """From ``--vary`` strings, or a mapping ``{key: (lo, hi)}`` / ``{key: [v1, v2, ...]}``."""
    if isinstance(texts, Mapping):
        items = []
        for k, v in texts.items():
            if isinstance(v, tuple) and len(v) == 2 and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                items.append(f"{k}={v[0]}:{v[1]}")
            elif isinstance(v, (list, tuple)):
                items.append(f"{k}=" + ",".join(_toml(x) for x in v))
            else:
                raise InputError("expected (lo, hi) or a list of values", source=source, field=str(k))
        texts = items
    dims = [parse_dimension(t, source) for t in texts]
    if not dims:
        raise InputError("nothing to tune: give at least one --vary KEY=LO:HI", field="--vary")
    seen = set()
    for d in dims:
        if d.key in seen:
            raise InputError("given twice", source=source, field=d.key)
        seen.add(d.key)
    return dims


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return str(v)


def setting_of(sc: Scenario, key: str) -> Any:
    """The value of ``section.field`` in ``sc``."""
    sec, name = key.split(".")
    return getattr(getattr(sc, sec), name)
