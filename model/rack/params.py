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


from ..errors import InputError
from ..profile import Profile
from .param_decl import ParamDecl  # noqa: F401  (declared there, collected here)
from ..toml_text import locate_in_toml


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
                raise _located(exc, self.profile) from None
        if decl.default is not None:
            return decl.default
        raise InputError(f"profile '{self.profile.name}' has no parameter '{name}' "
                         f"({decl.doc}, {decl.unit}); add it or re-fit the profile",
                         source=self._source, field=f"params.{name}")


def _located(exc: InputError, profile: Profile) -> InputError:
    """``exc`` with the profile file and the line of the bad value (an
    embedded profile or one built in memory: as it is, or with its source)."""
    src = profile.source
    if not src or src.startswith("<") or exc.line is not None:
        return exc
    if not profile.text:
        return exc.located(source=src)
    return locate_in_toml(exc, profile.text, src)
