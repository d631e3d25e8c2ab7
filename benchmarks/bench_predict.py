"""Analytic prediction speed over a generated 1,000-row plan (issue 12).

    python benchmarks/bench_predict.py [--rows 1000] [--repeat 3] [--sample N]

The plan is the grid researchers sweep: FarReach / NoCache x 1-64 servers x
32-1024 client threads x memtable 4-256 MiB x timeout 100/1000/5000 ms,
1,000 rows drawn with a fixed seed. Printed, each a median of ``--repeat``
runs, with its ratio to the baseline measured in the same run (one exact MVA
solve of the default rack's closed network by the compiled recursion, the
bare queueing solution the rack model refines):

* batch: the whole plan compiled and solved as one batch, per configuration;
* single: every row (or ``--sample`` rows) solved one at a time, each the median
  of ``--repeat`` solves: the median and the max over the rows;
* process: ``python -m sim predict --runs plan.csv --no-intervals`` as a user
  runs it, in one process (``--jobs 1``) and with a worker per core (the
  default), against ``python -c pass`` (``--with-intervals``: also with them).
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from model.farreach_kinds import farreach_scenario  # noqa: E402
from model.profile import Profile  # noqa: E402
from model.rack import compile_rack  # noqa: E402
from model.scenario import Scenario  # noqa: E402
from model.solvers import mva_core  # noqa: E402
from model.solvers.analytic import solve, solve_many  # noqa: E402

GRID = {
    "system": ["farreach", "nocache"],
    "servers": [1, 2, 4, 8, 16, 32, 64],
    "clients": [32, 64, 128, 256, 512, 1024],
    "memtable_mb": [4, 16, 64, 256],
    "timeout_ms": [100, 1000, 5000],
}


def plan(rows: int, seed: int = 12) -> list[dict]:
    import itertools
    keys = list(GRID)
    full = [dict(zip(keys, v)) for v in itertools.product(*GRID.values())]
    rng = random.Random(seed)
    return [rng.choice(full) for _ in range(rows)] if rows > len(full) else rng.sample(full, rows)


COLUMNS = ["id", "system", "servers", "clients", "memtable_mb", "seq_check", "wait_stat",
           "timeout_ms", "workload"]


def csv_row(i: int, r: dict) -> dict:
    """A plan row as a farreach_runs row (what ``sim predict --runs`` reads)."""
    return {"id": f"P{i:04d}", "system": r["system"], "servers": str(r["servers"]),
            "clients": str(r["clients"]), "memtable_mb": str(r["memtable_mb"]),
            "seq_check": "evicted-only", "wait_stat": "avg", "timeout_ms": str(r["timeout_ms"]),
            "workload": "zipf"}


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def write_plan_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        for i, r in enumerate(rows):
            w.writerow(csv_row(i, r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=0,
                    help="time this many rows one at a time (default: every row)")
    ap.add_argument("--with-intervals", action="store_true",
                    help="also time the plan with its 90 %% intervals (17x the solves)")
    args = ap.parse_args()
    profile = Profile.load("tofino-testbed")
    rows = plan(args.rows)
    scs = [farreach_scenario(csv_row(i, r)) for i, r in enumerate(rows)]

    # baseline: one exact MVA solve of the default rack's network
    spec = compile_rack(Scenario.default(), profile)
    v = np.asarray(spec.placement.shares, dtype=float)
    S = np.full(len(v), 5.0)
    z = np.zeros(len(v))
    base = median_time(lambda: mva_core.recursion(v, S, S, z, z, z, 30.0,
                                                  spec.clients.threads), max(args.repeat, 5))
    print(f"baseline: one exact MVA solve, {len(v)} stations, {spec.clients.threads} clients: "
          f"{base * 1e3:.3f} ms")

    t_compile = median_time(lambda: [compile_rack(s, profile) for s in scs], args.repeat)
    specs = [compile_rack(s, profile) for s in scs]
    t_batch = median_time(lambda: solve_many(specs), args.repeat)
    per = (t_compile + t_batch) / len(specs)
    print(f"batch, {len(specs)} rows: compile {t_compile:.2f} s + solve {t_batch:.2f} s = "
          f"{per * 1e3:.2f} ms per configuration ({per / base:.1f}x one MVA solve)")

    sample = (random.Random(1).sample(range(len(specs)), min(args.sample, len(specs)))
              if args.sample else list(range(len(specs))))
    singles = []
    for i in sample:
        singles.append(median_time(lambda: solve(specs[i]), args.repeat))
    med, worst = statistics.median(singles), max(singles)
    slow = sample[int(np.argmax(singles))]
    print(f"single, {len(sample)} rows one at a time: median {med * 1e3:.2f} ms "
          f"({med / base:.0f}x), max {worst * 1e3:.1f} ms ({worst / base:.0f}x) at {rows[slow]}")

    with tempfile.TemporaryDirectory() as tmp:
        plan_csv = Path(tmp) / "plan.csv"
        write_plan_csv(rows, plan_csv)
        # as a user's second run: Python's bytecode cache written and used
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-m", "sim", "predict"], check=True, cwd=ROOT, env=env,
                       capture_output=True)

        def run(*extra):
            subprocess.run([sys.executable, "-m", "sim", "predict", "--runs", str(plan_csv),
                            "--out", str(Path(tmp) / "out.csv"), *extra],
                           check=True, cwd=ROOT, env=env, capture_output=True)
        bare = median_time(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True,
                                                  env=env), args.repeat)
        cores = os.cpu_count() or 1
        t_one = median_time(lambda: run("--no-intervals", "--jobs", "1"), args.repeat)
        t_plain = median_time(lambda: run("--no-intervals"), args.repeat)
        print(f"process, {len(rows)}-row plan without intervals: {t_plain:.2f} s with "
              f"{cores} worker(s), {t_one:.2f} s in one process ({t_one / t_plain:.2f}x); "
              f"bare python {bare:.3f} s ({t_plain / bare:.0f}x)")
        if args.with_intervals:
            t_iv1 = median_time(lambda: run("--jobs", "1"), args.repeat)
            t_iv = median_time(run, args.repeat)
            print(f"process, {len(rows)}-row plan with 90 % intervals: {t_iv:.2f} s with "
                  f"{cores} worker(s), {t_iv1:.2f} s in one process ({t_iv / bare:.0f}x bare "
                  f"python)")
        single = median_time(lambda: subprocess.run(
            [sys.executable, "-m", "sim", "predict"], check=True, cwd=ROOT, env=env,
            capture_output=True), args.repeat)
        print(f"process, python -m sim predict (default, with interval): {single:.2f} s "
              f"({single / bare:.0f}x bare python)")


if __name__ == "__main__":
    main()
