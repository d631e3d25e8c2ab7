"""Fitting the FarReach testbed profile to the reference runs.

:class:`FarReachFitter` follows the estimator conventions of the toolkit:
``__init__`` only stores its settings, :meth:`fit` validates the rows and
returns ``self``, fitted values end in ``_``.

The workload (key popularity and layout) is not fitted here: the rows name
the lab's calibrated workload profile (docs/workload.md). The machine's
free parameters are fitted by robust least squares
(``scipy.optimize.least_squares``, soft-L1 loss) on log ratios
predicted/measured of throughput, process time, wait and send time, so
every row counts by its relative error; predictions become measured
columns through :func:`model.columns.farreach_columns`, as in batch
prediction and validation. Parameters are fitted in log space (all are
positive); their standard errors come from the Jacobian at the optimum.

Rows that name a configuration the model cannot express raise
:class:`~model.errors.InputError` with file, line and column.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from importlib import resources
from typing import Any, Sequence

import numpy as np
from scipy import optimize

from model.columns import farreach_columns
from model.errors import InputError
from model.farreach_kinds import farreach_scenario, wait_stat
from model.kinds import KINDS
from model.profile import Param, Profile
from model.rows import cell, number
from model.solvers import predict

KIND_NAMES = ("farreach_runs", "farreach_tuning", "farreach_breakdown")

#: Parameters stage 2 fits; the rest keep their prior values.
FREE = (
    "recv_floor_us", "server_gap_us", "send_base_us", "send_per_thread_us",
    "miss_rtt_us", "hit_rtt_us", "base_us", "get_sst_us", "wal_us", "txn_us",
    "seqget_sst_us", "seqcache_us", "skiplist_us_per_log2", "idle_penalty",
    "unpinned_factor", "share_penalty", "sst_files_factor",
    "wal_switch_ms_per_mbps",
)

#: Upper bounds of parameters that are fractions.
UPPER: dict[str, float] = {}

#: The command that makes the embedded profile (README.md).
FIT_COMMAND = ("python -m calibrate fit --runs data/farreach_runs.csv --runs data/farreach_tuning.csv "
               "--runs data/farreach_breakdown.csv --out model/profiles/tofino-testbed.toml")

#: Relative weight of each measured column in the residuals.
WEIGHTS = {"mops": 1.0, "process_us": 1.0, "wait_us": 0.5, "send_us": 0.5,
           "server_process_avg": 0.5, "server_wait_avg": 0.3, "client_send_avg": 0.3}


def default_priors() -> str:
    return str(resources.files("calibrate").joinpath("priors").joinpath("farreach.toml"))


class FarReachFitter:
    """Fit a testbed profile to farreach_runs / _tuning / _breakdown rows."""

    def __init__(self, priors: str | None = None, free: Sequence[str] | None = None,
                 name: str = "tofino-testbed", f_scale: float = 0.1, max_nfev: int = 60,
                 n_jobs: int | None = None, command: str | None = None):
        self.priors = priors
        self.n_jobs = n_jobs
        self.command = command
        self.free = free
        self.name = name
        self.f_scale = f_scale
        self.max_nfev = max_nfev

    # ------------------------------------------------------------------
    def fit(self, rows: Sequence[dict[str, Any]]) -> "FarReachFitter":
        rows = [r for r in rows if r.get("__kind__") in KIND_NAMES]
        if not rows:
            raise InputError("no FarReach rows to fit (kinds: " + ", ".join(KIND_NAMES) + ")",
                             field="--runs")
        prior = Profile.load(self.priors or default_priors())
        free = tuple(self.free) if self.free is not None else FREE
        unknown = [k for k in free if k not in prior.params]
        if unknown:
            raise InputError(f"not in the priors: {', '.join(unknown)}", field="free")
        # Validate every row up front so errors name the file and line.
        targets = []
        for r in rows:
            try:
                sc = farreach_scenario(r)
                targets.append((r, sc, _measured(r)))
            except InputError as exc:
                raise exc.located(source=r.get("__source__"), line=int(r.get("__line__", 0)) or None) from None

        base = prior
        x0 = np.log([base[k] for k in free])

        upper = np.array([min(x + 4.0, math.log(UPPER[k])) if k in UPPER else x + 4.0
                          for k, x in zip(free, x0)])
        with _Pool(targets, self.n_jobs) as pool:
            def residuals(theta: np.ndarray) -> np.ndarray:
                prof = base.with_values(dict(zip(free, np.exp(theta))), "fit")
                return pool.residuals(prof)

            sol = optimize.least_squares(residuals, x0, loss="soft_l1", f_scale=self.f_scale,
                                         max_nfev=self.max_nfev, x_scale=1.0,
                                         bounds=(x0 - 4.0, upper))
        values = dict(zip(free, np.exp(sol.x)))
        se = _stderr(sol)
        when = date.today().isoformat()
        sources = sorted({f"{r.get('__source__')}" for r, _, _ in targets})
        ids = [cell(r, "id", f"line{r.get('__line__')}") for r, _, _ in targets]
        params = dict(prior.params)
        for k, v in values.items():
            params[k] = Param(float(v), prior.params[k].unit,
                              f"fit {when}: {len(targets)} FarReach rows", float(v * se[free.index(k)]))
        for k in params:
            if k not in values:
                p = params[k]
                params[k] = Param(p.value, p.unit, p.source.replace("prior", "fixed prior"), p.stderr)
        self.profile_ = Profile(self.name, params, {
            "name": self.name,
            "fitted_by": self.command or FIT_COMMAND,
            "date": when,
            "toolkit_version": _version(),
            "runs": ", ".join(sources),
            "rows": ", ".join(ids),
            "cost": float(sol.cost),
        })
        self.residuals_ = sol.fun
        self.n_rows_ = len(targets)
        self.converged_ = bool(sol.success)
        return self


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("kvperf")
    except Exception:
        return "0.1.0"


def _measured(row) -> dict[str, Any]:
    out = {}
    kind = row.get("__kind__")
    cols = KINDS[kind].measured
    for c in cols:
        v = cell(row, c)
        if v is None:
            continue
        if c == "wait_us" or c == "process_us":
            if "|" in v:
                try:
                    out[c] = [float(x) for x in v.split("|")]
                except ValueError:
                    raise InputError(f"expected numbers separated by '|', got {v!r}", field=c) from None
                continue
        out[c] = number(row, c)
    return out


_TARGETS: list = []


def _init_worker(targets) -> None:
    global _TARGETS
    _TARGETS = targets


def _chunk_residuals(args) -> list:
    idx, prof = args
    return [_row_residuals(_TARGETS[i], prof) for i in idx]


class _Pool:
    """Evaluate row residuals in worker processes (rows are independent)."""

    def __init__(self, targets, workers: int | None):
        self.targets = targets
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.ex = None

    def __enter__(self):
        if self.workers > 1 and len(self.targets) > 4:
            self.ex = ProcessPoolExecutor(self.workers, initializer=_init_worker,
                                          initargs=(self.targets,))
        return self

    def residuals(self, prof: Profile) -> np.ndarray:
        if self.ex is None:
            return np.concatenate([_row_residuals(t, prof) for t in self.targets])
        # Interleave rows so the slow multi-server rows spread over workers.
        chunks = [list(range(i, len(self.targets), self.workers)) for i in range(self.workers)]
        out: list = [None] * len(self.targets)
        for idx, res in zip(chunks, self.ex.map(_chunk_residuals, [(c, prof) for c in chunks])):
            for i, r in zip(idx, res):
                out[i] = r
        return np.concatenate(out)

    def __exit__(self, *exc):
        if self.ex is not None:
            self.ex.shutdown()
        return False


def _row_residuals(target, prof: Profile) -> np.ndarray:
    row, sc, meas = target
    cols = [c for c in meas if c in WEIGHTS]
    if not cols:
        return np.zeros(0)
    pred = farreach_columns(predict(sc, prof), wait_stat(row))
    res = []
    for c in cols:
        m, pv, w = meas[c], pred[c], WEIGHTS[c]
        if isinstance(m, list):            # a per-server list: compare sorted values
            pv = sorted(pv)
            res.extend(w * np.log(np.maximum(pv, 1e-6) / np.maximum(sorted(m), 1e-6)) / math.sqrt(len(m)))
            continue
        if m > 0 and pv > 0 and math.isfinite(pv):
            res.append(w * math.log(pv / m))
        else:
            res.append(w * 5.0)
    return np.asarray(res, dtype=float)


def _stderr(sol) -> np.ndarray:
    J = sol.jac
    n, k = J.shape
    dof = max(n - k, 1)
    s2 = 2.0 * sol.cost / dof
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
        return np.sqrt(np.clip(np.diag(cov), 0.0, None))
    except np.linalg.LinAlgError:
        return np.full(k, np.nan)
