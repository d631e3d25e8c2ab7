"""Racks with two equilibria: which one the analytic solver reports.

Near the timeout-delay root some racks have two consistent states, one
losing many packets (timeouts keep the queues short) and one losing few
(the queues fill again); which one the root search settles on depends on
its path (docs/model.md, section 3). The simulator shows which one a run
is in. These plan rows (benchmarks/bench_predict.py: 4 MiB memtables, so
WAL switches every few seconds) settled on the loss-light state while the
simulator loses two to three times as many packets, until the search's first
top became N / X (all clients asleep) instead of implied(0).
"""

import pytest

from model.farreach_kinds import farreach_scenario
from model.profile import Profile
from model.rack import compile_rack
from model.solvers.analytic import solve
from sim.run import FastSimulator


@pytest.mark.slow
@pytest.mark.parametrize("system, servers, clients", [
    ("farreach", 1, 1024),     # simulator 78.6k packets lost per run; analytic was 24k, now 83.9k
    # simulator 105k; analytic was 53k, then 110k, then 74k (an expected failure from the
    # capacity bound of 2026-11-26 until pinned workers lost the busy-peer penalty), now 110k
    ("nocache", 8, 1024),
])
def test_the_analytic_settles_on_the_simulators_equilibrium(system, servers, clients):
    row = {"id": "P", "system": system, "servers": str(servers), "clients": str(clients),
           "memtable_mb": "4", "timeout_ms": "1000", "seq_check": "evicted-only",
           "wait_stat": "avg", "workload": "zipf"}
    spec = compile_rack(farreach_scenario(row), Profile.load("tofino-testbed"))
    a, s = solve(spec), FastSimulator(5.0, 1).solve(spec)
    assert a.throughput_mops == pytest.approx(s.throughput_mops, rel=0.02)
    assert a.pktloss == pytest.approx(s.pktloss, rel=0.25)
