"""The workload model's on-disk store: computed results kept between processes.

The workload model (:mod:`model.workload`) computes and remembers in memory;
it keeps results beyond the process only in a store an entry point installs
(:mod:`model.workload_store`). This is that store, on disk:
:func:`install` puts it in place, and the command line and the ``kvperf``
API call it before their first evaluation.

Results are keyed by the source text of every module that computes them
(:data:`_MODULES`), so a changed model never reads what an older one wrote.
``KVPERF_CACHE_DIR`` chooses the directory (default ``~/.cache/kvperf``),
read at every access; ``off`` disables it. The directory is kept within
:data:`BUDGET` bytes, least recently used entries first out (an older
model's entries go that way too).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import re

import numpy as np

#: The modules whose source decides what is stored (package/file).
_MODULES = ("model/workload.py", "model/workload_types.py", "model/workload_store.py",
            "model/workload_blocks.py", "model/workload_summary.py", "model/workload_sources.py",
            "model/ycsb.py", "model/keys.py", "runio/workload_cache.py")


def install() -> None:
    """Keep the workload model's results on disk (:class:`DiskStore`) from now on.

    Call it once, before the first evaluation, from each entry point (the
    command line's ``main`` and the ``kvperf`` API); calling it again does
    no harm."""
    from model.workload_store import set_store
    set_store(DiskStore())


class DiskStore:
    """The store protocol of :mod:`model.workload_store` over :func:`path_for`,
    :func:`load` and :func:`save`."""

    def load(self, prefix: str, key: tuple) -> dict | None:
        return load(path_for(prefix, key))

    def save(self, prefix: str, key: tuple, arrays: dict, *, compress: bool = True) -> None:
        save(path_for(prefix, key), arrays, compress=compress)


def cache_dir() -> str | None:
    d = os.environ.get("KVPERF_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "kvperf"))
    return None if d == "off" else d


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    h = hashlib.sha1()
    for name in _MODULES:
        package, _, filename = name.partition("/")
        try:
            folder = os.path.dirname(os.path.abspath(importlib.import_module(package).__file__))
            with open(os.path.join(folder, filename), "rb") as fh:
                h.update(fh.read())
        except (OSError, ImportError, TypeError):
            h.update(name.encode())
    return h.hexdigest()


def path_for(prefix: str, key: tuple) -> str | None:
    d = cache_dir()
    if d is None:
        return None
    digest = hashlib.sha1(repr((source_digest(),) + tuple(key)).encode()).hexdigest()[:20]
    return os.path.join(d, f"{prefix}-{digest}.npz")


#: The cache is kept within this many bytes, the least recently used entries
#: removed first. A folded head is 16 MB and its partition keys 8 MB, one per
#: distinct generator setting; evaluations are about 50 kB each. A soak or a
#: tune over workload settings makes many: unbounded, the cache reached
#: 2.4 GB in one afternoon's soak.
BUDGET = 512 << 20


def load(path: str | None) -> dict | None:
    """The arrays stored at ``path`` (read-only), or None."""
    if path is None:
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except (OSError, KeyError, ValueError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)               # recently used: among the last to be pruned
    for a in out.values():
        a.setflags(write=False)
    return out


def save(path: str | None, arrays: dict, compress: bool = True) -> None:
    """Store ``arrays`` at ``path`` (written whole, then renamed into place).
    ``compress=False`` for dense arrays that zlib would only slow down (the
    folded head: 16 MB, 0.4 s to compress for no gain)."""
    if path is None:
        return
    tmp = f"{path}.{os.getpid()}.tmp.npz"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # the window tables are mostly zeros: those compress well
        (np.savez_compressed if compress else np.savez)(tmp, **arrays)
        _prune(os.path.dirname(path), BUDGET - os.path.getsize(tmp))
        os.replace(tmp, path)
    except OSError:
        # a read-only or full home only costs the recomputation
        with contextlib.suppress(OSError):
            os.remove(tmp)


#: the names :func:`path_for` gives; nothing else in the folder is ours to prune
#: (``KVPERF_CACHE_DIR`` may name a folder that holds the user's own files)
_ENTRY = re.compile(r"[A-Za-z_]+-[0-9a-f]{20}\.npz")


def _prune(folder: str, keep: int) -> None:
    """Remove the least recently used entries of ``folder`` until those left
    take at most ``keep`` bytes."""
    entries = []
    for name in os.listdir(folder):
        if not _ENTRY.fullmatch(name):
            continue
        full = os.path.join(folder, name)
        try:
            st = os.stat(full)
        except OSError:
            continue
        entries.append((st.st_mtime, st.st_size, full))
    total = sum(size for _, size, _ in entries)
    for _, size, full in sorted(entries):
        if total <= keep:
            break
        try:
            os.remove(full)
            total -= size
        except OSError:
            pass
