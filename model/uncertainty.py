"""Prediction intervals from a fitted profile, for any system.

A fitted profile may carry two optional tables (parsed by
:mod:`model.profile`):

``[uncertainty]``
    ``params`` (names) and ``log_covariance``: the covariance of the fitted
    parameters' logarithms. Log space because the parameters are positive
    times, rates and factors whose errors are relative.
``[noise]``
    the run-to-run scatter of each measured column as a log-scale standard
    deviation (``kops = 0.05`` is about 5 %); ``"kind.column"`` keys win over
    plain ``column`` keys.

:func:`predict_interval` draws parameter vectors from the multivariate
normal in log space, evaluates the model once per draw, multiplies each draw
by a log-normal noise factor of its column and returns the central quantiles:
the interval in which a new measurement of that configuration is expected
with probability ``level``. Draws use a fixed seed by default, so the same
call gives the same interval (and intervals along a curve are smooth: every
point uses the same parameter draws).

:func:`with_intervals` wraps a run kind's ``predict_row`` so that it adds
``pred_<col>_lo`` and ``pred_<col>_hi`` beside ``pred_<col>`` whenever the
profile carries either table. Profiles without them (the defaults, the
profiles a fitter tries while fitting) predict exactly as before and at the
same cost.

:func:`fitted_uncertainty` builds both tables from a least-squares fit of
log residuals (the Jacobian at the optimum and the residuals per column), so
every fitter can write them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import InputError
from .profile import Profile

__all__ = ["predict_interval", "with_intervals", "fitted_uncertainty", "noise_of",
           "DEFAULT_LEVEL", "DEFAULT_DRAWS"]

DEFAULT_LEVEL = 0.9
DEFAULT_DRAWS = 200


def noise_of(profile: Profile, column: str, kind: str | None = None) -> float:
    """Log-sd of a column's run-to-run noise: ``kind.column``, else ``column``, else 0."""
    if kind is not None and f"{kind}.{column}" in profile.noise:
        return profile.noise[f"{kind}.{column}"]
    return profile.noise.get(column, 0.0)


def _draw_profiles(profile: Profile, draws: int, rng: np.random.Generator) -> list[Profile]:
    u = profile.uncertainty
    if not u or not u["params"]:
        return [profile.with_values({}, "interval draw")] * draws
    names = list(u["params"])
    cov = np.asarray(u["log_covariance"], dtype=float)
    mean = np.log([profile[n] for n in names])
    # symmetric PSD by construction; "ignore" tolerates round-off negatives
    z = rng.multivariate_normal(mean, cov, size=draws, method="eigh", check_valid="ignore")
    return [profile.with_values(dict(zip(names, np.exp(row))), "interval draw") for row in z]


def predict_interval(fn: Callable[[Profile], Mapping[str, float]], profile: Profile,
                     level: float = DEFAULT_LEVEL, draws: int = DEFAULT_DRAWS,
                     seed: int = 0, kind: str | None = None) -> dict[str, tuple[float, float]]:
    """``{column: (lo, hi)}``: the central ``level`` interval of ``fn``'s outputs.

    ``fn(profile) -> {column: value}`` is the model of one configuration.
    Parameter uncertainty (``profile.uncertainty``) and run-to-run noise
    (``profile.noise``, looked up with ``kind``) are combined by Monte Carlo:
    ``draws`` parameter vectors, each output times exp(N(0, noise^2)).
    Columns whose value is not a positive finite number in a draw get no
    interval from that draw; a column with fewer than half its draws valid
    gets none at all.
    """
    if not 0 < level < 1:
        raise InputError(f"level must be between 0 and 1, got {level!r}", field="level")
    if int(draws) != draws or draws < 10:
        raise InputError(f"draws must be an integer >= 10, got {draws!r}", field="draws")
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {}
    for p in _draw_profiles(profile, int(draws), rng):
        try:
            outs = fn(p)
        except (InputError, ArithmeticError, ValueError):
            continue          # a draw outside the model's domain (e.g. an unstable queue)
        for col, v in outs.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
                samples.setdefault(col, []).append(float(v))
    out = {}
    a = (1.0 - level) / 2.0
    for col, vals in samples.items():
        if len(vals) < draws / 2:
            continue
        sd = noise_of(profile, col, kind)
        # noise draws come from their own stream, so adding a column does not
        # change the parameter draws of the others
        eps = np.random.default_rng([seed, _stable_hash(col)]).standard_normal(len(vals))
        y = np.asarray(vals) * np.exp(sd * eps)
        lo, hi = np.quantile(y, [a, 1.0 - a])
        out[col] = (float(lo), float(hi))
    return out


def _stable_hash(text: str) -> int:
    h = 2166136261
    for ch in text.encode():
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h


