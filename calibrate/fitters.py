"""Which fitter calibrates which run kind.

Fitters follow the scikit-learn estimator conventions (docs/contracts.md, "Fitters"):
``__init__`` only stores its parameters, ``fit(rows)`` validates the rows
(dicts from runs CSVs with ``__kind__``, ``__source__`` and ``__line__``) and
returns ``self``, and fitted values end in ``_`` (at least ``profile_``, a
:class:`model.profile.Profile`, and ``residuals_``).

Which fitter a kind uses is declared with the kind, in the one registry
(:mod:`model.registry`), as an import path; it is imported only when that
kind is fitted.
"""

from __future__ import annotations

import importlib
from typing import Any

from model.errors import InputError


def robust_cost(residuals, loss: str, f_scale: float) -> float:
    """``scipy.optimize.least_squares``'s cost of ``residuals`` under ``loss``:
    0.5 f^2 sum rho((r / f)^2) (its documented rho for each loss)."""
    import numpy as np
    z = (np.asarray(residuals, dtype=float) / f_scale) ** 2
    rho = {"linear": lambda z: z,
           "soft_l1": lambda z: 2.0 * (np.sqrt(1.0 + z) - 1.0),
           "huber": lambda z: np.where(z <= 1.0, z, 2.0 * np.sqrt(z) - 1.0),
           "cauchy": np.log1p,
           "arctan": np.arctan}.get(loss)
    if rho is None:
        raise InputError(f"unknown loss {loss!r}", field="loss")
    return float(0.5 * f_scale ** 2 * np.sum(rho(z)))


#: Fitter of the kinds of the other reference systems (one per system, by profile name).
SYSTEM_FITTER = "calibrate.systems_fit:SystemFitter"


class FitterUnavailable(InputError):
    """The fitter for a kind is not registered or its module cannot be imported."""


def registered() -> dict[str, Any]:
    """All kind -> fitter entries: ``"module:Class"`` or ``("module:Class", {fixed args})``.

    A kind names its fitter in the registry (:class:`model.registry.RunKind`);
    a kind of one of the other reference systems is fitted by
    :data:`SYSTEM_FITTER` for its system.
    """
    from runio.kinds import KINDS, SYSTEMS
    out: dict[str, Any] = {}
    for name, kind in KINDS.items():
        if kind.fitter:
            out[name] = (kind.fitter, dict(kind.fitter_args)) if kind.fitter_args else kind.fitter
        elif kind.profile in SYSTEMS:
            out[name] = (SYSTEM_FITTER, {"system": kind.profile})
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
