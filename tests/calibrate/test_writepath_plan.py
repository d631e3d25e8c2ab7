"""The write-path plan keys and columns (issue 50): validation names the key
and its line, earlier runs files still resume and load, the shipped plans
are valid and small."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from calibrate.local_runner import NEWER_COLUMNS, run_plan, server_options, write_path_columns
from calibrate.plan import KEYS, expand, expand_all, load_plan, plan_from_mapping
from calibrate.runs_io import load_runs
from model.errors import InputError
from runio.local_runs import COLUMNS, CONFIG_COLUMNS, WRITE_PATH_COLUMNS

PLANS = Path("calibrate/plans")
RUNS = Path("calibrate/runs")
WRITE_PATH_KEYS = ("flush_threads", "compaction_threads", "wal_bytes_per_sync_mb",
                   "delayed_write_rate_mbps", "bg_write_mbps", "l0_compaction_trigger",
                   "l0_slowdown_trigger", "l0_stop_trigger", "preload")


def test_write_path_keys_are_declared_once_and_are_columns():
    for k in WRITE_PATH_KEYS:
        assert k in KEYS and k in CONFIG_COLUMNS and KEYS[k].doc
    assert KEYS["warmup_s"].lo == 0            # a write-path run starts from the preloaded state


@pytest.mark.parametrize("point, field, text", [
    ({"delayed_write_rate_mbps": 0.001}, "points[1].delayed_write_rate_mbps", "0 or in"),
    ({"bg_write_mbps": -1}, "points[1].bg_write_mbps", "out of range"),
    ({"wal_bytes_per_sync_mb": 0.5}, "points[1].wal_bytes_per_sync_mb", "integer"),
    ({"flush_threads": 0}, "points[1].flush_threads", "out of range"),
    ({"preload": "yes"}, "points[1].preload", "true or false"),
    ({"l0_slowdown_trigger": 3}, "points[1].l0_slowdown_trigger", "at least l0_compaction"),
    ({"l0_slowdown_trigger": 30, "l0_stop_trigger": 25}, "points[1].l0_stop_trigger",
     "at least l0_slowdown"),
    ({"flushnum": 9}, "points[1].flushnum", "less than maxnum"),
])
def test_bad_write_path_keys_name_the_key_and_line(tmp_path, point, field, text):
    body = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in point.items())
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\ndesign = "points"\n[base]\nmaxnum = 9\n'
                    "[[points]]\nmemtable_mb = 4\n"
                    f"[[points]]\nmemtable_mb = 8\n{body}\n")
    with pytest.raises(InputError) as ei:
        load_plan(path)
    e = ei.value
    assert e.field == field and e.source == str(path) and text in str(e)
    key = field.split(".")[-1]
    assert path.read_text().splitlines()[e.line - 1].startswith(key)   # the second point's line


def test_l0_trigger_order_in_the_base_names_the_base():
    with pytest.raises(InputError) as ei:
        plan_from_mapping({"design": "points", "base": {"l0_stop_trigger": 10},
                           "points": [{"workers": 1}]}, "p.toml")
    assert ei.value.field == "base.l0_stop_trigger"          # below RocksDB's slowdown 20


def test_earlier_runs_files_still_resume():
    """Rows written before the write-path keys existed keep matching their points:
    the keys are left out of config_hash while at their defaults."""
    plans = [load_plan(PLANS / f"{n}.toml") for n in ("default", "holdout", "latency")]
    hashes = {p["config_hash"] for p in expand_all(plans, cores=2)}
    for name in ("local.csv", "local-latency.csv"):
        with open(RUNS / name) as fh:
            rows = list(csv.DictReader(fh))
        assert rows and all(r["config_hash"] in hashes for r in rows), name
    # a write-path key away from its default makes another configuration
    base = expand(plan_from_mapping({"design": "points", "points": [{}]}), cores=2)[0]
    for k in WRITE_PATH_KEYS:
        other = {"preload": True, "l0_compaction_trigger": 2, "l0_slowdown_trigger": 30,
                 "l0_stop_trigger": 40}.get(k, 2 if KEYS[k].kind is int else 3.0)
        pt = expand(plan_from_mapping({"design": "points", "points": [{k: other}]}), cores=2)[0]
        assert pt["config_hash"] != base["config_hash"], k


def test_appending_to_an_earlier_runs_file_keeps_its_rows(tmp_path):
    old = tmp_path / "local.csv"
    shutil.copy(RUNS / "local.csv", old)
    before = old.read_text()
    plan = plan_from_mapping({"design": "points", "points": [{"memtable_mb": 8, "preload": True}]})
    points = expand(plan, cores=2)

    def fake(cfg):
        return {"mops": 0.01, "completed": 10, "elapsed_s": 1.0, "wait_stat": "avg",
                "per_second_kops": "0.01", "stop_s": "0|0"}
    counts = run_plan(points, str(old), fake, progress=False)
    assert counts["ran"] == 1
    text = old.read_text()
    assert text.startswith(before)                       # nothing of the file changed
    header = text.splitlines()[0].split(",")
    assert "preload" not in header and "stop_s" not in header
    kind, rows = load_runs(str(old))
    assert kind.name == "local_runs" and len(rows) == len(before.splitlines())


def test_new_runs_files_have_every_column_and_load(tmp_path):
    out = tmp_path / "wp.csv"
    plan = plan_from_mapping({"design": "points", "points": [{"preload": True}]})

    def fake(cfg):
        return {"mops": 0.02, "completed": 20, "elapsed_s": 1.0, "wait_stat": "avg",
                "per_second_kops": "20.000", **{c: "1|2" for c in WRITE_PATH_COLUMNS},
                "preload_s": 1.5}
    run_plan(expand(plan, cores=2), str(out), fake, progress=False)
    with open(out) as fh:
        row = next(csv.DictReader(fh))
    assert list(row) == list(COLUMNS) and row["preload"] == "1" and row["stop_s"] == "1|2"
    assert set(NEWER_COLUMNS) <= set(COLUMNS)
    load_runs(str(out))


def test_server_options_of_a_point():
    class FakeNative:
        @staticmethod
        def ServerOptions(**kw):
            return kw
    point = expand(plan_from_mapping({"design": "points", "points": [{
        "preload": True, "records": 5000, "value_bytes": 256, "wal_bytes_per_sync_mb": 16,
        "delayed_write_rate_mbps": 2.5, "bg_write_mbps": 32, "l0_slowdown_trigger": 8,
        "flush_threads": 4}]}), cores=2)[0]
    so = server_options(FakeNative, point, "/tmp/x")
    assert so["preload_records"] == 5000 and so["preload_value_bytes"] == 256
    assert so["preload_partition"] == "hash"
    assert so["wal_bytes_per_sync"] == 16 << 20 and so["delayed_write_rate"] == int(2.5 * 2**20)
    assert so["bg_write_rate"] == 32 << 20 and so["level0_slowdown_writes_trigger"] == 8
    assert so["level0_stop_writes_trigger"] == 0 and so["flush_threads"] == 4
    assert server_options(FakeNative, {**point, "preload": 0}, "/tmp/x")["preload_records"] == 0


def test_write_path_columns_are_per_worker():
    start = [{"l0_files": 3.0, "pending_compaction_bytes": 2.5e6, "sst_bytes": 1e8},
             {"l0_files": 0.0, "pending_compaction_bytes": 0.0, "sst_bytes": 9e7}]
    end = [{"memtables_sealed": 12.0, "stop_s": 1.25, "stall_micros": 2e6, "flush_bytes": 3e7},
           {"memtables_sealed": 11.0, "stop_s": 0.0, "stall_micros": 0.0, "flush_bytes": 0.0}]
    cols = write_path_columns(start, end)
    assert set(cols) == set(WRITE_PATH_COLUMNS)
    assert cols["memtables"] == "12|11" and cols["stop_s"] == "1.25|0"
    assert cols["stall_s"] == "2|0" and cols["flush_mb"] == "30|0"
    assert cols["l0_files_start"] == "3|0" and cols["pending_compaction_mb_start"] == "2.5|0"
    assert cols["sst_mb_start"] == "100|90" and cols["slows"] == "0|0"


@pytest.mark.parametrize("name, budget_s", [("writepath", 15 * 60), ("writepath-short", 60)])
def test_shipped_write_path_plans(name, budget_s):
    plan = load_plan(PLANS / f"{name}.toml")
    points = expand(plan, cores=2)
    assert all(p["warmup_s"] == 0 and p["timeout_ms"] >= 1000 for p in points)
    # the measured part alone leaves room for setup, preloads and closes
    assert sum(p["duration_s"] for p in points) < budget_s / 2
