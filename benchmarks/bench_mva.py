"""Timing of the MVA solvers on the default-size rack network.

The network: 1024 closed-loop client threads, a client/network delay, and
M = 16..128 FCFS worker stations with unequal demands (the shares a skewed
workload leaves behind the cache). For each M it prints the median wall
time over R repeats of exact MVA and of Schweitzer's approximate MVA, their ratio, and the
approximation's relative throughput error; then the same for a network with
one 64-core multi-server station (exact = log-space normalising constants).

    python benchmarks/bench_mva.py [--population 1024] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.queueing import Station, mva_approx, mva_exact  # noqa: E402


def median_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def rack(m: int, seed: int = 0, pool: int = 0) -> list[Station]:
    rng = np.random.default_rng(seed)
    # worker demand per request cycle in us: share x ~40 us processing
    shares = rng.dirichlet(np.full(m, 4.0))
    st = [Station(f"w{i}", "fcfs", 40.0 * s) for i, s in enumerate(shares)]
    st.append(Station("client+net", "delay", 7.0))
    if pool:
        st.append(Station("cores", "multi", 40.0, servers=pool))
    return st


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.population
    print(f"population N = {n}, median of {args.repeat}")
    print(f"{'network':>22} {'exact ms':>9} {'approx ms':>9} {'exact/approx':>12} "
          f"{'X exact (1/us)':>15} {'approx X err':>12} {'iters':>6}")
    cases = [(f"{m} FCFS + delay", rack(m)) for m in (16, 32, 64, 128)]
    cases.append(("64 FCFS + delay + c=64", rack(64, pool=64)))
    for label, stations in cases:
        t_e, e = median_of(lambda: mva_exact(stations, n), args.repeat)
        t_a, a = median_of(lambda: mva_approx(stations, n), args.repeat)
        err = (a.throughput - e.throughput) / e.throughput
        print(f"{label:>22} {t_e * 1e3:9.2f} {t_a * 1e3:9.2f} {t_e / t_a:12.2f} "
              f"{e.throughput:15.5f} {err:+12.2e} {a.iterations:6d}")


if __name__ == "__main__":
    main()
