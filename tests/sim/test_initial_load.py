"""The simulators' starting load (sim.dynamics.initial_load): the product-form
X(N) of the rack, from the analytic solver's MVA core, for any population."""

import numpy as np
import pytest

from model.profile import Profile
from model.queueing import Station, mva_exact
from model.rack import compile_rack
from model.rack import service as svc_mech
from model.scenario import Scenario
from sim.dynamics import initial_load


@pytest.fixture(scope="module")
def profile():
    return Profile.load("tofino-testbed")


def test_a_small_rack_starts_at_the_exact_mva_throughput(profile):
    spec = compile_rack(Scenario.default().updated({"servers.count": 4, "clients.threads": 64}),
                        profile)
    util, _, x = initial_load(spec)
    sv, pl, c = spec.service, spec.placement, spec.clients
    ones = np.ones(spec.servers)
    svc = svc_mech.cost_at(sv, np.zeros(spec.servers)) * svc_mech.load_factor(
        ones, svc_mech.busy_peers(ones, np.asarray(pl.machine_of)), sv.idle_penalty,
        sv.share_penalty) + sv.recv_floor_us + sv.gap_us
    think = c.send_us + pl.hit_ratio * c.hit_rtt_us + (1 - pl.hit_ratio) * c.miss_rtt_us
    ref = mva_exact([Station(f"w{i}", "fcfs", float(d)) for i, d in
                     enumerate(np.asarray(pl.shares) * svc)], c.threads, think)
    assert x == pytest.approx(ref.throughput, rel=1e-9)
    np.testing.assert_allclose(util, ref.utilization, rtol=1e-9)


def test_a_rack_of_hundreds_of_thousands_of_clients_starts(profile):
    # a simulator soak rack: 687,883 clients on 50 workers. The fixed-point
    # iteration used here before raised "approximate MVA did not converge in
    # 100000 iterations" before the simulation began.
    sc = Scenario.default().updated({"clients.threads": 687883, "servers.count": 50,
                                     "servers.machines": 2, "workload.zipf_theta": 0.32,
                                     "switch.partition": "range", "workload.key_bytes": 611})
    util, mbps, x = initial_load(compile_rack(sc, profile))
    assert np.isfinite(x) and x > 0
    assert util.max() == pytest.approx(1.0, abs=1e-3)          # the hottest worker saturated
    assert np.all(np.isfinite(mbps))