def with_intervals(predict_row: Callable[[Mapping[str, str], Profile], dict[str, Any]],
                   kind: str, level: float = DEFAULT_LEVEL, draws: int = DEFAULT_DRAWS
                   ) -> Callable[[Mapping[str, str], Profile], dict[str, Any]]:
    """A ``predict_row`` that also returns ``pred_<col>_lo`` / ``pred_<col>_hi``
    when the profile carries [uncertainty] or [noise] (else it is ``predict_row``)."""

    def wrapped(row: Mapping[str, str], profile: Profile) -> dict[str, Any]:
        out = predict_row(row, profile)
        if not profile.uncertainty and not profile.noise:
            return out

        def fn(p: Profile) -> dict[str, float]:
            return {k[5:]: v for k, v in predict_row(row, p).items() if k.startswith("pred_")}

        for col, (lo, hi) in predict_interval(fn, profile, level, draws, kind=kind).items():
            if f"pred_{col}" in out:
                # the point prediction sits inside its own interval even when the
                # model is strongly non-linear in a parameter
                v = out[f"pred_{col}"]
                if isinstance(v, (int, float)) and math.isfinite(v):
                    lo, hi = min(lo, v), max(hi, v)
                out[f"pred_{col}_lo"], out[f"pred_{col}_hi"] = lo, hi
        return out

    wrapped.__wrapped__ = predict_row  # type: ignore[attr-defined]
    wrapped.__doc__ = predict_row.__doc__
    return wrapped


def press_residuals(jac: np.ndarray, residuals: np.ndarray, data) -> np.ndarray:
    """Leave-one-out (PRESS) residuals of the measurement terms ``data`` (a slice
    or index array) of a least-squares fit: each residual e / (1 - h), h its
    leverage in the linearised problem (``jac`` over every term, priors
    included). A cell that alone pins a parameter fits itself well in sample
    and badly out of it; an interval built from its in-sample error would be
    too narrow for a point nobody measured. (h is capped at 0.9.)"""
    j = np.asarray(jac, dtype=float)
    jd = j[data]
    try:
        core = np.linalg.pinv(j.T @ j)
        lev = np.einsum("ij,jk,ik->i", jd, core, jd)
    except np.linalg.LinAlgError:
        lev = np.zeros(len(jd))
    return np.asarray(residuals, dtype=float)[data] / np.maximum(1.0 - np.clip(lev, 0.0, 1.0), 0.1)


def fitted_uncertainty(names: Sequence[str], values: Sequence[float], jac: np.ndarray,
                       residuals: np.ndarray, columns: Sequence[str | None],
                       min_noise: float = 0.01, max_log_sd: float = 1.0,
                       weights: Sequence[float] | None = None
                       ) -> tuple[dict[str, Any] | None, dict[str, float]]:
    """([uncertainty] table, [noise] table) of a least-squares fit of log residuals.

    ``jac`` is d(residual)/d(value) at the optimum (one row per residual, one
    column per fitted parameter), ``residuals`` the log residuals, and
    ``columns[i]`` the noise key of residual i (``"kind.column"``; None for a
    prior or penalty term, which is not a measurement). Parameters at or
    below zero cannot be described in log space and are left out, as are
    those the data do not constrain (zero Jacobian column). The covariance is
    s^2 (J_log^T J_log)^+ with s^2 the residual variance per degree of
    freedom; the noise of a column is the root mean square of its residuals,
    each taken as if its cell had been left out of the fit
    (:func:`press_residuals`; at least ``min_noise``). Where the objective
    weighs its terms (``weights[i]`` multiplies residual i, as the FarReach
    fit balances its columns), a column's noise is taken from the unweighted
    errors: the weights balance the objective, the noise is the data's.
    Leverages are taken in log space for the positive parameters (as the
    covariance below): for a fit that pins every direction that is the same
    as in value space, and it is the space the FarReach fit solves in.
    Plain in-sample residuals made the intervals of a fit on few points too
    narrow: fitted on the first two points of each thread/coroutine curve, the
    held-out latency stds fell inside 7 of 12 times (docs/accuracy.md).

    A direction of parameter space the data barely constrain (one
    parameter, or a trade-off between two whose sum the data do fix) gets a
    huge linearised variance that means "anything goes", not a usable
    distribution. The covariance's eigenvalues are therefore capped at
    ``max_log_sd`` squared (1.0: a factor e either way): well-determined
    combinations keep their small spread, the free direction is bounded.
    """
    x = np.asarray(values, dtype=float)
    j = np.asarray(jac, dtype=float)
    r = np.asarray(residuals, dtype=float)
    keep = [i for i in range(len(x)) if x[i] > 0 and np.any(j[:, i] != 0)]
    noise: dict[str, float] = {}
    data = np.array([i for i, c in enumerate(columns) if c], dtype=int)
    loo = np.zeros(len(r))
    if data.size:
        loo[data] = press_residuals(j * np.where(x > 0, x, 1.0), r, data)
    if weights is not None:
        loo = loo / np.asarray(weights, dtype=float)
    for col in dict.fromkeys(c for c in columns if c):
        rr = loo[[i for i, c in enumerate(columns) if c == col]]
        noise[col] = float(max(min_noise, math.sqrt(float(np.mean(rr * rr)))))
    m, n = j.shape
    if not keep or m <= n:
        return None, noise
    jl = j[:, keep] * x[keep]                  # d r / d log(x) = d r / d x * x
    s2 = float(r @ r) / (m - n)
    cov = np.linalg.pinv(jl.T @ jl) * s2
    cov = 0.5 * (cov + cov.T)
    lam, vec = np.linalg.eigh(cov)
    lam = np.clip(lam, 0.0, max_log_sd ** 2)
    cov = (vec * lam) @ vec.T
    cov = 0.5 * (cov + cov.T)
    return {"params": [names[i] for i in keep],
            "log_covariance": [[float(f"{v:.6g}") for v in row] for row in cov]}, noise
