"""Worker processes that end with the command: the one way the toolkit starts a pool.

:func:`worker_pool` is a :class:`concurrent.futures.ProcessPoolExecutor` (by
``fork`` where the system has it) whose workers

* ignore Ctrl-C: the terminal sends it to the whole process group, and
  the command decides what to keep (its finished part, marked partial);
* take SIGTERM's default action, so that :meth:`Process.terminate` ends them
  (a handler inherited from the command would turn it into an exception
  the pool sends back as a task's result, and the worker would run on);
* are ended by the kernel when the process that made the pool dies, even
  by SIGKILL (Linux: :func:`runio.launch.die_with_parent`; the pool is
  made in the main thread);
* are terminated, and the tasks not started dropped, when the block is
  left by an exception -- Ctrl-C, SIGTERM (:class:`runio.launch.Terminated`),
  a bad row --, instead of ``shutdown(wait=True)`` running every queued task
  to its end first.

A command started by :mod:`runio.launch` also ends, on SIGTERM and when it
returns, whatever worker it still has (a pool not made here: a fitter's).
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any, Callable, Iterator


def _start_worker(parent: int, initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from .launch import die_with_parent
    die_with_parent(parent)              # a spawned worker too (no fork hook runs in it)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def worker_pool(jobs: int, *, method: str | None = None,
                initializer: Callable[..., Any] | None = None,
                initargs: tuple = ()) -> Iterator[Any]:
    """A process pool of ``jobs`` workers for the block (module docstring);
    ``method``: the start method (default ``fork`` where available)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    methods = mp.get_all_start_methods()
    ctx = mp.get_context(method or ("fork" if "fork" in methods else methods[0]))
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_start_worker,
                               initargs=(os.getpid(), initializer, initargs))
    try:
        yield pool
    except BaseException:
        stop(pool)
        raise
    pool.shutdown(wait=True)


def solver_worker() -> None:
    """The initializer of a pool whose workers solve racks: one thread each
    (the processes share the cores already), connected to the toolkit's
    edge (a spawned worker starts unconnected)."""
    from model.solvers._jit import one_thread
    one_thread()
    from . import install
    install()


def stop(pool: Any) -> None:
    """End a pool now: its workers terminated, the tasks not started dropped."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
