"""LocalFitter: a profile for the native KV server on this machine.

The fitter adjusts the parameters of the same rack model every solver uses
(:mod:`model.rack`, solved by :func:`model.solvers.predict`) so that
predictions of ``local_runs`` rows match their measurements. Parameters the runs do not identify keep their values from the
priors file (``calibrate/priors/local.toml``).

Method
------
* Parameters are fitted in log space (they are positive times and factors),
  within bounds of ``prior / 100`` .. ``prior * 100``.
* Residuals are log(predicted / measured) per row and measured column
  (throughput, process time, wait, client send time), weighted per column,
  plus a weak pull towards the prior (``prior_weight``) that keeps directions
  the runs cannot see at the prior instead of drifting.
* ``scipy.optimize.least_squares(loss="soft_l1")``: robust to a few bad runs.
* Uncertainty: standard errors from the Jacobian covariance
  ``s^2 (J^T J)^-1`` (delta method back from log space), or, with
  ``bootstrap=B``, the spread of B refits on resampled rows (run in parallel
  on a process pool or a Dask cluster).
* Runs disturbed by other processes (``external_cores`` > 0, recorded by
  the runner) weigh less: each row's residuals are scaled by
  ``1 / (1 + interference_weight * external_cores)``.
* Identifiability: a parameter whose effect the runs cannot separate (e.g.
  ``wal_us`` when every run had the WAL on) is left at its prior and its
  source says why.

It follows the scikit-learn conventions: ``__init__`` stores parameters only,
``fit(rows)`` validates and returns ``self``, fitted values end in ``_``.
"""

from __future__ import annotations

import datetime as _dt
import math
import platform
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.optimize import least_squares

from model.errors import InputError
from model.solvers import predict
from model.profile import Param, Profile

from runio.local_runs import local_scenario
from .parallel import pmap
from runio.inputs import load_profile

DEFAULT_FREE = ("base_us", "put_us", "get_mem_us", "get_sst_us", "wal_us", "seqget_sst_us",
                "txn_commit_us", "recv_floor_us", "server_gap_us", "miss_rtt_us", "send_base_us",
                "send_per_thread_us", "send_log2_us", "context_switch_penalty", "idle_penalty",
                # RocksDB's write path (runs of calibrate/plans/writepath.toml)
                "entry_overhead_bytes", "flush_mbps", "flush_fixed_ms", "compaction_mbps",
                "disk_mbps", "memtable_probe_us", "sst_probe_us", "bg_penalty")
#: write-path parameters: fitted only from runs that flush (the write-path plan)
WRITE_PATH_FREE = ("entry_overhead_bytes", "flush_mbps", "flush_fixed_ms", "compaction_mbps",
                   "disk_mbps", "memtable_probe_us", "sst_probe_us", "bg_penalty")
FALLBACK_PRIORS = "calibrate/priors/farreach.toml"   # fills parameters the priors file lacks
COLUMN_WEIGHTS = {"mops": 1.0, "process_us": 1.0, "wait_us": 0.3, "send_us": 0.5,
                  # what RocksDB did, summed over the workers (the write-path runs)
                  "memtables": 0.5, "flush_mb": 0.5, "stop_s": 0.5, "slow_s": 0.5}
#: summed per-worker columns compared on log(1 + value): they can be 0
COUNT_COLUMNS = ("stop_s", "slow_s")
#: the prediction's details["lsm"] key of each summed column (and its factor):
#: the memtables a run's writes fill as a fraction, a count the fit can move
#: smoothly (the sealed count is a step); MiB -> MB as the server counts
LSM_SUMS = {"memtables": ("memtables_written", 1.0), "flush_mb": ("flush_mib", 1.048576),
            "stop_s": ("stop_s", 1.0), "slow_s": ("slow_s", 1.0)}
BAD_RESIDUAL = 5.0       # log-error charged for a prediction that is not a positive number


