"""Time analytic predictions per configuration.

Prints, for a few configurations, the wall time of one `predict` call (after
the workload shares are cached, as in a sweep) and of the first call (cold
workload cache), and the ratio to one exact MVA solve of the same closed
network measured in the same run: how much the fixed point and the storage
model cost over the bare queueing solution.

    python benchmarks/bench_predict.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from model import rack, workload
from model.predict import predict
from model.profile import Profile
from model.queueing import Station, mva_exact
from model.scenario import Scenario

CONFIGS = [
    {"servers.count": 1, "clients.threads": 32},
    {"servers.count": 4, "clients.threads": 128},
    {},  # the default: 16 servers, 1024 clients
    {"servers.count": 32, "clients.threads": 1024},
    {"servers.count": 128, "clients.threads": 1024},
]


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    os.environ["KVPERF_CACHE_DIR"] = "off"          # ... and no disk cache
    profile = Profile.load("tofino-testbed")
    print(f"{'configuration':32s} {'cold ms':>9s} {'warm ms':>9s} {'MVA ms':>8s} {'warm/MVA':>9s}")
    for ch in CONFIGS:
        sc = Scenario.default().updated(ch)
        workload._cached_shares.cache_clear()   # cold: no memory cache ...
        workload._shares.cache_clear()
        t = time.perf_counter()
        predict(sc, profile)
        cold = time.perf_counter() - t
        warm = best_of(lambda: predict(sc, profile))
        inp = rack.derive(sc, profile)
        service = np.array([c.process_us for c in inp.costs]) + inp.recv_floor_us + inp.gap_us
        st = [Station(f"s{i}", "fcfs", float(d)) for i, d in enumerate(inp.shares * service)]
        base = best_of(lambda: mva_exact(st, sc.clients.threads, 30.0))
        name = f"{sc.servers.count} servers, {sc.clients.threads} clients"
        print(f"{name:32s} {cold * 1e3:9.1f} {warm * 1e3:9.1f} {base * 1e3:8.2f} {warm / base:8.1f}x")


if __name__ == "__main__":
    main()
