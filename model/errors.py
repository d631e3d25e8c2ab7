"""The one exception type for bad user input.

Every input path (scenario TOML, ``--set`` overrides, profiles, runs CSVs,
log files) raises :class:`InputError` with enough context to find the
mistake: the file, the line or row, and the field. The command-line entry
points catch it, print the message and exit with code 2, never a traceback.
"""

from __future__ import annotations

import sys
from typing import Callable


class InputError(ValueError):
    """Bad input from a user, located as precisely as we can."""

    def __init__(self, message: str, *, source: str | None = None,
                 line: int | None = None, field: str | None = None):
        self.detail = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source:
            where.append(str(self.source))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field '{self.field}'")
        prefix = ": ".join([", ".join(where)]) if where else ""
        return f"{prefix}: {self.detail}" if prefix else self.detail

    def located(self, *, source: str | None = None, line: int | None = None,
                field: str | None = None) -> "InputError":
        """Return a copy with missing location parts filled in."""
        return InputError(self.detail, source=self.source or source,
                          line=self.line if self.line is not None else line,
                          field=self.field or field)


class RunFailed(RuntimeError):
    """Work that could not finish for a reason outside the input (a worker
    process killed, say): the command prints the message and exits 1, with
    no traceback. The message says what was kept and what to do."""


def run_command(action: Callable[[], int | None]) -> int:
    """Run a command-line action with the toolkit's exit codes.

    Bad input prints one located message and gives 2 (no traceback); a
    :class:`RunFailed` prints its message and gives 1; Ctrl-C
    gives 130, with the command's own account of what it finished when it
    gives one (``sim.progress.Interrupted``: ``PARTIAL: interrupted after X of
    Y ...``); a closed output pipe (``| head``) ends quietly.
    """
    try:
        return action() or 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print(str(exc) or "interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
