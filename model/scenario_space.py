"""The declared scenario space, sampled: every key of :mod:`model.scenario` over its range.

(Moved here from tests/robustness/space.py, which re-exports it, so that
package commands such as ``python -m sim.agreement`` can use it.)

One mapping, :func:`scenario_from_unit`, turns a vector of numbers in [0, 1)
into a valid :class:`~model.scenario.Scenario`, reading each key's type,
range and choices from its declaration, so a key added to the scenario
language is sampled without touching this file. Hypothesis draws the vector
(:func:`scenarios`, and shrinks it towards the low end of every range);
a seeded numpy generator draws it for the long soak (:func:`random_scenarios`).

Ranges that span orders of magnitude (client threads 1..10^6, records
1..10^12, timeouts 10 us..10 min) are sampled log-uniformly, so small and
large values are equally likely per decade; the rest uniformly.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Sequence

import numpy as np

from .scenario import SECTIONS, Scenario

#: workload profiles that need no file: the stock generators and the lab's embedded profile
WORKLOAD_PROFILES = ("", "lab")

#: The declared range of every key is sampled (:data:`FULL`), except where the
#: analytic solver is still too slow for a test's budget (issue 15: predictions
#: of 20-90 s at 16k-64k clients, and minutes with thousands of workers on few
#: cores or a FarReach timeout of tens of us). :data:`FAST` bounds those keys
#: for CI; the long run (KVPERF_LONG=1) and the soak use :data:`FULL`.
FULL: dict[str, tuple[float, float]] = {}
FAST: dict[str, tuple[float, float]] = {
    "clients.threads": (1, 1024),
    "servers.count": (1, 64),
    "servers.machines": (1, 64),
    "servers.cores": (0, 64),
    "clients.timeout_ms": (1.0, 600_000.0),
}

#: below this, a key keeps its default (so most scenarios stay near the
#: embedded rack and vary a few keys; shrinking goes to the default)
P_DEFAULT = 0.25


def declared() -> list[tuple[str, type, object]]:
    """(section.key, section class, field) for every declared key, in order."""
    return [(f"{sec}.{f.name}", cls, f) for sec, cls in SECTIONS.items() for f in fields(cls)]


DIMENSIONS = len(declared())


def _number(u: float, lo: float, hi: float, integer: bool, lo_open: bool) -> float:
    if lo_open and lo == 0:
        lo = 1e-3 if not integer else 1
    if integer:
        lo, hi = math.ceil(lo), math.floor(hi)
    if lo > 0 and hi / lo > 100:                      # log-uniform over wide ranges
        x = lo * (hi / lo) ** u
    elif lo == 0 and hi > 100:                        # 0 or log-uniform above 1
        x = 0.0 if u < 0.1 else (hi ** ((u - 0.1) / 0.9))
    else:
        x = lo + (hi - lo) * u
    if integer:
        return int(min(hi, max(lo, round(x))))
    return float(min(hi, max(lo, x)))


def scenario_from_unit(u: Sequence[float], bounds: dict[str, tuple[float, float]] = FULL,
                       ) -> Scenario:
    """A valid scenario from ``DIMENSIONS`` numbers in [0, 1); ``bounds`` narrows
    the range of some keys (inside their declared range)."""
    u = list(u)
    if len(u) != DIMENSIONS:
        raise ValueError(f"expected {DIMENSIONS} numbers, got {len(u)}")
    data: dict[str, dict] = {sec: {} for sec in SECTIONS}
    for x, (key, _cls, f) in zip(map(float, u), declared()):
        sec, name = key.split(".")
        md = f.metadata
        if x < P_DEFAULT:
            data[sec][name] = f.default
            continue
        x = (x - P_DEFAULT) / (1.0 - P_DEFAULT)
        typ = f.type if isinstance(f.type, str) else f.type.__name__
        if key == "workload.profile":
            v = WORKLOAD_PROFILES[min(int(x * len(WORKLOAD_PROFILES)), len(WORKLOAD_PROFILES) - 1)]
        elif typ == "bool":
            v = x >= 0.5
        elif md.get("choices"):
            ch = md["choices"]
            v = ch[min(int(x * len(ch)), len(ch) - 1)]
        else:
            lo, hi = bounds.get(key, (md["min"], md["max"]))
            v = _number(x, lo, hi, typ == "int", bool(md.get("min_exclusive")))
        data[sec][name] = v
    st = data["storage"]
    if st["flushnum"] >= st["maxnum"]:                # RocksDB: flushnum < maxnum
        st["flushnum"], st["maxnum"] = min(st["flushnum"], st["maxnum"]), max(st["flushnum"], st["maxnum"])
        if st["flushnum"] == st["maxnum"]:
            st["flushnum"] = st["maxnum"] - 1
    return Scenario.from_mapping({"name": "random", **data}, source="<random>")


def random_scenarios(n: int, seed: int, bounds: dict[str, tuple[float, float]] = FULL,
                     ) -> list[Scenario]:
    """``n`` scenarios from a seeded generator (the same ones for the same seed)."""
    rng = np.random.default_rng(seed)
    return [scenario_from_unit(rng.random(DIMENSIONS), bounds) for _ in range(n)]
