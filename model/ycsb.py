"""YCSB 0.17's key chooser, as arithmetic (docs/workload.md, section 1).

What the public code does (``site.ycsb.workloads.CoreWorkload`` with
``requestdistribution=zipfian``, the same in FarReach's fork):

* ``ScrambledZipfianGenerator(0, recordcount)``: both bounds inclusive, so
  ``itemcount = recordcount + 1``. Each draw takes a rank ``v`` from
  ``ZipfianGenerator(0, ITEM_COUNT)`` (``ITEM_COUNT = 10^10``, so
  ``10^10 + 1`` ranks, with the precomputed ``ZETAN`` when the constant is
  0.99) and returns ``fnvhash64(v) % (recordcount + 1)``.
* ``CoreWorkload.nextKeynum`` redraws while the key number exceeds the last
  inserted one (``recordcount - 1``): the one out-of-range value
  ``recordcount`` is redrawn, which conditions the distribution on
  ``keynum < recordcount``.
* The ``ZipfianGenerator`` is Gray et al.'s algorithm, not the true zipf pmf:
  ranks 0 and 1 get ``1/zetan`` and ``0.5^theta/zetan``; a rank ``v >= 2`` gets
  ``G(v+1) - G(v)`` with ``G(x) = (x/items)^(1-theta)/eta`` (see
  :func:`rank_pmf`). Its CDF is closed form.
* ``uniform`` is ``UniformLongGenerator(0, recordcount - 1)``; ``sequential``
  is ``SequentialGenerator(0, recordcount - 1)``.

This repository's own load generator (``native/kv/ycsb.cpp``, generator
``kvperf``) takes ``fnvhash64(v) % recordcount`` with no redraw; both are
offered (:func:`modulus`).

Also here: exact and vectorized partial sums of ``r^-theta``
(:func:`zipf_sum`), used by the rank-ordered workload profiles.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError

ITEM_COUNT = 10**10                # ScrambledZipfianGenerator.ITEM_COUNT
ZETAN = 26.46902820178302          # ScrambledZipfianGenerator.ZETAN: zeta(10^10, 0.99)
USED_ZIPFIAN_CONSTANT = 0.99
GENERATORS = ("ycsb", "kvperf")

_FNV_BASIS = 0xCBF29CE484222325
_FNV_PRIME = 1099511628211
_M64 = (1 << 64) - 1


# ---------------------------------------------------------------- hashing
def fnvhash64(x: int) -> int:
    """YCSB ``Utils.fnvhash64``: FNV-1a over the 8 bytes of ``x`` (low byte
    first), then Java ``Math.abs`` of the signed result (so ``-2**63`` stays
    negative, as in Java)."""
    h = _FNV_BASIS
    x &= _M64
    for _ in range(8):
        h = ((h ^ (x & 0xFF)) * _FNV_PRIME) & _M64
        x >>= 8
    if h >= 1 << 63:
        h -= 1 << 64
    return abs(h) if h != -(1 << 63) else h


def fnvhash64_np(x) -> np.ndarray:
    """Vectorized :func:`fnvhash64`; returns int64 (uint64 wraparound is the
    Java long overflow)."""
    x = np.asarray(x).astype(np.uint64)  # two's complement for negatives
    h = np.full(x.shape, _FNV_BASIS, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    mask, eight = np.uint64(0xFF), np.uint64(8)
    for _ in range(8):
        h ^= x & mask
        h *= prime
        x = x >> eight
    s = h.view(np.int64)
    # Java Math.abs: abs(MIN) == MIN; numpy's abs does the same wraparound.
    return np.where(s < 0, -s, s)


# ------------------------------------------------------- YCSB zipfian pmf
def zeta(n: int, theta: float) -> float:
    """Σ_{k=1..n} k^-θ: exact below 10^6 terms, Euler–Maclaurin beyond
    (error < 1e-13 relative: next term ~ θ(θ+1)(θ+2) 10^-6^(θ+3)/720)."""
    m = min(n, 10**6)
    s = float(np.sum(np.arange(1, m + 1, dtype=np.float64) ** -theta))
    if n > m:
        s += float(_em_sum(float(m + 1), float(n), theta))
    return s


def _em_sum(a, b, theta):
    """Σ_{r=a..b} r^-θ for a >= 10^6 by Euler–Maclaurin (vectorized)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if theta == 1.0:
        integ = np.log(b / a)
    else:
        integ = (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
    f = lambda x: x ** -theta  # noqa: E731
    fp = lambda x: -theta * x ** (-theta - 1)  # noqa: E731
    return integ + (f(a) + f(b)) / 2 + (fp(b) - fp(a)) / 12


@dataclass(frozen=True)
class ZipfParams:
    """YCSB ZipfianGenerator constants for ``items`` values, ranks 0..items-1."""
    items: int
    theta: float
    zetan: float
    eta: float
    alpha: float

    @classmethod
    @functools.lru_cache(maxsize=64)
    def make(cls, theta: float, items: int | None = None) -> "ZipfParams":
        """``items=None``: YCSB's ``ZipfianGenerator(0, ITEM_COUNT)`` as the
        scrambled generator builds it (ITEM_COUNT + 1 ranks, ZETAN for 0.99)."""
        if items is None:
            items = ITEM_COUNT + 1  # ZipfianGenerator(0, ITEM_COUNT): inclusive
            zetan = ZETAN if theta == USED_ZIPFIAN_CONSTANT else zeta(items, theta)
        else:
            zetan = zeta(items, theta)
        if items < 3:
            raise InputError("zipf needs at least 3 items", field="workload.items")
        zeta2 = 1.0 + 0.5 ** theta
        eta = (1 - (2.0 / items) ** (1 - theta)) / (1 - zeta2 / zetan)
        return cls(items, theta, zetan, eta, 1.0 / (1.0 - theta))

    def cdf(self, x):
        """P(rank < x) for x >= 2 (vectorized)."""
        x = np.asarray(x, dtype=np.float64)
        return 1.0 - (1.0 - (x / self.items) ** (1 - self.theta)) / self.eta


def rank_pmf(params: ZipfParams, h: int) -> np.ndarray:
    """Probabilities of ranks 0..h-1 as YCSB's generator produces them."""
    h = min(h, params.items)
    p = np.empty(h)
    p[:2] = [1 / params.zetan, 0.5 ** params.theta / params.zetan][:h]
    if h > 2:
        # G(v+1) - G(v) computed as a difference of powers scaled once.
        g = (np.arange(2, h + 1, dtype=np.float64) / params.items) ** (1 - params.theta)
        p[2:] = np.diff(g) / params.eta
    if h == params.items:
        p[-1] += 1.0 - params.cdf(h)  # u -> 1 rounding slack (~0)
    return p


def sample_ranks(n: int, zp: ZipfParams, rng: np.random.Generator) -> np.ndarray:
    """``n`` ranks drawn by Gray et al.'s algorithm (``ZipfianGenerator.nextLong``)."""
    u = rng.random(n)
    uz = u * zp.zetan
    with np.errstate(over="ignore"):
        v = np.floor(zp.items * np.power(zp.eta * u - zp.eta + 1, zp.alpha))
    return np.where(uz < 1.0, 0, np.where(uz < 1.0 + 0.5 ** zp.theta, 1, v)).astype(np.int64)


def modulus(records: int, generator: str) -> int:
    """The value the scrambled rank hash is taken modulo: ``records + 1`` for
    YCSB (inclusive upper bound, out-of-range draw redrawn), ``records`` for
    this repository's load generator."""
    if generator == "ycsb":
        return records + 1
    if generator == "kvperf":
        return records
    raise InputError(f"unknown generator {generator!r}; allowed: {', '.join(GENERATORS)}",
                     field="workload.generator")


def sample_keynums(n: int, records: int, theta: float, rng: np.random.Generator,
                   distribution: str = "zipf", generator: str = "ycsb",
                   items: int | None = None) -> np.ndarray:
    """Draw ``n`` key numbers exactly as the generator does (zipf: Gray's
    rank, fnvhash64, modulo, YCSB's redraw; uniform; sequential from 0)."""
    if distribution == "uniform":
        return rng.integers(0, records, size=n)
    if distribution == "sequential":
        return np.arange(n, dtype=np.int64) % records
    if distribution != "zipf":
        raise InputError(f"unknown distribution {distribution!r}", field="workload.distribution")
    zp = ZipfParams.make(theta, items)
    m = modulus(records, generator)
    out = fnvhash64_np(sample_ranks(n, zp, rng)) % m
    if m != records:
        # CoreWorkload.nextKeynum: redraw while keynum > recordcount - 1
        bad = np.flatnonzero(out >= records)
        while len(bad):
            out[bad] = fnvhash64_np(sample_ranks(len(bad), zp, rng)) % m
            bad = bad[out[bad] >= records]
    return out


# ------------------------------------------------- partial sums of r^-θ
_TABLE_LEN = 1 << 20


@functools.lru_cache(maxsize=8)
def _cum_table(theta: float) -> np.ndarray:
    """C[k] = Σ_{r=1..k} r^-θ for k = 0.._TABLE_LEN."""
    c = np.zeros(_TABLE_LEN + 1)
    c[1:] = np.cumsum(np.arange(1, _TABLE_LEN + 1, dtype=np.float64) ** -theta)
    c.setflags(write=False)
    return c


def zipf_cum(x, theta: float) -> np.ndarray:
    """Z(x) = Σ_{r=1..x} r^-θ for integer x >= 0 (vectorized): a table up to
    2^20, Euler–Maclaurin beyond (relative error < 1e-15 per term)."""
    x = np.asarray(x, dtype=np.float64)
    c = _cum_table(theta)
    small = x <= _TABLE_LEN
    out = np.empty_like(x)
    out[small] = c[x[small].astype(np.int64)]
    big = ~small
    if np.any(big):
        out[big] = c[-1] + _em_sum(float(_TABLE_LEN + 1), x[big], theta)
    return out


def zipf_sum(a, b, theta: float) -> np.ndarray:
    """Σ_{r=a..b-1} r^-θ for integers 1 <= a <= b (vectorized)."""
    return zipf_cum(np.asarray(b) - 1, theta) - zipf_cum(np.asarray(a) - 1, theta)
