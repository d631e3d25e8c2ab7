"""The analytic solver's solve of a rack, compiled (native/mva/rack.cpp).

:func:`model.solvers.analytic._solve_states_numpy` with ``_iterate`` and
``_step`` is the reference: the timeout-delay root search around the damped
fixed point over load, LSM flush cycles, loss and duplicates of each rack.
A step there is some sixty numpy calls on arrays of a few dozen workers,
0.2-0.3 ms of interpreter overhead for about 10 us of arithmetic, and a rack
takes 8-100 steps; the compiled form runs the same equations and search per
rack, in the same order of operations, and gives the reference's answers to
rounding with the same step counts (tests/model/test_rack_step.py).

It covers every rack, the collapse chain's states too: their collapsed
workers' drop fraction (:func:`analytic._collapsed`, a root search per step)
by the same bracket and Brent steps as the reference's scipy brentq. Those
states are solved on every worker (no worker classes: the root is over the
whole rack). Without the extension every rack goes to the numpy reference.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from model.rack import lsm as lsm_mech
from model.solvers import mva_core

#: the compiled solve; None in a checkout without the build (or an older
#: build without it). Tests set USE_COMPILED to compare with numpy.
_solve_racks = getattr(mva_core._compiled, "solve_racks", None)
USE_COMPILED = True
#: worker classes (native/mva/lump.cpp): a rack of at least LUMP_MIN workers
#: on the Schweitzer path is solved with the workers of a machine whose
#: constants agree within LUMP_TOL (relative) merged into one class; 0: off.
#: An approximation of the solution, measured against the solve of every
#: worker in tests/model/test_worker_classes.py (docs/model.md).
LUMP_TOL = 0.005
LUMP_MIN = 1024


def _cores() -> int:
    """The cores this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


#: threads that share a batch's racks (the compiled solve releases the GIL and
#: each rack is solved on its own, so the answer does not depend on it): the
#: cores this process may use, or KVPERF_SOLVE_THREADS. Worker processes
#: that already split a plan across the cores set it to 1.
def _threads_wanted() -> int:
    text = os.environ.get("KVPERF_SOLVE_THREADS", "").strip()
    if not text:
        return _cores()
    try:
        n = int(text)
        if n >= 1:
            return n
    except ValueError:
        pass
    import sys
    print(f"KVPERF_SOLVE_THREADS={text!r} is not a whole number of threads >= 1: "
          f"using {_cores()} (the cores this process may use)", file=sys.stderr)
    return _cores()


THREADS = _threads_wanted()
#: the flush-cycle fields, in the order the compiled solve returns them
CYC_FIELDS = tuple(lsm_mech.FlushCycles.__dataclass_fields__)


@functools.lru_cache(maxsize=1)
def _fields() -> tuple[str, ...]:
    return tuple(mva_core._compiled.rack_fields())


def enabled() -> bool:
    """Whether racks are solved compiled: every rack, collapsed workers
    included, when the extension is built and ``USE_COMPILED`` (the tests
    turn it off to run the numpy reference)."""
    return _solve_racks is not None and USE_COMPILED


def one_thread() -> None:
    """A worker process's initializer where the processes share the cores
    already (a plan's or a fit's pool): one solve thread each."""
    global THREADS
    THREADS = 1


def constants(b) -> dict:
    """The batch's constants as the compiled solve reads them (cached on ``b``)."""
    cached = getattr(b, "_compiled_consts", None)
    if cached is not None:
        return cached
    R, M = b.R, b.M
    mach_per = b.nmach // R
    first = np.arange(R) * M                       # the rack's first worker in the LSM table
    t = b.lsm
    per_rack = {
        "floor_gap": b.floor_gap, "idle": b.idle, "sharep": b.sharep, "cv2": b.cv2,
        "think": b.think, "period": b.period, "budget": b.budget, "finite_to": b.finite_to,
        "farreach": b.farreach, "N": b.N, "K": b.K, "loss": b.loss, "wal_base": b.wal_base,
        "wal_mbps": b.wal_mbps, "wal": b.wal_on, "entry": b.entry, "disk": b.disk,
        "entries": t.entries[first], "entry_bytes": t.entry_bytes[first],
        "memtable_bytes": t.memtable_bytes[first], "flush_fixed_us": t.flush_fixed_us[first],
        "flush_write_factor": t.flush_write_factor[first], "wamp": t.wamp[first],
        "flushnum": t.flushnum[first], "maxnum": t.maxnum[first],
        "slowdown_bytes_per_us": np.array([sp.lsm.slowdown_bytes_per_us for sp in b.specs]),
        "compacts": t.compacts[first],
        "workers": np.array([sp.servers for sp in b.specs]),
        "cores": b.cores, "ctx_penalty": np.array([sp.service.ctx_penalty for sp in b.specs]),
    }
    rack = np.empty((R, len(_fields())))
    for j, name in enumerate(_fields()):
        rack[:, j] = np.asarray(per_rack[name], dtype=float)
    c = lambda a: np.ascontiguousarray(a, dtype=float)  # noqa: E731
    out = {"s": c(b.s), "wf": c(b.wf), "ev": c(b.ev), "cost": c(b.cost),
           "run_memtables": c(b.run_memtables), "rack": rack, "mach_per": mach_per,
           "mach": np.ascontiguousarray(b.gmach - np.arange(R)[:, None] * mach_per, dtype=np.int64)}
    object.__setattr__(b, "_compiled_consts", out)
    return out


