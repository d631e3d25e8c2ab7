"""The fast kernel's logarithm (sim.fast_kernel._log): glibc's algorithm,
inline, so that an exponential draw is the one libm's log gave, to the bit."""

import math
import platform

import numpy as np
from llvmlite import binding
from numba import njit

from sim import fast_kernel as F


@njit
def _kernel_logs(xs):
    out = np.empty_like(xs)
    for i in range(xs.shape[0]):
        out[i] = F.fast_log(xs[i])
    return out


@njit
def _libm_logs(xs):
    out = np.empty_like(xs)
    for i in range(xs.shape[0]):
        out[i] = math.log(xs[i])
    return out


def _libm_is_glibc_fma() -> bool:
    """Is libm's log here the one the kernel copies: glibc 2.28 or later on
    x86-64, which takes its FMA build on a CPU with FMA?"""
    lib, version = platform.libc_ver()
    if lib != "glibc" or platform.machine() != "x86_64":
        return False
    if tuple(int(v) for v in version.split(".")[:2]) < (2, 28):
        return False
    return bool(binding.get_host_cpu_features().get("fma", False))


def _arguments() -> np.ndarray:
    rng = np.random.default_rng(11)
    near1_hi = 1.0 + float.fromhex("0x1.09p-4")
    edges = np.array([1.0, 1.0 - 1.0 / 16, near1_hi, float.fromhex("0x1.6p-1"), 0.5, 2.0,
                      2.0 ** -53, 1e-300, 1e300, 5e-324, 0.0, -1.0, np.inf, np.nan])
    return np.concatenate([
        1.0 - rng.integers(0, 2 ** 53, 2_000_000) * 2.0 ** -53,   # the kernel's: 1 - u
        1.0 - rng.integers(0, 2 ** 24, 200_000) * 2.0 ** -53,     # u tiny: the path near 1
        1.0 + rng.uniform(-0.07, 0.07, 400_000),                  # both sides of that path's ends
        10.0 ** rng.uniform(-300.0, 300.0, 400_000),              # every binade
        edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf),
    ])


def test_the_kernel_log_is_libm_log():
    xs = _arguments()
    got, want = _kernel_logs(xs), _libm_logs(xs)
    same = (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))
    if _libm_is_glibc_fma():
        bad = np.nonzero(~same)[0]
        assert len(bad) == 0, [(xs[i].hex(), got[i].hex(), want[i].hex()) for i in bad[:5]]
    else:
        # another libm: both are within about half an ulp of the true value
        finite = np.isfinite(want) & (xs > 0)
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]) + 1e-300)
        assert np.all(same[~finite]) and ulps.max() <= 1.0


def test_exponential_draws_take_the_kernel_log():
    # -mean * log(1 - u), with u the generator's next uniform (inverse CDF)
    rs = F.seed_state(7)
    st = tuple(np.uint64(x) for x in rs)
    lg, after = njit(lambda s: F.log_draw(s))(st)
    u, after_u = njit(lambda s: F.u01(s))(st)
    assert lg == F.fast_log(1.0 - u) and tuple(after) == tuple(after_u)
    e, _ = njit(lambda s, m: F.exponential(s, m))(st, 3.0)
    assert e == -3.0 * lg
