"""The researcher's questions as a user runs them (issue 14), as processes.

    python benchmarks/bench_questions.py [--repeat 5]

Times, each the median (and range) of ``--repeat`` runs, with its ratio to
``python -m sim predict`` on the embedded default measured in the same run:

* the issue's sweep, ``python -m sim sweep --set servers=16,32 --set
  storage.memtable_mb=16,256 --set clients.timeout_ms=100,5000 --out
  sweep.html`` (8 configurations with their 90 % intervals, an HTML page);
  target under 2 s;
* the same sweep as a new user's first one: a fresh workload cache on which
  only ``python -m sim predict`` (the README's first command) has run, so
  the 32-server workload is evaluated for the first time;
* ``python -m sim explain`` and ``python -m sim tune --vary servers=16,32``.

Each run gets its own folder; the workload cache is ``KVPERF_CACHE_DIR`` in
a temporary folder, warmed once before the warm rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["sweep", "--set", "servers=16,32", "--set", "storage.memtable_mb=16,256",
         "--set", "clients.timeout_ms=100,5000", "--out", "sweep.html"]


def timed(args: list[str], env: dict, cwd: str) -> float:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sim", *args], cwd=cwd, env=env,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"sim {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    base_env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="kvperf-bench-q-") as tmp:
        warm = dict(base_env, KVPERF_CACHE_DIR=os.path.join(tmp, "cache"))
        timed(["predict"], warm, tmp)
        timed(SWEEP, warm, tmp)
        rows: dict[str, list[float]] = {k: [] for k in
                                        ("predict (baseline)", "sweep, 8 configurations",
                                         "sweep, first run after predict", "explain",
                                         "tune, servers 16/32")}
        for r in range(args.repeat):
            d = os.path.join(tmp, f"run{r}")
            os.makedirs(d)
            rows["predict (baseline)"].append(timed(["predict"], warm, d))
            rows["sweep, 8 configurations"].append(timed(SWEEP, warm, d))
            cold = dict(base_env, KVPERF_CACHE_DIR=os.path.join(d, "cold-cache"))
            timed(["predict"], cold, d)
            rows["sweep, first run after predict"].append(timed(SWEEP, cold, d))
            rows["explain"].append(timed(["explain"], warm, d))
            rows["tune, servers 16/32"].append(timed(["tune", "--vary", "servers=16,32"], warm, d))
    base = statistics.median(rows["predict (baseline)"])
    print(f"median of {args.repeat} runs, as processes (python -m sim ...)")
    print(f"{'command':>32} {'median s':>9} {'range s':>13} {'x predict':>10}")
    for name, ts in rows.items():
        m = statistics.median(ts)
        print(f"{name:>32} {m:9.2f} {min(ts):6.2f}-{max(ts):<6.2f} {m / base:10.2f}")
    print("target (issue 14): the sweep under 2 s")


if __name__ == "__main__":
    main()
