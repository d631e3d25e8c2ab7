"""The per-worker tuples of the frozen rack specs as numpy arrays, converted once.

The specs hold per-worker values as tuples (hashable, immutable). A
prediction reads each of them several times as an array, and on a rack of
4,096 workers each conversion takes about 0.1 ms: a dozen of them were a
tenth of a warm prediction. :func:`per_worker` converts a field once and
keeps the array, read-only, in the spec object's ``__dict__`` (beside its
fields, so equality, hashing and ``dataclasses.replace`` do not see it).
"""

from __future__ import annotations

import numpy as np

_CACHE = "_per_worker_arrays"


def per_worker(spec, name: str, dtype=float) -> np.ndarray:
    """``spec.name`` (a tuple of per-worker values) as a read-only array."""
    cache = spec.__dict__.setdefault(_CACHE, {})
    key = (name, np.dtype(dtype).str)
    a = cache.get(key)
    if a is None:
        a = np.array(getattr(spec, name), dtype=dtype)
        a.setflags(write=False)
        cache[key] = a
    return a
