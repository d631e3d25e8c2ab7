"""Hand-built RocksDB write paths for the simulator's small test racks.

A bare :class:`sim.config.SimConfig` gets RocksDB from an
:class:`~model.rack.lsm.LsmSpec` made here (:func:`lsm_fields`), through the
same :func:`sim.config.storage_fields` a compiled rack's config uses.
"""

from __future__ import annotations

import numpy as np

from model.rack import clients as cl_mech
from model.rack.lsm import LsmSpec
from sim.config import SimConfig, storage_fields

#: ten 200-byte writes fill a 2,000-byte memtable; a flush of one spends 50 us
#: and writes its 2,000 bytes at 10 bytes/us (250 us in all); compaction at 10
#: bytes/us; an L0->L1 compaction every two L0 files, into a 4,000-byte L1
TINY = {"entry_bytes": 200.0, "memtable_bytes": 2_000.0, "flushnum": 1, "maxnum": 2,
        "wal": True, "wal_block_base_us": 0.0, "wal_block_us_per_mbps": 0.0,
        "flush_fixed_us": 50.0, "flush_bytes_per_us": 10.0, "compaction_bytes_per_us": 10.0,
        "disk_bytes_per_us": 40.0, "sst_ratio": 1.0, "l0_files": 2, "l0_slowdown": 20,
        "l0_stop": 36, "l1_target_bytes": 4_000.0, "delayed_bytes_per_us": 1.0,
        "flush_threads": 1, "compaction_threads": 1}


def tiny_lsm(**changes) -> LsmSpec:
    """:data:`TINY` with ``changes`` (LsmSpec's field names)."""
    return LsmSpec(**{**TINY, **changes})


def lsm_fields(machine_of, machines: int = 1, **changes) -> dict:
    """The SimConfig fields of :func:`tiny_lsm` (``changes``), an instance per
    station on ``machine_of[station]``."""
    return storage_fields(tiny_lsm(**changes), np.asarray(machine_of, dtype=np.int64), machines)


def pinned_rack() -> SimConfig:
    """tests/sim/test_kernel_pinned.py's rack, through every mechanism of the
    loop: switch hits, two-slot and one-slot workers, full receive buffers,
    wire losses, timeouts with FarReach re-arms, writes with WAL blocks,
    flushes, write stops and slowdowns, compactions, CPU stretch, open
    write-backs. A flush of a memtable (50 us, then 2,000 bytes at 4
    bytes/us) takes longer than ten writes of the busiest stations, whose
    instances stop at three immutables (``maxnum``), and one flush thread
    per machine; their L0 slows them at three files (``l0_slowdown``)."""
    return SimConfig(
        n_clients=64, station_probs=np.array([0.4, 0.35, 0.25]),
        service_mean_us=np.array([20.0, 25.0, 30.0]), hit_ratio=0.3, send_us=2.0, hit_rtt_us=6.0,
        miss_rtt_us=12.0, timeout_us=400.0, retry=cl_mech.RETRY_FARREACH, loss_rate=0.01,
        write_frac=0.5, service_cv=1.0, station_servers=np.array([2, 1, 1]),
        buffer_pkts=np.array([32, 32, 32]), open_rate_per_us=0.002,
        **lsm_fields([0, 0, 1], 2, maxnum=3, l0_slowdown=3, flush_bytes_per_us=4.0,
                     delayed_bytes_per_us=20.0),
        station_machine=np.array([0, 0, 1]), machines=2,
        wal_block_us=np.array([5.0, 5.0]), cores=2, ctx_penalty=0.1, start_spread_us=14.0,
        recv_floor_us=1.5, gap_us=0.5)
