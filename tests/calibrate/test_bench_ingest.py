"""Ingestion of YCSB client and RocksDB db_bench output: parse, errors, rows, predictions."""

import csv
from pathlib import Path

import pytest

from calibrate import cli
from calibrate.dbbench_output import read_dbbench
from calibrate.ycsb_output import combine, read_ycsb
from model.errors import InputError
from runio.inputs import load_profile

FIX = Path(__file__).parent / "fixtures"
YCSB_A = FIX / "ycsb-workloada-hdr.txt"
YCSB_B = FIX / "ycsb-workloadb-timeseries.txt"
DB_NEW = FIX / "dbbench-fillrandom-readrandom.txt"
DB_OLD = FIX / "dbbench-overwrite-v6.txt"


# ---------------------------------------------------------------- YCSB

def test_ycsb_hdrhistogram_output():
    run = read_ycsb(YCSB_A)
    m, cfg = run.measured()["measured"], run.measured()["config"]
    assert m["runtime_ms"] == 40167 and m["throughput_ops"] == pytest.approx(24896.0589538676)
    assert m["mops"] == pytest.approx(0.0248960589538676)
    assert m["read_count"] == 499843 and m["update_count"] == 500157
    assert m["read_p95_us"] == 718 and m["update_p99_us"] == 1393 and m["read_p999_us"] is None
    assert m["read_min_us"] == 48 and m["update_max_us"] == 25983
    assert m["update_failed"] == 7 and m["read_failed"] == 0
    # CLEANUP is the binding's shutdown, not a request
    assert m["latency_avg_us"] == pytest.approx(
        (499843 * 302.7767358950711 + 500157 * 341.0119782388334) / 1e6)
    # the slowest full status interval (the last, partial one left out)
    assert m["throughput_min_ops"] == 23534.4
    assert cfg == {"clients": 16, "records": 1000000, "distribution": "zipf",
                   "queries_m": 1.0, "read_ratio": pytest.approx(0.499843)}


def test_ycsb_timeseries_output_and_fractional_percentile():
    m = read_ycsb(YCSB_B).measured()
    assert m["measured"]["read_p999_us"] == 811 and m["measured"]["insert_p99_us"] == 311
    assert m["measured"]["read_failed"] == 122          # Return=NOT_FOUND
    assert m["measured"]["throughput_min_ops"] is None  # no status lines
    assert m["config"]["read_ratio"] == pytest.approx(0.95012) and m["config"]["clients"] is None


def test_ycsb_clients_of_one_run_combine():
    one = read_ycsb(YCSB_A)
    both = combine([one, read_ycsb(YCSB_A)]).measured()["measured"]
    assert both["throughput_ops"] == pytest.approx(2 * one.throughput_ops)
    assert both["read_count"] == 2 * 499843 and both["update_failed"] == 14
    assert both["read_avg_us"] == pytest.approx(302.7767358950711)
    assert combine([one, read_ycsb(YCSB_A)]).threads == 32


@pytest.mark.parametrize("text, line, field", [
    ("[OVERALL], RunTime(ms), 100\n[OVERALL], Throughput(ops/sec), 10\n"
     "[READ], Operations, 1\n[READ], AverageLatency(us), fast\n", 4, "[READ] AverageLatency(us)"),
    ("[OVERALL], RunTime(ms), 100\n[READ], Operations\n", 2, "[READ]"),
    ("[OVERALL], RunTime(ms), 100\n[OVERALL], Throughput(ops/sec), 10\n"
     "[UPDATE], Operations, 2.5\n", 3, "[UPDATE] Operations"),
    ("[OVERALL], RunTime(ms), 100\n[OVERALL], Throughput(ops/sec), 10\n"
     "[READ], Operations, 3\n[READ], 99thPercentileLatency(us), -4\n", 4,
     "[READ] 99thPercentileLatency(us)"),
    ("[OVERALL], RunTime(ms), 100\n[OVERALL], Throughput(ops/sec), 10\n[READ], Operations, 1\n"
     "[OVERALL], RunTime(ms), 200\n", 4, "[OVERALL] RunTime(ms)"),
    ("[OVERALL], Throughput(ops/sec), -1\n", 1, "[OVERALL] Throughput(ops/sec)"),
    ("Command line: -threads many\n", 1, "threadcount"),
    ("YCSB Client 0.17.0\nLoading workload...\n", None, None),          # never finished
    ("[OVERALL], RunTime(ms), 100\n[OVERALL], Throughput(ops/sec), 10\n", None, None),
])
def test_ycsb_errors_name_file_line_field(tmp_path, text, line, field):
    p = tmp_path / "ycsb.txt"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        read_ycsb(p)
    assert (ei.value.source, ei.value.line, ei.value.field) == (str(p), line, field)


