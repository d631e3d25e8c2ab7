"""WAL syncs (model.rack.lsm, storage.wal_bytes_per_sync_mb) in both engines.

Every ``sync_bytes`` a worker writes, the write that completes the sync's
worth waits ``sync_us`` (counted as a block; sim.write_path). The WAL is
counted from the run's first write (the run starts from a restarted server,
its WAL new), not from a random point of a sync cycle as before the run
started from its first state (issue 50).
"""

import numpy as np
import pytest

from sim.config import SimConfig
from sim.engine_simpy import SimpyEngine
from sim.fast import FastEngine
from sim.run import run_config
from tests.sim.racks import lsm_fields

ENTRY, SYNC_ENTRIES, SYNC_US = 100.0, 10, 50.0


def syncing(stations=4):
    # memtables too large to fill: only the syncs block
    return SimConfig(n_clients=32, station_probs=np.full(stations, 1.0 / stations),
                     service_mean_us=np.full(stations, 5.0), write_frac=1.0, send_us=1.0,
                     miss_rtt_us=2.0,
                     **{**lsm_fields(np.zeros(stations), entry_bytes=ENTRY,
                                     memtable_bytes=1e15, maxnum=1 << 30),
                        "sync_bytes": SYNC_ENTRIES * ENTRY, "sync_block_us": SYNC_US})


def test_both_engines_count_the_wal_from_the_first_write():
    cfg = syncing(stations=8)
    for synced in (FastEngine(cfg, 3).storage.synced, SimpyEngine(cfg, 3).synced):
        assert np.all(synced == 0.0)


@pytest.mark.parametrize("engine,seconds", [("fast", 0.5), ("simpy", 0.05)])
def test_every_sync_blocks_its_write(engine, seconds):
    res = run_config(syncing(), seconds, seed=7, engine=engine)
    # one sync per SYNC_ENTRIES writes begun (those applied, and at most one
    # in service per worker), each a block of SYNC_US
    syncs = res.block / SYNC_US
    assert np.allclose(syncs, np.round(syncs)) and syncs.sum() > 100
    begun_lo, begun_hi = res.writes, res.writes + 1
    assert np.all(syncs >= np.floor(begun_lo / SYNC_ENTRIES))
    assert np.all(syncs <= np.floor(begun_hi / SYNC_ENTRIES))
    assert res.switches == 0 and res.stall.sum() == 0
