"""Fit the embedded profiles of the non-FarReach reference systems.

One estimator, :class:`SystemFitter`, in scikit-learn style: ``__init__``
stores parameters only; ``fit(rows)`` validates the rows (dicts read from the
reference CSVs, carrying ``__kind__``, ``__source__`` and ``__line__``), fits
the system's free parameters and returns ``self``. Fitted values end in
``_``: ``profile_``, ``residuals_`` (one dict per measured cell: kind, id,
column, measured, predicted, ape_pct) and ``ape_`` (median APE per column).

The objective is the log ratio predicted/measured of every measured cell
(scale-free, so kops and latencies weigh alike), plus the system's priors
(facts quoted in notes, e.g. Morphling C's 36 us processing time), solved by
bounded trust-region least squares from the declared starting values. The
standard errors come from the Jacobian at the optimum; so do the profile's
``[uncertainty]`` (log-space covariance of the fitted parameters) and
``[noise]`` (root-mean-square leave-one-out log residual per kind and column) tables, from
which predictions get 90 % intervals (:mod:`model.uncertainty`).

Regenerate every embedded profile (re-runnable, deterministic)::

    python -m calibrate.systems_fit --all
    python -m calibrate.systems_fit --system runtimes --print
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("calibrate.systems_fit:main")

import math
import statistics
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.optimize import least_squares

from runio.exits import ArgumentParser, run_command
from model.errors import InputError
from runio.safe_io import output_path
from model.profile import Param, Profile
from model.uncertainty import fitted_uncertainty
from runio.inputs import load_profile, save_profile

DATA = Path(__file__).resolve().parent.parent / "data"
PROFILES = Path(__file__).resolve().parent.parent / "model" / "profiles"


def _systems():
    from model.systems import SYSTEMS
    return SYSTEMS


def load_rows(system: str, data_dir: str | Path = DATA) -> list[dict[str, str]]:
    """Calibration rows of a system, tagged with kind, source file and line."""
    from runio.batch import read_runs
    from runio.kinds import detect
    sysm = _systems()[system]
    rows = []
    for stem in sysm.data_files:
        path = str(Path(data_dir) / f"{stem}.csv")
        header, rs = read_runs(path)
        kind = detect(header, source=path)
        for r in rs:
            r["__kind__"] = kind.name
            r["__source__"] = path
            rows.append(r)
    return rows


class SystemFitter:
    """Least-squares calibration of one system's profile.

    Parameters
    ----------
    system: name of a system in :data:`model.systems.SYSTEMS` (= profile name).
    weights: optional per-column weight, e.g. ``{"latency_ns": 0.5}``.
    max_nfev: cap on model evaluations.
    priors: starting values -- a :class:`Profile`, or a profile name or TOML
        path; its values of the free parameters replace the declared
        starting values (clipped to the bounds).
    """

    def __init__(self, system: str, weights: Mapping[str, float] | None = None,
                 max_nfev: int = 400, priors: Profile | str | None = None):
        self.system = system
        self.weights = weights
        self.max_nfev = max_nfev
        self.priors = priors

    # -- helpers --------------------------------------------------------
    def _cells(self, rows: Sequence[Mapping[str, str]]):
        from runio.kinds import KINDS
        from model.systems.base import measured
        sysm = _systems()[self.system]
        names = {k.name for k in sysm.kinds}
        cells = []
        for r in rows:
            kind = r.get("__kind__")
            if kind not in names:
                raise InputError(f"row of kind {kind!r} does not calibrate {self.system} "
                                 f"(kinds: {', '.join(sorted(names))})",
                                 source=r.get("__source__"), line=_line(r), field="__kind__")
            k = KINDS[kind]
            cols = [c for c in k.measured if measured(r, c) is not None]
            if cols:
                cells.append((r, k, cols))
        if not cells:
            raise InputError(f"no measured values to fit {self.system}", field="rows")
        return sysm, cells

    def fit(self, rows: Sequence[Mapping[str, str]]) -> "SystemFitter":
        from model.systems.base import measured
        if self.system not in _systems():
            raise InputError(f"unknown system {self.system!r}; known: "
                             f"{', '.join(sorted(_systems()))}", field="system")
        sysm, cells = self._cells(rows)
        free = [p for p in sysm.params if p.fit]
        base = sysm.default_profile()
        w = dict(self.weights or {})

        def prof(v: np.ndarray) -> Profile:
            return base.with_values({p.name: float(x) for p, x in zip(free, v)}, "fit")

        keys: list[str | None] = []

        def resid(v: np.ndarray) -> np.ndarray:
            p = prof(v)
            out = []
            keys.clear()
            for r, k, cols in cells:
                try:
                    pred = k.predict_row(r, p)
                except InputError as exc:
                    raise exc.located(source=r.get("__source__"), line=_line(r)) from None
                for c in cols:
                    y = pred.get(f"pred_{c}")
                    m = measured(r, c)
                    ok = isinstance(y, float) and math.isfinite(y) and y > 0 and m > 0
                    out.append(w.get(c, 1.0) * (math.log(y / m) if ok else 3.0))
                    keys.append(f"{k.name}.{c}")
            for fn in sysm.priors.values():
                out.append(fn(p))
                keys.append(None)
            return np.asarray(out)

        x0 = np.array([p.init for p in free])
        if self.priors is not None:
            start = self.priors if isinstance(self.priors, Profile) else load_profile(self.priors)
            x0 = np.array([start.get(p.name, p.init) for p in free])
        lo = np.array([p.lo for p in free])
        hi = np.array([p.hi for p in free])
        sol = least_squares(resid, np.clip(x0, lo, hi), bounds=(lo, hi),
                            x_scale=np.maximum(np.abs(x0), 0.01 * (hi - lo)),
                            max_nfev=self.max_nfev, diff_step=1e-4)
        stderr = _stderr(sol)
        resid(sol.x)                       # the residual keys of the optimum
        unc, noise = fitted_uncertainty([p.name for p in free], [_round(x) for x in sol.x],
                                        sol.jac, sol.fun, list(keys))
        n_rows = len(cells)
        srcs = ", ".join(sysm.data_files)
        params = {}
        for p in sysm.params:
            if p.fit:
                i = free.index(p)
                params[p.name] = Param(float(_round(sol.x[i])), p.unit,
                                       f"fit: {srcs} ({n_rows} rows) -- {p.doc}",
                                       None if stderr is None or not math.isfinite(stderr[i])
                                       else float(_round(stderr[i])))
            else:
                params[p.name] = Param(p.init, p.unit, f"fixed: {p.doc}")
        self.profile_ = Profile(self.system, params, {
            "name": self.system,
            "fitted_by": f"python -m calibrate.systems_fit --system {self.system}",
            "data": [f"data/{s}.csv" for s in sysm.data_files],
            "description": sysm.description}, unc, {k: _round(v) for k, v in noise.items()})
        self.cost_ = float(sol.cost)
        self.residuals_ = []
        for r, k, cols in cells:
            pred = k.predict_row(r, self.profile_)
            for c in cols:
                m = measured(r, c)
                y = pred[f"pred_{c}"]
                self.residuals_.append({"kind": k.name, "id": r.get("id", r.get("__line__")),
                                        "column": c, "measured": m, "predicted": y,
                                        "ape_pct": abs(y - m) / abs(m) * 100.0})
        self.ape_ = median_ape(self.residuals_)
        return self


def median_ape(residuals: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Median absolute percentage error per (kind, column)."""
    by: dict[str, list[float]] = {}
    for r in residuals:
        by.setdefault(f"{r['kind']}.{r['column']}", []).append(r["ape_pct"])
    return {k: statistics.median(v) for k, v in by.items()}


