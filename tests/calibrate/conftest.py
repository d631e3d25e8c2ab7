"""Shared helpers for the calibrate tests: synthetic local runs from the model itself."""

from __future__ import annotations

import math
import random

import pytest

from runio.local_runs import COLUMNS, local_scenario
from calibrate.local_fit import resolve_priors
from calibrate.plan import expand, plan_from_mapping
from model.solvers import predict


def synthetic_rows(profile, points, noise=0.0, seed=1, source="synthetic.csv"):
    """local_runs rows measured by the model (plus multiplicative noise)."""
    rng = random.Random(seed)
    rows = []
    for i, cfg in enumerate(points):
        row = {k: ("" if v is None else str(v)) for k, v in cfg.items() if k in COLUMNS}
        row.update({"completed": "50000", "wait_stat": "avg"})
        p = predict(local_scenario(row), profile)
        busy = [s for s in p.servers if s.share > 0]
        meas = {"mops": p.throughput_mops,
                "process_us": sum(s.process_us for s in busy) / len(busy),
                "wait_us": sum(s.wait_us for s in busy) / len(busy),
                "send_us": p.client.send_us}
        for k, v in meas.items():
            row[k] = repr(v * math.exp(rng.gauss(0.0, noise)) if noise else v)
        row.update({"__kind__": "local_runs", "__source__": source, "__line__": str(i + 2)})
        rows.append(row)
    return rows


SMALL_PLAN = {
    "name": "synthetic", "design": "points",
    "base": {"workers": 1, "clients": 2, "records": 100000, "memtable_mb": 64},
    "points": [
        {"clients": 1}, {"clients": 4}, {"workers": 2, "clients": 4},
        {"read_ratio": 0.0}, {"read_ratio": 1.0, "clients": 3},
        {"wal": "off"}, {"seq_check": "none"}, {"workers": 2, "clients": 2, "read_ratio": 0.8},
    ],
}


@pytest.fixture(scope="session")
def priors():
    return resolve_priors("calibrate/priors/local.toml")


@pytest.fixture(scope="session")
def small_points():
    return expand(plan_from_mapping(SMALL_PLAN), cores=2)
