"""A solved rack's output rows as a :class:`model.prediction.Prediction`.

:func:`prediction` reads one rack's rows of the compiled batch (``RO``,
``WO``: :mod:`model.solvers.packing`) into the :class:`Outcome` every solver
reports, the analytic solver's ``details``, the caveats of its regime and
its latency percentiles (:mod:`model.solvers.latency_tail`).
"""

from __future__ import annotations

import math

import numpy as np

from ..prediction import Prediction, from_outcome
from ..rack import RackSpec
from ..rack.arrays import per_worker
from ..rack.bottleneck import Outcome
from ..regimes import caveat_dicts
from . import latency_tail
from .packing import (O_CLIENT_RES, O_CLIENT_U, O_CYCLE, O_EVALS, O_JUMP, O_LOST, O_RESENDS,
                      O_RUN, O_SATURATED, O_SLEEP, O_WIDTH, O_X, V_BLOCK, V_DUP, V_FLUSH_BUSY,
                      V_HELD, V_LOST, V_PROC, V_Q, V_R, V_SERVED, V_STALL, V_STRETCH, V_U)
from .root import X_TOL


def prediction(spec: RackSpec, ro: np.ndarray, wo: np.ndarray) -> Prediction:
    """The analytic prediction of a rack from its output rows (``ro``; ``wo``
    its workers')."""
    outcome, details = _outcome(spec, ro, wo)
    pred = from_outcome(spec, outcome, "analytic", details)
    # regimes where the mean values are known to be off (model.regimes)
    pred.details["caveats"] = caveat_dicts(spec, pred)
    pred.details["latency_us_percentiles"] = latency_tail.none() \
        if not pred.throughput_mops > 0 else latency_tail.of_arrays(
        spec, per_worker(spec.placement, "shares"), wo[:, V_R], wo[:, V_Q],
        wo[:, V_PROC], wo[:, V_HELD], wo[:, V_BLOCK] + wo[:, V_STALL], wo[:, V_LOST],
        wo[:, V_DUP], float(ro[O_CLIENT_RES]),
        1.0 + float(ro[O_LOST]) + float(ro[O_RESENDS]))
    return pred


def _outcome(spec: RackSpec, ro: np.ndarray, wo: np.ndarray) -> tuple[Outcome, dict]:
    sv, c = spec.service, spec.clients
    X = float(ro[O_X])
    run = float(ro[O_RUN])              # the fraction of the run the rack is not stopped
    served = wo[:, V_SERVED] * run
    process = wo[:, V_PROC]
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = np.where(served > 0, 1.0 / np.where(served > 0, served, 1.0) - process - sv.gap_us,
                        math.inf)
    wait = np.where(served > 0, np.maximum(wait, sv.recv_floor_us), math.inf)
    latency = c.threads / X if X > 0 else math.inf
    lost = float(ro[O_LOST])
    resends = float(ro[O_RESENDS]) + lost
    expected = lambda v: 0.0 if v < 0.5 else v  # noqa: E731 -- below one packet a run sees none
    timeout_share = float(ro[O_SLEEP]) * X / c.threads if c.threads > 0 else 0.0
    outcome = Outcome(
        throughput_mops=X, util=wo[:, V_U] * run, wait_us=wait, process_us=process.copy(),
        stall_frac=wo[:, V_STALL].copy(), block_frac=wo[:, V_BLOCK].copy(),
        stretch=wo[:, V_STRETCH].copy(), latency_us=latency, timeout_share=timeout_share,
        lost_per_request=lost, pktloss=expected(spec.queries * lost),
        false_pos=expected(spec.queries * resends),
        client_util=float(ro[O_CLIENT_U]))
    details = {
        "p_mem": list(sv.p_mem),
        "loss_per_visit": wo[:, V_LOST].tolist(),
        "duplicates_per_request": wo[:, V_DUP].tolist(),
        "timeout_delay_us_per_request": float(ro[O_SLEEP]),
        "held_behind_blocks_us_per_visit": wo[:, V_HELD].tolist(),
        "client_cores_utilization": float(ro[O_CLIENT_U]),
        "running_fraction": run,
        "client_cores_us_per_request": float(ro[O_CLIENT_RES]),
        "flush_busy_fraction": wo[:, V_FLUSH_BUSY].tolist(),
        "write_stop_fraction": wo[:, V_STALL].tolist(),
        # per worker, what the response-time distribution is built from
        # (prediction passes the same figures to model.solvers.latency_tail
        # from its arrays)
        "residence_us": wo[:, V_R].tolist(),
        "queue_requests": wo[:, V_Q].tolist(),
        "block_fraction": wo[:, V_BLOCK].tolist(),
        "lost_per_request": lost,
        "resends_per_request": float(ro[O_RESENDS]),
        "buffer_pkts": float(spec.network.buffer_pkts),
        "evaluations": int(ro[O_EVALS]),
        "cycle_us": float(ro[O_CYCLE]),
        "jump": bool(ro[O_JUMP] > 0),
        "saturated": bool(ro[O_SATURATED] > 0),
        # the root to X_TOL (a bracket no wider than that, both ends checked)
        "bracket_rel_width": float(ro[O_WIDTH]),
        "converged": bool(ro[O_WIDTH] <= 4.0 * X_TOL),
    }
    return outcome, details
