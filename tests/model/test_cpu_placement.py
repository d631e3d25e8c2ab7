"""Where a worker runs sets how its process time grows (model/rack/service.py).

The notes: pinned workers keep their process time as workers are added (14 us
at one server, 14-15 us at four: B12, B07, B08), while unpinned ones slow
down with their busy peers (16.3 us at one server, 21 us at four: F061,
F062). So the busy-peer slowdown belongs to unpinned workers only; a pinned
rack grows only from the other named causes (more threads than cores,
background jobs on its cores, a growing database).
"""

from __future__ import annotations

import pytest

from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers import predict
from runio.inputs import load_profile


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def _rack(pinned: bool, machines: int, **more) -> Scenario:
    return Scenario.default().updated({
        "servers.count": 4, "servers.machines": machines, "servers.pinned": pinned,
        "clients.threads": 256, "workload.distribution": "uniform",
        # no WAL (its blocks grow with the machine's writes) and a plain DB
        # (TransactionDB's commit path is shared by a machine's instances)
        "storage.wal": False, "storage.db": "normal", **more})


def test_pinned_workers_do_not_slow_each_other(profile):
    strong = profile.with_values({"share_penalty": 1.0}, "test")
    sc = _rack(pinned=True, machines=1)
    assert compile_rack(sc, strong).service.share_penalty == 0.0
    assert compile_rack(sc, strong) == compile_rack(sc, profile)
    # four pinned workers on one machine work as fast as on four machines
    together = predict(sc, profile)
    apart = predict(_rack(pinned=True, machines=4), profile)
    for a, b in zip(together.servers, apart.servers):
        assert a.process_us == pytest.approx(b.process_us, rel=1e-9)


def test_unpinned_workers_slow_down_with_their_busy_peers(profile):
    assert profile.params["share_penalty"].value > 0.0
    together = predict(_rack(pinned=False, machines=1), profile)
    apart = predict(_rack(pinned=False, machines=4), profile)
    for a, b in zip(together.servers, apart.servers):
        assert a.utilization > 0.5 and b.utilization > 0.5
        # three busy peers: at least the fitted penalty for two of them
        assert a.process_us > b.process_us * (1.0 + 2.0 * profile.params["share_penalty"].value)
