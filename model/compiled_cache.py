"""Where numba keeps compiled code: one directory per digest of the sources.

numba's own cache notices changes to the file of a compiled function only,
not to the functions compiled into it from other modules
(``register_jitable``). So the analytic solver (:mod:`model.solvers._jit`)
and the simulator's kernel (:mod:`sim.fast_kernel`) name their cache
directory after a digest of every source they compile: a change to any of
them compiles afresh, an unchanged checkout reuses the cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable


def compiled_cache_dir(prefix: str, sources: Iterable[str | os.PathLike]) -> str:
    """``$NUMBA_CACHE_DIR``, else ``$KVPERF_CACHE_DIR/<prefix>-<digest of the
    sources>`` (default ``~/.cache/kvperf``; ``KVPERF_CACHE_DIR=off``, which
    turns off the workload cache, leaves compiled code in the default)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    digest = hashlib.sha1()
    for path in sources:
        digest.update(Path(path).read_bytes())
    default = os.path.join(os.path.expanduser("~"), ".cache", "kvperf")
    base = os.environ.get("KVPERF_CACHE_DIR") or default
    if base == "off":
        base = default
    return os.path.join(base, f"{prefix}-{digest.hexdigest()[:16]}")


def is_compiled(cache_dir: str) -> bool:
    """Does ``cache_dir`` hold compiled code (numba's ``.nbi`` index files)?
    False before the first run of a checkout, or after a source changed: the
    next call compiles (tens of seconds), which a command says before it
    starts so that it does not look hung."""
    return any(Path(cache_dir).rglob("*.nbi"))
