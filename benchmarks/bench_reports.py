"""Benchmark: time to build (and optionally load in Chromium) sweep reports.

    python benchmarks/bench_reports.py [--rows 100 500 2000] [--browser] [--out DIR]

Prints, per size: rows, build time (s), page size (kB; each page is
self-contained, its gzipped plotly.js about 0.6 MB of it) and, with ``--browser``,
load-and-draw time in headless Chromium (s) and the check verdict. Exits 1
if a page reaches the 1 MB budget. The synthetic sweep is a system × servers × clients × memtable_mb ×
flushnum grid with pred_mops / pred_wait_us / pred_process_us columns and a
measured mops in every fifth row.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reports  # noqa: E402

PAGE_BUDGET = 1_000_000     # bytes per page: plotly.js is not in it, data and markup are


def sweep(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    grid = itertools.product((1, 2, 4, 8, 16, 32, 64), (32, 64, 128, 256, 512, 1024, 2048),
                             (4, 16, 64, 256, 1024), (1, 2, 3, 4), ("farreach", "nocache"))
    for servers, clients, mem, flush, system in itertools.islice(grid, n):
        gain = 2.0 if system == "farreach" else 1.0
        mops = min(clients / (40 + clients * 0.01), servers * 0.03 * gain) * (1 - 0.2 / mem)
        rows.append({"id": f"S{len(rows) + 1:04d}", "system": system, "servers": servers,
                     "clients": clients, "memtable_mb": mem, "flushnum": flush,
                     "maxnum": flush + 1, "pred_mops": mops,
                     "pred_wait_us": 2 + 100 / clients, "pred_process_us": 30 + 10 / mem,
                     "mops": mops * rng.uniform(0.9, 1.1) if len(rows) % 5 == 0 else None})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100, 500, 2000])
    ap.add_argument("--browser", action="store_true", help="also load each report in Chromium")
    ap.add_argument("--out", default=None, help="directory for the reports (default: a temp dir)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-reports-"))
    print(f"{'rows':>6} {'build (s)':>10} {'page (kB)':>10} {'load+draw (s)':>14}  verdict")
    over = []
    for n in args.rows:
        rows = sweep(n)
        t0 = time.perf_counter()
        path = reports.write_sweep_report(rows, out / f"sweep-{n}.html", title=f"{n}-row sweep")
        build = time.perf_counter() - t0
        load, verdict = "", ""
        if args.browser:
            from reports.browser import check_report
            res = check_report(path, screenshot=path.with_suffix(".png"))
            load, verdict = f"{res.load_s:.2f}", "OK" if res.ok else "FAILED"
        size = path.stat().st_size
        if size >= PAGE_BUDGET:
            over.append(f"{path.name}: {size / 1e3:.0f} kB")
        print(f"{len(rows):>6} {build:>10.3f} {size / 1e3:>10.0f} {load:>14}  {verdict}")
    print(f"reports in {out} (each one self-contained file)")
    if over:
        print(f"over the {PAGE_BUDGET / 1e6:g} MB page budget: {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
