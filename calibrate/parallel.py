"""Parallel maps for sweeps and fits: a local process pool, or a Dask cluster.

:func:`pmap` applies a picklable function to a list of items and returns the
results in input order. By default it uses a process pool on this machine
(:func:`runio.workers.worker_pool`: its workers end with the call); with
``cluster`` (a scheduler address such as ``tcp://10.0.0.5:8786``, a
``dask.distributed.Client`` or a ``LocalCluster``) the same call runs on a
Dask cluster, so a user with many machines scales out without code changes.

What runs in parallel: predictions over many rows (validation, sweeps) and
bootstrap refits. Native runs on one machine are *not* parallelised by
default: they would contend for its cores and disk and measure that
contention instead of the configuration.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from model.errors import InputError
from runio.workers import worker_pool


def dask_client(cluster: Any) -> tuple[Any, bool]:
    """A dask.distributed Client for ``cluster``; True if we created (and must close) it."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise InputError("--cluster needs dask.distributed: install the optional group "
                         "`pip install kvperf[distributed]`", field="--cluster") from None
    if isinstance(cluster, Client):
        return cluster, False
    address = getattr(cluster, "scheduler_address", cluster)
    if not isinstance(address, str) or not address:
        raise InputError(f"expected a scheduler address such as tcp://host:8786, got {cluster!r}",
                         field="--cluster")
    try:
        return Client(address, timeout="10s", set_as_default=False), True
    except (OSError, TimeoutError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}",
                         field="--cluster") from None


def as_done(futures: Sequence[Any], poll_s: float = 0.02):
    """Yield Dask futures as they finish (polling; needs no default client)."""
    import time
    pending = list(futures)
    while pending:
        ready = [f for f in pending if f.done()]
        if not ready:
            time.sleep(poll_s)
            continue
        for f in ready:
            pending.remove(f)
            yield f


def pmap(fn: Callable[[Any], Any], items: Sequence[Any], *, cluster: Any = None,
         n_jobs: int | None = None, progress: bool = False, desc: str = "") -> list[Any]:
    """``[fn(x) for x in items]``, in parallel; results in input order."""
    items = list(items)
    if not items:
        return []
    if cluster is not None:
        client, owned = dask_client(cluster)
        try:
            futures = client.map(fn, items, pure=False)
            if progress:
                from tqdm import tqdm
                for _ in tqdm(as_done(futures), total=len(futures), desc=desc, unit="task"):
                    pass
            return client.gather(futures)
        finally:
            if owned:
                client.close()
    jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
    if jobs <= 1 or len(items) == 1:
        it = items
        if progress:
            from tqdm import tqdm
            it = tqdm(items, desc=desc, unit="task")
        return [fn(x) for x in it]
    chunk = max(1, len(items) // (jobs * 4))
    with worker_pool(min(jobs, len(items))) as pool:
        results = pool.map(fn, items, chunksize=chunk)
        if progress:
            from tqdm import tqdm
            results = tqdm(results, total=len(items), desc=desc, unit="task")
        return list(results)
