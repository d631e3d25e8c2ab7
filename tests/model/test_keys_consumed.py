"""Every scenario key and profile parameter is read by a mechanism, and changes what
the rack does: a key that no mechanism reads, or that changes nothing in the
analytic solver, fails here (issue: one rack model, every key consumed).

Each key is perturbed in a context where its mechanism acts (a timeout
matters when packets are lost, ``maxnum`` when writes stall, ...); the
compiled rack and the analytic prediction must both change.
"""

import math

import pytest

from model.rack import compile_rack, params
from model.rack.spec import compile_with
from model.scenario import Scenario, all_keys
from model.solvers import predict
from runio.inputs import load_profile

LOSSY = {"clients.threads": 2048, "servers.rcvbuf_kb": 16}
SMALL_MEMTABLE = {"storage.memtable_mb": 1.0}
# tiny memtables stall on the disk; a tiny L1 keeps their L0->L1 compactions
# short (a plain DB: TransactionDB's commit path would cap the writes first)
STALLING = {"workload.read_ratio": 0.0, "storage.wal": False, "storage.memtable_mb": 0.25,
            "storage.flushnum": 1, "storage.maxnum": 2, "storage.l1_mb": 1.0,
            "storage.db": "normal"}
SLOWED = {"servers.count": 4, "clients.threads": 64, "workload.read_ratio": 0.0,
          "storage.memtable_mb": 0.0625, "storage.flushnum": 2, "storage.maxnum": 5,
          "storage.l1_mb": 1.0, "storage.db": "normal",
          # without the WAL: its switch blocks would pace the writes before a slowdown
          "storage.wal": False}
FEW_CLIENTS = {"clients.threads": 64}

#: scenario key -> (context, new value)
SCENARIO_CHANGES = {
    "clients.threads": ({}, 512),
    "clients.timeout_ms": (LOSSY, 100.0),
    "clients.retry": ({"clients.timeout_ms": 5.0}, "strict"),
    "clients.cores": ({"storage.db": "normal"}, 4),
    "clients.machines": ({"storage.db": "normal"}, 2),
    "network.loss_rate": ({}, 0.001),
    "switch.cache": ({}, False),
    "switch.mode": ({}, "read-only"),
    "switch.cache_keys": ({}, 100_000),
    "switch.partition": ({}, "range"),
    "switch.hash_buckets": ({}, 1000),
    "switch.max_value_bytes": ({}, 64),
    "servers.count": ({}, 8),
    "servers.machines": ({}, 4),
    "servers.cores": ({}, 8),
    "servers.pinned": ({}, False),
    "servers.rcvbuf_kb": (LOSSY, 64),
    "servers.seq_check": ({}, "disk-get"),
    "servers.flush_threads": (STALLING, 1),
    "servers.compaction_threads": ({**STALLING, "storage.l0_files": 1}, 1),
    "servers.bg_on_worker_cores": ({**STALLING, "servers.cores": 4}, False),
    "storage.memtable_mb": ({}, 16.0),
    "storage.flushnum": (SMALL_MEMTABLE, 2),
    "storage.maxnum": (STALLING, 3),
    "storage.l0_files": (SMALL_MEMTABLE, 8),
    "storage.l1_mb": (SMALL_MEMTABLE, 128.0),
    "storage.l0_slowdown": (STALLING, 2),
    "storage.l0_stop": (STALLING, 2),
    "storage.delayed_write_rate_mbps": (SLOWED, 0.05),
    "storage.preloaded": ({}, False),
    "storage.rate_limit_mbps": (STALLING, 1.0),
    "storage.wal": ({}, False),
    "storage.wal_bytes_per_sync_mb": (SMALL_MEMTABLE, 0.1),
    "storage.db": ({}, "normal"),
    "workload.distribution": ({}, "uniform"),
    "workload.zipf_theta": ({}, 0.9),
    "workload.records": ({}, 10_000_000),
    "workload.generator": ({}, "kvperf"),
    "workload.insertorder": ({}, "ordered"),
    "workload.profile": ({"switch.partition": "range"}, "lab"),
    "workload.read_ratio": ({}, 0.9),
    "workload.key_bytes": (SMALL_MEMTABLE, 64),
    "workload.value_bytes": ({}, 1024),
    "workload.queries_m": ({}, 100.0),
}

