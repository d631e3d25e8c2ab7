"""Prediction intervals of the rack model by sigma points (issue 13).

A fitted profile carries the covariance of its parameters' logarithms
(``[uncertainty]``) and the run-to-run scatter of each measured column
(``[noise]``, a log-sd); see :mod:`model.uncertainty`. The other reference
systems turn them into intervals by Monte Carlo (200 model evaluations per
row). For the rack that would cost 200 solves per configuration, so here the
parameter part is propagated by the delta method along the principal axes of
the covariance:

* every eigen-direction of the covariance whose spread is at least
  :data:`MIN_SD` (in log units; a narrower one moves an output by less than
  that times its sensitivity) gives a sigma point theta + sqrt(lambda_k) v_k;
* every configuration is solved at the centre and at each sigma point, all
  in one batch (:func:`model.solvers.predict_many`);
* the log-sd of an output from the parameters is
  sqrt(sum_k (log f(k) - log f(centre))^2) -- the linearised variance, exact
  for a model linear in log parameters -- combined with the column's noise
  in quadrature, and the interval is f * exp(+- z * sd), z = 1.645 for 90 %.

All directions matter: the wide ones are the combinations the fitted rows
did not pin down, which move little on those rows and a lot on a rack
nobody measured (cross-validation showed four directions giving 42 %
coverage on held-out process times). The interval is where a new
measurement of that configuration is expected, not where the mean is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .profile import Profile
from .uncertainty import noise_of

__all__ = ["MIN_SD", "Z90", "sigma_profiles", "log_sd", "interval",
           "IntervalPrediction", "predict_with_intervals"]

#: Eigen-directions narrower than this log-sd are left out (each direction
#: costs one solve per configuration).
MIN_SD = 0.05

#: Two-sided 90 % normal quantile.
Z90 = 1.6448536269514722


def sigma_profiles(profile: Profile, min_sd: float = MIN_SD) -> tuple[list[Profile], float]:
    """(one profile per sigma point, share of the log-variance they carry).

    Empty when the profile has no [uncertainty]."""
    u = profile.uncertainty
    if not u or not u["params"]:
        return [], 1.0
    names = list(u["params"])
    cov = np.asarray(u["log_covariance"], dtype=float)
    lam, vec = np.linalg.eigh((cov + cov.T) / 2.0)
    order = [i for i in np.argsort(lam)[::-1] if lam[i] >= min_sd ** 2]
    total = float(np.sum(np.clip(lam, 0.0, None)))
    captured = float(sum(lam[i] for i in order) / total) if total > 0 else 1.0
    centre = np.log([profile[n] for n in names])
    out = [profile.with_values(dict(zip(names, np.exp(centre + math.sqrt(lam[i]) * vec[:, i]))),
                               "sigma point") for i in order]
    return out, captured


def log_sd(centre: float, at_points: Sequence[float]) -> float | None:
    """Log-sd of an output from its values at the sigma points.

    None when the output is not positive and finite everywhere (no log)."""
    vals = [centre, *at_points]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in vals):
        return None
    c = math.log(centre)
    return math.sqrt(sum((math.log(v) - c) ** 2 for v in at_points))


def interval(value: float, param_sd: float, noise_sd: float, z: float = Z90) -> tuple[float, float]:
    sd = math.hypot(param_sd, noise_sd)
    return value * math.exp(-z * sd), value * math.exp(z * sd)


def columns_with_intervals(centre: Mapping[str, Any], at_points: Sequence[Mapping[str, Any]],
                           profile: Profile, kind: str | None, z: float = Z90) -> dict[str, Any]:
    """``pred_X`` of ``centre`` plus ``pred_X_lo``/``pred_X_hi`` where an interval exists.

    ``centre`` and each of ``at_points`` map column -> value (without ``pred_``)."""
    out: dict[str, Any] = {f"pred_{c}": v for c, v in centre.items()}
    if not profile.uncertainty and not profile.noise:
        return out
    for c, v in centre.items():
        if isinstance(v, (list, tuple)):
            continue
        sd = log_sd(v, [p.get(c) for p in at_points]) if at_points else 0.0
        noise = noise_of(profile, c, kind) or _latency_noise(profile, c, kind) \
            or _kind_noise(profile, kind)
        if sd is None or (sd == 0.0 and noise == 0.0):
            continue
        out[f"pred_{c}_lo"], out[f"pred_{c}_hi"] = interval(v, sd, noise, z)
    return out


def _latency_noise(profile: Profile, column: str, kind: str | None) -> float:
    """A latency column no fit weighed (the rack kinds measure none): the
    kind's throughput noise, as in a closed loop the latency is threads /
    throughput; 0 for other columns."""
    return noise_of(profile, "mops", kind) if column.startswith("latency") else 0.0


def _kind_noise(profile: Profile, kind: str | None) -> float:
    """Noise of a column the fit did not weigh (a min/max breakdown column, a
    ratio): the largest noise fitted for the same kind, to stay on the safe side."""
    vals = [v for k, v in profile.noise.items() if kind and k.startswith(f"{kind}.")]
    return max(vals) if vals else 0.0


@dataclass(frozen=True)
class IntervalPrediction:
    """A prediction and the interval of its throughput (MOPS)."""
    prediction: Any            # model.prediction.Prediction
    mops_lo: float | None      # None: the profile carries no uncertainty
    mops_hi: float | None
    level: float = 0.9

    def to_dict(self) -> dict[str, Any]:
        d = self.prediction.to_dict()
        d["throughput_mops_interval"] = {"lo": self.mops_lo, "hi": self.mops_hi,
                                         "level": self.level, "unit": "MOPS"}
        return d


def predict_with_intervals(scenarios: Sequence[Any], profile: Profile, z: float = Z90,
                           kind: str = "farreach_runs",
                           progress: Callable[[int, int], None] | None = None
                           ) -> list[IntervalPrediction]:
    """Each scenario's prediction with a 90 % interval on its throughput.

    All scenarios at the centre and every sigma point are solved as one batch.
    The throughput noise is the profile's ``<kind>.mops`` (FarReach runs by
    default: a full-rack run)."""
    from .solvers import predict_many
    scenarios = list(scenarios)
    points, _ = sigma_profiles(profile)
    preds = solve_grid(scenarios, [profile, *points], predict_many, progress)
    out = []
    level = 2.0 * _norm_cdf(z) - 1.0
    for i, p in enumerate(preds[0]):
        iv = throughput_interval(p.throughput_mops, [q[i].throughput_mops for q in preds[1:]],
                                 profile, kind, z) or {}
        lat = percentile_intervals(p, [q[i] for q in preds[1:]], profile, kind, z)
        if lat:
            p.details["latency_us_percentile_intervals"] = lat
        out.append(IntervalPrediction(p, iv.get("lo_mops"), iv.get("hi_mops"), level))
    return out


def percentile_intervals(centre: Any, at_points: Sequence[Any], profile: Profile,
                         kind: str = "farreach_runs", z: float = Z90) -> dict[str, dict]:
    """``{p50: {lo_us, hi_us, level}, ...}``: intervals of the latency
    percentiles (``details["latency_us_percentiles"]``) from their values at
    the sigma points and the run-to-run noise of the kind's throughput (no
    rack kind measures percentiles; :func:`_latency_noise`)."""
    from .prediction import latency_columns
    cols = columns_with_intervals(latency_columns(centre),
                                  [latency_columns(q) for q in at_points], profile, kind, z)
    level = 2.0 * _norm_cdf(z) - 1.0
    out = {}
    for k in ("p50", "p95", "p99"):
        c = f"pred_latency_{k}_us"
        if f"{c}_lo" in cols:
            out[k] = {"lo_us": cols[f"{c}_lo"], "hi_us": cols[f"{c}_hi"], "level": level}
    return out


def predict_one(scenario: Any, profile: Profile, intervals: bool = True,
                progress: Callable[[int, int], None] | None = None) -> Any:
    """One scenario's analytic prediction; with ``intervals`` its
    ``details["throughput_interval"]`` (``{lo_mops, hi_mops, level}``) is set
    where the profile carries an uncertainty: what ``python -m sim predict``
    prints and what the API returns, from this one place."""
    if not intervals:
        from .solvers import predict
        return predict(scenario, profile)
    ip = predict_with_intervals([scenario], profile, progress=progress)[0]
    pred = ip.prediction
    if ip.mops_lo is not None:
        pred.details["throughput_interval"] = {"lo_mops": ip.mops_lo, "hi_mops": ip.mops_hi,
                                               "level": ip.level}
    return pred


def throughput_interval(centre_mops: float, at_points: Sequence[float], profile: Profile,
                        kind: str = "farreach_runs", z: float = Z90) -> dict[str, float] | None:
    """``{lo_mops, hi_mops, level}``: the interval of a throughput (MOPS) from
    its values at the profile's sigma points and the kind's run-to-run noise
    (:func:`columns_with_intervals`); None where the profile gives none."""
    cols = columns_with_intervals({"mops": centre_mops}, [{"mops": v} for v in at_points],
                                  profile, kind, z)
    if "pred_mops_lo" not in cols:
        return None
    return {"lo_mops": cols["pred_mops_lo"], "hi_mops": cols["pred_mops_hi"],
            "level": 2.0 * _norm_cdf(z) - 1.0}


def solve_grid(scenarios: Sequence[Any], profiles: Sequence[Profile], predict_many,
               progress: Callable[[int, int], None] | None = None,
               chunk: int = 2048) -> list[list[Any]]:
    """predictions[profile][scenario]: every pair solved, in batches of about
    ``chunk`` racks (``progress(done, total)`` between them).

    Rack scenarios (:class:`model.scenario.Scenario`) are solved by the
    analytic batch directly: their workload is evaluated once for all the
    profiles, and the racks under the other profiles (sigma points, near the
    first) start their root search at the first profile's answer. Other
    scenarios go through ``predict_many``."""
    from .scenario import Scenario
    n, k = len(scenarios), len(profiles)
    out: list[list[Any]] = [[None] * n for _ in range(k)]
    racks = all(isinstance(sc, Scenario) for sc in scenarios)
    per = max(1, chunk // max(k, 1))
    done = 0
    for a in range(0, n, per):
        block = list(range(a, min(a + per, n)))
        if racks:
            _solve_rack_block([scenarios[i] for i in block], profiles, out, block)
        else:
            scs = [scenarios[i] for _ in range(k) for i in block]
            profs = [p for p in profiles for _ in block]
            preds = predict_many(scs, profs)
            for j, pred in enumerate(preds):
                out[j // len(block)][block[j % len(block)]] = pred
        done += k * len(block)
        if progress is not None:
            progress(done, n * k)
    return out


def _solve_rack_block(scenarios, profiles, out, block) -> None:
    from .rack.params import ProfileReader
    from .rack.placement import evaluate_workload
    from .rack.spec import compile_with
    from .solvers.analytic import solve_many
    wres = [evaluate_workload(sc) for sc in scenarios]
    centre = solve_many([compile_with(sc, ProfileReader(profiles[0]), w)
                         for sc, w in zip(scenarios, wres)])
    for j, pred in enumerate(centre):
        out[0][block[j]] = pred
    if len(profiles) == 1:
        return
    specs, starts, where = [], [], []
    for q, prof in enumerate(profiles[1:], start=1):
        reader = ProfileReader(prof)
        for j, (sc, w) in enumerate(zip(scenarios, wres)):
            specs.append(compile_with(sc, reader, w))
            starts.append(centre[j].throughput_mops)
            where.append((q, block[j]))
    for (q, i), pred in zip(where, solve_many(specs, starts=starts)):
        out[q][i] = pred


def _norm_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
