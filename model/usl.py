"""Universal Scalability Law (Gunther): throughput versus concurrency.

    X(n) = lam n / (1 + sigma (n - 1) + kappa n (n - 1))

``lam`` is the throughput of one client (n = 1), ``sigma`` the contention
(serialised) fraction -- Amdahl's law is kappa = 0 -- and ``kappa`` the
coherency cost: pairwise crosstalk that makes throughput *fall* past a peak
at n* = sqrt((1 - sigma) / kappa). A measured throughput sweep over client
threads (e.g. the FarReach 32..1024 thread runs) is summarised by these three
numbers. Read them with care next to the closed MVA model: MVA throughput
never falls with n, but its knee at N* = (D + Z)/D_max is sharper than the
USL curve, so a USL fit of an MVA curve already needs kappa > 0 (see
tests/model/test_usl.py). A fitted kappa is a summary, not evidence of a
coherency mechanism; a *measured* fall past the peak is (timeouts, NIC
sharing, cache thrash).

The fit is nonlinear least squares (``scipy.optimize.least_squares``, trust
region reflective) with the physical bounds sigma in [0, 1], kappa >= 0,
lam > 0, started from lam = x(n_min)/n_min and the Amdahl line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import least_squares

from model.errors import InputError

__all__ = ["USLFit", "usl", "usl_peak", "fit_usl"]


def usl(n, sigma: float, kappa: float, lam: float):
    """X(n) = lam n / (1 + sigma (n - 1) + kappa n (n - 1)); scalar or array n."""
    n_arr = np.asarray(n, dtype=float)
    x = lam * n_arr / (1.0 + sigma * (n_arr - 1.0) + kappa * n_arr * (n_arr - 1.0))
    return float(x) if np.ndim(x) == 0 else x


def usl_peak(sigma: float, kappa: float, lam: float) -> tuple[float, float]:
    """(n*, X(n*)) with n* = sqrt((1 - sigma)/kappa); (inf, lam/sigma) when kappa = 0.

    With kappa = 0 and sigma = 0 (linear scaling) the peak is (inf, inf).
    """
    if kappa > 0:
        n_star = math.sqrt(max(1.0 - sigma, 0.0) / kappa)
        n_star = max(n_star, 1.0)   # sigma ~ 1: throughput never rises above X(1)
        return n_star, float(usl(n_star, sigma, kappa, lam))
    return math.inf, (lam / sigma if sigma > 0 else math.inf)


@dataclass(frozen=True)
class USLFit:
    """Fitted USL parameters, the peak they imply and the fit's RMSE (units of x)."""

    sigma: float
    kappa: float
    lam: float
    peak_n: float
    peak_x: float
    rmse: float

    def predict(self, n):
        return usl(n, self.sigma, self.kappa, self.lam)


def fit_usl(n: Sequence[float], x: Sequence[float], relative: bool = False) -> USLFit:
    """Least-squares fit of (sigma, kappa, lam) to throughputs x measured at concurrency n.

    ``relative=True`` minimises relative residuals (x_fit - x)/x, which
    weights small-n points as much as the plateau; the default minimises
    absolute residuals. Needs at least three distinct n.
    """
    n_arr = np.asarray(n, dtype=float)
    x_arr = np.asarray(x, dtype=float)
    if n_arr.ndim != 1 or n_arr.shape != x_arr.shape:
        raise InputError("n and x must be 1-d sequences of equal length", field="x")
    if not (np.all(np.isfinite(n_arr)) and np.all(n_arr >= 1)):
        raise InputError("n must be finite and >= 1", field="n")
    if not (np.all(np.isfinite(x_arr)) and np.all(x_arr > 0)):
        raise InputError("x must be finite and > 0", field="x")
    if len(np.unique(n_arr)) < 3:
        raise InputError("need at least 3 distinct concurrency levels", field="n")
    i0 = int(np.argmin(n_arr))
    lam0 = x_arr[i0] / n_arr[i0]
    weight = 1.0 / x_arr if relative else np.ones_like(x_arr)

    def resid(p: np.ndarray) -> np.ndarray:
        return (usl(n_arr, p[0], p[1], p[2]) - x_arr) * weight

    # start at the Amdahl line through the largest throughput observed
    k = int(np.argmax(x_arr))
    sigma0 = 0.0
    if n_arr[k] > 1:
        sigma0 = float(np.clip((lam0 * n_arr[k] / x_arr[k] - 1.0) / (n_arr[k] - 1.0), 0.0, 1.0))
    res = least_squares(resid, x0=[sigma0, 1e-6, lam0],
                        bounds=([0.0, 0.0, 0.0], [1.0, np.inf, np.inf]),
                        x_scale="jac", method="trf")
    sigma, kappa, lam = (float(v) for v in res.x)
    peak_n, peak_x = usl_peak(sigma, kappa, lam)
    rmse = float(np.sqrt(np.mean((usl(n_arr, sigma, kappa, lam) - x_arr) ** 2)))
    return USLFit(sigma, kappa, lam, peak_n, peak_x, rmse)
