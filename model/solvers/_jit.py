"""Compiling the analytic solver: numba, with its cache keyed by the sources it compiles.

The cache directory is named after a digest of every source the solver
compiles (:func:`model.compiled_cache.compiled_cache_dir`, as for the
simulator's kernel): a change to any of them compiles afresh, an unchanged
checkout reuses the cache (the first prediction in a checkout compiles for
some seconds; later ones start at once).
"""

from __future__ import annotations

import os
from pathlib import Path

import numba
from numba import njit, prange
from numba.extending import register_jitable

from ..compiled_cache import compiled_cache_dir
from ..rack import clients, lsm, lsm_rules, network, service

__all__ = ["njit", "prange", "register_jitable", "cache_dir", "one_thread"]


def cache_dir() -> str:
    """``$NUMBA_CACHE_DIR``, else ``$KVPERF_CACHE_DIR/analytic-<digest>``
    (default ``~/.cache/kvperf``)."""
    # every module of the solver's folder (the compiled ones, and those whose
    # constants they compile in): a module split off later cannot be left out
    here = sorted(Path(__file__).parent.glob("*.py"))
    return compiled_cache_dir("analytic", (
        *here, Path(clients.__file__), Path(lsm.__file__), Path(lsm_rules.__file__),
        Path(network.__file__),
        Path(service.__file__)))


# set before the solver's modules define their compiled functions (their cache
# paths are fixed when they are defined)
numba.config.CACHE_DIR = cache_dir()
# numba's built-in work queue for the batch's threads, not GNU OpenMP: a
# process that has run an OpenMP parallel region cannot fork() (the fit's
# worker pool forks), and numba aborts the child when it tries. (A user's
# NUMBA_THREADING_LAYER still decides.) The work queue takes one parallel
# launch at a time: analytic._solve_packed serialises the launches of
# threads that share a process.
if not os.environ.get("NUMBA_THREADING_LAYER"):
    numba.config.THREADING_LAYER = "workqueue"


def one_thread() -> None:
    """Solve batches on one thread: for worker processes that already share
    the machine's cores (batch prediction, fits, the knob table)."""
    numba.set_num_threads(1)
