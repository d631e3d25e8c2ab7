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
columns through :func:`runio.columns.farreach_columns`, as in batch
prediction and validation. Parameters are fitted in log space (all are
positive); their standard errors come from the Jacobian at the optimum.

Rows that name a configuration the model cannot express raise
:class:`~model.errors.InputError` with file, line and column.
"""

from __future__ import annotations

import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from importlib import resources
from typing import Any, Sequence

import numpy as np
from scipy import optimize

from runio.columns import farreach_columns
from model.errors import InputError
from runio.farreach_kinds import farreach_scenario, wait_stat
from runio.kinds import KINDS
from model.profile import Param, Profile
from model.rows import cell, number
from model.solvers import predict_many
from model.uncertainty import fitted_uncertainty
from runio.inputs import load_profile

KIND_NAMES = ("farreach_runs", "farreach_tuning", "farreach_breakdown")

#: Parameters stage 2 fits; the rest keep their prior values.
FREE = (
    "recv_floor_us", "server_gap_us", "send_base_us", "send_per_thread_us",
    "miss_rtt_us", "hit_rtt_us", "base_us", "get_sst_us", "wal_us", "txn_commit_us",
    "seqget_sst_us", "seqcache_us", "skiplist_us_per_log2", "idle_penalty",
    "unpinned_factor", "share_penalty", "sst_probe_us", "memtable_probe_us", "bg_penalty",
    "wal_switch_ms", "wal_switch_ms_per_mbps", "wal_sync_ms_per_mb", "flush_mbps",
    "entry_overhead_bytes", "disk_mbps", "client_cpu_us", "rcvbuf_pkt_bytes", "timer_floor_ms",
)

#: What the lab's notes read from RocksDB's LOG for a run, beside its
#: throughput (farreach_tuning.csv, column ``note``): the fit holds the run's
#: trajectory to these counts as to any measured column. T42: "15 s
#: write_delay_time; hot server received 688 MB (43 memtables)".
LOG_NOTES = {
    "T42": {"hot_memtables": 43.0, "hot_stalled_s": 15.0},
}

#: Prior spread of every free parameter, log-sd: a factor e either way.
PRIOR_LOG_SD = 1.0

#: Run-to-run scatter of a measured value, log-sd: repeat runs in the notes
#: differ by about 8 % (docs/domain.md). Scales the prior terms against the
#: data terms, and is the least noise an interval assumes.
NOISE_LOG_SD = 0.08

#: The priors are part of the objective (a MAP fit): a parameter the rows
#: barely constrain stays near its prior from the notes instead of wandering
#: off to absorb noise. Weight of a prior term against a data term.
PRIOR_WEIGHT = NOISE_LOG_SD / PRIOR_LOG_SD

#: The robust loss of the fit (scipy.optimize.least_squares): a few bad runs
#: do not pull the whole profile.
LOSS = "soft_l1"

#: Fewer measured values than this per free parameter draws a warning.
ROWS_PER_PARAM = 5

#: Forward-difference step of the Jacobian, in log units of each parameter.
STEP = 1e-3

#: Upper bounds of parameters that are fractions.
UPPER: dict[str, float] = {}

#: The command that makes the embedded profile (README.md).
FIT_COMMAND = ("python -m calibrate fit --runs data/farreach_runs.csv --runs data/farreach_tuning.csv "
               "--runs data/farreach_breakdown.csv --out model/profiles/tofino-testbed.toml")

#: Columns of :data:`LOG_NOTES` (counts and seconds that can be 0).
LOG_COUNTS = ("hot_memtables", "hot_stalled_s")

#: Relative weight of each measured column in the residuals.
WEIGHTS = {"mops": 1.0, "process_us": 1.0, "wait_us": 0.5, "send_us": 0.5,
           "server_process_avg": 0.5, "server_wait_avg": 0.3, "client_send_avg": 0.3,
           "hot_memtables": 1.0, "hot_stalled_s": 1.0}


def default_priors() -> str:
    return str(resources.files("calibrate").joinpath("priors").joinpath("farreach.toml"))


class FarReachFitter:
    """Fit a testbed profile to farreach_runs / _tuning / _breakdown rows."""

    def __init__(self, priors: str | None = None, free: Sequence[str] | None = None,
                 name: str = "tofino-testbed", f_scale: float = 0.1, max_nfev: int = 60,
                 n_jobs: int | None = None, command: str | None = None, progress: bool = False):
        self.progress = progress
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
        prior = load_profile(self.priors or default_priors())
        free = tuple(self.free) if self.free is not None else FREE
        unknown = [k for k in free if k not in prior.params]
        if unknown:
            raise InputError(f"not in the priors: {', '.join(unknown)}", field="free")
        targets = _targets(rows)
        base = prior
        x0 = np.log([base[k] for k in free])
        n_obs = sum(len(_row_columns(t)) for t in targets)
        self.warnings_ = []
        if n_obs < ROWS_PER_PARAM * len(free):
            self.warnings_.append(
                f"{n_obs} measured values for {len(free)} free parameters (fewer than "
                f"{ROWS_PER_PARAM} per parameter): the priors, not the rows, set the "
                "poorly constrained parameters; judge this profile by cross-validation")

        upper = np.array([min(x + 4.0, math.log(UPPER[k])) if k in UPPER else x + 4.0
                          for k, x in zip(free, x0)])
        with _Pool(targets, self.n_jobs) as pool:
            def profile_at(theta: np.ndarray) -> Profile:
                return base.with_values(dict(zip(free, np.exp(theta))), "fit")

            calls = [0]

            def residuals(theta: np.ndarray) -> np.ndarray:
                r = _objective_terms(pool.residuals([profile_at(theta)])[0], theta, x0)
                calls[0] += 1
                if self.progress:
                    print(f"  fit step {calls[0]}/{self.max_nfev} (at most): "
                          f"rms log error {math.sqrt(float(np.mean(r * r))):.4f}",
                          file=sys.stderr, flush=True)
                return r

            def jacobian(theta: np.ndarray) -> np.ndarray:
                # Forward differences in log space, every perturbed profile
                # solved in the same batch as the centre (one solver pass).
                steps = [theta] + [theta + STEP * e for e in np.eye(len(theta))]
                res = pool.residuals([profile_at(t) for t in steps])
                data = np.column_stack([(r - res[0]) / STEP for r in res[1:]])
                return np.vstack([data, PRIOR_WEIGHT * np.eye(len(theta))])

            sol = optimize.least_squares(residuals, x0, jac=jacobian, loss=LOSS,
                                         f_scale=self.f_scale, max_nfev=self.max_nfev,
                                         x_scale=1.0, bounds=(x0 - 4.0, upper))
        values = dict(zip(free, np.exp(sol.x)))
        se = _stderr(sol)
        cols = [c for t in targets for c in _row_columns(t)]
        labels = [c for c, _ in cols] + [None] * len(free)
        jac_values = sol.jac / np.exp(sol.x)          # d r / d value, as fitted_uncertainty takes
        # Noise per column from the unweighted log errors (the weights only
        # balance the columns in the objective), each error taken as if its
        # row had been left out of the fit (the PRESS residual, in the
        # linearised MAP problem, priors included). A row that alone pins a
        # parameter fits itself well in sample and badly out of it; the
        # interval has to cover the latter (docs/accuracy.md).
        weights = [w for _, w in cols] + [1.0] * len(free)
        unc, noise = fitted_uncertainty(free, np.exp(sol.x), jac_values, sol.fun, labels,
                                        min_noise=NOISE_LOG_SD, weights=weights)
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
        }, unc, noise)
        self.residuals_ = sol.fun[:len(cols)]      # the data terms; the prior terms follow
        self.free_ = list(free)
        self.n_rows_ = len(targets)
        self.converged_ = bool(sol.success)
        return self

    def cost_at(self, profile: Profile, rows: Sequence[dict[str, Any]]) -> float:
        """The objective :meth:`fit` minimises, at ``profile``'s values: the
        robust cost of the weighted log errors and the prior terms. A shipped
        profile whose recorded ``cost`` differs from this was fitted to another
        model (the model changed and the fit command was not re-run)."""
        from .fitters import robust_cost
        rows = [r for r in rows if r.get("__kind__") in KIND_NAMES]
        prior = load_profile(self.priors or default_priors())
        free = tuple(self.free) if self.free is not None else FREE
        with _Pool(_targets(rows), 1) as pool:
            data = pool.residuals([profile])[0]
        terms = _objective_terms(data, np.log([profile[k] for k in free]),
                                 np.log([prior[k] for k in free]))
        return robust_cost(terms, LOSS, self.f_scale)


def _targets(rows) -> list:
    """(row, scenario, measured) per row, every row validated up front so that
    errors name the file and line."""
    targets = []
    for r in rows:
        try:
            targets.append((r, farreach_scenario(r), _measured(r)))
        except InputError as exc:
            raise exc.located(source=r.get("__source__"),
                              line=int(r.get("__line__", 0)) or None) from None
    return targets


def _objective_terms(data: np.ndarray, theta: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """The fit's residual vector: the rows' weighted log errors, then one prior
    term per free parameter (log value ``theta`` against its prior ``x0``)."""
    return np.concatenate([data, PRIOR_WEIGHT * (theta - x0)])


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
    out.update(LOG_NOTES.get(cell(row, "id", ""), {}))
    return out


def log_columns(prediction) -> dict[str, float]:
    """What the notes read from RocksDB's LOG, predicted (:data:`LOG_NOTES`):
    the busiest-writing worker's memtables and its seconds stopped or slowed."""
    lsm = prediction.details.get("lsm")
    if not lsm:
        return {}
    hot = int(np.argmax(lsm["writes"]))
    # the memtables its writes fill, as a fraction: a count the fit can move
    # smoothly (the sealed count is a step)
    return {"hot_memtables": float(lsm["memtables_written"][hot]),
            "hot_stalled_s": float(lsm["stop_s"][hot] + lsm["slow_s"][hot])}


