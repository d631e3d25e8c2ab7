"""Intervals over many racks: which sigma points are solved (model.intervals.solve_grid)."""

from __future__ import annotations

from pathlib import Path
from runio.inputs import load_profile


DATA = Path(__file__).resolve().parents[2] / "data"


def test_rows_are_batched_by_rack_size_without_changing_any_answer():
    """predict_kind_rows sorts the racks by size before batching (a batch pads
    every rack to its largest); each row's answer is the same in any order."""
    from runio.kinds import detect
    from runio.row_prediction import predict_kind_rows
    from runio.batch import read_runs

    header, rows = read_runs(str(DATA / "farreach_runs.csv"))
    kind = detect(header, source="farreach_runs.csv")
    plain = [r for r in rows if r["wait_stat"] != "per-server"][:4]
    pick = [dict(r, servers=str(m), clients=str(c))
            for r, m, c in zip(plain, (16, 1, 8, 4), (64, 1024, 256, 512))]
    profile = load_profile("tofino-testbed")
    fwd = predict_kind_rows(kind, pick, profile, intervals=False)
    back = predict_kind_rows(kind, pick[::-1], profile, intervals=False)[::-1]
    assert fwd == back
