"""The fast engine and the SimPy reference engine are statistically equal.

Each engine runs the same scenario with several seeds (SimPy on fewer,
being ~300x slower). Under the null hypothesis both produce draws of the
same distribution, so the per-seed spread is estimated from all runs
pooled and the difference of the means must lie within 4 standard errors
(two-sided false-alarm rate ~6e-5 per comparison) plus 0.5 % for the one
intended difference: SimPy samples actual YCSB records and caches the top
records exactly, the fast engine draws classes from the hit ratio and
shares (model.workload's stated tolerance on those is ~5e-4 absolute).

The SimPy engine's key sampling is also checked on its own against the
workload model's hit ratio and shares (binomial standard errors).
"""

import math

import numpy as np
import pytest

from model.scenario import Scenario
from model.rack import compile_rack
from sim.run import FastSimulator, run_config

HORIZON_S = 0.1
FAST_SEEDS = range(1, 9)
SIMPY_SEEDS = range(101, 104)

BASE = Scenario.default().updated({"servers.count": 4, "clients.threads": 64})
SCENARIOS = {
    "saturated": BASE,
    "client-bound hash uniform": BASE.updated({"clients.threads": 12, "switch.partition": "hash",
                                               "workload.distribution": "uniform"}),
    "loss+timeouts": BASE.updated({"clients.threads": 512, "servers.rcvbuf_kb": 64,
                                   "clients.timeout_ms": 0.2}),
    "flush stalls": BASE.updated({"workload.read_ratio": 0.0, "storage.wal": False,
                                  "storage.memtable_mb": 0.25, "storage.flushnum": 1,
                                  "storage.maxnum": 2, "storage.l1_mb": 1.0}),
    "wal switch + slowdown": BASE.updated({"workload.read_ratio": 0.0, "storage.wal": True,
                                           "storage.wal_bytes_per_sync_mb": 0.01,
                                           "storage.memtable_mb": 0.0625, "storage.flushnum": 2,
                                           "storage.maxnum": 5, "storage.l1_mb": 1.0}),
    "oversubscribed cores": BASE.updated({"servers.cores": 1}),
}

def rack_config(scenario, profile, **options):
    """(engine config, per-second dynamics, compiled rack) of a scenario."""
    spec = compile_rack(scenario, profile)
    cfg, dyn = FastSimulator(**options).config(spec)
    return cfg, dyn, spec



def metrics(sc, profile, engine, seed):
    cfg, dyn, spec = rack_config(sc, profile)
    if engine == "simpy":
        cfg.keyspace = spec.placement.keys
    r = run_config(cfg, HORIZON_S, seed=seed, engine=engine, dynamics=dyn)
    m = {"throughput": r.done / r.span_us,
         "latency": r.lat / r.done,
         "stalled": (r.stall.sum() + r.block.sum()) / (r.span_us * cfg.stations),
         "loss": r.drop.sum() / r.span_us,
         "fp": r.stale / r.span_us}
    for i in range(cfg.stations):
        m[f"util{i}"] = r.busy[i] / r.span_us
    return m


def compare(a: list[dict], b: list[dict], keys):
    for k in keys:
        xa = np.array([m[k] for m in a])
        xb = np.array([m[k] for m in b])
        pooled = np.concatenate([xa - xa.mean(), xb - xb.mean()])
        s = math.sqrt((pooled ** 2).sum() / max(1, len(pooled) - 2))
        se = s * math.sqrt(1 / len(xa) + 1 / len(xb))
        tol = 4 * se + 0.005 * max(abs(xa.mean()), abs(xb.mean())) + 1e-12
        assert abs(xa.mean() - xb.mean()) <= tol, (k, xa.mean(), xb.mean(), se)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_engines_agree(name, profile):
    sc = SCENARIOS[name]
    if name == "loss+timeouts":
        # a sub-millisecond timer (no kernel tick floor) and no client-core
        # queue before a resend (its wait would let the late reply in first),
        # so replies do come after their resend
        profile = profile.with_values({"timer_floor_ms": 0.0, "client_cpu_us": 0.0}, "test")
    fast = [metrics(sc, profile, "fast", s) for s in FAST_SEEDS]
    simpy = [metrics(sc, profile, "simpy", s) for s in SIMPY_SEEDS]
    keys = ["throughput", "latency"] + [f"util{i}" for i in range(sc.servers.count)]
    if name in ("flush stalls", "wal switch + slowdown"):
        keys.append("stalled")
        assert np.mean([m["stalled"] for m in fast]) > 0.01   # the mechanism is exercised
    if name == "loss+timeouts":
        keys += ["loss", "fp"]
        assert np.mean([m["loss"] for m in fast]) > 0 and np.mean([m["fp"] for m in fast]) > 0
    compare(fast, simpy, keys)


def _check_sampled(spec, n=400_000, seed=5):
    pl = spec.placement
    cls = pl.keys.sample(np.random.default_rng(seed), n)
    hit = np.mean(cls == -1)
    se = math.sqrt(pl.hit_ratio * (1 - pl.hit_ratio) / n)
    assert abs(hit - pl.hit_ratio) <= 4 * se + 1e-3
    shares = np.asarray(pl.shares)
    frac = np.bincount(cls[cls >= 0], minlength=pl.servers) / n
    se_i = np.sqrt(shares * (1 - shares) / n)
    assert np.all(np.abs(frac - shares) <= 4 * se_i + 1e-3)
    return cls


def test_sampled_keys_match_workload_model(profile):
    """Key sampling (SimPy engine) vs the hit ratio and shares the fast engine draws from."""
    _check_sampled(compile_rack(Scenario.default(), profile))


def test_sampled_keys_match_workload_model_lab_without_cache(profile):
    """The lab's workload profile without the cache: its hot first partition is sampled."""
    sc = Scenario.default().updated({"servers.count": 4, "switch.cache": False,
                                     "switch.partition": "range", "workload.profile": "lab"})
    spec = compile_rack(sc, profile)
    assert max(spec.placement.shares) > 0.5          # the skewed placement is exercised
    cls = _check_sampled(spec, seed=7)
    assert not np.any(cls == -1)


def test_partition_is_the_switch_reference_models():
    """The simulator's partitioning is the switch model's (and the P4 tables'):
    this repository's keys, the switch's range mode splitting the populated top
    32 bits evenly (the workload model's ``range-even``)."""
    from model import keys, switch
    recs = np.random.default_rng(3).integers(0, 10**8, 2000)
    for n in (1, 3, 16):
        for mode, partition in (("range", "range-even"), ("hash", "hash")):
            got = keys.servers_of(recs, "kvperf", n, partition, switch.HASH_BUCKETS)
            want = [switch.server_of(keys.wire_key(int(r), "kvperf"), n, mode) for r in recs]
            assert got.tolist() == want


def test_sampled_keys_read_only_cache(profile):
    """NetCache mode: the sampled classes follow the read-only shares."""
    sc = Scenario.default().updated({"servers.count": 4, "switch.mode": "read-only"})
    _check_sampled(compile_rack(sc, profile), seed=11)
