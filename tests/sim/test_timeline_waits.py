"""A worker's wait in the per-second timeline is never negative (issue 43).

The timeline's wait of a worker is what its second leaves after its busy
time, per completion: ``(span - busy) / completions + recv_floor``
(:func:`sim.run._wait_process`). The engines count a service's busy time
when it ends, a block when its service starts; a long service (a write
stopped for a flush, a long WAL-switch block) that began in one second and
ended in the next put its whole time into the second one, whose busy time
then exceeded the second (waits of -146 and -246 us on valid scenarios).
The engines now count at every chunk boundary the part spent before it
(``carry_over``), so each second holds only its own busy time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from model.scenario import Scenario
from sim.config import SimConfig
from sim.engine_simpy import SimpyEngine
from sim.fast import FastEngine
from sim.run import run_config, simulate
from tests.sim.racks import lsm_fields

#: found by running random scenarios (tests/robustness/space.py) for 2 s: large
#: writes into small memtables, so WAL-switch blocks last a large part of a second
LONG_BLOCKS = {"servers.count": 35, "clients.threads": 318, "storage.memtable_mb": 1.8,
               "workload.read_ratio": 0.03, "workload.value_bytes": 31752, "switch.cache": False}


def _waits(tl: list[dict]) -> list[tuple[float, str, float]]:
    return [(r["t_s"], k, float(v)) for r in tl for k, v in r.items()
            if k.startswith("wait_us_") and not math.isnan(v)]   # NaN: no completion that second


@pytest.mark.parametrize("seed", [1, 2])
def test_long_blocks_leave_no_negative_wait(profile, seed):
    p = simulate(Scenario.default().updated(LONG_BLOCKS), profile, seconds=2.0, seed=seed,
                 progress=False)
    tl = p.details["timeline"]
    assert len(tl) == 2
    assert max(r["stalled_frac"] for r in tl) > 0.1          # the blocks are there
    bad = [w for w in _waits(tl) if w[2] < 0]
    assert not bad, bad[:5]


def test_random_scenarios_leave_no_negative_wait(profile):
    from tests.robustness.space import FAST, random_scenarios
    for i, sc in enumerate(random_scenarios(6, 43, FAST)):
        p = simulate(sc, profile, seconds=2.0, seed=i, progress=False)
        bad = [w for w in _waits(p.details.get("timeline") or []) if w[2] < 0]
        assert not bad, (i, sc, bad[:5])


def _blocking(n_clients: int = 8) -> SimConfig:
    """One worker, every request a write; ten writes fill a memtable and each
    switch blocks the worker for 150 ms on its WAL; one client core held 3 us
    per send."""
    return SimConfig(n_clients=n_clients, station_probs=np.array([1.0]),
                     service_mean_us=np.array([5.0]), write_frac=1.0, send_us=1.0,
                     miss_rtt_us=2.0, **lsm_fields([0], maxnum=4),
                     wal_block_us=np.array([150_000.0]),
                     client_cpu_us=3.0, client_cores=1, recv_floor_us=1.0)


ENGINES = {"fast": FastEngine, "simpy": SimpyEngine}


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_every_second_holds_only_its_own_busy_time(engine):
    cfg = _blocking()
    r = run_config(cfg, 1.0, seed=5, engine=engine, chunk_s=0.1)
    assert r.block.sum() > 0.5 * r.span_us                     # long blocks, across boundaries
    assert len(r.timeline) == 10
    for row in r.timeline:
        # (span - busy) / completions + the receive floor: busy <= span
        w = row["wait_us_0"]
        assert math.isnan(w) or w >= cfg.recv_floor_us - 1e-9, row
        assert 0.0 <= row["client_util"] <= 1.0 + 1e-12, row
    for row in r.timeline[:-1]:
        # the run's end is not a boundary: a block begun in the last chunk counts whole there
        assert 0.0 <= row["stalled_frac"] <= 1.0 + 1e-12, row


@pytest.mark.parametrize("engine", ["fast", "simpy"])
def test_splitting_at_boundaries_neither_loses_nor_counts_twice(engine):
    """The time of a run cut into chunks, each boundary carried over, is the
    time of the same run in one chunk with its end carried over (the engines
    run the same events whatever the chunks)."""
    cfg = _blocking()
    T = 1.0e6

    def run(bounds):
        eng = ENGINES[engine](cfg, 7)
        tot = {k: 0.0 for k in ("busy", "block", "stall", "client_busy", "compl")}
        for i, t in enumerate(bounds):
            c = eng.run_until(t)
            eng.carry_over(c)
            for k, v in tot.items():
                tot[k] = v + np.sum(c[k])
            # each chunk's own time only: one worker, one client core
            span = t - (bounds[i - 1] if i else 0.0)
            assert np.sum(c["busy"]) <= span + 1e-6
            assert np.sum(c["block"]) + np.sum(c["stall"]) <= span + 1e-6
            assert 0.0 <= np.sum(c["block"])
            assert c["client_busy"] <= span + 1e-6
        return tot

    whole = run([T])
    cut = run([T * k / 7 for k in range(1, 8)])
    assert cut["compl"] == whole["compl"] > 0
    for k in ("busy", "block", "stall", "client_busy"):
        assert cut[k] == pytest.approx(whole[k], rel=1e-9, abs=1e-6), k
    assert whole["block"] > 0.5 * T

