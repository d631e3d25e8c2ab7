"""Profile parameters of the rack: each declared once, by the mechanism that reads it.

A mechanism module lists the calibrated numbers it needs as :class:`ParamDecl`
(name, unit, meaning, allowed range, and a default for the few that have a
physical default). :func:`all_params` collects them, so a profile can be
checked against the model (every parameter the model reads is declared; every
declared parameter is read by a mechanism -- ``tests/model/test_keys.py``).

:class:`ProfileReader` is how a mechanism reads a profile while the rack is
compiled: it checks each value against its declaration (a profile with
``disk_mbps = 0`` is refused with the parameter's name, not a division by
zero later) and records what was read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from ..profile import Profile
from ..safe_io import locate_in_toml_file


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


def _mechanism_modules():
    from . import clients, lsm, network, placement, service
    return (clients, network, placement, service, lsm)


def all_params() -> dict[str, ParamDecl]:
    """Every profile parameter the rack model reads, by name."""
    out: dict[str, ParamDecl] = {}
    for mod in _mechanism_modules():
        for p in mod.PARAMS:
            if p.name in out:
                raise RuntimeError(f"profile parameter {p.name} declared twice")
            out[p.name] = p
    return out


def all_scenario_keys() -> dict[str, str]:
    """Every scenario key the rack model reads -> the mechanism that reads it first."""
    out: dict[str, str] = {}
    for mod in _mechanism_modules():
        for k in mod.SCENARIO_KEYS:
            out.setdefault(k, mod.__name__.rsplit(".", 1)[1])
    return out


class ProfileReader:
    """Checked, recorded access to a :class:`Profile` during compilation."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.read: set[str] = set()
        self._decls = all_params()
        self._source = profile.source or f"profile '{profile.name}'"

    def __getitem__(self, name: str) -> float:
        decl = self._decls[name]          # a KeyError here is a bug: undeclared parameter
        self.read.add(name)
        if name in self.profile.params:
            try:
                return decl.check(self.profile.params[name].value, self._source)
            except InputError as exc:
                raise locate_in_toml_file(exc, self.profile.source) from None
        if decl.default is not None:
            return decl.default
        raise InputError(f"profile '{self.profile.name}' has no parameter '{name}' "
                         f"({decl.doc}, {decl.unit}); add it or re-fit the profile",
                         source=self._source, field=f"params.{name}")
