"""Reading the user's files and writing ours: checked up front, never half-done.

Every command reads and writes files through this module, so the same rules
hold everywhere (docs/contracts.md, "Files"):

* **Inputs are checked before any work** (:func:`input_path`): a missing
  file, a directory, or an unreadable file is an
  :class:`~model.errors.InputError` naming the file and the option that
  gave it. Text is read as real files have it (:func:`read_text`): a UTF-8
  byte-order mark is dropped, CRLF line ends and a missing final newline are
  fine, and bytes that are not UTF-8 are reported with their line and column.
* **TOML** (:func:`load_toml`) reports syntax errors with their line, nesting
  too deep for the parser as an error rather than a crash, and
  :func:`toml_line` finds the line of a key so that a bad *value* can be
  located too.
* **Outputs are checked before any work** (:func:`output_path`, the one
  guard of every command's outputs): the path is a regular file or does
  not exist -- never a link, a device, a pipe or a folder
  (:func:`refuse_special`: ``--out /dev/null`` run as root would replace
  the machine's ``/dev/null``) --, its extension is one the option writes,
  the folder exists and is writable, and an output is never one of the
  command's inputs (``--out`` equal to ``--runs`` would replace the data
  being read).
* **Outputs are written atomically** (:func:`atomic_write`): into a
  temporary file in the same folder, flushed and fsynced, then renamed over
  the target. A crash, Ctrl-C or a full disk leaves the old file (or none),
  never a truncated one.
* **Scratch folders** (:func:`scratch_dir`) carry the owning process id in
  their name, so folders left by a killed process (SIGKILL runs no cleanup)
  are found and removed at the next start (:func:`remove_stale_scratch`);
  :func:`exit_on_sigterm` turns SIGTERM into an ordinary exit so that
  ``finally`` blocks (which remove them) run (every command does so already,
  :mod:`runio.launch`; this is for code called from elsewhere).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from model.errors import InputError
from model.toml_text import BOM, parse_toml
from runio.launch import Terminated


#: The largest input file read (text inputs: scenarios, profiles, plans, runs
#: CSVs, logs). The lab's largest file is a few MiB; a file far beyond this
#: is a wrong path, and reading it whole would exhaust memory.
MAX_INPUT_BYTES = 1 << 30


# ---------------------------------------------------------------- inputs
def input_path(path: str | os.PathLike, what: str = "file", field: str | None = None) -> Path:
    """The path of an input file that exists, is a regular file and can be read."""
    p = Path(path)
    src = str(path)
    if str(path).strip() == "":
        raise InputError(f"no {what} given (empty path)", field=field)
    if not p.exists():
        raise InputError(f"{what} not found", source=src, field=field)
    if p.is_dir():
        raise InputError(f"this is a folder; expected a {what}", source=src, field=field)
    if not os.access(p, os.R_OK):
        raise InputError(f"{what} cannot be read (permission denied)", source=src, field=field)
    try:
        st = p.stat()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", source=src,
                         field=field) from None
    # A FIFO or a device (/dev/zero, /dev/stdin) would block or never end;
    # every input here is a file on disk that can be read twice.
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"not a regular file (a pipe or device); expected a {what} on disk",
                         source=src, field=field)
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(f"{st.st_size / 2**20:,.0f} MiB is too large for a {what} "
                         f"(at most {MAX_INPUT_BYTES // 2**20} MiB)", source=src, field=field)
    return p


def decode(data: bytes, source: str, what: str = "file") -> str:
    """UTF-8 text of ``data`` without a byte-order mark; bad bytes are located."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {col} "
                         f"(is this a {what}? save it as UTF-8)", source=source, line=line) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputError(f"a NUL byte: this is a binary file, not a {what}", source=source,
                         line=line)
    return text[1:] if text.startswith(BOM) else text


def open_input(path: str | os.PathLike, what: str = "file", field: str | None = None,
               **open_args):
    """An input file checked (:func:`input_path`) and opened for reading text
    (``open_args`` as :func:`open` takes them), to be read as a stream."""
    input_path(path, what, field)
    try:
        return open(path, **open_args)
    except FileNotFoundError:           # gone since the check
        raise InputError("file not found", source=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None


def read_text(path: str | os.PathLike, what: str = "file", field: str | None = None) -> str:
    """The text of an input file (checked, decoded, BOM dropped)."""
    p = input_path(path, what, field)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", source=str(path),
                         field=field) from None
    return decode(data, str(path), what)


def load_toml(path: str | os.PathLike, what: str = "TOML file",
              field: str | None = None) -> tuple[dict[str, Any], str]:
    """A TOML file's contents and its text (for :func:`toml_line`)."""
    text = read_text(path, what, field)
    return parse_toml(text, str(path)), text


