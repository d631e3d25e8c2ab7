"""A small on-disk cache for computed workload results (model/workload.py).

Results are keyed by the source text of every module that computes them, so
a changed model never reads what an older one wrote. ``KVPERF_CACHE_DIR``
chooses the directory (default ``~/.cache/kvperf``); ``off`` disables it.
"""

from __future__ import annotations

import functools
import hashlib
import os

import numpy as np

_MODULES = ("workload.py", "workload_legacy.py", "ycsb.py", "keys.py", "workload_sources.py",
            "workload_cache.py")


def cache_dir() -> str | None:
    d = os.environ.get("KVPERF_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "kvperf"))
    return None if d == "off" else d


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    h = hashlib.sha1()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _MODULES:
        try:
            with open(os.path.join(here, name), "rb") as fh:
                h.update(fh.read())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()


def path_for(prefix: str, key: tuple) -> str | None:
    d = cache_dir()
    if d is None:
        return None
    digest = hashlib.sha1(repr((source_digest(),) + tuple(key)).encode()).hexdigest()[:20]
    return os.path.join(d, f"{prefix}-{digest}.npz")


def load(path: str | None) -> dict | None:
    """The arrays stored at ``path`` (read-only), or None."""
    if path is None:
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except (OSError, KeyError, ValueError):
        return None
    for a in out.values():
        a.setflags(write=False)
    return out


def save(path: str | None, arrays: dict, compress: bool = True) -> None:
    """Store ``arrays`` at ``path`` (written whole, then renamed into place).
    ``compress=False`` for dense arrays that zlib would only slow down (the
    folded head: 16 MB, 0.4 s to compress for no gain)."""
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        # the window tables are mostly zeros: those compress well
        (np.savez_compressed if compress else np.savez)(tmp, **arrays)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home only costs the recomputation
