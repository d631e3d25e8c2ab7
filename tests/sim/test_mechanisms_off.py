"""Without client core time and commits, both engines run as they did before them.

The client cores (``client_cpu_us``) and the machines' commit paths
(``txn_commit_us``) were added to both engines on 2026-11-27. With both at 0
the engines must take their earlier path: the same events, the same draws,
the same counters to the bit. The counters below were recorded by the
engines just before that change, on racks that go through every other
mechanism (tests/sim/test_kernel_pinned.py pins the fast engine's on its
own rack the same way): the SimPy engine on the pinned rack, and both
engines on a small rack of strict clients (timeouts, losses, full buffers,
hits, writes).
"""

import hashlib

import numpy as np
import pytest

from model.rack import clients as cl_mech
from sim import counters
from sim.config import SimConfig
from sim.run import run_config
from tests.sim.racks import pinned_rack

# the counters the engines had before the client cores and commits
OLD_GLOBAL = ("done", "lat", "lat2", "hits", "retried", "stale", "resends", "wire", "issued",
              "switches", "flushes", "compactions", "open_done", "open_resp")
OLD_STATION = ("arr", "drop", "compl", "busy", "block", "stall", "writes")

RECORDED = {
    # re-recorded for issue 50 (RocksDB's write path by its rules, on the
    # pinned rack as tests/sim/test_kernel_pinned.py now has it); the strict
    # racks, which write nothing to RocksDB, are unchanged to the bit
    "simpy pinned rack": ({
        "done": 1217.0, "lat": 1068917.7361856436, "lat2": 4671525889.455753, "hits": 402.0,
        "retried": 192.0, "stale": 393.0, "resends": 2653.0, "wire": 39.0, "issued": 1281.0,
        "switches": 60.0, "flushes": 53.0, "compactions": 28.0, "open_done": 25.0,
        "open_resp": 9767.347488922253},
        "9ef65f9aa88396bf278b452a07bef45a805da1e03b6d14f3c94e77958d320d0c"),
    "fast strict": ({
        "done": 4028.0, "lat": 4705298.650446764, "lat2": 44908151591.87415, "hits": 784.0,
        "retried": 1252.0, "stale": 6877.0, "resends": 29675.0, "wire": 674.0, "issued": 4052.0,
        "switches": 0.0, "flushes": 0.0, "compactions": 0.0, "open_done": 0.0,
        "open_resp": 0.0},
        "73cdec4931f0f3487ee7ae6adf8fd1fa3c232218093d458b9e33ec4b3e06cd55"),
    "simpy strict": ({
        "done": 539.0, "lat": 384915.04368709825, "lat2": 1649996168.890168, "hits": 104.0,
        "retried": 158.0, "stale": 682.0, "resends": 2895.0, "wire": 79.0, "issued": 563.0,
        "switches": 0.0, "flushes": 0.0, "compactions": 0.0, "open_done": 0.0,
        "open_resp": 0.0},
        "33f4abf1f1a18294f0085e73a1488c4c6134804266b2aa05ebf2c0b3a51e272b"),
}


def _rack() -> SimConfig:
    """tests/sim/test_kernel_pinned.py's rack (every mechanism of the loop)."""
    return pinned_rack()


def _strict() -> SimConfig:
    return SimConfig(n_clients=24, station_probs=np.array([0.6, 0.4]),
                     service_mean_us=np.array([15.0, 25.0]), hit_ratio=0.2, send_us=3.0,
                     hit_rtt_us=5.0, miss_rtt_us=10.0, timeout_us=150.0,
                     retry=cl_mech.RETRY_STRICT, loss_rate=0.02, write_frac=0.3,
                     buffer_pkts=np.array([8, 8]), recv_floor_us=1.0, gap_us=0.5)


RUNS = {"simpy pinned rack": (_rack, "simpy", 0.02, 3),
        "fast strict": (_strict, "fast", 0.2, 5),
        "simpy strict": (_strict, "simpy", 0.02, 5)}


def _digest(totals) -> str:
    d = hashlib.sha256()
    for k in OLD_STATION:
        d.update(np.asarray(totals[k], dtype=np.float64).tobytes())
    d.update(np.asarray(totals["hist"], dtype=np.int64).tobytes())
    return d.hexdigest()


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("cores", [0, 1])
def test_the_engines_run_as_before_without_core_time_or_commits(name, cores):
    make, engine, seconds, seed = RUNS[name]
    cfg = make()
    # a core count alone changes nothing while no send needs core time
    cfg.client_cores = cores
    assert cfg.client_cpu_us == 0.0 and cfg.txn_commit_us == 0.0
    totals = run_config(cfg, seconds, seed=seed, engine=engine).totals
    glob, digest = RECORDED[name]
    assert {k: totals[k] for k in OLD_GLOBAL} == glob
    assert _digest(totals) == digest
    for k in set(counters.GLOBAL) - set(OLD_GLOBAL):
        assert totals[k] == 0.0, k
    for k in set(counters.STATION) - set(OLD_STATION):
        assert not np.any(totals[k]), k
