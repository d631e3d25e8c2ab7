"""Runs CSVs in and out.

A *runs CSV* is one row per measured run: configuration columns first, then
measured columns, as in ``data/*.csv``. Its kind (``farreach_runs``,
``local_runs``, ...) is recognised from the header by :mod:`runio.kinds`.

Reading goes through :func:`runio.batch.read_runs` (so errors name the file and
line the same way everywhere) and tags every row with ``__kind__``,
``__source__`` and ``__line__``, the keys fitters receive.

Measured values are checked on the way in (:func:`check_measured`): a
measured cell is empty or a finite number >= 0 (a ``|``-separated list of
them for per-server values), else the file, line and column are an error
before any fitting or prediction starts; no row is left out silently.

Writing is append-only and crash-safe: :class:`RunsWriter` writes one row at
a time and flushes and fsyncs after each, so a plan interrupted at any point
keeps every run that finished. It never cuts or rewrites what a file holds: a
last line without its newline (an editor's habit) is kept and ended before
the next row; a last line with too few fields (a torn write) is refused,
naming the line, and the file is left as it was. Rows of a plan are keyed by
a configuration hash (:func:`config_hash`) so a resumed plan skips what is
already measured.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from model.errors import InputError
from runio.kinds import KINDS, RunKind, detect
from model.rows import parse_number
from runio.safe_io import atomic_write, decode, refuse_special, unterminated_tail
from runio.batch import read_runs

HASH_COLUMN = "config_hash"


def _ensure_kinds() -> None:
    # The local_runs kind registers itself with model.runs on import.
    from runio import local_runs  # noqa: F401


def load_runs(paths: str | Path | Sequence[str | Path], kind: str | None = None,
              where: Mapping[str, str] | None = None,
              same_fitter: bool = False) -> tuple[RunKind, list[dict[str, str]]]:
    """Read one or more runs CSVs of one kind; rows carry __kind__, __source__, __line__.

    With ``same_fitter``, files of different kinds may be mixed when one
    fitter calibrates them all (the FarReach runs, tuning and breakdown
    files fit one testbed profile); the first file's kind is returned.

    ``kind`` forces the kind (its name) instead of detecting it; all files
    must then have that kind's signature columns. ``where`` keeps only rows
    whose columns have the given values (e.g. ``{"plan": "holdout"}``; a
    value ``"a,b"`` keeps either).
    """
    _ensure_kinds()
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise InputError("no runs files given", field="--runs")
    chosen: RunKind | None = None
    if kind is not None:
        if kind not in KINDS:
            raise InputError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}",
                             field="--kind")
        chosen = KINDS[kind]
    rows: list[dict[str, str]] = []
    for path in paths:
        header, file_rows = read_runs(path)
        if chosen is not None and kind is not None:
            missing = sorted(chosen.signature - set(header))
            if missing:
                raise InputError(f"kind {kind} needs columns {', '.join(missing)}",
                                 source=str(path), line=1)
            k = chosen
        else:
            k = detect(header, source=str(path))
            if chosen is not None and k.name != chosen.name and not (
                    same_fitter and _fitter_of(k.name) == _fitter_of(chosen.name) is not None):
                raise InputError(f"this file is of kind {k.name} but {paths[0]} is of kind "
                                 f"{chosen.name}; fit one kind at a time (or pass --kind)",
                                 source=str(path), line=1)
            chosen = chosen or k
        for col in (where or {}):
            if col not in header:
                raise InputError(f"no column '{col}' to select on", source=str(path), line=1,
                                 field="--where")
        for r in file_rows:
            r["__kind__"] = k.name
            r["__source__"] = str(path)
            if all(str(r.get(c, "")).strip() in v.split(",") for c, v in (where or {}).items()):
                rows.append(r)
    assert chosen is not None
    for r in rows:
        check_measured(KINDS[r["__kind__"]], r)
    if not rows:
        raise InputError("no rows" + (f" with {where}" if where else ""), source=str(paths[0]),
                         line=2, field="--where" if where else None)
    return chosen, rows


def check_measured(kind: RunKind, row: Mapping[str, Any]) -> None:
    """Every measured column of ``row`` is empty, or a finite number >= 0 (a
    ``|``-separated list of them where the row's ``wait_stat`` is ``per-server``,
    or the column is one of the kind's per-worker columns)."""
    per_server = str(row.get("wait_stat", "")).strip() == "per-server"
    try:
        for col in kind.measured:
            v = row.get(col)
            if v is None or not str(v).strip():
                continue
            parts = str(v).split("|")
            if len(parts) > 1 and not per_server and col not in kind.per_worker:
                raise InputError(f"{v!r} is a |-separated list, which only a per-server "
                                 "value (wait_stat = per-server) can be", field=col)
            for part in parts:
                if parse_number(part, col) < 0:
                    raise InputError(f"{part.strip()} is negative; a measured value is >= 0",
                                     field=col)
    except InputError as exc:
        line = row.get("__line__")
        raise exc.located(source=row.get("__source__"),
                          line=int(line) if line and str(line).isdigit() else None) from None


def _fitter_of(kind: str) -> str | None:
    from .fitters import registered, split_spec
    spec = registered().get(kind)
    return None if spec is None else split_spec(spec)[0]


def config_hash(config: Mapping[str, Any]) -> str:
    """A short stable hash of a configuration (order of keys does not matter)."""
    canon = json.dumps({str(k): _canon(v) for k, v in config.items()}, sort_keys=True)
    return hashlib.sha1(canon.encode()).hexdigest()[:12]


def _canon(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, (int, float, str)) or v is None:
        return v
    return str(v)


def format_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    return str(v)


class RunsWriter:
    """Append rows to a runs CSV, one fsync per row; safe to reopen after a crash.

    If the file exists its header must contain ``columns`` (extra columns in
    the file are left empty in new rows). What the file holds is never cut or
    changed: a complete last line without its newline gets one before the
    first new row; a torn last line is refused (file untouched).
    """

    def __init__(self, path: str | Path, columns: Sequence[str], optional: Sequence[str] = ()):
        self.path = Path(path)
        self.columns = list(columns)
        self.header = list(columns)
        #: ``optional`` columns an existing file may lack (added to the kind
        #: after it was written): its new rows go without them, listed here
        self.dropped: list[str] = []
        refuse_special(self.path, "--out")        # a folder, link, device or pipe
        if self.path.exists() and self.path.stat().st_size > 0:
            # Everything is checked before a byte is written: a refused file stays as
            # it was. Reading it refuses a torn last row (too few fields, an open quote).
            header, _ = read_runs(self.path)
            missing = [c for c in self.columns if c not in header and c not in optional]
            self.dropped = [c for c in self.columns if c not in header and c in optional]
            if missing:
                raise InputError(f"existing file lacks columns {', '.join(missing)}; "
                                 "write to a new file", source=str(self.path), line=1)
            unterminated = bool(unterminated_tail(self.path))
            self.header = header
            self._fh = self._open("a")
            if unterminated:
                self._fh.write("\n")
        else:
            self._fh = self._open("w")
            self._write_line(self.header)

    def _open(self, mode: str):
        # the folder is the user's to make (an output into a mistyped folder
        # is refused, not created); a file system that refuses the write
        # (read-only, /proc, permissions root does not bypass) is named
        try:
            return open(self.path, mode, newline="")
        except OSError as exc:
            raise InputError(f"cannot write here: {exc.strerror}", source=str(self.path),
                             field="--out") from None

    def _write_line(self, values: Sequence[str]) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        try:
            self._fh.write(buf.getvalue())
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:          # a full disk: the rows before stay as they were
            raise InputError(f"could not append ({exc.strerror or exc}); the rows written "
                             "before are kept", source=str(self.path), field="--out") from None

    def append(self, row: Mapping[str, Any]) -> None:
        unknown = [k for k in row if k not in self.header and not k.startswith("__")
                   and k not in self.dropped]
        if unknown:
            raise InputError(f"row has columns not in the file: {', '.join(unknown)}",
                             source=str(self.path))
        self._write_line([format_cell(row.get(c)) for c in self.header])

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "RunsWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def existing_hashes(path: str | Path) -> set[str]:
    """Config hashes already in a runs CSV (empty set if the file does not exist)."""
    p = Path(path)
    if p.is_dir():
        raise InputError("this is a folder; give a CSV file to append to", source=str(p),
                         field="--out")
    if not p.exists() or p.stat().st_size == 0:
        return set()
    # A complete last line without its newline is a finished run (RunsWriter keeps it).
    reader = csv.DictReader(io.StringIO(decode(p.read_bytes(), str(p), "runs CSV"), newline=""))
    if reader.fieldnames is None or HASH_COLUMN not in reader.fieldnames:
        if reader.fieldnames is None:
            return set()
        raise InputError(f"no {HASH_COLUMN} column: not an output of `calibrate run`",
                         source=str(p), line=1)
    return {r[HASH_COLUMN] for r in reader if r.get(HASH_COLUMN)}


def write_rows(path: str | Path, header: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """Write a whole CSV at once (for outputs such as predictions), atomically."""
    with atomic_write(path) as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow([format_cell(r.get(c)) for c in header])
