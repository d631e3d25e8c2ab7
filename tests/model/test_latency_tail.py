"""The analytic latency percentiles (model.solvers.latency_tail): laws and exact cases.

The parity racks (tests/parity) hold the form to the simulator; here: the
mixture's mean is Little's law's latency, the percentiles are ordered and
move with the mechanisms they come from, and a one-thread loop (no queue,
so the response time is a known sum) is matched by a numerical convolution.
"""

import math

import numpy as np
import pytest
from scipy import signal, stats

from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers import latency_tail
from model.solvers.analytic import solve_many
from runio.inputs import load_profile


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


RACKS = {
    "default": {},
    "nocache": {"switch.cache": False},
    "4 servers, 64 clients": {"servers.count": 4, "clients.threads": 64},
    "128 servers": {"servers.count": 128},
    "uniform": {"workload.distribution": "uniform"},
}


@pytest.fixture(scope="module")
def solved(profile):
    scs = {n: Scenario.default().updated(ch) for n, ch in RACKS.items()}
    specs = {n: compile_rack(sc, profile) for n, sc in scs.items()}
    preds = solve_many(list(specs.values()))
    return {n: (specs[n], p) for n, p in zip(specs, preds)}


@pytest.mark.parametrize("name", list(RACKS))
def test_mixture_mean_is_littles_law(solved, name):
    """The distribution is built from the same solved rack: its mean is the
    cycle's (N / X) where no thread is away behind a block."""
    spec, pred = solved[name]
    pc = pred.details["latency_us_percentiles"]
    assert pc["mean_us"] == pytest.approx(pred.client.latency_us, rel=0.02)


@pytest.mark.parametrize("name", list(RACKS))
def test_percentiles_are_ordered_and_positive(solved, name):
    _, pred = solved[name]
    pc = pred.details["latency_us_percentiles"]
    vals = [pc[k] for k in ("p50", "p90", "p95", "p99", "p999")]
    assert all(math.isfinite(v) and v > 0 for v in vals)
    assert vals == sorted(vals)
    # the shortest reply is a hit's (or a miss's) round trip plus the send
    assert pc["p50"] >= min(pred.client.send_us, 1.0)


def test_a_lost_request_waits_out_its_timeout(profile):
    """With a small buffer and a 50 ms timeout about one request in a hundred
    is lost: the p99.9 includes a timeout, the p50 does not."""
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 512,
                                     "servers.rcvbuf_kb": 16, "clients.timeout_ms": 50.0})
    spec = compile_rack(sc, profile)
    pred = solve_many([spec])[0]
    lost = pred.details["lost_per_request"]
    assert 0.002 < lost < 0.5
    pc = pred.details["latency_us_percentiles"]
    assert pc["p999"] > spec.clients.timeout_us
    assert pc["p50"] < spec.clients.timeout_us / 10


def test_more_clients_lengthen_the_tail(profile):
    """At a saturated rack more threads only queue: every percentile rises."""
    base = Scenario.default()
    specs = [compile_rack(base.updated({"clients.threads": n}), profile) for n in (1024, 2048)]
    a, b = (p.details["latency_us_percentiles"] for p in solve_many(specs))
    for k in ("p50", "p95", "p99"):
        assert b[k] > a[k]


def test_one_thread_matches_the_exact_convolution(profile):
    """One thread, one worker, no cache: no queue anywhere, so a request is
    send + round trip + a client-core stay (exponential) + one service
    (fixed part + gamma): its percentiles by numerical convolution."""
    sc = Scenario.default().updated({"servers.count": 1, "clients.threads": 1,
                                     "switch.cache": False})
    spec = compile_rack(sc, profile)
    pred = solve_many([spec])[0]
    pc = pred.details["latency_us_percentiles"]
    c, sv = spec.clients, spec.service
    d = pred.details
    cc = d["client_cores_us_per_request"]
    S = pred.servers[0].process_us + sv.recv_floor_us + sv.gap_us
    R = d["residence_us"][0]
    assert R == pytest.approx(S, rel=1e-6)          # nobody ahead, nobody in service
    fixed = sv.recv_floor_us + sv.gap_us
    var_part = S - fixed
    shape = 1.0 / sv.cv ** 2
    dx = 0.05
    x = np.arange(0, 20 * (cc + S), dx)
    f_client = stats.expon(scale=cc).pdf(x) if cc > 0 else None
    f_service = stats.gamma(shape, scale=var_part / shape).pdf(x)
    # by FFT: the direct sum of two 10^5-point densities took over a minute
    dens = signal.fftconvolve(f_client, f_service)[: x.size] * dx if f_client is not None \
        else f_service
    cdf = np.cumsum(dens) * dx
    shift = c.send_us + c.miss_rtt_us + fixed
    for k, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        exact = shift + x[np.searchsorted(cdf, q)]
        # one gamma matched to the sum's mean and variance: a few % off the
        # exact sum at most
        assert pc[k] == pytest.approx(exact, rel=0.05), k


def test_no_goodput_has_no_percentiles():
    # the local profile has no timer floor: a strict 1 us timeout is shorter
    # than any round trip, so no request completes
    sc = Scenario.default().updated({"clients.retry": "strict", "clients.timeout_ms": 0.001})
    spec = compile_rack(sc, load_profile("local"))
    pred = solve_many([spec])[0]
    assert pred.throughput_mops == 0
    pc = pred.details.get("latency_us_percentiles", {})
    assert not pc or all(not math.isfinite(v) for v in pc.values())


def test_quantiles_cover_what_the_simulator_reports():
    # both engines fill details["latency_us_percentiles"] with these keys
    assert set(latency_tail.QUANTILES) == {"p50", "p90", "p95", "p99", "p999"}