def _line(r: Mapping[str, str]) -> int | None:
    v = r.get("__line__")
    return int(v) if v and str(v).isdigit() else None


def _round(x: float) -> float:
    return float(f"{x:.5g}")


def _stderr(sol) -> np.ndarray | None:
    j = sol.jac
    m, n = j.shape
    if m <= n:
        return None
    try:
        cov = np.linalg.pinv(j.T @ j) * (2 * sol.cost / (m - n))
    except np.linalg.LinAlgError:
        return None
    return np.sqrt(np.clip(np.diag(cov), 0, None))


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m calibrate.systems_fit",
                                 description="Fit the embedded profiles of the reference systems.")
    ap.add_argument("--system", action="append", default=[], help="system/profile name")
    ap.add_argument("--all", action="store_true", help="fit every system")
    ap.add_argument("--data", default=str(DATA), help="directory of the reference CSVs")
    ap.add_argument("--out-dir", default=str(PROFILES), help="where to write <system>.toml")
    ap.add_argument("--print", action="store_true", help="print residuals, write nothing")
    args = ap.parse_args(argv)

    def action() -> None:
        names = sorted(_systems()) if args.all else args.system
        if not names:
            raise InputError("give --system NAME or --all", field="--system")
        if not Path(args.data).is_dir():
            raise InputError("not a folder of reference CSVs", source=args.data, field="--data")
        if not args.print:       # every profile's path checked before the first fit
            for name in names:
                output_path(Path(args.out_dir) / f"{name}.toml", "--out-dir", types=None)
        for name in names:
            if name not in _systems():
                raise InputError(f"unknown system {name!r}; known: {', '.join(sorted(_systems()))}",
                                 field="--system")
            f = SystemFitter(name).fit(load_rows(name, args.data))
            print(f"== {name}: cost {f.cost_:.4g}")
            for k, p in f.profile_.params.items():
                se = f" +- {p.stderr:.3g}" if p.stderr is not None else ""
                print(f"  {k} = {p.value:.5g}{se} {p.unit}")
            for k, v in f.ape_.items():
                print(f"  median APE {k}: {v:.1f} %")
            if args.print:
                for r in f.residuals_:
                    print(f"    {r['id']:>5} {r['column']:<20} measured {r['measured']:.5g} "
                          f"predicted {r['predicted']:.5g}  ({r['ape_pct']:.1f} %)")
            else:
                out = Path(args.out_dir) / f"{name}.toml"
                save_profile(f.profile_, out)
                print(f"  wrote {out}")

    return run_command(action)