def read_csv(path: str | os.PathLike, what: str = "runs CSV", field: str | None = "--runs",
             ) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file, each row tagged with ``__line__``.

    ``__line__`` is the line the row starts on, counting the lines of quoted
    fields that hold newlines. Blank lines are skipped. A header with empty
    or repeated names, a row with the wrong number of fields, and a repeated
    ``id`` are errors naming the line."""
    src = str(path)
    text = read_text(path, what, field)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise InputError("empty file: expected a CSV header", source=src, line=1)
        header = [h.strip() for h in header]
        if "" in header:
            raise InputError(f"column {header.index('') + 1} of the header has no name",
                             source=src, line=1)
        if len(set(header)) != len(header):
            dup = sorted({h for h in header if header.count(h) > 1})
            raise InputError(f"duplicate columns: {', '.join(dup)}", source=src, line=1)
        rows: list[dict[str, str]] = []
        seen_ids: dict[str, int] = {}
        end = reader.line_num
        for values in reader:
            start, end = end + 1, reader.line_num
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise InputError(f"expected {len(header)} fields as in the header, got "
                                 f"{len(values)}", source=src, line=start)
            row = dict(zip(header, values))
            rid = row.get("id", "").strip()
            if rid:
                if rid in seen_ids:
                    raise InputError(f"id {rid!r} is already used on line {seen_ids[rid]}; "
                                     "ids must be unique", source=src, line=start, field="id")
                seen_ids[rid] = start
            row["__line__"] = str(start)
            rows.append(row)
    except csv.Error as exc:
        raise InputError(f"not a valid CSV file: {exc}", source=src,
                         line=reader.line_num or 1) from None
    if rows and _ends_in_quotes(text):
        raise InputError("the file ends inside a quoted field: cut short? (complete or remove "
                         "the last row)", source=src, line=int(rows[-1]["__line__"]))
    return header, rows


def _ends_in_quotes(text: str) -> bool:
    # The lenient reader takes an unclosed quote as running to the end of the
    # file; the strict one says so (and is not used otherwise: it refuses
    # harmless quirks such as "ab"c).
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


# ---------------------------------------------------------------- outputs
def special_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it is there and not a regular file (``"a link to
    /dev/null"``, ``"a device"``, ...); None for a regular file or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"a path that cannot be examined ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            return f"a link (to {os.readlink(path)})"
        except OSError:
            return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    return "a socket" if stat.S_ISSOCK(mode) else "not a file"


def refuse_special(path: str | os.PathLike, field: str | None = None) -> None:
    """An output is a new file or replaces a regular one: a link, device, pipe
    or folder in its place is refused (it would be renamed over or written
    into: a copy of ``/dev/full``, a link to ``/proc/self/fd/1``)."""
    what = special_kind(path)
    if what == "a folder":
        raise InputError("this is a folder; give a file name for the output", source=str(path),
                         field=field)
    if what is not None:
        raise InputError(f"this is {what}, not a regular file; outputs are written only as "
                         "new or regular files: give another file name", source=str(path),
                         field=field)


def output_path(path: str | os.PathLike, field: str,
                inputs: Iterable[str | os.PathLike | None] = (), *,
                types: Sequence[str] | None) -> Path:
    """Check, before any work, that ``path`` can be written as a new or replaced file.

    The one guard of every command's outputs: the path is a regular file or
    nothing (:func:`refuse_special`), with one of the extensions ``types``
    (what the option writes; None only where the command names the file
    itself); the folder must exist and be writable; the path must not be one
    of ``inputs`` (reading and replacing the same file in one command would
    lose it)."""
    src = str(path)
    if src.strip() == "":
        raise InputError("no output file given (empty path)", field=field)
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    refuse_special(p, field)
    if types is not None:
        output_type(p, types, field)
    if not parent.exists():
        raise InputError(f"the folder {str(parent)!r} does not exist; create it first",
                         source=src, field=field)
    if not parent.is_dir():
        raise InputError(f"{str(parent)!r} is not a folder", source=src, field=field)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"the folder {str(parent)!r} is not writable", source=src, field=field)
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError("the file exists and is not writable", source=src, field=field)
    # os.access answers for the permission bits only (and says yes to root):
    # a read-only or special file system (/proc) refuses only when written
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".kvperf-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"cannot write in the folder {str(parent)!r} ({exc.strerror or exc})",
                         source=src, field=field) from None
    for other in inputs:
        if other is not None and same_file(p, other):
            raise InputError(f"this is also an input ({other}); write the output to another "
                             "file so the input stays as it is", source=src, field=field)
    return p


def output_folder(path: str | os.PathLike, field: str) -> Path:
    """Check, before any work, a folder the command writes its files into: an
    existing folder, or a new one whose parent exists (made by the caller once
    every check passed) -- never a link, a device, a pipe or a file."""
    src = str(path)
    if src.strip() == "":
        raise InputError("no output folder given (empty path)", field=field)
    p = Path(path)
    what = special_kind(p)
    if what is None and p.exists():
        what = "a file"
    if what is not None and what != "a folder":
        raise InputError(f"this is {what}; {field} takes a folder (an existing one, or a new "
                         "one to make)", source=src, field=field)
    if what is None:                       # a new folder: its parent must take it
        output_path(p, field, types=None)
    elif not os.access(p, os.W_OK | os.X_OK):
        raise InputError("the folder is not writable", source=src, field=field)
    return p


#: What the commands that pick their output format by extension write.
REPORT_TYPES = (".csv", ".json", ".html", ".htm")


def output_type(path: str | os.PathLike, types: Sequence[str] = REPORT_TYPES,
                field: str = "--out") -> str:
    """The output format of ``path`` by its extension (lower case), or an
    InputError naming the extensions ``types`` allows."""
    ext = Path(path).suffix.lower()
    if ext not in types:
        named = [t for t in types if t != ".htm"]
        listed = ", ".join(named[:-1]) + (" or " if len(named) > 1 else "") + named[-1]
        raise InputError(f"unknown output type {ext or '(no extension)'!r}; use a {listed} "
                         "file name", field=field, source=str(path))
    return ext


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Do two paths name the same file (through links, relative paths, ...)?"""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, newline: str | None = "",
                 encoding: str | None = "utf-8") -> Iterator[Any]:
    """Write ``path`` all at once: a temporary file in the same folder, fsync, rename.

    Readers see the old file until the new one is complete; an exception
    (a full disk, Ctrl-C) removes the temporary file and leaves the old one.
    The new file gets the old one's permissions (else the usual ones)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    binary = "b" in mode
    refuse_special(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:     # a read-only or special file system (/proc), a full disk
        raise InputError(f"cannot write here ({exc.strerror or exc})", source=str(path)) from None
    try:
        with os.fdopen(fd, mode, **({} if binary else {"newline": newline,
                                                        "encoding": encoding})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        refuse_special(target)            # made a link or a device while it was written
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, (BrokenPipeError, InterruptedError)):
            raise InputError(f"could not write the file ({exc.strerror or exc}); any earlier "
                             "version of it is unchanged", source=str(path)) from None
        raise
    _fsync_dir(folder)


def write_rows_csv(path: str | os.PathLike, rows: Sequence[dict], cell,
                   header: Sequence[str] | None = None, partial: bool = False) -> bool:
    """``rows`` as a CSV, atomically: the columns ``header``, or every key any
    row has (in the order first seen), ``cell(value)`` the text of each cell
    (None for a key a row lacks).

    A ``partial`` output (work stopped by Ctrl-C) gets a ``partial`` column,
    ``true`` on every row, and is not written at all without a row: a partial
    output always says so, or is not left. Returns whether it was written."""
    cols: list[str] = list(header) if header is not None else []
    if header is None:
        for r in rows:
            cols += [k for k in r if k not in cols]
    if partial:
        if not rows:
            return False
        cols.append("partial")
        rows = [{**r, "partial": "true"} for r in rows]
    with atomic_write(path) as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in cols])
    return True


def write_text(path: str | os.PathLike, text: str) -> None:
    """:func:`atomic_write` of a whole text."""
    with atomic_write(path, newline=None) as fh:
        fh.write(text)


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    # the rename itself is durable only once the folder is synced
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------- appends
def unterminated_tail(path: str | os.PathLike) -> bytes:
    """The file's last line if it lacks its newline (``b""`` if it has one).

    An editor or a script may leave a file without a final newline: the line
    is data, to be ended before anything is appended, never cut."""
    p = Path(path)
    size = p.stat().st_size
    if size == 0:
        return b""
    with open(p, "rb") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return b""
        fh.seek(0)
        data = fh.read()
    return data[data.rfind(b"\n") + 1:]


# ---------------------------------------------------------------- scratch folders
def scratch_dir(prefix: str) -> str:
    """A new temporary folder named ``<prefix><pid>-<random>`` (see :func:`remove_stale_scratch`)."""
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")


def remove_stale_scratch(prefix: str) -> list[str]:
    """Remove the scratch folders of ``prefix`` whose process is gone; returns them.

    A process killed by SIGKILL cannot clean up; its folders (a RocksDB data
    directory can hold tens of MB) are recognised by the dead process id in
    their name."""
    root = Path(tempfile.gettempdir())
    removed = []
    for d in root.glob(f"{prefix}*-*"):
        m = re.match(re.escape(prefix) + r"(\d+)-", d.name)
        if not m or not d.is_dir() or _alive(int(m.group(1))):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(str(d))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True                      # someone else's process
    return True


@contextlib.contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (exit status 143)
    instead of ending the process on the spot (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
