"""Ingestion of FarReach's client statistics JSON and latency dumps, good and bad."""

import csv
from pathlib import Path

import pytest

from calibrate import cli
from calibrate.farreach_logs import (histogram_stats, ingest, read_client_statistics,
                                     read_latency_dump)
from model.errors import InputError

FIX = Path(__file__).parent / "fixtures"


def test_static_statistics_summary():
    cs = read_client_statistics(FIX / "farreach-static2-client0.out")
    assert cs.total_ops == 5000 and cs.execution_ms == 10000
    assert cs.mops == pytest.approx(5000 / 10.0 / 1e6)
    assert cs.server_ops == [900, 2600] and cs.cache_hits == [1200, 300]
    assert cs.cache_hit_ratio == pytest.approx(1500 / 5000)
    assert cs.normalized_x == pytest.approx(5000 / 2600)
    lat = cs.latency_us()
    assert lat["count"] == 5000
    # hits ~30 us, misses ~61 us, weighted by counts
    assert lat["mean_us"] == pytest.approx((1500 * 30.2 + 3500 * 61.4) / 5000, rel=0.03)
    assert cs.latency_us("hit")["p50_us"] == pytest.approx(30, abs=2)


def test_dynamic_statistics_per_second_and_aggregation():
    one = read_client_statistics(FIX / "farreach-zipf-client0.out")
    assert len(one.per_second_mops) == 3
    assert one.per_second_mops[0] == pytest.approx((3100 + 2600) / 1e6)
    two = read_client_statistics([FIX / "farreach-zipf-client0.out"] * 2)
    assert two.total_ops == 2 * one.total_ops and two.execution_ms == one.execution_ms
    assert two.mops == pytest.approx(2 * one.mops)


def test_latency_dump_per_worker():
    d = read_latency_dump(FIX / "server-debug.log")
    assert d.per_worker("wait") == [95.2, 1.7]
    assert d.per_worker("process") == [14.2, 15.1]
    c = read_latency_dump(FIX / "client-debug.log")
    assert c.overall("send_latency_list") == 3.6


def test_histogram_stats_empty():
    assert histogram_stats([0, 0])["count"] == 0


def test_ingest_cli_appends_farreach_row(tmp_path, capsys):
    out = tmp_path / "runs.csv"
    args = ["ingest", "--stats", str(FIX / "farreach-static2-client0.out"),
            "--server-log", str(FIX / "server-debug.log"),
            "--client-log", str(FIX / "client-debug.log"), "--wait-stat", "min",
            "--set", "id=X01", "--set", "system=farreach", "--set", "clients=512",
            "--set", "pktloss=12", "--out", str(out)]
    assert cli.main(args) == 0
    assert "MOPS" in capsys.readouterr().out
    assert cli.main(args[:-2] + ["--set", "id=X02", "--out", str(out)]) == 0
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == ["X01", "X02"]
    r = rows[0]
    assert float(r["mops"]) == pytest.approx(0.0005) and r["servers"] == "2"
    assert float(r["wait_us"]) == 1.7 and float(r["process_us"]) == 14.2 and r["wait_stat"] == "min"
    assert float(r["send_us"]) == 3.6 and r["pktloss"] == "12"
    assert float(r["normalized_x"]) == pytest.approx(5000 / 2600, rel=1e-4)
    # the row is a valid farreach_runs row the toolkit can read back
    from calibrate.runs_io import load_runs
    kind, back = load_runs(out)
    assert kind.name == "farreach_runs" and len(back) == 2


def test_ingest_per_server_lists():
    row = ingest({"system": "nocache"}, server_log=str(FIX / "server-debug.log"),
                 wait_stat="per-server")
    assert row["wait_us"] == "95.2|1.7" and row["process_us"] == "14.2|15.1"


@pytest.mark.parametrize("text, line, field", [
    ('[{"totalOpsdone": 5, "executionMillis": 1000, "perserverOpsdone": [1],\n'
     ' "perserverCachehits": [-1]}]', 1, "[0].perserverCachehits[0]"),
    ('[\n{"totalOpsdone": 5, "executionMillis": 1000, "perserverOpsdone": [1], '
     '"perserverCachehits": [0]},\n{"totalOpsdone": "many", "executionMillis": 1}\n]', 3,
     "[1].totalOpsdone"),
    ('[\n{"totalOpsdone": 5,,}\n]', 2, None),
    ('{"totalOpsdone": 5}', 1, None),
    ('[\n{"totalOpsdone": 5, "executionMillis": 10, "perserverOpsdone": [1, 2], '
     '"perserverCachehits": [0]}\n]', 2, "[0].perserverCachehits"),
    ('[\n{"totalOpsdone": 5, "executionMillis": 10, "perserverOpsdone": [1], '
     '"perserverCachehits": [0], "perserverCachehitTotalHistogram": [1, 2]}\n]', 2,
     "[0].perserverCachehitTotalHistogram"),
])
def test_bad_statistics(tmp_path, text, line, field):
    p = tmp_path / "bad.out"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        read_client_statistics(p)
    e = ei.value
    assert e.source == str(p) and e.line == line and e.field == field


@pytest.mark.parametrize("text, line, field", [
    ("[Latency Statistics of worker_wait_latency_list 0 ]\n| min | max | avg |\n| 1 | 2 | 3 |\n",
     2, "worker_wait_latency_list 0"),
    ("x\n[Latency Statistics of worker_wait_latency_list 0 ]\n"
     "| min | max | avg | 90th | 99th | median | sum |\n| 1 | 2 | fast | 4 | 5 | 6 | 7 |\n",
     4, "worker_wait_latency_list 0.avg"),
    ("[Latency Statistics of p 1 ]\n| min | max | avg | 90th | 99th | median | sum |\n| 1 | 2 |\n",
     3, "p 1"),
    ("nothing here\n", None, None),
])
def test_bad_latency_dump(tmp_path, text, line, field):
    p = tmp_path / "server.log"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        read_latency_dump(p)
    assert ei.value.source == str(p) and ei.value.line == line and ei.value.field == field


def test_ingest_cli_bad_input_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.out"
    p.write_text("[1, 2]")
    rc = cli.main(["ingest", "--stats", str(p), "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and str(p) in err and "line 1" in err and "Traceback" not in err
    rc = cli.main(["ingest", "--stats", str(FIX / "farreach-static2-client0.out"),
                   "--set", "colour=red", "--out", str(tmp_path / "o.csv")])
    assert rc == 2 and "colour" in capsys.readouterr().err
