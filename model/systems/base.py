"""What a modelled reference system declares: its parameters and run kinds.

A :class:`System` names an embedded profile (``model/profiles/<name>.toml``),
the :class:`ParamSpec` of every parameter in it (unit, starting value,
physical bounds, whether calibration fits it) and the run kinds whose rows
calibrate it. The fitter (:mod:`calibrate.systems_fit`) only needs this
declaration and the kinds' ``predict_row``; the report needs ``curves``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from model.errors import InputError
from model.profile import Param, Profile
from model.registry import SYSTEMS, RunKind, register_system  # noqa: F401

__all__ = ["ParamSpec", "System", "SYSTEMS", "register_system", "measured", "ape"]


@dataclass(frozen=True)
class ParamSpec:
    name: str
    unit: str
    init: float
    lo: float
    hi: float
    doc: str
    fit: bool = True          # False: a stated fact or assumption, kept at init


@dataclass(frozen=True)
class System:
    name: str                                  # = embedded profile name
    params: tuple[ParamSpec, ...]
    kinds: tuple[RunKind, ...]
    data_files: tuple[str, ...]                # data/<file>.csv that calibrate it
    curves: Callable[[Profile], list[dict[str, Any]]]
    description: str = ""
    # extra residuals (name -> fn(profile) -> log-ratio) e.g. a measured
    # server processing time quoted in a note
    priors: Mapping[str, Callable[[Profile], float]] = field(default_factory=dict)

    def default_profile(self) -> Profile:
        return Profile(self.name, {p.name: Param(p.init, p.unit, f"initial: {p.doc}")
                                   for p in self.params},
                       {"name": self.name, "fitted_by": "(defaults, not fitted)"})

    def profile(self, given: Profile | None = None) -> Profile:
        """The given profile, else the embedded one, else the defaults."""
        if given is not None:
            return given
        try:
            return Profile.embedded(self.name)
        except InputError:
            return self.default_profile()


def measured(row: Mapping[str, str], col: str) -> float | None:
    """A measured value of a row, or None when empty/missing/non-numeric."""
    v = row.get(col)
    if v is None or str(v).strip() == "":
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def ape(pred: float, meas: float) -> float:
    """Absolute percentage error, percent."""
    return abs(pred - meas) / abs(meas) * 100.0