_TARGETS: list = []


def _init_worker(targets) -> None:
    global _TARGETS
    _TARGETS = targets
    from model.solvers._jit import one_thread
    one_thread()                         # the processes share the cores already


def _chunk_residuals(args) -> list:
    idx, profiles = args
    return _residuals_of([_TARGETS[i] for i in idx], profiles)


def _residuals_of(targets, profiles) -> list:
    """Residuals of each target under each profile: [profile][target] arrays.

    All (row, profile) racks are solved as one batch
    (:func:`model.solvers.predict_many`): a Jacobian costs a few batch
    passes instead of one solve per row and parameter."""
    # the first profile's racks, then the others (a Jacobian's small steps
    # from it) with their root searches started at its answers
    centre = predict_many([t[1] for t in targets], profiles[0])
    preds = list(centre)
    if len(profiles) > 1:
        preds += predict_many([t[1] for _ in profiles[1:] for t in targets],
                              [p for p in profiles[1:] for _ in targets],
                              starts=[q.throughput_mops for _ in profiles[1:] for q in centre])
    flat = [_row_residuals(t, pred) for t, pred in zip(targets * len(profiles), preds)]
    n = len(targets)
    return [flat[i * n:(i + 1) * n] for i in range(len(profiles))]


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

    def residuals(self, profiles: Sequence[Profile]) -> list[np.ndarray]:
        """One residual vector per profile, over all rows."""
        if self.ex is None:
            per = _residuals_of(self.targets, profiles)
            return [np.concatenate(rows) for rows in per]
        # Interleave rows so the slow multi-server rows spread over workers.
        chunks = [list(range(i, len(self.targets), self.workers)) for i in range(self.workers)]
        out = [[None] * len(self.targets) for _ in profiles]
        for idx, per in zip(chunks, self.ex.map(_chunk_residuals, [(c, profiles) for c in chunks])):
            for k, rows in enumerate(per):
                for i, r in zip(idx, rows):
                    out[k][i] = r
        return [np.concatenate(rows) for rows in out]

    def __exit__(self, *exc):
        if self.ex is not None:
            self.ex.shutdown()
        return False


