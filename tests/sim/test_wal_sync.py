"""WAL syncs (model.rack.lsm, storage.wal_bytes_per_sync_mb) in both engines.

Every ``sync_bytes`` a worker writes, the write that completes the sync's
worth waits ``sync_us`` (counted as a block). Each instance starts at a
random point of its sync cycle (``lsm.new_state(..., sync_bytes)``), so the
syncs of a symmetric rack do not fall at the same moments.
"""

import numpy as np
import pytest

from model.rack import lsm as L
from sim.config import SimConfig
from sim.engine_simpy import SimpyEngine
from sim.fast import FastEngine
from sim.run import run_config

ENTRY, SYNC_ENTRIES, SYNC_US = 100.0, 10, 50.0


def syncing(stations=4):
    p = np.zeros(L.P_N)
    p[L.P_ENTRY], p[L.P_MEM], p[L.P_FLUSHNUM], p[L.P_MAXNUM] = ENTRY, 1e15, 1, 1 << 30
    p[L.P_DISK], p[L.P_FWF], p[L.P_WAMP], p[L.P_SLOW], p[L.P_BG] = 100.0, 1.0, 1.0, 1.0, 2
    p[L.P_SYNC_BYTES], p[L.P_SYNC_US] = SYNC_ENTRIES * ENTRY, SYNC_US
    return SimConfig(n_clients=32, station_probs=np.full(stations, 1.0 / stations),
                     service_mean_us=np.full(stations, 5.0), write_frac=1.0, send_us=1.0,
                     miss_rtt_us=2.0, lsm=True, lsm_params=p)


def test_both_engines_spread_the_first_sync():
    cfg = syncing(stations=64)
    fast = FastEngine(cfg, 3).args
    ls_fast = next(a for a in fast if isinstance(a, np.ndarray) and a.shape == (64, L.S_NF))
    for ls in (ls_fast, SimpyEngine(cfg, 3).ls):
        synced = ls[:, L.S_SYNCED]
        assert np.all((synced >= 0) & (synced < SYNC_ENTRIES * ENTRY))
        assert len(np.unique(synced)) == 64 and synced.std() > 0.2 * SYNC_ENTRIES * ENTRY


@pytest.mark.parametrize("engine,seconds", [("fast", 0.5), ("simpy", 0.05)])
def test_every_sync_blocks_its_write(engine, seconds):
    res = run_config(syncing(), seconds, seed=7, engine=engine)
    # one sync per SYNC_ENTRIES writes begun (those applied, and at most one
    # in service per worker) from a random start in the first cycle, each a
    # block of SYNC_US
    syncs = res.block / SYNC_US
    assert np.allclose(syncs, np.round(syncs)) and syncs.sum() > 100
    assert np.all(np.abs(syncs - res.writes / SYNC_ENTRIES) <= 1.0 + 1.0 / SYNC_ENTRIES + 1e-9)
    assert res.switches == 0 and res.stall.sum() == 0
