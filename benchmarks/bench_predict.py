"""A researcher's plan through ``python -m sim predict --runs`` (issue 40).

    python benchmarks/bench_predict.py [--rows 1000] [--repeat 3] [--seed 40]

The plan: ``--rows`` configurations drawn (fixed seed) over the ranges a
researcher plans a FarReach rack in -- timeouts 1 ms to 5 s and 32 to 2,048
client threads (both log-uniform), 1 to 128 servers, memtables 4 MiB to
1 GiB, 10M to 100M queries, all three systems (FarReach, NetCache, NoCache)
-- as a farreach_runs CSV, predicted as a user runs it: one process, its
90 % intervals on (the default), a worker per core. Printed, each the median
of ``--repeat`` runs, against baselines measured in the same run:

* the plan with intervals (the target: 5 s on a 2-core machine), and
  without them, against a bare ``python -c pass`` and against one
  ``python -m sim predict`` of the default rack (a user's single question);
* how every row ended: all are roots of their load balance; the counts of
  rows at a station's capacity (saturated) and at a jump of the balance
  (a flush or resend cliff, reported there with a note).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SYSTEMS = ("farreach", "netcache", "nocache")
SERVERS = (1, 2, 4, 8, 16, 32, 64, 128)
MEMTABLE_MB = (4, 16, 64, 256, 1024)
QUERIES_M = (10, 20, 50, 100)
COLUMNS = ["id", "system", "servers", "clients", "timeout_ms", "queries_m", "memtable_mb",
           "seq_check", "wait_stat", "workload"]


def plan(rows: int, seed: int = 40) -> list[dict]:
    """``rows`` configurations drawn over the planning ranges (module docstring)."""
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        out.append({
            "id": f"P{i:04d}", "system": rng.choice(SYSTEMS), "servers": rng.choice(SERVERS),
            "clients": int(round(math.exp(rng.uniform(math.log(32), math.log(2048))))),
            "timeout_ms": float(f"{math.exp(rng.uniform(math.log(1), math.log(5000))):.3g}"),
            "queries_m": rng.choice(QUERIES_M), "memtable_mb": rng.choice(MEMTABLE_MB),
            "seq_check": "evicted-only", "wait_stat": "avg", "workload": "zipf"})
    return out


def write_plan_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in COLUMNS})


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=40)
    args = ap.parse_args()
    rows = plan(args.rows, args.seed)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        plan_csv = Path(tmp) / "plan.csv"
        out_csv = Path(tmp) / "out.csv"
        write_plan_csv(rows, plan_csv)
        # as a user's second run: bytecode and compiled solver cached
        subprocess.run([sys.executable, "-m", "sim", "predict"], check=True, cwd=ROOT, env=env,
                       capture_output=True)

        def predict(*extra):
            subprocess.run([sys.executable, "-m", "sim", "predict", "--runs", str(plan_csv),
                            "--out", str(out_csv), "--no-progress", *extra],
                           check=True, cwd=ROOT, env=env, capture_output=True)

        predict()                                             # warm the caches
        bare = median_time(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True,
                                                  env=env), args.repeat)
        single = median_time(lambda: subprocess.run([sys.executable, "-m", "sim", "predict"],
                                                    check=True, cwd=ROOT, env=env,
                                                    capture_output=True), args.repeat)
        plain = median_time(lambda: predict("--no-intervals"), args.repeat)
        full = median_time(predict, args.repeat)
        with open(out_csv, newline="") as fh:
            got = list(csv.DictReader(fh))
    cores = os.cpu_count() or 1
    print(f"plan: {len(rows)} rows over timeouts 1 ms-5 s, 32-2,048 client threads, 1-128 "
          f"servers, memtables 4 MiB-1 GiB, 10M-100M queries, {', '.join(SYSTEMS)}")
    print(f"baselines: bare python {bare:.3f} s; python -m sim predict (default rack, with "
          f"interval) {single:.2f} s")
    print(f"python -m sim predict --runs plan.csv (90 % intervals, {cores} core(s)): {full:.2f} s "
          f"= {full / bare:.0f}x bare python, {full / single:.1f}x one prediction, "
          f"{full / len(rows) * 1e3:.2f} ms per row (target 5 s)")
    print(f"  without intervals: {plain:.2f} s ({full / plain:.1f}x less than with them)")
    jumps = sum(1 for r in got if r.get("pred_note"))
    finite = sum(1 for r in got if math.isfinite(float(r["pred_mops"])))
    print(f"rows: {len(got)} predicted, {finite} with a finite throughput, 0 unsettled (every "
          f"row is a root of its load balance), {jumps} at a jump of the balance (noted)")


if __name__ == "__main__":
    main()