def _row_columns(target) -> list[tuple[str, float]]:
    """(noise key ``kind.column``, weight) of each residual of a row, in order."""
    row, _, meas = target
    kind = row.get("__kind__")
    out = []
    for c in meas:
        if c not in WEIGHTS:
            continue
        if isinstance(meas[c], list):
            n = len(meas[c])
            out.extend([(f"{kind}.{c}", WEIGHTS[c] / math.sqrt(n))] * n)
        else:
            out.append((f"{kind}.{c}", WEIGHTS[c]))
    return out


def _row_residuals(target, prediction) -> np.ndarray:
    row, sc, meas = target
    cols = [c for c in meas if c in WEIGHTS]
    if not cols:
        return np.zeros(0)
    pred = {**farreach_columns(prediction, wait_stat(row)), **log_columns(prediction)}
    res = []
    for c in cols:
        m, pv, w = meas[c], pred[c], WEIGHTS[c]
        if isinstance(m, list):            # a per-server list: compare sorted values
            pv = sorted(pv)
            res.extend(w * np.log(np.maximum(pv, 1e-6) / np.maximum(sorted(m), 1e-6)) / math.sqrt(len(m)))
            continue
        if c in LOG_COUNTS:
            # a count can be 0: compare on log(1 + count)
            res.append(w * (math.log1p(max(pv, 0.0)) - math.log1p(m)))
        elif m > 0 and pv > 0 and math.isfinite(pv):
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
