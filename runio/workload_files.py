"""Workload files read for the domain: statistics, measured descriptions, key traces.

A scenario names its workload by ``workload.profile``: an embedded name the
domain resolves itself, or a file. :func:`load_file` reads the file (checked
as every input is, a trace streamed line by line) and hands its text to
:func:`model.workload_sources.source_from_file`; a file unchanged since it
was last read (same path and modification time) is not read again.
:func:`install` makes it the domain's file reader.
"""

from __future__ import annotations

import functools
import os
from typing import Iterator

from model import workload_sources as ws
from model.errors import InputError

from .safe_io import open_input, read_text


def install() -> None:
    """Make :func:`load_file` the reader of workload files (idempotent)."""
    ws.set_file_reader(load_file)


def load_file(spec: str, layout: str = "farreach"):
    """The workload source in file ``spec`` (an error names the file and the key)."""
    if os.sep not in spec and "/" not in spec and not os.path.splitext(spec)[1] \
            and not os.path.exists(spec):
        raise InputError(f"no such workload profile; embedded: {', '.join(ws.embedded_profiles())}"
                         f" (or give a file path)", field="workload.profile", source=spec)
    if not os.path.exists(spec):
        raise InputError("file not found", source=spec, field="workload.profile")
    try:
        mtime = os.stat(spec).st_mtime_ns
    except OSError:
        mtime = 0
    return _load(os.path.abspath(spec), spec, mtime, layout)


@functools.lru_cache(maxsize=16)
def _load(abspath: str, shown: str, mtime: int, layout: str):
    return ws.source_from_file(
        shown, lambda what: read_text(shown, what, field="workload.profile"),
        lambda: read_trace(shown), layout)


def read_trace(path: str) -> Iterator[str]:
    """A key trace's lines, checked first (not a folder, pipe or device)."""
    with open_input(path, "key trace", "--trace", encoding="utf-8", errors="strict") as fh:
        yield from fh


def trace(path: str, layout: str = "farreach") -> ws.KeyTrace:
    """A key trace file (``python -m sim workload --trace``)."""
    return ws.KeyTrace.from_lines(read_trace(path), path, layout)
