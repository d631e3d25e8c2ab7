"""The analytic solver: the rack's mean values as one root in throughput.

The rack is a closed network (docs/model.md): N client threads cycle
through the client machines' cores (a multi-core station), the wire and the
switch (delays), and one FCFS station per worker, visited with that worker's
share of the requests. Each mechanism of :mod:`model.rack` gives its
mean-value form as a function of the load, so once the rack's throughput X
(requests per us) is fixed, every per-worker quantity follows:

* ``placement``: each worker's request and write rates (``X s_i``,
  ``X s_i w_i``) and the control plane's write-backs;
* ``lsm``: each instance's flush cycle at its write rate (write stops and
  slowdown, the machine's disk shared by its flush and compaction jobs), the
  WAL-switch block at the machine's write rate, WAL syncs;
* ``service``: the time per request (storage cost, idle and busy-peer
  factors, CPU stretch on oversubscribed cores) and TransactionDB's commit
  wait at the machine's commit rate;
* ``network``: the steady queue overflowing the buffer, and what a block
  gathers (the closed loop piles clients onto a blocked worker; past its
  buffer they are dropped and wait out a timeout);
* ``clients``: the client cores, a lost packet's timeout, resends while a
  reply is late.

Little's law over a client's cycle closes the loop: ``N = X cycle(X)``.
``h(X) = N / cycle(X) - X`` is positive at X = 0 and negative once a
station cannot carry X (an infinite cycle counts as ``h = -X``), so each
rack is one bracketed root (:func:`model.solvers.root._root`): the bracket is grown from a
guess by steps of 5, 10, 20 % ... (the root of a lite pass without
duplicates, loss and blocks, or the caller's ``starts``), then Brent's
method (inverse quadratic and secant steps, bisection when they would not
shrink the bracket) narrows it to ``X_TOL``. The answer is the side of the
final bracket where h >= 0. No damping, no state carried between racks,
nothing to "settle". Where h jumps across zero (a stall cliff: a worker's
flush falls behind at some load) the answer is the load at the jump, where
the rack sits in the simulator too, alternating between the two sides;
``details["jump"]`` says so. Where the rack is saturated (just past X no
station carries the load) the threads the loop cannot place wait out
timeouts in the full buffer's drop-and-retry loop (``details["saturated"]``).

Each h(X) solves a few small inner relations from the same start every time
(so h stays a function of X): the busy-peer factor and CPU stretch on a
machine (a few sweeps), a flush cycle's running fraction, the duplicates a
worker serves (the least fixed point from none, by plain sweeps), and the
threads awake after losses (an Illinois root of at most 30 passes).

The whole batch runs compiled (numba, like the simulator's kernel); the
mechanism functions it calls are the mechanism modules' own, compiled in
(:mod:`model.solvers.mechanisms`). This module holds the entry points; the
solver's parts are, in the order a batch goes through them:

* :mod:`model.solvers.packing` -- the batch's arrays, and a RackSpec packed
  into them;
* :mod:`model.solvers.root` -- the root per rack and the parallel batch;
* :mod:`model.solvers.balance` -- one evaluation of h at a throughput X,
  through :mod:`model.solvers.stations` (rates, flush cycles, waits per
  write, utilisations, duplicates) and :mod:`model.solvers.losses` (queues,
  blocks, lost packets, the threads awake);
* :mod:`model.solvers.outcome` -- the solved rows as a Prediction.
"""


from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from ..prediction import Prediction, no_goodput
from ..rack import RackSpec, clients as cl_mech
from . import trajectory
from .outcome import prediction
from .packing import O_NCOL, R_NCOL, V_NCOL, W_NCOL, pack as _pack
from .root import X_TOL, _solve_batch
# the compiled solver's parts under the names the tests and docs have used
# for them here (model.rack.service points at _mean_stretch)
from .balance import _evaluate  # noqa: F401
from .packing import (K_MACH, K_NCOL, K_RUN, O_CYCLE, O_JUMP, O_SATURATED,  # noqa: F401
                      O_SLEEP, O_X, R_MACH, W_MACH)
from .root import MAX_EVAL, _solve_rack  # noqa: F401
from .stations import _mean_stretch  # noqa: F401

__all__ = ["AnalyticSolver", "solve", "solve_many", "X_TOL"]

_BATCH_LOCK = threading.Lock()


def _solve_packed(packed, starts=None):
    """Solve packed racks; ``starts[r]`` is a guess of rack r's throughput
    (per us; 0 for none): a rack solved under a nearby profile."""
    R = len(packed)
    RS = np.array([p[0] for p in packed]).reshape(R, R_NCOL)
    sizes = [p[1].shape[0] for p in packed]
    OFF = np.zeros(R + 1, dtype=np.int64)
    OFF[1:] = np.cumsum(sizes)
    WS = np.concatenate([p[1] for p in packed]) if R else np.zeros((0, W_NCOL))
    RO = np.zeros((R, O_NCOL))
    WO = np.zeros((WS.shape[0], V_NCOL))
    X0 = np.zeros(R) if starts is None else np.asarray(starts, dtype=float)
    # numba's work queue runs one parallel launch at a time per process
    # (_jit.py): threads that share the process (a Dask worker's) take turns
    with _BATCH_LOCK:
        _solve_batch(RS, WS, OFF, RO, WO, X0)
    return RO, WO, OFF


# ---------------------------------------------------------------- entry points
class AnalyticSolver:
    """Mean values of the compiled rack by one root in throughput per rack."""
    name = "analytic"

    def solve(self, spec: RackSpec) -> Prediction:
        return solve(spec)

    def solve_many(self, specs: Sequence[RackSpec]) -> list[Prediction]:
        return solve_many(specs)


def solve(spec: RackSpec) -> Prediction:
    """The analytic prediction of one rack."""
    return solve_many([spec])[0]


def solve_many(specs: Sequence[RackSpec],
               progress: Callable[[int, int], None] | None = None,
               starts: Sequence[float | None] | None = None) -> list[Prediction]:
    """The analytic predictions of many racks, solved as one compiled batch.

    ``starts[r]``: a guess of rack r's throughput in MOPS (the same rack
    under a nearby profile, as an interval's sigma points are), which the
    root is bracketed around: the same answer in a third of the steps.
    ``progress(done, total)`` hears of racks finished (chunks of a few
    hundred; a rack takes about a millisecond)."""
    specs = list(specs)
    out: list[Prediction | None] = [None] * len(specs)
    live = []
    for r, sp in enumerate(specs):
        why = cl_mech.no_completion(sp.clients, sp.placement.hit_ratio)
        if why:
            out[r] = no_goodput(sp, "analytic", why)
        else:
            live.append(r)
    tell = progress or (lambda done, total: None)
    CHUNK = 256
    done = len(specs) - len(live)
    for k in range(0, len(live), CHUNK):
        part = live[k:k + CHUNK]
        guess = None if starts is None else [starts[r] or 0.0 for r in part]
        runs = trajectory.run_batch([specs[r] for r in part], [_pack(specs[r]) for r in part],
                                    _solve_packed, guess)
        for run, r in zip(runs, part):
            ro, wo, det = trajectory.outputs(run)
            out[r] = prediction(specs[r], ro, wo)
            out[r].details.update(det)
        done += len(part)
        tell(done, len(specs))
    return out  # type: ignore[return-value]
