"""Models of the other reference systems (DOMAIN.md section 4).

Importing this package registers a :class:`~model.runs.RunKind` for every
reference CSV kind of these systems (batch prediction detects them from the
header) and a :class:`~model.systems.base.System` per embedded profile:

=====================  ==================================  =====================
profile                kinds (data/<kind>.csv)             module
=====================  ==================================  =====================
``morphling-c``        morphling_c                         :mod:`.morphling`
``morphling-go``       morphling_go, morphling_go_control  :mod:`.morphling`
``runtimes``           runtimes_curves, runtimes_best,     :mod:`.runtimes`
                       runtimes_limited
``thread-coroutine``   thread_coroutine, coroutine_priority :mod:`.threads`
=====================  ==================================  =====================

``curves(kind_or_system, profile=None)`` gives report rows: measured points
plus the predicted curve extended past the last measured point, with flags
where saturation, a peak or a collapse is expected.
"""

from __future__ import annotations

from .base import SYSTEMS, System  # noqa: F401
from . import morphling  # noqa: F401
from . import runtimes  # noqa: F401
from . import threads  # noqa: F401

from typing import Any

from model.profile import Profile

from .base import measured as _measured


def system_of(kind_or_system: str) -> System:
    """The system a kind (e.g. ``runtimes_best``) or profile name belongs to."""
    if kind_or_system in SYSTEMS:
        return SYSTEMS[kind_or_system]
    for s in SYSTEMS.values():
        if any(k.name == kind_or_system for k in s.kinds):
            return s
    from model.errors import InputError
    raise InputError(f"unknown system or kind {kind_or_system!r}; systems: "
                     f"{', '.join(sorted(SYSTEMS))}", field="kind")


def curves(kind: str, profile: Profile | None = None, data_dir: str | None = None
           ) -> list[dict[str, Any]]:
    """Report rows for a system (or one of its kinds): every measured cell of its
    calibration CSVs with the prediction for that row (``kind = "measured"``),
    then the predicted curves extended past the last measured point
    (``kind = "predicted"``, ``flag`` = saturation / peak / collapse where expected).
    """
    from calibrate.systems_fit import DATA, load_rows
    sysm = system_of(kind)
    prof = sysm.profile(profile)
    out: list[dict[str, Any]] = []
    kinds = {k.name: k for k in sysm.kinds}
    for r in load_rows(sysm.name, data_dir or DATA):
        k = kinds[r["__kind__"]]
        pred = k.predict_row(r, prof)
        for c in k.measured:
            m = _measured(r, c)
            if m is None:
                continue
            out.append({"kind": "measured", "run_kind": k.name, "id": r.get("id", ""),
                        "column": c, "measured": m, "predicted": pred.get(f"pred_{c}"),
                        "row": {kk: v for kk, v in r.items() if not kk.startswith("__")}})
    out.extend(sysm.curves(prof))
    return out
