"""A calibrated number a mechanism needs: its name, unit, bounds and default.

Each mechanism module (:mod:`model.rack.clients`, ``network``, ``placement``,
``service``, ``lsm``) lists its own as ``PARAMS``; :mod:`model.rack.params`
collects them and reads them from a profile. A leaf: it imports no mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True)
class ParamDecl:
    name: str
    unit: str
    doc: str
    lo: float = 0.0                  # smallest allowed value
    hi: float = math.inf             # largest allowed value
    lo_open: bool = False            # lo itself is not allowed (a rate, a size)
    default: float | None = None     # used when a profile does not set it

    def check(self, value: float, source: str) -> float:
        bad = (not math.isfinite(value) or value < self.lo or value > self.hi
               or (self.lo_open and value == self.lo))
        if bad:
            op = ">" if self.lo_open else ">="
            rng = f"{op} {self.lo:g}" + (f" and <= {self.hi:g}" if math.isfinite(self.hi) else "")
            raise InputError(f"{value!r} is not allowed for '{self.name}' ({self.doc}); "
                             f"it must be a finite number {rng} {self.unit}".rstrip(),
                             source=source, field=f"params.{self.name}")
        return float(value)
