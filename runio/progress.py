"""Progress of long work on stderr, and how an interrupted command says it stopped.

One policy for every long command (``simulate``, ``python -m sim.facts``,
``predict --runs``, ``predict`` of one rack with its interval, ``calibrate
run``, ``calibrate validate --cv``):

* a progress bar (count/total, rate and ETA, by :mod:`tqdm`) goes to stderr
  when stderr is a terminal; ``--progress`` forces it (into a log, say) and
  ``--no-progress`` silences it; ``--json`` silences it unless ``--progress``
  is given, so machine output stays clean (:func:`wanted`);
* Ctrl-C ends the work early. What was finished is still printed or
  written, marked partial: the summary says ``PARTIAL: interrupted after X
  of Y <unit>``, JSON carries ``"partial": true``, a CSV a ``partial``
  column. The command then raises :class:`Interrupted` (a
  :class:`KeyboardInterrupt`), which :func:`runio.exits.run_command` turns
  into that message on stderr and exit code 130.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

INTERRUPTED_EXIT = 130


def add_flag(parser: argparse.ArgumentParser) -> None:
    """``--progress`` / ``--no-progress`` (default: on when stderr is a terminal)."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal, "
                             "and not with --json)")


def wanted(flag: bool | None, *, json: bool = False) -> bool:
    """Whether to show progress: the user's ``--[no-]progress``, else a terminal
    stderr and no ``--json``."""
    if flag is not None:
        return flag
    if json:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):       # a closed or replaced stderr
        return False


def bar(total: float, desc: str, unit: str, enabled: bool, **kw: Any):
    """A tqdm bar on stderr showing count/total, rate and ETA (inert if not enabled).

    Off a terminal (``--progress`` into a log) it redraws at most every few
    seconds, in ASCII, so the log stays readable. The work starts here: the
    command's NOTE lines (:mod:`runio.notes`) are printed first.
    """
    from tqdm import tqdm

    from . import notes
    notes.flush()
    tty = enabled and wanted(None)
    # follow the terminal's size; one that reports none (0 x 0, as under
    # `script`) would hide the bar, so it and logs get 80 x 24
    follow = tty and _columns() > 0
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled,
                dynamic_ncols=follow, ncols=None if follow else 80, nrows=None if follow else 24,
                ascii=not tty, mininterval=0.2 if tty else 2.0, leave=False, **kw)


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def partial_text(done: float, total: float, unit: str) -> str:
    """The one wording of an interrupted command's summary line."""
    return f"PARTIAL: interrupted after {done:g} of {total:g} {unit}"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after the finished part was printed or written (exit code 130).

    ``str()`` is the summary line :func:`partial_text` plus ``note`` (where the
    partial results are); :func:`runio.exits.run_command` prints it.
    """

    def __init__(self, done: float, total: float, unit: str, note: str = ""):
        self.done, self.total, self.unit = done, total, unit
        text = partial_text(done, total, unit) + (f"; {note}" if note else "")
        super().__init__(text)


def note_compiling(what: str, cache_dir: str) -> None:
    """Say on stderr, before the first call of a compiled engine in a
    checkout, that ``what`` (``the analytic solver``, ``the simulator's
    kernel``: about 30 s each) is compiling into ``cache_dir``; nothing once
    it is cached there."""
    import sys

    from model.compiled_cache import is_compiled
    if not is_compiled(cache_dir):
        print(f"compiling {what} (the first run of this checkout, about 30 s; later runs "
              "reuse it)", file=sys.stderr, flush=True)
