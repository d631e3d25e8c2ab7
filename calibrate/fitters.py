"""Which fitter calibrates which run kind.

Fitters follow the scikit-learn estimator conventions (DESIGN.md section 5):
``__init__`` only stores its parameters, ``fit(rows)`` validates the rows
(dicts from runs CSVs with ``__kind__``, ``__source__`` and ``__line__``) and
returns ``self``, and fitted values end in ``_`` (at least ``profile_``, a
:class:`model.profile.Profile`, and ``residuals_``).

The registry maps kind names to ``"module:Class"`` strings (or
``("module:Class", {fixed constructor arguments})``) and imports lazily, so
a missing or unfinished fitter module only matters when its kind is fitted.
Kinds of the other reference systems come from ``calibrate.systems_fit``:
its ``FITTERS`` dict if it has one, else one ``SystemFitter(system=...)``
entry per kind of every system in :data:`model.systems.SYSTEMS`.
"""

from __future__ import annotations

import importlib
from typing import Any

from model.errors import InputError

FITTERS: dict[str, str] = {
    "farreach_runs": "calibrate.farreach:FarReachFitter",
    "farreach_tuning": "calibrate.farreach:FarReachFitter",
    "farreach_breakdown": "calibrate.farreach:FarReachFitter",
    "local_runs": "calibrate.local_fit:LocalFitter",
}

SYSTEMS_MODULE = "calibrate.systems_fit"


class FitterUnavailable(InputError):
    """The fitter for a kind is not registered or its module cannot be imported."""


def _systems_fitters() -> dict[str, Any]:
    try:
        mod = importlib.import_module(SYSTEMS_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name == SYSTEMS_MODULE:
            return {}
        raise
    if hasattr(mod, "FITTERS"):
        return dict(mod.FITTERS)
    if not hasattr(mod, "SystemFitter"):
        return {}
    try:
        from model.systems import SYSTEMS
    except ImportError:
        return {}
    out: dict[str, Any] = {}
    for name, sysm in SYSTEMS.items():
        for k in getattr(sysm, "kinds", ()):
            out[k.name] = (f"{SYSTEMS_MODULE}:SystemFitter", {"system": name})
    return out


def registered() -> dict[str, Any]:
    """All kind -> fitter entries (import paths or classes)."""
    out: dict[str, Any] = dict(FITTERS)
    for k, v in _systems_fitters().items():
        out.setdefault(k, v)
    return out


def resolve(spec: Any) -> type:
    """Import ``"module:Class"`` (or pass a class through)."""
    if isinstance(spec, type):
        return spec
    module, _, name = str(spec).partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise FitterUnavailable(
                f"fitter module {module} is not available yet ({exc}); it provides {spec}",
                field="--kind") from None
        raise
    cls = getattr(mod, name, None)
    if not isinstance(cls, type):
        raise FitterUnavailable(f"{module} has no fitter class {name}", field="--kind")
    return cls


def split_spec(spec: Any) -> tuple[Any, dict[str, Any]]:
    """(import path or class, fixed constructor arguments) of a registry entry."""
    if isinstance(spec, tuple):
        return spec[0], dict(spec[1])
    return spec, {}


def fitter_spec(kind: str) -> tuple[type, dict[str, Any]]:
    """The fitter class for a run kind name, and the arguments the registry fixes."""
    reg = registered()
    if kind not in reg:
        raise FitterUnavailable(f"no fitter is registered for kind {kind!r}; registered: "
                                f"{', '.join(sorted(reg))}", field="--kind")
    path, fixed = split_spec(reg[kind])
    return resolve(path), fixed


def fitter_for(kind: str) -> type:
    """The fitter class for a run kind name."""
    return fitter_spec(kind)[0]