def resolve_priors(path: str | Path) -> Profile:
    """Load priors; parameters the file lacks (the model grew) come from the FarReach priors."""
    prof = _load_priors(path)
    if str(path) != FALLBACK_PRIORS:
        try:
            fallback = _load_priors(FALLBACK_PRIORS)
        except InputError:
            return prof
        extra = {k: v for k, v in fallback.params.items() if k not in prof.params}
        if extra:
            prof = Profile(prof.name, {**prof.params, **extra}, prof.meta)
    return prof


def _load_priors(path: str | Path) -> Profile:
    """Load priors by path; a path under calibrate/ also resolves inside the package."""
    p = Path(path)
    if p.exists():
        return load_profile(str(p))
    parts = p.parts
    if parts and parts[0] == "calibrate":
        res = resources.files("calibrate").joinpath(*parts[1:])
        if res.is_file():
            return load_profile(str(res))
    raise InputError("priors file not found", source=str(path), field="priors")


def _row_outputs(args: tuple) -> dict[str, float]:
    """Predicted measured columns for one scenario (a top-level function: picklable)."""
    scenario, profile, stat = args
    try:
        p = predict(scenario, profile)
    except InputError:
        raise                     # a profile or scenario problem, not a bad parameter value
    except (ValueError, ArithmeticError, FloatingPointError):
        return {}
    busy = [s for s in p.servers if s.share > 0]
    pick = min if stat == "min" else max if stat == "max" else (lambda v: sum(v) / len(v))
    lsm = p.details.get("lsm") or {}
    return {
        "mops": p.throughput_mops,
        "process_us": pick([s.process_us for s in busy]) if busy else math.nan,
        "wait_us": pick([s.wait_us for s in busy]) if busy else math.nan,
        "send_us": p.client.send_us,
        **{col: factor * sum(lsm[key]) for col, (key, factor) in LSM_SUMS.items() if key in lsm},
    }


