"""Models of the other reference systems (docs/domain.md section 4).

Importing this package registers a :class:`~model.registry.RunKind` for every
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

Each :class:`System` predicts its curves extended past the measured range
(``System.curves``); the report that sets them against the measurements is
:mod:`reports.systems`.
"""

from __future__ import annotations

from .base import SYSTEMS, System  # noqa: F401
from . import morphling  # noqa: F401
from . import runtimes  # noqa: F401
from . import threads  # noqa: F401



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
