"""The short write-path plan through `python -m calibrate run`, end to end on
the real server (issue 50): each run does what the plan says it does."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

pytestmark = pytest.mark.native


def test_short_write_path_plan_end_to_end(tmp_path):
    pytest.importorskip("native._core", reason="native._core not built; see docs/native.md")
    out = tmp_path / "wp.csv"
    # no waiting for a quiet machine: the counts hold on a busy one
    proc = subprocess.run([sys.executable, "-m", "calibrate", "run", "--plan",
                           "calibrate/plans/writepath-short.toml", "--out", str(out),
                           "--quiet-timeout", "0", "--no-progress"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    with open(out) as fh:
        rows = {(int(r["flushnum"]), int(r["maxnum"])): r for r in csv.DictReader(fh)}
    assert len(rows) == 3

    def num(row, col):
        return float(row[col])                   # one worker: one value per column

    stop, slow, never = rows[16, 17], rows[8, 10], rows[4, 6]
    for r in rows.values():
        print({k: r[k] for k in ("flushnum", "maxnum", "mops", "memtables", "flushes", "stops",
                                 "stop_s", "slows", "slow_s", "stall_s", "per_second_kops")})
        assert r["preload"] == "0" and float(r["mops"]) > 0
        assert all(float(x) >= 0 for x in r["per_second_kops"].split("|"))
    assert num(stop, "memtables") >= 17 and num(stop, "stops") >= 1 and num(stop, "stop_s") > 0
    assert num(stop, "slows") == 0 and num(stop, "flushes") >= 1 and num(stop, "stall_s") > 0
    assert num(slow, "slows") >= 1 and num(slow, "slow_s") > 0
    assert num(slow, "stops") == 0 and num(slow, "stop_s") == 0
    assert num(never, "flushes") == 0 and 1 <= num(never, "memtables") < 4
    assert num(never, "flush_mb") == 0 and num(never, "l0_files") == 0
    assert int(never["completed"]) <= 40_000

    # the model's counts for the same runs (issue 50): the shipped local
    # profile predicts what each run did
    pred = tmp_path / "pred.csv"
    proc = subprocess.run([sys.executable, "-m", "calibrate", "validate", "--profile", "local",
                           "--runs", str(out), "--out", str(pred), "--summary-only",
                           "--no-progress"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    with open(pred) as fh:
        preds = {(int(r["flushnum"]), int(r["maxnum"])): r for r in csv.DictReader(fh)}

    def predicted(row, col):
        return float(row["pred_" + col].strip("[]").split(",")[0])   # one worker

    p_stop, p_slow, p_never = preds[16, 17], preds[8, 10], preds[4, 6]
    for key, r in preds.items():
        # memtables filled: the run's bytes over the memtable (within 15 % or one)
        assert abs(predicted(r, "memtables") - num(rows[key], "memtables")) <= max(
            1.0, 0.15 * num(rows[key], "memtables")), key
    assert predicted(p_stop, "stops") >= 1 and predicted(p_stop, "stop_s") > 0
    assert predicted(p_stop, "flushes") >= 1
    assert predicted(p_slow, "slows") >= 1 and predicted(p_slow, "stops") == 0
    assert predicted(p_never, "flushes") == 0 and predicted(p_never, "stops") == 0