class LocalFitter:
    """Fit a local profile to ``local_runs`` rows (see the module docstring)."""

    kinds = ("local_runs",)

    def __init__(self, priors: str = "calibrate/priors/local.toml",
                 free: Sequence[str] | None = None, *,
                 columns: Mapping[str, float] | None = None, loss: str = "soft_l1",
                 f_scale: float = 0.1, prior_weight: float = 0.02,
                 max_nfev: int | None = 60, bootstrap: int = 0, n_jobs: int | None = 1,
                 cluster: Any = None, random_state: int = 0, name: str = "local",
                 command: str | None = None, interference_weight: float = 2.0):
        self.priors = priors
        self.free = free
        self.columns = columns
        self.loss = loss
        self.f_scale = f_scale
        self.prior_weight = prior_weight
        self.max_nfev = max_nfev
        self.bootstrap = bootstrap
        self.n_jobs = n_jobs
        self.cluster = cluster
        self.random_state = random_state
        self.name = name
        self.command = command
        self.interference_weight = interference_weight

    # ------------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "priors", "free", "columns", "loss", "f_scale", "prior_weight", "max_nfev",
            "bootstrap", "n_jobs", "cluster", "random_state", "name", "command",
            "interference_weight")}

    def set_params(self, **params: Any) -> "LocalFitter":
        valid = self.get_params()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for LocalFitter")
            setattr(self, k, v)
        return self

    # ------------------------------------------------------------------
    def fit(self, rows: Sequence[Mapping[str, Any]]) -> "LocalFitter":
        rows = self._check_rows(rows)
        prior = resolve_priors(self.priors)
        weights = dict(COLUMN_WEIGHTS if self.columns is None else self.columns)
        cases = self._cases(rows, weights)
        free, fixed_why = self._choose_free(prior, rows)
        pool = _Pool(self.n_jobs)
        if self.free is None:
            free = self._probe(prior, free, cases, fixed_why, pool)
        if not free:
            pool.close()
            raise InputError("no parameter left to fit; pass free=[...]", field="free")
        x0 = _start(prior, free)
        lo, hi = x0 - math.log(100.0), x0 + math.log(100.0)
        try:
            fun = _Objective(prior, free, cases, x0, self.prior_weight, pool)
            res = least_squares(fun, x0, bounds=(lo, hi), loss=self.loss, f_scale=self.f_scale,
                                diff_step=1e-3, max_nfev=self.max_nfev, x_scale=1.0)
            x = res.x
            resid_full = fun(x)
            n_data = fun.n_data
            dof = max(1, n_data - len(free))
            data_r = resid_full[:n_data]
            s2 = float(np.sum(data_r ** 2)) / dof
            J = res.jac
            try:
                cov = np.linalg.pinv(J.T @ J) * s2
                se_log = np.sqrt(np.clip(np.diag(cov), 0.0, None))
            except np.linalg.LinAlgError:
                se_log = np.full(len(free), np.nan)
            values = np.exp(x)
            stderr = values * se_log
            method = "Jacobian covariance"
            if self.bootstrap and self.bootstrap > 0:
                stderr = self._bootstrap(rows, free, x, values)
                method = f"bootstrap ({self.bootstrap} refits)"
            self.free_ = tuple(free)
            self.fixed_ = dict(fixed_why)
            self.params_ = {k: float(v) for k, v in zip(free, values)}
            self.stderr_ = {k: float(s) for k, s in zip(free, stderr)}
            self.x_ = x
            self.cost_ = float(res.cost)
            self.nfev_ = int(res.nfev)
            self.success_ = bool(res.success)
            self.n_rows_ = len(rows)
            self.uncertainty_method_ = method
            self.residuals_ = np.asarray(data_r / np.array([c[2] for c in fun.index]), dtype=float)
            self.residual_table_ = [
                {"id": rows[i].get("id", f"line {rows[i].get('__line__')}"), "column": col,
                 "log_error": float(r)} for (i, col, _w), r in zip(fun.index, self.residuals_)]
            self.profile_ = self._profile(prior, rows, fixed_why)
        finally:
            pool.close()
        return self

    # ------------------------------------------------------------------
    def _check_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
            raise InputError("rows must be a list of dicts from a runs CSV", field="rows")
        rows = list(rows)
        if not rows:
            raise InputError("no rows to fit", field="rows")
        for r in rows:
            if not isinstance(r, Mapping):
                raise InputError("rows must be dicts from a runs CSV", field="rows")
            kind = r.get("__kind__", "local_runs")
            if kind not in self.kinds:
                raise InputError(f"LocalFitter fits local_runs rows, got kind {kind!r}",
                                 source=r.get("__source__"), line=_line(r), field="__kind__")
        return rows

    def cost_at(self, profile: Profile, rows: Sequence[Mapping[str, Any]]) -> float:
        """The objective :meth:`fit` minimises, at ``profile``'s values of the
        parameters it fitted (``meta.free``). A shipped profile whose recorded
        ``cost`` differs from this was fitted to another model: re-run its
        ``fitted_by`` command."""
        from .fitters import robust_cost
        rows = self._check_rows(rows)
        prior = resolve_priors(self.priors)
        cases = self._cases(rows, dict(COLUMN_WEIGHTS if self.columns is None else self.columns))
        free = list(profile.meta["free"])
        x0 = _start(prior, free)
        fun = _Objective(prior, free, cases, x0, self.prior_weight, _Pool(1))
        return robust_cost(fun(np.log([profile[k] for k in free])), self.loss, self.f_scale)

    def _cases(self, rows, weights):
        cases = []
        for r in rows:
            try:
                sc = local_scenario(r)
            except InputError as exc:
                raise exc.located(source=r.get("__source__"), line=_line(r)) from None
            stat = str(r.get("wait_stat") or "avg").strip() or "avg"
            targets = []
            try:
                ext = float(r.get("external_cores") or 0.0)
            except ValueError:
                raise InputError(f"expected a number, got {r.get('external_cores')!r}",
                                 source=r.get("__source__"), line=_line(r),
                                 field="external_cores") from None
            row_w = 1.0 / (1.0 + self.interference_weight * max(ext, 0.0)) \
                if math.isfinite(ext) else 1.0
            for col, w in weights.items():
                v = r.get(col)
                if v is None or str(v).strip() == "" or w <= 0:
                    continue
                try:
                    # a per-worker column (the write path's) counts summed
                    m = sum(float(x) for x in str(v).split("|")) if col in LSM_SUMS \
                        else float(v)
                except ValueError:
                    raise InputError(f"expected a number (or numbers separated by '|'), got "
                                     f"{v!r}", source=r.get("__source__"), line=_line(r),
                                     field=col) from None
                if col in COUNT_COLUMNS and m >= 0 and math.isfinite(m):
                    targets.append((col, m, w * row_w))
                elif m > 0 and math.isfinite(m):
                    targets.append((col, m, w * row_w))
            if targets:
                cases.append((sc, stat, targets))
        if not cases:
            raise InputError("no row has a measured value to fit (columns: "
                             + ", ".join(weights) + ")", field="rows")
        return cases

    def _choose_free(self, prior: Profile, rows) -> tuple[list[str], dict[str, str]]:
        if self.free is not None:
            free = list(self.free)
            for k in free:
                if k not in prior:
                    raise InputError(f"unknown parameter; the priors have: "
                                     f"{', '.join(sorted(prior.params))}", field=f"free.{k}")
            return free, {}

        def values(col, default):
            return {str(r.get(col) or default).strip() for r in rows}

        def num(col, default):
            return {float(r.get(col) or default) for r in rows}

        why: dict[str, str] = {}
        reads = num("read_ratio", 0.5)
        if values("wal", "on") != {"on", "off"}:
            why["wal_us"] = "every run had the same WAL setting"
        if values("db", "normal") != {"normal", "txn"}:
            why["txn_commit_us"] = "every run used the same DB type"
        seq = values("seq_check", "disk-get")
        if "disk-get" not in seq or len(seq) < 2:
            why["seqget_sst_us"] = "needs runs with and without seq_check=disk-get"
        if len(reads) < 2 and len(seq) < 2:
            why["get_mem_us"] = "needs runs with different read ratios"
        if len(num("clients", 1)) < 2:
            why["send_log2_us"] = why["send_per_thread_us"] = "every run had the same client count"
        if len(num("workers", 1)) < 2:
            why["context_switch_penalty"] = "every run had the same worker count"
        if min(reads) >= 1.0:
            why["put_us"] = "no run wrote"
        flushed = any(sum(float(x) for x in str(r.get("flushes") or "0").split("|")) > 0
                      for r in rows)
        if not flushed:
            for k in WRITE_PATH_FREE:
                why[k] = "no run flushed (the write-path plan's runs fit it)"
        return [k for k in DEFAULT_FREE if k in prior and k not in why], why

    def _probe(self, prior: Profile, free, cases, fixed_why, pool) -> list[str]:
        """Drop candidates that do not change any prediction (unused by the model)."""
        x0 = _start(prior, free)
        fun = _Objective(prior, free, cases, x0, 0.0, pool)
        base = fun(x0)[:fun.n_data]
        keep = []
        for i, k in enumerate(free):
            x = x0.copy()
            x[i] += 0.2
            if np.max(np.abs(fun(x)[:fun.n_data] - base)) > 1e-9:
                keep.append(k)
            else:
                fixed_why[k] = "no effect on the predictions of these runs"
        return keep

    def _bootstrap(self, rows, free, x, values) -> np.ndarray:
        rng = np.random.default_rng(self.random_state)
        params = self.get_params()
        params.update(bootstrap=0, free=list(free), n_jobs=1, cluster=None)
        tasks = [(params, [rows[i] for i in rng.integers(0, len(rows), len(rows))])
                 for _ in range(int(self.bootstrap))]
        fits = pmap(_bootstrap_fit, tasks, cluster=self.cluster, n_jobs=self.n_jobs,
                    desc="bootstrap fits")
        arr = np.array([[f[k] for k in free] for f in fits if f is not None])
        if len(arr) < 2:
            return np.full(len(free), np.nan)
        return arr.std(axis=0, ddof=1)

    def _profile(self, prior: Profile, rows, fixed_why) -> Profile:
        files = sorted({str(r.get("__source__", "<rows>")) for r in rows})
        ids = [str(r.get("id") or f"{r.get('__source__', '<rows>')}:{r.get('__line__')}")
               for r in rows]
        src = (f"fit: {len(rows)} local runs ({', '.join(Path(f).name for f in files)}), "
               f"LocalFitter {self.loss} least squares")
        params = dict(prior.params)
        for k, v in self.params_.items():
            se = self.stderr_[k]
            params[k] = Param(v, prior.params[k].unit, src, se if math.isfinite(se) else None)
        for k, reason in fixed_why.items():
            if k in params:
                p = params[k]
                params[k] = Param(p.value, p.unit, f"{p.source} (not fitted: {reason})", p.stderr)
        from . import __version__
        meta = {
            "name": self.name,
            "fitted_by": self.command or "calibrate.local_fit.LocalFitter",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "toolkit_version": __version__,
            "machine": platform.node(),
            "runs_files": files,
            "runs_ids": ids,
            "n_rows": len(rows),
            "free": list(self.free_),
            "loss": self.loss,
            "cost": self.cost_,
            "uncertainty": self.uncertainty_method_,
            "priors": str(self.priors),
        }
        return Profile(self.name, params, meta)


