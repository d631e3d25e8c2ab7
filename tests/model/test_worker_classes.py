"""Worker classes (native/mva/lump.cpp): a wide rack's near-identical workers
solved once, counted as many times as they are workers.

It is an approximation of the solution (rack_step.LUMP_TOL, from
rack_step.LUMP_MIN workers on the Schweitzer path), so it is held to the
solve of every worker: exactly where the workers of a class are identical,
within the stated error where they differ by up to LUMP_TOL (docs/model.md,
"Worker classes").
"""

from __future__ import annotations

import numpy as np
import pytest

from model.profile import Profile
from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers import analytic, mva_core, rack_step

pytestmark = pytest.mark.skipif(rack_step._solve_racks is None, reason="native/mva is not built")


@pytest.fixture(scope="module")
def profile():
    return Profile.load("tofino-testbed")


def _both(spec, monkeypatch):
    """(classes, every worker)"""
    monkeypatch.setattr(rack_step, "LUMP_TOL", 0.005)
    grouped = analytic.solve(spec)
    monkeypatch.setattr(rack_step, "LUMP_TOL", 0.0)
    every = analytic.solve(spec)
    return grouped, every


def _per_worker(p, name):
    return np.array([getattr(s, name) for s in p.servers])


def _rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def test_identical_workers_give_the_solve_of_every_worker(profile, monkeypatch, tmp_path):
    """1,024 workers with the same load on 16 machines of 16 cores: each
    machine's 64 workers are one class. Every sum over the rack (machine
    load, busy peers by elimination, the Schweitzer queues, the timeout
    delay) must count the class's workers, or the answer moves."""
    n = 1024
    desc = tmp_path / "equal.toml"
    desc.write_text('kind = "measured"\nhit_ratio = 0.39\ncache = true\n'
                    f'load_ratio = [{", ".join(["1.0"] * n)}]\n')
    clients = mva_core.N_EXACT + 16                 # past N_EXACT: the Schweitzer path
    sc = Scenario.default().updated({
        "servers.count": n, "clients.threads": clients, "workload.profile": str(desc),
        "servers.machines": 16, "servers.cores": 16})
    spec = compile_rack(sc, profile)
    assert np.ptp(spec.placement.shares) == 0 and np.ptp(spec.service.flat_us) == 0
    assert n >= rack_step.LUMP_MIN and mva_core._approximate(np.array([clients]), n)[0]
    grouped, every = _both(spec, monkeypatch)
    assert every.servers[0].process_us > 1.05 * (spec.service.flat_us[0])   # peers do slow it
    assert _rel(grouped.throughput_mops, every.throughput_mops) < 1e-9
    assert _rel(grouped.client.latency_us, every.client.latency_us) < 1e-9
    for name in ("process_us", "wait_us", "utilization"):
        np.testing.assert_allclose(_per_worker(grouped, name), _per_worker(every, name), rtol=1e-9)


@pytest.mark.parametrize("servers, clients, extra", [
    (4096, 65_536, {}),
    (1024, 32_768, {}),
    (2048, 20_000, {"servers.machines": 32, "servers.cores": 16}),
    (2048, 40_000, {"switch.cache": False}),
])
def test_classes_stay_within_their_stated_error(servers, clients, extra, profile, monkeypatch):
    """Workers whose share, cost and write rates agree within 0.5 % solved
    as one: throughput and latency within 1e-5, lost packets within 1 %, each
    worker's process time within 0.5 % and its utilisation within 0.005.
    And the classes are in use: the answers are not those of every worker."""
    sc = Scenario.default().updated({"servers.count": servers, "clients.threads": clients,
                                     **extra})
    spec = compile_rack(sc, profile)
    grouped, every = _both(spec, monkeypatch)
    assert _rel(grouped.throughput_mops, every.throughput_mops) < 1e-5
    assert _rel(grouped.client.latency_us, every.client.latency_us) < 1e-5
    assert abs(grouped.pktloss - every.pktloss) <= 0.01 * max(every.pktloss, 100.0)
    proc_g, proc_e = _per_worker(grouped, "process_us"), _per_worker(every, "process_us")
    assert np.max(np.abs(proc_g / proc_e - 1.0)) < 5e-3
    util_g, util_e = _per_worker(grouped, "utilization"), _per_worker(every, "utilization")
    assert np.max(np.abs(util_g - util_e)) < 5e-3
    assert not np.array_equal(proc_g, proc_e)
    # and the diagnosis is the same
    assert grouped.bottleneck.kind == every.bottleneck.kind


def test_narrow_racks_are_solved_worker_by_worker(profile, monkeypatch):
    """Below LUMP_MIN workers nothing is grouped: the same answer to the bit."""
    servers = rack_step.LUMP_MIN // 2
    sc = Scenario.default().updated({"servers.count": servers,
                                     "clients.threads": mva_core.N_EXACT + 100})
    spec = compile_rack(sc, profile)
    grouped, every = _both(spec, monkeypatch)
    assert grouped.throughput_mops == every.throughput_mops
    assert np.array_equal(_per_worker(grouped, "process_us"), _per_worker(every, "process_us"))
