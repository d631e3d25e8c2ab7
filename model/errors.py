"""The one exception type for bad user input.

Every input path (scenario TOML, ``--set`` overrides, profiles, runs CSVs,
log files) raises :class:`InputError` with enough context to find the
mistake: the file, the line or row, and the field. The command-line entry
points catch it, print the message and exit with code 2, never a traceback.
"""

from __future__ import annotations

import re


#: a message is one line a person reads: at most this many characters
MAX_MESSAGE = 300
#: a word of the user's input longer than this is shown by its start and length
MAX_WORD = 120
_LONG_WORD = re.compile(r"\S{%d,}" % (MAX_WORD + 1))
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def tame(text: str, words: bool = True) -> str:
    """``text`` safe to print in a one-line message: control characters
    escaped (a binary file's bytes), and a long word of the user's input (a
    100,000-digit cell, a row of brackets) shown by its start and length."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if not words:          # a path is shown whole, however long
        return text
    return _LONG_WORD.sub(lambda m: f"{m.group()[:32]}...({len(m.group()):,} characters)", text)


def one_line(message: str) -> str:
    """A message cut to :data:`MAX_MESSAGE` characters (the location comes
    first, so what is cut is the end of the explanation)."""
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 3] + "..."


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
            where.append(tame(str(self.source), words=False))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field '{tame(str(self.field))}'")
        prefix = ": ".join([", ".join(where)]) if where else ""
        detail = tame(self.detail)
        return f"{prefix}: {detail}" if prefix else detail

    def located(self, *, source: str | None = None, line: int | None = None,
                field: str | None = None) -> "InputError":
        """Return a copy with missing location parts filled in."""
        return InputError(self.detail, source=self.source or source,
                          line=self.line if self.line is not None else line,
                          field=self.field or field)
