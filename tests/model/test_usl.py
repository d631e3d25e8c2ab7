"""Universal Scalability Law: formula identities and parameter recovery from
seeded noisy synthetic sweeps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from model.errors import InputError
from model.queueing import Station, mva_exact
from model.usl import fit_usl, usl, usl_peak

N_SWEEP = np.array([1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024])


def test_usl_special_cases():
    n = np.arange(1, 50)
    np.testing.assert_allclose(usl(n, 0.0, 0.0, 2.0), 2.0 * n)                 # linear
    np.testing.assert_allclose(usl(n, 0.1, 0.0, 1.0), n / (1 + 0.1 * (n - 1)))  # Amdahl
    assert usl(1, 0.3, 0.01, 5.0) == pytest.approx(5.0)                      # X(1) = lam
    assert isinstance(usl(3, 0.1, 0.01, 1.0), float)


def test_peak_is_the_maximum():
    sigma, kappa, lam = 0.05, 2e-4, 1.0
    n_star, x_star = usl_peak(sigma, kappa, lam)
    assert n_star == pytest.approx(math.sqrt((1 - sigma) / kappa))
    grid = np.linspace(1, 400, 40_000)
    assert grid[np.argmax(usl(grid, sigma, kappa, lam))] == pytest.approx(n_star, abs=0.02)
    assert x_star == pytest.approx(usl(grid, sigma, kappa, lam).max(), rel=1e-8)
    assert usl_peak(0.1, 0.0, 2.0) == (math.inf, pytest.approx(20.0))


@pytest.mark.parametrize("sigma,kappa,lam", [(0.02, 1e-5, 0.9), (0.1, 5e-4, 2.0), (0.3, 0.0, 1.0)])
def test_fit_recovers_parameters_from_noisy_data(sigma, kappa, lam):
    rng = np.random.default_rng(1234)
    truth = usl(N_SWEEP, sigma, kappa, lam)
    x = truth * (1 + rng.normal(0, 0.01, len(N_SWEEP)))      # 1 % measurement noise
    fit = fit_usl(N_SWEEP, x, relative=True)
    assert fit.lam == pytest.approx(lam, rel=0.03)
    assert fit.sigma == pytest.approx(sigma, rel=0.1, abs=2e-3)
    assert fit.kappa == pytest.approx(kappa, rel=0.15, abs=2e-5)
    assert fit.kappa >= 0 and 0 <= fit.sigma <= 1
    true_peak = usl_peak(sigma, kappa, lam)
    if kappa > 0:
        assert fit.peak_n == pytest.approx(true_peak[0], rel=0.1)
        assert fit.peak_x == pytest.approx(true_peak[1], rel=0.03)
    # the fit is at least as good as the truth on its own objective's scale
    assert fit.rmse <= float(np.sqrt(np.mean((truth - x) ** 2))) * 1.5
    np.testing.assert_allclose(fit.predict(N_SWEEP), usl(N_SWEEP, fit.sigma, fit.kappa, fit.lam))


def test_exact_data_is_recovered_exactly():
    x = usl(N_SWEEP, 0.05, 3e-5, 1.5)
    fit = fit_usl(N_SWEEP, x)
    assert fit.sigma == pytest.approx(0.05, rel=1e-4)
    assert fit.kappa == pytest.approx(3e-5, rel=1e-3)
    assert fit.lam == pytest.approx(1.5, rel=1e-6)
    assert fit.rmse < 1e-6


def test_fit_of_a_closed_network_curve():
    # MVA's knee is sharper than USL's: the fit needs kappa > 0 even though the
    # MVA curve never falls, so a fitted kappa is not by itself a mechanism
    stations = [Station("w", "fcfs", 1.0), Station("net", "delay", 4.0)]
    r = mva_exact(stations, 64, 0.0)
    n = np.arange(1, 65)
    assert np.all(np.diff(r.throughput_curve) >= 0)
    fit = fit_usl(n, r.throughput_curve)
    assert fit.kappa > 0
    assert fit.rmse < 0.05 * r.throughput_curve.max()


def test_fit_validation():
    with pytest.raises(InputError, match="distinct"):
        fit_usl([1, 1, 2], [1.0, 1.0, 1.8])
    with pytest.raises(InputError, match="x"):
        fit_usl([1, 2, 4], [1.0, -1.0, 3.0])
    with pytest.raises(InputError, match="n"):
        fit_usl([0, 2, 4], [1.0, 1.0, 3.0])
