"""The Python API's edges (issue 55, class ``api``): every function of
``kvperf`` x every parameter x values of the wrong type or range.

Each probe calls one function with one argument wrong and the others
valid; it must raise :class:`kvperf.InputError` -- not a ``TypeError`` or a
``ValueError`` from deep inside, and not an answer for a default -- whose
``field`` names the parameter (or the key of a mapping), with a message of
at most 300 characters, before any work (it runs under an alarm) and
without creating a file. The wrong values of a parameter follow from its
kind (:data:`KINDS`: what the parameter takes, as docs/api.md says);
:func:`catalog` reads the signatures, so a function added later is probed
the same way, and a parameter without a kind here is an error.
"""

from __future__ import annotations

import inspect
import math
import os
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

#: wrong values by the kind of a parameter (runio.arguments.Arg.kind)
WRONG: dict[str, list[tuple[str, Callable[[], Any]]]] = {
    "number": [("str", lambda: "1"), ("bool", lambda: True), ("nan", lambda: math.nan),
               ("inf", lambda: math.inf), ("neg", lambda: -1), ("list", lambda: [1]),
               ("object", object)],
    "integer": [("float", lambda: 1.5), ("str", lambda: "1"), ("bool", lambda: True),
                ("neg", lambda: -1), ("nan", lambda: math.nan)],
    "flag": [("str", lambda: "no"), ("int", lambda: 0), ("none", lambda: None)],
    "choice": [("unknown", lambda: "nope"), ("int", lambda: 42), ("none", lambda: None),
               ("empty", lambda: "")],
    "scenario": [("int", lambda: 42), ("empty", lambda: ""), ("list", lambda: []),
                 ("object", object)],
    "profile": [("int", lambda: 42), ("empty", lambda: ""), ("list", lambda: ["x"]),
                ("object", object), ("missing", lambda: "no-such-profile")],
    "mapping": [("empty", lambda: {}), ("list", lambda: []), ("str", lambda: "servers=8"),
                ("int", lambda: 42), ("none", lambda: None)],
    "path": [("int", lambda: 42), ("empty", lambda: ""), ("none", lambda: None),
             ("missing", lambda: "no-such-plan.csv")],
    "sequence": [("str", lambda: "abc"), ("int", lambda: 42), ("mapping", lambda: {"a": 1}),
                 ("none", lambda: None)],
}

#: what each parameter of the API takes (by name; ``source`` by function)
KINDS = {
    "scenario": "scenario", "profile": "profile", "changes": "mapping", "seconds": "number",
    "seed": "integer", "engine": "choice", "intervals": "flag", "progress": "flag",
    "zip": "flag", "shapley": "flag", "explain": "flag", "baseline": "integer",
    "generations": "integer", "objective": "choice", "latency_stat": "choice",
    "max_latency_us": "number", "values": "mapping", "vary": "mapping", "path": "path",
    "scenarios": "sequence",
}
SOURCE = {"load_scenario": "scenario", "load_profile": "profile"}
#: parameters None may be given for (the default), and those an empty
#: mapping or list will do for
OPTIONAL = {"max_latency_us", "changes"}
EMPTY = {"changes", "scenarios"}
#: the largest values allowed
MAXIMUM = {"seed": 2 ** 63 - 1}

#: valid arguments a function needs besides the one probed
NEEDED: dict[str, dict[str, Callable[[], Any]]] = {
    "sweep": {"values": lambda: {"servers": [8, 16]}, "intervals": lambda: False},
    "sweep_plan": {"path": lambda: _plan_file(), "intervals": lambda: False},
    "tune": {"vary": lambda: {"servers": (8, 16)}, "generations": lambda: 1,
             "explain": lambda: False},
    "predict": {"intervals": lambda: False},
    "rotation": {"intervals": lambda: False, "servers": lambda: 4},
    "simulate": {"seconds": lambda: 0.1},
    "predict_many": {"scenarios": lambda: [None]},
}

