"""How a command ends: its exit code, its one-line error, its parser.

Bad input (:class:`~model.errors.InputError`) prints one located line and
exits 2, work that could not finish (:class:`RunFailed`) exits 1, Ctrl-C
130; an argument mistake is one short line pointing at ``--help``. Every
command line of the toolkit runs through :func:`run_command` and parses with
:class:`ArgumentParser`.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, Callable

from model.errors import InputError, one_line, tame


class RunFailed(RuntimeError):
    """Work that could not finish for a reason outside the input (a worker
    process killed, say): the command prints the message and exits 1, with
    no traceback. The message says what was kept and what to do."""


def run_command(action: Callable[[], int | None]) -> int:
    """Run a command-line action with the toolkit's exit codes.

    Bad input prints one located message and gives 2 (no traceback); a
    :class:`RunFailed` prints its message and gives 1; Ctrl-C
    gives 130, with the command's own account of what it finished when it
    gives one (``runio.progress.Interrupted``: ``PARTIAL: interrupted after X of
    Y ...``); a closed output pipe (``| head``) ends quietly. The command's
    NOTE lines not yet printed (:mod:`runio.notes`) come when it ends, and
    go unprinted when it is refused. The domain is connected to the
    toolkit's edge first (:func:`runio.install`: workload files read,
    workload results kept on disk). Signals before and after the action are
    the command's entry point's (:mod:`runio.launch`).
    """
    from . import install, notes
    install()
    try:
        code = action() or 0
    except InputError as exc:
        notes.discard()                  # a refused command says only its error
        print(one_line(f"error: {exc}"), file=sys.stderr)
        return 2
    except RunFailed as exc:
        notes.flush()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        notes.flush()
        print(str(exc) or "interrupted", file=sys.stderr)
        # CPython 3.11 re-raises SIGINT at exit (status -2, not 130) when the
        # Ctrl-C passed through an exec/eval of a string on its way here (a
        # namedtuple built in a lazy import); running one clears that flag
        exec("pass")
        return 130
    except BrokenPipeError:
        notes.discard()
        return 0
    notes.flush()
    return code


class ArgumentParser(argparse.ArgumentParser):
    """The command lines' parser: a mistake in the arguments is one short line.

    ``argparse`` prints the whole usage before its message (600 characters
    and more for the larger commands); here the message names the option and
    points to ``--help``, exit code 2 as before. Values argparse accepts but
    no command can use are refused the same way: an empty string given for
    a file, name or number (``--scenario ""`` would otherwise fall back to
    the default silently) and a number that is NaN or infinite
    (``--max-error nan`` would make every check pass).

    An option given where the command does not use it (``--seconds`` without
    ``--engine sim``) is declared with :meth:`ignored_unless`: the command
    runs and says so in a NOTE line (:mod:`runio.notes`)."""

    def ignored_unless(self, option: str, applies: Callable[[argparse.Namespace], bool],
                       why: str) -> None:
        """``option``, when given, is used only where ``applies(args)``; else a
        NOTE says it is ignored, and ``why``."""
        dest = next(a.dest for a in self._actions if option in a.option_strings)
        self.__dict__.setdefault("_ignored_unless", []).append((option, dest, applies, why))

    def error(self, message: str):  # noqa: D401 (argparse's signature)
        from . import notes
        notes.discard()                  # a refused command line says only its error
        self.exit(2, one_line(f"error: {self.prog}: {tame(message)} (see {self.prog} --help)")
                  + "\n")

    def parse_known_args(self, args=None, namespace=None):
        rules = self.__dict__.get("_ignored_unless", [])
        given: set[str] = set()
        if rules and namespace is None:
            namespace = _recording(given, self)
        ns, rest = super().parse_known_args(args, namespace)
        if rules:
            from . import notes
            for option, dest, applies, why in rules:
                if dest in given and not applies(ns):
                    notes.note(f"{option} is ignored: {why}")
            ns = argparse.Namespace(**vars(ns))
        for dest, value in vars(ns).items():
            values = value if isinstance(value, list) else [value]
            option = self._option_of(dest)
            for v in values:
                if isinstance(v, str) and v.strip() == "":
                    self.error(f"argument {option}: an empty value; give a file, name or number")
                if isinstance(v, float) and not math.isfinite(v):
                    self.error(f"argument {option}: {v!r} is not a finite number")
        return ns, rest

    def _option_of(self, dest: str) -> str:
        """The option a user typed for ``dest`` (``sets`` -> ``--set``)."""
        for action in self._actions:
            if action.dest == dest:
                longs = [o for o in action.option_strings if o.startswith("--")]
                return (longs or action.option_strings or [action.metavar or dest])[0]
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    if any(a.dest == dest for a in sub._actions):
                        return sub._option_of(dest) if isinstance(sub, ArgumentParser) else dest
        return "--" + dest.replace("_", "-")


def at_least(minimum: float, kind: type = float, exclusive: bool = False
             ) -> Callable[[str], float]:
    """An argparse ``type`` for a number option with a lower bound
    (``--jobs`` >= 1, ``--max-error`` >= 0): a value out of range is refused
    as the option's own mistake, before any work. Options the Python API
    shares take their :class:`runio.arguments.Arg` instead (``ARGS[name].parser()``)."""
    from .arguments import Arg
    return Arg("integer" if kind is int else "number", minimum=minimum,
               exclusive=exclusive).parser()


def arg(name: str) -> Callable[[str], Any]:
    """The argparse ``type`` of a setting the API shares (:data:`runio.arguments.ARGS`)."""
    from .arguments import ARGS
    return ARGS[name].parser()


def _recording(given: set[str], parser: argparse.ArgumentParser) -> argparse.Namespace:
    """A namespace holding the parser's defaults that records, in ``given``,
    every option the command line sets."""
    class Recording(argparse.Namespace):
        def __setattr__(self, name: str, value: Any) -> None:
            given.add(name)
            super().__setattr__(name, value)
    ns = Recording()
    for action in parser._actions:
        if action.dest is not argparse.SUPPRESS and action.default is not argparse.SUPPRESS:
            value = action.default
            if isinstance(value, str):
                # what argparse would set after parsing (it converts a string
                # default of an option not given), as an object that is not
                # the default itself, so that argparse leaves it (unrecorded)
                value = parser._get_value(action, value)
                if value is action.default:
                    value = (value + " ")[:-1]
            object.__setattr__(ns, action.dest, value)
    for dest, value in parser._defaults.items():
        object.__setattr__(ns, dest, value)
    return ns
