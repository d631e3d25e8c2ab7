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
from typing import Callable

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
    Y ...``); a closed output pipe (``| head``) ends quietly. The domain is
    connected to the toolkit's edge first (:func:`runio.install`: workload
    files read, workload results kept on disk).
    """
    from . import install
    install()
    try:
        return action() or 0
    except InputError as exc:
        print(one_line(f"error: {exc}"), file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(str(exc) or "interrupted", file=sys.stderr)
        # CPython 3.11 re-raises SIGINT at exit (status -2, not 130) when the
        # Ctrl-C passed through an exec/eval of a string on its way here (a
        # namedtuple built in a lazy import); running one clears that flag
        exec("pass")
        return 130
    except BrokenPipeError:
        return 0


class ArgumentParser(argparse.ArgumentParser):
    """The command lines' parser: a mistake in the arguments is one short line.

    ``argparse`` prints the whole usage before its message (600 characters
    and more for the larger commands); here the message names the option and
    points to ``--help``, exit code 2 as before. Values argparse accepts but
    no command can use are refused the same way: an empty string given for
    a file, name or number (``--scenario ""`` would otherwise fall back to
    the default silently) and a number that is NaN or infinite
    (``--max-error nan`` would make every check pass)."""

    def error(self, message: str):  # noqa: D401 (argparse's signature)
        self.exit(2, one_line(f"error: {self.prog}: {tame(message)} (see {self.prog} --help)")
                  + "\n")

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
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
    (``--seconds`` > 0, ``--jobs`` >= 1, ``--max-error`` >= 0): a value out of
    range is refused as the option's own mistake, before any work."""
    word = "an integer" if kind is int else "a number"
    op = ">" if exclusive else ">="

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {word}, got {tame(repr(text))}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if value < minimum or (exclusive and value == minimum):
            raise argparse.ArgumentTypeError(f"expected {word} {op} {minimum:g}, got {text}")
        return value
    convert.__name__ = kind.__name__       # argparse names the type in its messages
    return convert
