"""Fixtures for the report tests: a prediction, a scenario whose name holds
``<script>``, and a profile with provenance. Builders live in report_samples."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from model.scenario import Scenario

sys.path.insert(0, str(Path(__file__).resolve().parent))   # for report_samples
from report_samples import make_prediction  # noqa: E402


@pytest.fixture
def prediction() -> dict:
    return make_prediction().to_dict()


@pytest.fixture
def scenario() -> dict:
    return Scenario.default().updated({"name": "rack <script>alert(1)</script>"}).to_dict()


@pytest.fixture
def profile() -> dict:
    return {"name": "testbed", "meta": {"fitted_by": "test"},
            "params": {"recv_floor_us": {"value": 1.6, "unit": "us",
                                         "source": "fit: farreach_runs.csv (29 rows)",
                                         "stderr": 0.05},
                       "disk_mbps": {"value": 450.0, "unit": "MB/s", "source": "fio <b>seq</b>",
                                     "stderr": None}}}