# ---------------------------------------------------------------- db_bench

def test_dbbench_current_format():
    fill, read = read_dbbench(DB_NEW).rows()
    assert (fill["benchmark"], fill["key_bytes"], fill["value_bytes"], fill["num"]) == \
        ("fillrandom", 16, 128, 1000000)
    assert fill["op_us"] == 6.104 and fill["throughput_ops"] == 163827
    assert fill["elapsed_s"] == 6.104 and fill["operations"] == 1000000 and fill["rate_mb_s"] == 22.5
    assert fill["hist_op"] == "write" and fill["op_p99_us"] == 18.77 and fill["op_p9999_us"] == 1215.33
    assert fill["op_p95_us"] == pytest.approx(9.876012)      # from --statistics
    assert (fill["stall_l0_delays"], fill["stall_memtable_stops"]) == (3, 2)
    assert (fill["stall_delays"], fill["stall_stops"]) == (3, 2)
    assert fill["stall_s"] == pytest.approx(1.840211)
    assert fill["stall_pct"] == pytest.approx(100 * 1.840211 / 6.104)
    assert read["found"] == 632215 and read["hist_op"] == "read" and read["op_p95_us"] == 5.513
    # counters are cumulative since the DB opened: readrandom stalled no further
    assert read["stall_s"] == 0 and read["stall_pct"] == 0


def test_dbbench_older_format_and_stall_spelling():
    (row,) = read_dbbench(DB_OLD).rows()
    assert row["op_us"] == 14.87 and "elapsed_s" not in row and row["value_bytes"] == 1024
    assert (row["stall_l0_delays"], row["stall_l0_stops"], row["stall_memtable_delays"],
            row["stall_memtable_stops"], row["stall_pending_delays"]) == (12, 1, 7, 2, 5)
    assert (row["stall_delays"], row["stall_stops"]) == (24, 3)      # sums of the causes
    assert row["stall_s"] == pytest.approx(2.108) and row["stall_pct"] == 28.5


@pytest.mark.parametrize("text, line, field", [
    ("readrandom : abc micros/op 10 ops/sec;\n", 1, "readrandom micros/op"),
    ("readrandom : 1.5 micros/op;\n", 1, "micros/op"),
    ("fillseq : 1.0 micros/op 10 ops/sec;\nMicroseconds per write:\nCount: 10 Average: 1.0\n"
     "Percentiles: P50: 1.00 P99: x\n", 4, "write P99"),
    ("fillseq : 1.0 micros/op 10 ops/sec;\nCumulative stall: soon, 1 percent\n", 2,
     "Cumulative stall"),
    ("fillseq : 1.0 micros/op 10 ops/sec;\nWrite Stall (count): memtable-limit-stops: many\n", 2,
     "Write Stall (count) memtable-limit-stops"),
    ("fillseq : 1.0 micros/op 10 ops/sec;\nStalls(count): 1.5 level0_slowdown\n", 2,
     "Stalls(count) level0_slowdown"),
    ("Entries:    lots\n", 1, "Entries"),
    ("fillseq : 1.0 micros/op 10 ops/sec 1.0 seconds 12.5 operations;\n", 1,
     "fillseq operations"),
    ("RocksDB: version 8.0\nKeys: 16 bytes each\n", None, None),     # no result line
])
def test_dbbench_errors_name_file_line_field(tmp_path, text, line, field):
    p = tmp_path / "db_bench.log"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        read_dbbench(p)
    assert (ei.value.source, ei.value.line, ei.value.field) == (str(p), line, field)


# ---------------------------------------------------------------- the command

def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_ingest_ycsb_cli_appends_and_keeps_an_unterminated_last_line(tmp_path, capsys):
    out = tmp_path / "runs.csv"
    args = ["ingest", "--format", "ycsb", str(YCSB_A), "--set", "servers=16",
            "--set", "system=farreach", "--out", str(out)]
    assert cli.main(args) == 0
    assert "latency_avg_us=321.9 us" in capsys.readouterr().out
    text = out.read_text()
    out.write_text(text.rstrip("\n"))                   # a hand edit dropped the newline
    assert cli.main(["ingest", "--format", "ycsb", str(YCSB_B), "--set", "servers=4",
                     "--set", "clients=64", "--out", str(out)]) == 0
    rows = _rows(out)
    assert [r["id"] for r in rows] == ["ycsb-workloada-hdr", "ycsb-workloadb-timeseries"]
    assert rows[0]["clients"] == "16" and rows[0]["block"] == "ingested"
    assert rows[1]["clients"] == "64" and float(rows[1]["read_ratio"]) == pytest.approx(0.95012)
    from calibrate.runs_io import load_runs
    kind, back = load_runs(out)
    assert kind.name == "ycsb_runs" and len(back) == 2