def _run(consts: dict, state: dict, racks: np.ndarray, d0: np.ndarray, params: dict) -> None:
    """The compiled solve of ``racks`` over :data:`THREADS` threads. Each call
    writes only its own racks' rows, so the threads share the arrays; a
    rack's cost is not known beforehand (a collapse chain's state can take
    twenty times the steps of its neighbour), so the racks go out in small
    interleaved slices, taken by whichever thread is free."""
    threads = min(max(int(THREADS), 1), len(racks))
    if threads <= 1:
        _solve_racks(consts, state, racks, d0, params)
        return
    n = min(len(racks), 4 * threads)
    parts = [(np.ascontiguousarray(racks[k::n]), np.ascontiguousarray(d0[k::n])) for k in range(n)]
    ex = _pool(threads)
    for f in [ex.submit(_solve_racks, consts, state, r, d, params) for r, d in parts]:
        f.result()                                     # a solve's error is raised here


@functools.lru_cache(maxsize=4)
def _pool(threads: int):
    """One pool per thread count, kept for the process: its threads (and the
    compiled solve's per-thread buffers) are made once."""
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(threads, thread_name_prefix="rack-solve")


if hasattr(os, "register_at_fork"):
    # a forked child has the pool object but not its threads: it makes its own
    os.register_at_fork(after_in_child=_pool.cache_clear)


def _collapsed_array(collapsed, R: int, M: int) -> np.ndarray:
    """Each rack's collapsed workers (``_State.collapsed``) as a row of R x M,
    in the chain's order, -1 after them."""
    out = np.full((R, M), -1, dtype=np.int64)
    for r, cs in enumerate(collapsed):
        out[r, :len(cs)] = cs
    return out


def solve(b, st, D0, racks: np.ndarray, params: dict) -> None:
    """Solve the racks ``racks`` of the batch ``b`` compiled, as
    :func:`analytic._solve_states_numpy` solves them: their fixed point and
    timeout delay, from the state ``st`` (cold when ``D0`` is None, else
    warm from ``D0[r]``); their rows of ``st`` are overwritten with the
    result and the last step's output quantities."""
    R, M = b.R, b.M
    racks = np.ascontiguousarray(racks, dtype=np.int64)
    f = lambda a: np.array(a, dtype=float, order="C")  # noqa: E731  -- a copy, C order
    zeros = lambda: np.zeros((R, M))  # noqa: E731
    n_max = int(b.N[racks].max())
    state = dict(X=f(st.X), util=f(st.util), p_drop=f(st.p_drop), dup=f(st.dup),
                 writes=f(st.writes), fdb=f(st.lsm_prev[0]), cb=f(st.lsm_prev[1]),
                 stop=f(st.lsm_prev[2]), q=zeros() if st.q is None else f(st.q),
                 S_req=zeros(), stretch=zeros(), wait_extra=zeros(), demand=zeros(),
                 block=zeros(),
                 implied=f(st.implied), delay=f(st.delay), bg=f(st.bg),
                 x_hist=np.zeros((R, n_max)), cyc=np.zeros((len(CYC_FIELDS), R, M)),
                 iterations=np.zeros(R, dtype=np.int64), converged=np.zeros(R, dtype=np.uint8),
                 collapsed=_collapsed_array(st.collapsed, R, M))
    d0 = np.full(len(racks), np.nan) if D0 is None else np.asarray(D0, dtype=float)[racks]
    _run(constants(b), state, racks, np.ascontiguousarray(d0), params)
    # back into the batch state, rows ``racks`` only
    for name in ("X", "util", "p_drop", "dup", "writes", "implied", "delay"):
        getattr(st, name)[racks] = state[name][racks]
    for j, name in enumerate(("fdb", "cb", "stop")):
        st.lsm_prev[j][racks] = state[name][racks]
    mach_per = b.nmach // R
    slots = (racks[:, None] * mach_per + np.arange(mach_per)[None, :]).ravel()
    st.bg[slots] = state["bg"][slots]
    st.iterations[racks] = state["iterations"][racks]
    st.converged[racks] = state["converged"][racks].astype(bool)
    for name in ("S_req", "stretch", "wait_extra", "demand", "q", "block"):
        if getattr(st, name) is None:
            setattr(st, name, np.zeros((R, M)))
        getattr(st, name)[racks] = state[name][racks]
    if st.x_hist is None and len(racks) == R:
        st.x_hist = state["x_hist"]               # every row solved: no copy
    else:
        if st.x_hist is None or st.x_hist.shape[1] < n_max:
            grown = np.zeros((R, n_max))
            if st.x_hist is not None:
                grown[:, :st.x_hist.shape[1]] = st.x_hist
            st.x_hist = grown
        st.x_hist[racks, :n_max] = state["x_hist"][racks]
    if st.cyc is None:
        st.cyc = {name: np.zeros((R, M)) for name in CYC_FIELDS}
    for j, name in enumerate(CYC_FIELDS):
        st.cyc[name][racks] = state["cyc"][j, racks]