#: profile parameter -> (context, factor)
PROFILE_CHANGES = {
    "send_base_us": (FEW_CLIENTS, 1.5), "send_per_thread_us": (FEW_CLIENTS, 1.5),
    "hit_rtt_us": (FEW_CLIENTS, 1.5), "miss_rtt_us": (FEW_CLIENTS, 1.5),
    "rcvbuf_pkt_bytes": (LOSSY, 1.5),
    "evict_writes_per_s": ({}, None),           # from its default 0 to 20 000 writes/s
    "base_us": ({}, 1.5), "get_mem_us": ({}, 1.5), "get_sst_us": ({}, 1.5), "put_us": ({}, 1.5),
    "skiplist_us_per_log2": ({}, 1.5), "wal_us": ({}, 1.5), "txn_commit_us": ({}, 1.5),
    "seqget_sst_us": ({"servers.seq_check": "disk-get"}, 1.5),
    "seqcache_us": ({"servers.seq_check": "seq-cache"}, 1.5),
    "sst_probe_us": ({}, 1.5), "memtable_probe_us": (SMALL_MEMTABLE, 1.5),
    "bg_penalty": (STALLING, ("=", 0.1)),
    "unpinned_factor": ({"servers.pinned": False}, 1.5),
    "recv_floor_us": ({}, 1.5), "server_gap_us": ({}, 1.5),
    "idle_penalty": (FEW_CLIENTS, 1.5), "share_penalty": ({"servers.pinned": False}, 1.5),
    "context_switch_penalty": ({"servers.cores": 4}, 1.5),
    "service_cv": (FEW_CLIENTS, 0.5),
    "entry_overhead_bytes": (STALLING, 1.5), "disk_mbps": (STALLING, 0.05),
    "flush_mbps": (STALLING, 0.05), "compaction_mbps": ({**STALLING, "storage.l0_files": 1}, 0.05),
    "flush_fixed_ms": (STALLING, 1.5),
    "wal_switch_ms": (SMALL_MEMTABLE, 1.5), "wal_switch_ms_per_mbps": (SMALL_MEMTABLE, 1.5),
    "wal_sync_ref_mb": ({**SMALL_MEMTABLE, "storage.wal_bytes_per_sync_mb": 0.5}, 2.0),
    "client_cpu_us": ({"storage.db": "normal"}, 1.5),
    "client_cores": ({"storage.db": "normal"}, 0.25),
    "timer_floor_ms": ({"clients.timeout_ms": 0.5, "clients.threads": 4096}, None),
    "wal_sync_ms_per_mb": ({"storage.wal_bytes_per_sync_mb": 16.0}, 1.5),
}


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def fingerprint(p):
    """What a prediction says, as numbers (rounded so that noise-free equality holds)."""
    vals = [p.throughput_mops, p.client.latency_us, p.pktloss, p.false_pos, p.stall_fraction,
            p.cache_hit_ratio, p.normalized_x]
    for s in p.servers:
        vals += [s.share, s.utilization, s.wait_us, s.process_us]
    return tuple(round(v, 12) if math.isfinite(v) else v for v in vals)


def test_every_scenario_key_is_read_by_a_mechanism():
    declared = set(all_keys())
    read = set(params.all_scenario_keys())
    assert declared - read == set(), "declared but read by no mechanism"
    assert read - declared == set(), "read but not declared"


def test_every_declared_parameter_is_read_and_every_profile_parameter_declared(profile):
    decl = params.all_params()
    reader = params.ProfileReader(profile)
    for ch in [{}, {"servers.seq_check": "disk-get"}, {"servers.seq_check": "seq-cache"}]:
        compile_with(Scenario.default().updated(ch), reader)
    assert set(decl) - reader.read == set(), "declared but never read"
    assert set(profile.params) - set(decl) == set(), \
        "the embedded profile carries parameters no mechanism reads (re-fit it)"


def test_the_tables_cover_every_key():
    assert set(SCENARIO_CHANGES) == set(all_keys())
    assert set(PROFILE_CHANGES) == set(params.all_params())


@pytest.mark.parametrize("key", sorted(SCENARIO_CHANGES))
def test_changing_a_scenario_key_changes_the_rack_and_the_prediction(profile, key):
    context, value = SCENARIO_CHANGES[key]
    base = Scenario.default().updated(context)
    changed = base.updated({key: value})
    assert compile_rack(changed, profile) != compile_rack(base, profile)
    assert fingerprint(predict(changed, profile)) != fingerprint(predict(base, profile))


@pytest.mark.parametrize("name", sorted(PROFILE_CHANGES))
def test_changing_a_profile_parameter_changes_the_rack_and_the_prediction(profile, name):
    context, factor = PROFILE_CHANGES[name]
    sc = Scenario.default().updated(context)
    reader = params.ProfileReader(profile)
    old = reader[name]
    if isinstance(factor, tuple):
        new = factor[1]                          # ("=", value): from a default of 0
    else:
        new = 20_000.0 if factor is None else old * factor
    changed = profile.with_values({name: new}, "test")
    assert compile_rack(sc, changed) != compile_rack(sc, profile)
    assert fingerprint(predict(sc, changed)) != fingerprint(predict(sc, profile))
