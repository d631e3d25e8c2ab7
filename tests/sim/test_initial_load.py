"""The simulators' starting load (sim.dynamics.initial_load): the analytic
solver's answer for the same rack in the run's first state (its first
phase), for any population."""

from dataclasses import replace

import numpy as np
import pytest

from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers.analytic import solve
from sim.dynamics import MIB, RackDynamics, initial_load
from sim.run import FastSimulator
from runio.inputs import load_profile



@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def test_a_small_rack_starts_at_the_analytic_solvers_answer(profile):
    spec = compile_rack(Scenario.default().updated({"servers.count": 4, "clients.threads": 64}),
                        profile)
    util, mbps, x = initial_load(spec)
    pred = solve(replace(spec, queries=1.0))          # the run's first phase
    assert x == pred.throughput_mops and x > 0
    np.testing.assert_array_equal(util, [s.utilization for s in pred.servers])
    pl = spec.placement
    writes = x * 1e6 * np.asarray(pl.shares) * np.asarray(pl.write_frac)
    want = np.bincount(np.asarray(pl.machine_of), weights=writes * spec.lsm.entry_bytes,
                       minlength=pl.machines) / MIB
    np.testing.assert_allclose(mbps, want, rtol=1e-12)
    # the simulator's first second runs at those utilisations and write rates
    cfg, dyn = FastSimulator(1.0, 1).config(spec)
    np.testing.assert_array_equal(dyn.util, util)
    np.testing.assert_array_equal(dyn.machine_mbps, mbps)
    fresh = RackDynamics(spec, cfg)                 # the same start when it solves itself
    np.testing.assert_array_equal(fresh.util, util)


def test_a_rack_of_hundreds_of_thousands_of_clients_starts(profile):
    # a simulator soak rack: 687,883 clients on 50 workers. The fixed-point
    # iteration used here once raised "approximate MVA did not converge in
    # 100000 iterations" before the simulation began.
    sc = Scenario.default().updated({"clients.threads": 687883, "servers.count": 50,
                                     "servers.machines": 2, "workload.zipf_theta": 0.32,
                                     "switch.partition": "range", "workload.key_bytes": 611})
    util, mbps, x = initial_load(compile_rack(sc, profile))
    assert np.isfinite(x) and x > 0
    assert np.all((util >= 0) & (util <= 1)) and util.max() > 0.9   # the hottest worker busy
    assert np.all(np.isfinite(mbps)) and mbps.sum() > 0


def test_a_rack_without_goodput_starts_with_nothing_written(profile):
    # strict clients whose timeout is shorter than any reply: no request ever
    # completes (the analytic answer is zero throughput); the workers start
    # busy with the stuck threads' resends and the machines write nothing
    # (no timer floor: the kernel's tick would otherwise lengthen the timeout)
    profile = profile.with_values({"timer_floor_ms": 0.0}, "test")
    sc = Scenario.default().updated({"servers.count": 4, "clients.threads": 64,
                                     "clients.retry": "strict", "clients.timeout_ms": 0.001})
    spec = compile_rack(sc, profile)
    util, mbps, x = initial_load(spec)
    assert x == 0.0
    assert np.all(mbps == 0.0) and mbps.shape == (spec.placement.machines,)
    assert np.all(np.isfinite(util)) and np.all((util >= 0) & (util <= 1))
    cfg, dyn = FastSimulator(1.0, 1).config(spec)           # and a run can still be set up
    assert np.all(np.isfinite(cfg.service_mean_us))
