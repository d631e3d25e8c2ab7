"""The one registry: run kinds, modelled systems, and which fitter calibrates a kind.

Each reference CSV has a *kind*, recognised by its header. A
:class:`RunKind` knows the columns that identify it, the embedded profile its
system is calibrated by, how to predict the measured columns of one row
(``predict_row(row, profile) -> {"pred_<column>": value}``), which measured
columns it keeps but cannot predict (``unpredicted``: latency percentiles,
stall counters, ...; batch prediction and validation name them rather than
drop them) and which fitter calibrates it (an import path, so the model never imports the calibration
package). Systems (:mod:`model.systems`) register here too.

This module is a leaf: the modules that define kinds import it and register;
:mod:`runio.kinds` imports every such module and is what callers use, so no
module imports the one that imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

Row = Mapping[str, str]


@dataclass(frozen=True)
class RackForm:
    """How a kind's row maps onto the rack model, so rows can be solved in batches.

    ``scenarios(row)`` lists the racks one row needs (a FarReach row also its
    NoCache baseline); ``columns(row, predictions)`` turns their predictions
    (same order) into ``{column: value}`` without the ``pred_`` prefix.
    :mod:`runio.row_prediction` dedupes the racks of many rows, solves them
    in one batch with their interval sigma points, and adds intervals."""
    scenarios: Callable[[Row], list]
    columns: Callable[[Row, list], dict[str, Any]]


@dataclass(frozen=True)
class RunKind:
    name: str
    signature: frozenset[str]            # columns that identify the kind
    profile: str                         # embedded profile calibrated for it
    measured: tuple[str, ...]            # columns it can predict
    predict_row: Callable[[Row, Any], dict[str, Any]]
    unpredicted: tuple[str, ...] = ()    # measured columns kept but not predicted
    description: str = ""
    fitter: str = ""                     # "module:Class" of the fitter that calibrates it
    fitter_args: dict = field(default_factory=dict)   # constructor arguments the kind fixes
    extra: dict = field(default_factory=dict)
    rack: RackForm | None = None         # set for kinds predicted by the rack model
    per_worker: tuple[str, ...] = ()     # measured columns that are one value per worker,
    #                                      ``|``-separated (the write path's counts)


KINDS: dict[str, RunKind] = {}
SYSTEMS: dict[str, Any] = {}


def register(kind: RunKind) -> RunKind:
    KINDS[kind.name] = kind
    return kind


def register_system(system: Any) -> Any:
    SYSTEMS[system.name] = system
    return system