def test_ingest_one_run_and_dbbench_rows(tmp_path):
    out = tmp_path / "y.csv"
    assert cli.main(["ingest", "--format", "ycsb", "--one-run", str(YCSB_A), str(YCSB_A),
                     "--set", "servers=16", "--out", str(out)]) == 0
    (row,) = _rows(out)
    assert row["clients"] == "32" and float(row["throughput_ops"]) == pytest.approx(49792.1, rel=1e-5)
    out = tmp_path / "d.csv"
    assert cli.main(["ingest", "--format", "dbbench", str(DB_NEW), str(DB_OLD),
                     "--set", "threads=2", "--out", str(out)]) == 0
    rows = _rows(out)
    assert [r["benchmark"] for r in rows] == ["fillrandom", "readrandom", "overwrite"]
    assert {r["threads"] for r in rows} == {"2"}


@pytest.mark.parametrize("extra, field", [
    (["--set", "servers=-5", "--set", "clients=abc"], "servers"),
    (["--set", "servers=16", "--set", "clients=abc"], "clients"),
    (["--set", "colour=red"], "colour"),
    ([], "servers"),                                    # the file cannot tell
    (["--set", "servers=16", "--set", "clients=8", "--set", "flushnum=9"], "flushnum"),   # >= maxnum (default 5)
])
def test_ingest_bad_input_exits_2_and_leaves_the_file(tmp_path, capsys, extra, field):
    out = tmp_path / "runs.csv"
    out.write_text("keep,me\n1,2")
    rc = cli.main(["ingest", "--format", "ycsb", str(YCSB_B)] + extra + ["--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and f"field '{field}'" in err and "Traceback" not in err
    assert out.read_text() == "keep,me\n1,2"


def test_ingest_refuses_a_file_of_another_kind_untouched(tmp_path, capsys):
    out = tmp_path / "runs.csv"
    text = Path("data/farreach_runs.csv").read_text().rstrip("\n")
    out.write_text(text)
    rc = cli.main(["ingest", "--format", "dbbench", str(DB_OLD), "--out", str(out)])
    assert rc == 2 and "lacks columns" in capsys.readouterr().err
    assert out.read_text() == text


def test_ingested_runs_predict_and_validate(tmp_path, capsys):
    from calibrate.validate import format_report, validate
    from runio.batch import run_batch
    y, d = tmp_path / "y.csv", tmp_path / "d.csv"
    assert cli.main(["ingest", "--format", "ycsb", str(YCSB_A), "--set", "servers=16",
                     "--out", str(y)]) == 0
    assert cli.main(["ingest", "--format", "dbbench", str(DB_NEW), "--out", str(d)]) == 0
    kind, n = run_batch(str(y), str(tmp_path / "yp.csv"), progress=False)
    (row,) = _rows(tmp_path / "yp.csv")
    assert kind.name == "ycsb_runs" and float(row["pred_mops"]) > 0
    assert float(row["pred_latency_avg_us"]) > 0
    # each operation's p50/p95/p99 against the client latency's percentiles
    # (all operations: the model does not tell reads from writes), with errors
    assert row["read_p99_us"] == "1235"
    assert "read_p99_us" not in row["unpredicted"].split("|")
    assert "read_max_us" in row["unpredicted"].split("|")         # kept, and named
    assert float(row["pred_read_p99_us"]) == float(row["pred_update_p99_us"]) > 0
    assert float(row["pred_read_p50_us"]) < float(row["pred_read_p99_us"])
    assert float(row["err_read_p99_us_pct"]) == pytest.approx(
        100 * (float(row["pred_read_p99_us"]) / 1235 - 1), rel=1e-3)
    assert "pred_insert_p99_us" not in row                       # the run did no inserts
    kind, n = run_batch(str(d), str(tmp_path / "dp.csv"), progress=False)
    rows = _rows(tmp_path / "dp.csv")
    assert n == 2 and all(float(r["pred_op_us"]) > 0 for r in rows)
    assert "stall_l0_delays" in rows[0]["unpredicted"]
    v = validate(load_profile("local"), str(d))
    assert set(v.summary) == {"op_us", "throughput_ops"} and "stall_s" in v.unpredicted
    assert "not predicted" in format_report(v)