#: values a mapping parameter's entries may not take: (id, parameter, value, field)
VALUE_PROBES = [
    ("sweep", "values", "series-empty", lambda: {"servers": _series([])}, "servers"),
    ("sweep", "values", "list-empty", lambda: {"servers": []}, "servers"),
    ("sweep", "values", "mapping-value", lambda: {"servers": {"a": 8}}, "servers"),
    ("sweep", "values", "unknown-key", lambda: {"nosuchkey": [1, 2]}, "nosuchkey"),
    ("sweep", "values", "text-value", lambda: {"servers": ["eight"]}, "servers.count"),
    ("tune", "vary", "text", lambda: {"servers": "x"}, "servers"),
    ("tune", "vary", "reversed", lambda: {"servers": (16, 8)}, "servers"),
    ("tune", "vary", "unknown-key", lambda: {"nosuchkey": (1, 2)}, "nosuchkey"),
    ("load_scenario", "changes", "unknown-key", lambda: {"nosuchkey": 1}, "nosuchkey"),
    ("load_scenario", "changes", "negative", lambda: {"servers": -1}, "servers.count"),
]

MAX_MESSAGE = 300
HANG_SECONDS = 30


@dataclass(frozen=True)
class ApiProbe:
    """One call of an API function with one argument wrong."""
    id: str
    function: str
    parameter: str
    value: Callable[[], Any]
    field: str
    kind: str = "api"


@dataclass
class ApiOutcome:
    probe: ApiProbe
    error: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def _series(values):
    import pandas as pd
    return pd.Series(values, dtype=int)


def _plan_file() -> str:
    """A what-if plan in the probe's folder (made before the call)."""
    with open("plan.csv", "w") as fh:
        fh.write("servers\n8\n16\n")
    return os.path.abspath("plan.csv")


def _kinds_of(fn: Callable) -> dict[str, str]:
    """Each parameter of an API function and its kind (:data:`KINDS`)."""
    out = {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        kind = SOURCE.get(fn.__name__) if name == "source" else KINDS.get(name)
        if kind is None:
            raise AssertionError(f"kvperf.{fn.__name__}({name}=...): no kind in "
                                 "tests/robustness/probes_api.py KINDS; say what it takes")
        out[name] = kind
    return out


def functions() -> dict[str, Callable]:
    import kvperf
    return {n: getattr(kvperf, n) for n in kvperf.__all__
            if inspect.isfunction(getattr(kvperf, n))}


def catalog() -> list[ApiProbe]:
    """Every function x every parameter x every wrong value of its kind."""
    out = []
    for name, fn in functions().items():
        for param, kind in _kinds_of(fn).items():
            for vid, value in WRONG[kind]:
                if (vid == "none" and param in OPTIONAL) or (vid == "empty" and param in EMPTY):
                    continue
                out.append(ApiProbe(f"api:{name}:{param}:{vid}", name, param, value, param))
            if param in MAXIMUM:
                out.append(ApiProbe(f"api:{name}:{param}:above-maximum", name, param,
                                    lambda top=MAXIMUM[param] + 1: top, param))
    for name, param, vid, value, fld in VALUE_PROBES:
        out.append(ApiProbe(f"api:{name}:{param}:{vid}", name, param, value, fld))
    return out


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run(probe: ApiProbe) -> ApiOutcome:
    """Call the function in a fresh folder and judge the refusal."""
    from model.errors import InputError
    fn = functions()[probe.function]
    problems: list[str] = []
    error = ""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="kvperf-api-probe-") as d:
        os.chdir(d)
        kwargs = {k: v() for k, v in NEEDED.get(probe.function, {}).items()
                  if k != probe.parameter}
        kwargs[probe.parameter] = probe.value()
        there = set(os.listdir(d))
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(HANG_SECONDS)
        t0 = time.perf_counter()
        try:
            fn(**kwargs)
            problems.append("no error: answered instead of refusing")
        except InputError as exc:
            error = str(exc)
            if exc.field != probe.field:
                problems.append(f"field {exc.field!r}, expected {probe.field!r}")
            if len(error) > MAX_MESSAGE:
                problems.append(f"message of {len(error)} characters")
        except _Hang:
            problems.append(f"hang: no answer in {HANG_SECONDS} s")
        except BaseException as exc:          # noqa: BLE001 (any other is the failure)
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:300]
            problems.append(f"{type(exc).__name__}, not InputError: {error}")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            seconds = time.perf_counter() - t0
            created = sorted(set(os.listdir(d)) - there)
            os.chdir(cwd)
        if created:
            problems.append(f"created: {created}")
    return ApiOutcome(probe, error, seconds, problems)
