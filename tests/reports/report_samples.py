"""Synthetic inputs for the report tests (shared by conftest and the tests).

Predictions are built from the real ``model.prediction`` dataclasses;
validation rows are the reference ``data/farreach_runs.csv`` with synthetic
``pred_*`` columns (measured × a seeded factor, so errors are known); the
large sweep is a memtable_mb × flushnum × clients × servers grid.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from model.prediction import ClientPrediction, Prediction, ServerPrediction
from model.rack.bottleneck import Bottleneck
from reports.browser import find_chromium

DATA = Path(__file__).resolve().parents[2] / "data"

#: the Chromium binary the browser tests drive (None: not installed)
CHROMIUM = find_chromium()
#: marks of a test that opens pages in headless Chromium: marker ``browser``,
#: and skipped, with the reason, only when no Chromium is installed
NEEDS_CHROMIUM = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                       "(apt-get install chromium, or set $CHROMIUM)"),
]


def needs_chromium(test):
    """:data:`NEEDS_CHROMIUM` on one test (a module takes it as ``pytestmark``)."""
    for mark in NEEDS_CHROMIUM:
        test = mark(test)
    return test


def make_prediction(n: int = 8, bottleneck: int = 3) -> Prediction:
    shares = [1.0 / n] * n
    shares[bottleneck] *= 1.5
    total = sum(shares)
    servers = [ServerPrediction(share=s / total, utilization=0.95 if i == bottleneck else 0.6,
                                wait_us=1.6 if i == bottleneck else 12.0 + i,
                                process_us=30.0 + i, share_nocache=1.0 / n)
               for i, s in enumerate(shares)]
    neck = Bottleneck("server", [bottleneck], 0.95, {"utilization": 0.95,
                                                     "share_of_requests": servers[bottleneck].share})
    return Prediction("analytic", 0.9, 0.47, 2.1, neck, servers,
                      ClientPrediction(send_us=4.2, latency_us=812.0), pktloss=12.0,
                      false_pos=3.0, stall_fraction=0.05,
                      details={"mva_iterations": 12, "flush_interval_s": 3.2})


def farreach_rows_with_predictions(seed: int = 7) -> list[dict]:
    """data/farreach_runs.csv plus pred_* columns within ±25 % of the measurement."""
    rng = random.Random(seed)
    with open(DATA / "farreach_runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for c in ("mops", "send_us", "normalized_x"):
            r["pred_" + c] = f"{float(r[c]) * rng.uniform(0.8, 1.25):.4g}" if r[c] else ""
        for c in ("wait_us", "process_us"):
            r["pred_" + c] = ("|".join(f"{float(x) * rng.uniform(0.85, 1.2):.4g}"
                                       for x in r[c].split("|")) if r[c] else "")
    return rows


def write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def grid_sweep(n: int = 500, seed: int = 3) -> list[dict]:
    """A synthetic batch-prediction table: numbers as floats, some measured cells."""
    rng = random.Random(seed)
    rows = []
    for servers in (1, 2, 4, 8, 16, 32):
        for clients in (32, 64, 128, 256, 512, 1024):
            for mem in (4, 16, 64, 256):
                for flush in (1, 2, 3):
                    for system in ("farreach", "nocache"):
                        if len(rows) >= n:
                            return rows
                        gain = 2.0 if system == "farreach" else 1.0
                        mops = (min(clients / (40 + clients * 0.01), servers * 0.03 * gain)
                                * (1 - 0.2 / mem) * (1 - 0.03 * flush))
                        rows.append({
                            "id": f"S{len(rows) + 1:03d}", "system": system,
                            "servers": float(servers), "clients": float(clients),
                            "memtable_mb": float(mem), "flushnum": float(flush),
                            "maxnum": float(flush + 1),
                            "mops": round(mops * rng.uniform(0.9, 1.1), 5)
                            if len(rows) % 5 == 0 else None,
                            "pred_mops": round(mops, 5),
                            "pred_wait_us": round(2 + 100 / clients, 3),
                            "pred_process_us": round(30 + 10 / mem, 3)})
    return rows


def timeline(seconds: int = 120, servers: int = 4, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for t in range(1, seconds + 1):
        st = 0.8 if 40 <= t < 48 or 90 <= t < 93 else 0.0
        row = {"t_s": float(t), "throughput_mops": 1.2 * (1 - 0.7 * st) + rng.uniform(-0.03, 0.03),
               "stalled_frac": st, "pktloss": float(rng.randint(0, 5)) if st else 0.0,
               "false_pos": float(rng.randint(0, 2))}
        for k in range(servers):
            row[f"wait_us_{k}"] = 2 + rng.random() * (20 if st else 3)
            row[f"process_us_{k}"] = 30 + rng.random() * 5
        rows.append(row)
    return rows
