"""One argument layer for the command line and the Python API.

A setting both take -- ``--seconds`` and ``kvperf.simulate(seconds=...)``,
``--max-latency-us`` and ``kvperf.tune(max_latency_us=...)`` -- is one
:class:`Arg` here: the same type, range and refusal whoever the caller. The
command line parses its text with :meth:`Arg.parse` (argparse's ``type=``;
the parser names the option), the API checks its values with
:meth:`Arg.check` through :func:`checked` (an
:class:`~model.errors.InputError` whose ``field`` is the parameter), so that
``kvperf.load_profile(42)`` or ``kvperf.simulate(seconds="1")`` is refused as
``--profile 42`` or ``--seconds abc`` would be, never with a ``TypeError``
from deep inside, and never answered with a default (``load_profile("")``).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
import numbers
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable

from model.errors import InputError, tame


@dataclass(frozen=True)
class Arg:
    """A setting's type and range.

    ``kind``: ``number``, ``integer``, ``flag`` (a bool), ``choice`` (one of
    ``choices``), ``path`` (a non-empty file path), ``profile`` or
    ``scenario`` (an object, a name or path, None for the default),
    ``mapping`` (a non-empty mapping), ``sequence`` (a non-empty list)."""
    kind: str
    minimum: float | None = None
    exclusive: bool = False
    maximum: float | None = None
    choices: tuple = ()
    optional: bool = False            # None stands for the default
    empty: bool = False               # an empty mapping or list will do
    option: str = ""                  # the command line's option, if not --<name>

    # ------------------------------------------------------------ the API
    def check(self, value: Any, field: str | None) -> Any:
        """``value`` as the setting takes it, or an InputError naming ``field``."""
        if value is None and (self.optional or self.kind in ("profile", "scenario")):
            return value
        problem = self._problem(value)
        if problem:
            raise InputError(problem, field=field)
        if self.kind == "number":
            return float(value)
        if self.kind == "integer":
            return int(value)
        return value

    def _problem(self, value: Any, typed: str | None = None) -> str:
        """What is wrong with ``value`` ("" if nothing); ``typed``: the text the
        user typed for it, shown instead of the value."""
        if self.kind in ("number", "integer"):
            return self._number_problem(value, typed)
        if self.kind == "flag":
            return "" if isinstance(value, bool) or type(value).__name__ == "bool_" else \
                f"expected True or False, got {_shown(value)}"
        if self.kind == "choice":
            return "" if isinstance(value, str) and value in self.choices else \
                f"expected one of {', '.join(self.choices)}, got {_shown(value)}"
        if self.kind == "path":
            return _path_problem(value, "a file path")
        if self.kind in ("profile", "scenario"):
            return _source_problem(self.kind, value)
        if self.kind == "mapping":
            if not isinstance(value, Mapping):
                return f"expected a mapping {{key: ...}}, got {_shown(value)}"
            return "" if value or self.empty else "nothing given (an empty mapping)"
        if self.kind == "sequence":
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
                return f"expected a list, got {_shown(value)}"
            return ""
        raise ValueError(self.kind)

    def _number_problem(self, value: Any, typed: str | None) -> str:
        word = "an integer" if self.kind == "integer" else "a number"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return f"expected {word}{self.range_text()}, got {_shown(value)}"
        shown = typed if typed is not None else repr(value)
        if not math.isfinite(float(value)):
            return f"{shown} is not a finite number"
        v = float(value)
        if (self.kind == "integer" and not v.is_integer()) or (
                self.minimum is not None and (v < self.minimum or (self.exclusive and
                                                                   v == self.minimum))) or (
                self.maximum is not None and v > self.maximum):
            return f"expected {word}{self.range_text()}, got {shown}"
        return ""

    def range_text(self) -> str:
        def shown(x: float) -> str:
            return f"{int(x)}" if self.kind == "integer" else f"{x:g}"
        parts = []
        if self.minimum is not None:
            parts.append(f"{'>' if self.exclusive else '>='} {shown(self.minimum)}")
        if self.maximum is not None:
            parts.append(f"<= {shown(self.maximum)}")
        return " " + " and ".join(parts) if parts else ""

    # ------------------------------------------------------------ the command line
    def parse(self, text: str) -> Any:
        """argparse's ``type=``: the option's text as the setting takes it."""
        word = "an integer" if self.kind == "integer" else "a number"
        if self.kind in ("number", "integer"):
            try:
                value = (int if self.kind == "integer" else float)(text)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected {word}, got {tame(repr(text))}") from None
        else:
            value = text
        problem = self._problem(value, text)
        if problem:
            raise argparse.ArgumentTypeError(tame(problem))
        return value

    def parser(self) -> Callable[[str], Any]:
        """:meth:`parse` as a function argparse names in its messages."""
        def convert(text: str) -> Any:
            return self.parse(text)
        convert.__name__ = "int" if self.kind == "integer" else "float"
        return convert


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    name = type(value).__name__
    return f"{text} ({'an' if name[:1] in 'aeiou' else 'a'} {name})"


def _path_problem(value: Any, what: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        return f"expected {what}, got {_shown(value)}"
    if str(os.fspath(value)).strip() == "":
        return f"an empty {what}; give {what}"
    return ""


def _source_problem(kind: str, value: Any) -> str:
    from model.profile import Profile
    from model.scenario import Scenario
    if kind == "profile":
        if isinstance(value, Profile):
            return ""
        what = "a profile: an embedded name, a TOML path or a Profile"
    else:
        if isinstance(value, (Scenario, Mapping)):
            return ""
        what = "a scenario: a TOML path, a mapping or a Scenario"
    if not isinstance(value, (str, os.PathLike)):
        return f"expected {what}, got {_shown(value)}"
    if str(os.fspath(value)).strip() == "":
        return f"an empty name; give {what} (None for the default)"
    return ""


#: the settings the command line and the API share, by the API's name
ARGS: dict[str, Arg] = {
    "scenario": Arg("scenario"),
    "profile": Arg("profile"),
    "changes": Arg("mapping", optional=True, empty=True),
    "seconds": Arg("number", minimum=0, exclusive=True),
    "seed": Arg("integer", minimum=0, maximum=2 ** 63 - 1),
    "engine": Arg("choice", choices=("fast", "simpy")),
    "intervals": Arg("flag"),
    "progress": Arg("flag"),
    "zip": Arg("flag"),
    "shapley": Arg("flag"),
    "explain": Arg("flag"),
    "baseline": Arg("integer", minimum=1),
    "generations": Arg("integer", minimum=1),
    "objective": Arg("choice", choices=("throughput", "latency")),
    "latency_stat": Arg("choice", choices=("mean", "p50", "p95", "p99")),
    "max_latency_us": Arg("number", minimum=0, exclusive=True, optional=True),
    "values": Arg("mapping"),
    "vary": Arg("mapping"),
    "path": Arg("path", option="--plan"),
    "scenarios": Arg("sequence", empty=True),
}


_calls = threading.local()          # how deep in checked API calls this thread is


def checked(**own: Arg) -> Callable:
    """Decorate an API function: each argument named in :data:`ARGS` (or in
    ``own``, for a name whose meaning is the function's own) is checked
    before the call; a wrong one is an InputError naming the parameter. An
    InputError from within that names the command line's option for a
    parameter (``--profile``: no such profile) names the parameter instead."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        params = {name: own.get(name) or ARGS.get(name) for name in sig.parameters}
        options = {option_of(arg, name): name for name, arg in params.items()
                   if arg is not None}

        @functools.wraps(fn)
        def call(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            for name, value in bound.arguments.items():
                if params.get(name) is not None:
                    params[name].check(value, name)
            _calls.depth = getattr(_calls, "depth", 0) + 1
            try:
                return fn(*args, **kwargs)
            except InputError as exc:
                # named by the outermost call: the one the user made
                if _calls.depth > 1 or exc.field not in options:
                    raise
                raise InputError(exc.detail, source=exc.source, line=exc.line,
                                 field=options[exc.field]) from None
            finally:
                _calls.depth -= 1
        return call
    return wrap


def option_of(arg: Arg, name: str) -> str:
    """The command line's option for the API's parameter ``name`` of ``arg``."""
    if arg.option:
        return arg.option
    key = next((k for k, a in ARGS.items() if a is arg), name)
    return "--" + key.replace("_", "-")
