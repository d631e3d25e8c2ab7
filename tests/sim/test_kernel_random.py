"""The fast kernel's own generator (sim.fast_kernel: xoshiro256+, seeded by
splitmix64): the compiled uint64 arithmetic is the published algorithm, and
its uniforms and exponentials have the right distribution."""

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from sim import fast_kernel as F

M64 = 0xFFFFFFFFFFFFFFFF


@njit
def _uniforms(rs, n):
    """n uniforms of the compiled generator from state rs (advanced in place),
    the state carried as the kernel carries it (a tuple of four words)."""
    st = (rs[0], rs[1], rs[2], rs[3])
    out = np.empty(n)
    for i in range(n):
        out[i], st = F.u01(st)
    rs[0], rs[1], rs[2], rs[3] = st
    return out


@njit
def _exponentials(rs, mean, n):
    st = (rs[0], rs[1], rs[2], rs[3])
    out = np.empty(n)
    for i in range(n):
        out[i], st = F.exponential(st, mean)
    rs[0], rs[1], rs[2], rs[3] = st
    return out


def reference_xoshiro256plus(state, n):
    """Blackman and Vigna's xoshiro256+ in plain Python integers."""
    s = [int(x) for x in state]
    out = []
    for _ in range(n):
        r = (s[0] + s[3]) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & M64
        out.append((r >> 11) * 2.0 ** -53)
    return out


def test_splitmix64_seeding_matches_its_published_first_output():
    # splitmix64 from seed 0: first output 0xE220A8397B1DCDAF (Vigna's splitmix64.c)
    assert int(F.seed_state(0)[0]) == 0xE220A8397B1DCDAF
    assert not np.array_equal(F.seed_state(1), F.seed_state(2))


@pytest.mark.parametrize("seed", [0, 1, 12345, 2 ** 40 + 7])
def test_compiled_generator_is_xoshiro256plus(seed):
    rs = F.seed_state(seed)
    want = reference_xoshiro256plus(rs.copy(), 2000)
    got = list(_uniforms(rs, 1000)) + list(_uniforms(rs, 1000))    # the state carries on
    assert got == want


def test_uniforms_and_exponentials_have_their_distributions():
    rs = F.seed_state(3)
    u = _uniforms(rs, 100_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    e = _exponentials(rs, 7.0, 100_000)
    assert np.all(np.isfinite(e)) and e.min() >= 0.0
    assert stats.kstest(e, "expon", args=(0.0, 7.0)).pvalue > 1e-3
    assert e.mean() == pytest.approx(7.0, rel=4 * 1 / math.sqrt(100_000))
