"""`python -m sim predict` as a user runs it: table, JSON contract, errors, batch."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def run(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "sim", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_default_prediction_table_has_units():
    out = run("predict").stdout
    for unit in ("MOPS", " us", " %", "packets per run of 10M queries", "x over NoCache"):
        assert unit in out
    assert "bottleneck" in out
    # one row per server of the default 16-server rack: its figures, then (right
    # of |) what RocksDB's LOG would show for it over the run
    rows = [l for l in out.splitlines() if l.strip()[:2].strip().isdigit() and "|" in l]
    assert len(rows) == 16 and all(len(l.split()) == 6 + 1 + 6 for l in rows)
    assert "memtables" in out and "stopped s" in out and "L0 files" in out
    assert any(l.strip().startswith("run ") and " s for 10M queries" in l
               for l in out.splitlines())


def test_json_contract():
    d = json.loads(run("predict", "--json", "--set", "servers=4").stdout)
    for key in ("throughput_mops", "cache_hit_ratio", "normalized_x", "bottleneck",
                "servers", "client", "pktloss", "false_pos"):
        assert key in d
    assert len(d["servers"]) == 4
    assert set(d["servers"][0]) >= {"share", "utilization", "wait_us", "process_us"}
    assert set(d["client"]) == {"send_us", "latency_us"}
    assert d["throughput_mops"] > 0 and 0 < d["cache_hit_ratio"] < 1
    assert abs(sum(s["share"] for s in d["servers"]) - (1 - d["cache_hit_ratio"])) < 1e-6


def test_latency_percentiles_in_table_and_json():
    """p50 / p95 / p99 with their 90 % intervals in the table; the JSON names
    the scenario and profile and carries the percentiles (issue 44)."""
    out = run("predict", "--set", "servers=4").stdout
    line = [l for l in out.splitlines() if l.strip().startswith("latency p50/p95/p99")]
    assert len(line) == 1 and " us" in line[0] and "90 % intervals" in line[0]
    d = json.loads(run("predict", "--json", "--set", "servers=4").stdout)
    assert d["scenario"] == "farreach-rack" and d["profile"] == "tofino-testbed"
    pc = d["latency_us_percentiles"]
    assert 0 < pc["p50"] < pc["p95"] < pc["p99"]
    for k in ("p50", "p95", "p99"):
        iv = pc["intervals"][k]
        assert iv["lo_us"] < pc[k] < iv["hi_us"] and iv["level"] == pytest.approx(0.9)
    assert pc["p50"] < d["client"]["latency_us"] * 5


def test_batch_adds_latency_percentile_columns(tmp_path):
    out = tmp_path / "o.csv"
    run("predict", "--runs", str(DATA / "farreach_tuning.csv"), "--out", str(out))
    rows = read_csv(out)
    for r in rows:
        p50, p95, p99 = (float(r[f"pred_latency_{k}_us"]) for k in ("p50", "p95", "p99"))
        assert 0 < p50 <= p95 <= p99
        assert float(r["pred_latency_p99_us_lo"]) < p99 < float(r["pred_latency_p99_us_hi"])
        assert float(r["pred_latency_us"]) > 0


@pytest.mark.parametrize("args, words", [
    (["--set", "servers=0"], "servers.count"),
    (["--set", "storage.colour=red"], "storage.colour"),
    (["--profile", "no-such-profile"], "no-such-profile"),
    (["--scenario", "missing.toml"], "missing.toml"),
])
def test_bad_input_exit_2_without_traceback(args, words):
    p = run("predict", *args, check=False)
    assert p.returncode == 2
    assert words in p.stderr and "Traceback" not in p.stderr


def test_batch_keeps_every_input_column_and_row(tmp_path):
    out = tmp_path / "p.csv"
    run("predict", "--runs", str(DATA / "farreach_runs.csv"), "--out", str(out))
    src, got = read_csv(DATA / "farreach_runs.csv"), read_csv(out)
    assert len(got) == len(src)
    for a, b in zip(src, got):
        for k, v in a.items():
            assert b[k] == v
    for col in ("pred_mops", "pred_wait_us", "pred_process_us", "pred_send_us",
                "pred_normalized_x", "pred_runtime_x", "pred_pktloss", "pred_false_pos"):
        assert col in got[0]
    per_server = [r for r in got if r["wait_stat"] == "per-server"]
    assert per_server and all(len(r["pred_wait_us"].split("|")) == int(r["servers"]) for r in per_server)
    assert all(float(r["pred_mops"]) > 0 for r in got)


def test_batch_tuning_kind(tmp_path):
    out = tmp_path / "t.csv"
    run("predict", "--runs", str(DATA / "farreach_tuning.csv"), "--out", str(out))
    got = read_csv(out)
    assert len(got) == 22 and all(float(r["pred_mops"]) > 0 for r in got)


def test_batch_bad_cell_names_file_line_column(tmp_path):
    rows = (DATA / "farreach_runs.csv").read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[3].split(",")
    cells[header.index("servers")] = "four"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([rows[0], rows[1], rows[2], ",".join(cells)]) + "\n")
    p = run("predict", "--runs", str(bad), "--out", str(tmp_path / "o.csv"), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "bad.csv" in p.stderr and "line 4" in p.stderr and "servers" in p.stderr


def test_batch_unknown_header(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    p = run("predict", "--runs", str(bad), "--out", str(tmp_path / "o.csv"), check=False)
    assert p.returncode == 2 and "x.csv" in p.stderr and "line 1" in p.stderr


def test_batch_refuses_to_overwrite_prediction_columns(tmp_path):
    first = tmp_path / "p.csv"
    run("predict", "--runs", str(DATA / "farreach_tuning.csv"), "--out", str(first))
    p = run("predict", "--runs", str(first), "--out", str(tmp_path / "again.csv"), check=False)
    assert p.returncode == 2 and "pred_mops" in p.stderr and "p.csv" in p.stderr
    assert not (tmp_path / "again.csv").exists()


def test_run_kinds_load_without_scipy_optimize():
    """Detecting a runs file's kind imports every kind's module; scipy.optimize
    takes 0.3 s to import and only the Morphling controller rows need it, so it
    is imported there, not with the kinds (every '--runs' command paid it)."""
    code = ("import sys, runio.kinds; "
            "sys.exit(1 if 'scipy.optimize' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_list_profiles(capsys):
    # every embedded profile, the kinds it predicts and its fitting command (issue 44)
    from model.profile import embedded_profiles
    from cli import main as cli
    assert cli.main(["predict", "--list-profiles"]) == 0
    out = capsys.readouterr().out
    for name in embedded_profiles():
        assert f"\n{name}" in "\n" + out
    assert "tofino-testbed  (the default)" in out and "farreach_runs" in out
    assert "python -m calibrate fit" in out


def test_batch_compares_measured_and_predicted(tmp_path, capsys):
    # error columns, a per-column summary and a warning for a row far off (issue 44)
    import csv as _csv
    from pathlib import Path
    from cli import main as cli
    root = Path(__file__).resolve().parents[2]
    lines = (root / "data" / "farreach_tuning.csv").read_text().splitlines()
    header = lines[0].split(",")
    far = lines[1].split(",")
    far[header.index("mops")] = "0.02"          # 20x below anything this rack does
    runs = tmp_path / "runs.csv"
    runs.write_text("\n".join([lines[0], ",".join(far), lines[2]]) + "\n")
    out = tmp_path / "out.csv"
    assert cli.main(["predict", "--runs", str(runs), "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    rows = list(_csv.DictReader(out.read_text().splitlines()))
    for r in rows:
        pred, meas = float(r["pred_mops"]), float(r["mops"])
        assert float(r["err_mops_pct"]) == pytest.approx(100 * (pred - meas) / meas, rel=1e-4)
    assert "mops           2 rows: median error" in err and "inside the 90 % interval" in err
    assert f"WARNING: {rows[0]['id']}: mops measured 0.02" in err
    assert rows[1]["id"] not in err.split("WARNING")[-1]