def _bootstrap_fit(task) -> dict[str, float] | None:
    params, rows = task
    try:
        return LocalFitter(**params).fit(rows).params_
    except InputError:
        return None


def _line(r: Mapping[str, Any]) -> int | None:
    v = r.get("__line__")
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


class _Pool:
    """A process pool kept for the whole fit (or nothing, for serial evaluation)."""

    def __init__(self, n_jobs: int | None):
        self.pool = None
        if n_jobs is not None and n_jobs > 1:
            from concurrent.futures import ProcessPoolExecutor
            from model.solvers._jit import one_thread
            self.pool = ProcessPoolExecutor(max_workers=n_jobs, initializer=one_thread)

    def map(self, fn, items):
        if self.pool is None:
            return [fn(x) for x in items]
        return list(self.pool.map(fn, items, chunksize=max(1, len(items) // 8)))

    def close(self):
        if self.pool is not None:
            self.pool.shutdown()


def _start(prior: Profile, free) -> np.ndarray:
    """Log values the fit starts from and pulls towards: the priors (a zero
    prior starts at 1e-3, where a log can move)."""
    return np.log(np.array([max(prior[k], 1e-3) for k in free]))


class _Objective:
    """Weighted log residuals of all cases for log-parameters x, plus the prior pull."""

    def __init__(self, prior: Profile, free, cases, x0, prior_weight, pool: _Pool):
        self.prior, self.free, self.cases = prior, list(free), cases
        self.x0, self.prior_weight, self.pool = x0, prior_weight, pool
        self.index = [(i, col, w) for i, (_, _, t) in enumerate(cases) for col, _, w in t]
        self.n_data = len(self.index)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        prof = self.prior.with_values(dict(zip(self.free, np.exp(x))), source="fitting")
        outs = self.pool.map(_row_outputs, [(sc, prof, stat) for sc, stat, _ in self.cases])
        r = np.empty(self.n_data + len(x))
        j = 0
        for (sc, stat, targets), out in zip(self.cases, outs):
            for col, m, w in targets:
                p = out.get(col, math.nan)
                if col in COUNT_COLUMNS:
                    r[j] = w * (math.log1p(max(p, 0.0)) - math.log1p(m)) if math.isfinite(p) \
                        else w * BAD_RESIDUAL
                else:
                    r[j] = w * math.log(p / m) if (p > 0 and math.isfinite(p)) \
                        else w * BAD_RESIDUAL
                j += 1
        r[self.n_data:] = self.prior_weight * (x - self.x0)
        return r
