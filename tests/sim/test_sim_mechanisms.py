"""Single mechanisms of the rack simulation, each against its own arithmetic."""

import pytest

from model.scenario import Scenario
from sim.run import simulate

BASE = Scenario.default().updated({"servers.count": 4, "clients.threads": 64})


def test_oversubscribed_cores_stretch_service(profile):
    # 2 workers per machine on 1 core: both busy -> each service x 2 x (1 + ctx)
    free = simulate(BASE, profile, seconds=1.0, progress=False)
    tight = simulate(BASE.updated({"servers.cores": 1}), profile, seconds=1.0, progress=False)
    factor = 2 * (1 + profile["context_switch_penalty"])
    ratio = tight.throughput_mops / free.throughput_mops
    # not every service starts with the peer busy, so the loss is at most the factor
    assert 1 / factor - 0.02 <= ratio <= 1 / (1 + profile["context_switch_penalty"])


def test_wal_switch_blocks_and_dips_throughput(profile):
    # tiny memtables with the WAL on: every switch blocks the worker for the
    # WAL file creation; without the WAL the same run never blocks (no L0
    # slowdown either: its triggers out of reach)
    sc = BASE.updated({"workload.read_ratio": 0.0, "storage.memtable_mb": 0.5,
                       "storage.flushnum": 1, "storage.maxnum": 64,
                       "storage.l0_slowdown": 1 << 20, "storage.l0_stop": 1 << 20})
    on = simulate(sc, profile, seconds=2.0, progress=False)
    off = simulate(sc.updated({"storage.wal": False}), profile, seconds=2.0, progress=False)
    assert on.details["memtable_switches"] > 0 and off.details["memtable_switches"] > 0
    assert sum(on.details["blocked_us_per_server"]) > 0
    assert sum(off.details["blocked_us_per_server"]) == 0
    assert on.throughput_mops < off.throughput_mops


def test_write_stop_needs_maxnum_immutables(profile):
    # a 1 MiB L1: little L0->L1 compaction, so the flushes, not the workers, limit
    sc = BASE.updated({"workload.read_ratio": 0.0, "storage.wal": False,
                       "storage.memtable_mb": 0.25, "storage.flushnum": 1, "storage.l1_mb": 1.0})
    tight = simulate(sc.updated({"storage.maxnum": 2}), profile, seconds=1.0, progress=False)
    loose = simulate(sc.updated({"storage.maxnum": 64}), profile, seconds=1.0, progress=False)
    assert sum(tight.details["stall_us_per_server"]) > 0
    assert sum(loose.details["stall_us_per_server"]) == 0
    assert tight.throughput_mops < loose.throughput_mops


def test_wire_loss_costs_timeouts(profile):
    sc = BASE.updated({"network.loss_rate": 0.01, "clients.timeout_ms": 10.0})
    p = simulate(sc, profile, seconds=1.0, progress=False)
    sent = p.details["requests"] + p.details["false_pos_sim"]
    # about 1 % of packets lost on the wire (binomial, 4 sigma)
    lost = p.details["pktloss_sim"]
    assert lost == pytest.approx(0.01 * sent, abs=4 * (0.01 * sent) ** 0.5 + 1)
    assert p.details["false_pos_sim"] >= lost - 64   # each loss is resent (in-flight at the end excepted)
