"""Morphling Go: low-variance serving loops and who serves a read.

Properties of the mechanism, not fitted numbers: the closed loop with
low-variance service (model.blocks.closed_loop_scv) against exact MVA and a
small simulation, Little's law, monotone saturation, and the read paths'
ceilings in the embedded profile.
"""

from __future__ import annotations

import heapq
import math
import random

import pytest

from model.blocks import closed_loop, closed_loop_scv
from model.errors import InputError
from model.systems import morphling
from runio.inputs import load_profile


@pytest.mark.parametrize("n,z,d,c", [(1, 200.0, [30.0], [1]), (8, 200.0, [30.0, 5.0], [1, 1]),
                                     (40, 150.0, [30.0, 5.0, 12.0], [1, 1, 2]),
                                     (3, 0.0, [10.0, 10.0], [1, 1])])
def test_exponential_service_is_exact_mva(n, z, d, c):
    a, b = closed_loop(n, z, d, c), closed_loop_scv(n, z, d, c, 1.0)
    assert b.throughput == pytest.approx(a.throughput, rel=1e-9)
    assert b.response == pytest.approx(a.response, rel=1e-9)


@pytest.mark.parametrize("scv", [0.0, 0.3, 1.0])
def test_littles_law_monotone_and_saturating(scv):
    z, d, c = 210.0, [33.0, 8.0, 17.0], [1, 1, 1]
    x_max = 1 / 33.0
    prev_x, prev_cycle = 0.0, 0.0
    for n in range(1, 121):
        cl = closed_loop_scv(n, z, d, c, scv)
        assert cl.throughput * (z + cl.response) == pytest.approx(n, rel=1e-9)  # Little
        assert cl.throughput <= x_max * (1 + 1e-12)
        assert cl.throughput >= prev_x - 1e-15          # more clients never lower X
        assert cl.cycle >= prev_cycle - 1e-9            # nor shorten the cycle
        prev_x, prev_cycle = cl.throughput, cl.cycle
    far = closed_loop_scv(400, z, d, c, scv)
    assert far.throughput == pytest.approx(x_max, rel=1e-6)
    # past the knee every added client adds 1/X_max to the cycle
    assert closed_loop_scv(401, z, d, c, scv).cycle - far.cycle == pytest.approx(33.0, rel=1e-3)


def test_lower_variance_means_less_waiting_below_saturation():
    z, d = 210.0, [33.0]
    assert closed_loop_scv(1, z, d, None, 0.0).throughput == \
        pytest.approx(closed_loop_scv(1, z, d, None, 1.0).throughput)
    for n in (4, 6, 8, 10):
        x0 = closed_loop_scv(n, z, d, None, 0.0).throughput
        x1 = closed_loop_scv(n, z, d, None, 1.0).throughput
        assert x0 > x1


def _simulate(n: int, z: float, s: float, completions: int, seed: int) -> float:
    """Closed loop: exponential think z, one FCFS server with constant service s."""
    rng = random.Random(seed)
    arrivals = [rng.expovariate(1 / z) for _ in range(n)]
    heapq.heapify(arrivals)
    free_at, done, t0 = 0.0, 0, None
    warm = completions // 10
    while done < completions + warm:
        a = heapq.heappop(arrivals)
        start = max(a, free_at)
        free_at = start + s
        done += 1
        if done == warm:
            t0 = free_at
        heapq.heappush(arrivals, free_at + rng.expovariate(1 / z))
    return completions / (free_at - t0)


@pytest.mark.parametrize("n", [4, 8, 12])
def test_constant_service_approximation_against_simulation(n):
    z, s = 210.0, 30.0
    sim = _simulate(n, z, s, 60000, seed=n)
    amva = closed_loop_scv(n, z, [s], None, 0.0).throughput
    mva = closed_loop(n, z, [s]).throughput
    assert amva == pytest.approx(sim, rel=0.05)     # ~3 % at the knee (8), <1 % elsewhere
    assert abs(amva - sim) <= abs(mva - sim)        # closer than exponential MVA


def test_bad_scv_is_refused():
    with pytest.raises(InputError):
        closed_loop_scv(2, 10.0, [1.0], None, -0.5)


def test_go_read_paths_who_sets_each_ceiling():
    p = load_profile("morphling-go")
    cap_u, who_u = morphling.go_capacity("unreplicated", p)
    cap_m, who_m = morphling.go_capacity("morphling", p)
    cap_r, who_r = morphling.go_capacity("raft", p)
    c = int(p["server_cores"])
    client = 2 / p["client_cpu_us"]
    # Morphling reads are spread over the serving replicas' core pools
    r = int(p["morphling_replicas"])
    assert r >= 2
    assert cap_m == pytest.approx(min(r * c / p["read_us"], client), rel=1e-9)
    # an unreplicated read: the one server's core pool (or the client machines)
    assert cap_u == pytest.approx(min(c / p["read_us"], client), rel=1e-9)
    assert who_u in ("server pool", "client machine 1")
    # a Raft read: the leader's pool does the read and an exchange with each
    # follower, each a read's worth of network work: replicas x read_us
    assert cap_r == pytest.approx(min(c / (p["replicas"] * p["read_us"]), client), rel=1e-9)
    assert who_r == "leader pool"
    assert cap_r < cap_u <= cap_m


@pytest.mark.parametrize("mode", ["unreplicated", "morphling", "raft"])
def test_go_closed_loop_littles_law_and_saturation(mode):
    p = load_profile("morphling-go")
    cap, _ = morphling.go_capacity(mode, p)
    xs = []
    for n in (1, 2, 4, 8, 16, 32, 64, 256):
        x, lat = morphling.go_solve(mode, n, p)
        assert x * lat == pytest.approx(n, rel=1e-6)     # clients = ops x latency
        assert x <= cap * (1 + 1e-9)
        xs.append(x)
    assert xs == sorted(xs)
    assert xs[-1] == pytest.approx(cap, rel=0.02)


def test_go_loop_variance_changes_waiting_not_ceiling():
    p = load_profile("morphling-go")
    exp_p = p.with_values({"loop_scv": 1.0}, "test")
    for mode in ("unreplicated", "raft"):
        x0, l0 = morphling.go_solve(mode, 8, p)
        x1, l1 = morphling.go_solve(mode, 8, exp_p)
        assert l0 < l1 and x0 > x1
        assert morphling.go_capacity(mode, p)[0] == morphling.go_capacity(mode, exp_p)[0]
        # unreplicated: the client machines and the server's pool are nearly
        # balanced, so both loops creep up to the one ceiling slowly
        assert morphling.go_solve(mode, 512, p)[0] == pytest.approx(
            morphling.go_solve(mode, 512, exp_p)[0], rel=5e-3)
