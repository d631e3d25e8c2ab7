"""The knob table (`python -m calibrate knobs`): pairs, scoring, the command end to end.

Predicted values are never hard-coded (the solver changes): the tests check
relations -- ratios computed consistently with `sim predict --runs`, files
written, exit codes, messages that name the file, flag or column.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate import cli
from calibrate import knob_predictions
from calibrate import knobs as K
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "data" / "farreach_runs.csv"
TUNING = ROOT / "data" / "farreach_tuning.csv"

TUNING_HEADER = ("id,system,servers,clients,queries_m,memtable_mb,flushnum,maxnum,wal,"
                 "wal_bytes_per_sync_mb,db,variant,mops,note")


def _data_rows(path: Path, ids: list[str]) -> str:
    lines = path.read_text().splitlines()
    keep = [ln for ln in lines[1:] if ln.split(",", 1)[0] in ids]
    assert len(keep) == len(ids)
    return "\n".join([lines[0]] + keep) + "\n"


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _tuning(tmp_path: Path, name: str, rows: list[str]) -> str:
    return _write(tmp_path, name, "\n".join([TUNING_HEADER] + rows) + "\n")


def _pairs(paths):
    runs, knobs = K.load_runs_files([str(p) for p in paths])
    return K.find_pairs(runs, knobs), runs


def _ids(pairs):
    return [(p.a.id, p.b.id, p.knob) for p in pairs]


# ---------------------------------------------------------------------------
# knob columns
# ---------------------------------------------------------------------------

def test_knob_columns_of_each_kind():
    from runio.batch import read_runs
    header, rows = read_runs(RUNS)
    assert set(K.knob_columns("farreach_runs", header, rows)) == {
        "system", "servers", "clients", "timeout_ms", "queries_m", "workload", "memtable_mb",
        "flushnum", "maxnum", "wal", "wal_bytes_per_sync_mb", "seq_check", "affinity",
        "rcvbuf", "db"}
    header, rows = read_runs(TUNING)
    cols = K.knob_columns("farreach_tuning", header, rows)
    assert "variant" in cols                         # a server-code variant is a knob
    assert not {"id", "note", "mops"} & set(cols)
    header, rows = read_runs(ROOT / "data" / "farreach_breakdown.csv")
    assert set(K.knob_columns("farreach_breakdown", header, rows)) == {
        "system", "servers", "clients", "queries_m"}


def test_empty_cells_mean_what_the_scenario_makes_of_them():
    """Each default of empty_means() builds the same scenario as the empty cell."""
    from runio.farreach_kinds import farreach_scenario
    from runio.batch import read_runs
    header, rows = read_runs(RUNS)
    base = dict(rows[2])                             # F003: every column filled in
    empty = K.empty_means()
    assert empty["queries_m"] == "10"
    for col, value in empty.items():
        if col not in header:
            continue
        blank = farreach_scenario({**base, col: ""})
        filled = farreach_scenario({**base, col: value})
        assert blank == filled, col


# ---------------------------------------------------------------------------
# pairs
# ---------------------------------------------------------------------------

ROW = "farreach,16,1024,100,64,48,64,flush,0,normal,{variant},{mops},{note}"


def test_one_knob_differs_is_a_pair_two_are_not(tmp_path):
    path = _tuning(tmp_path, "t.csv", [
        "A," + ROW.format(variant="x", mops=1.0, note=""),
        "B," + ROW.format(variant="y", mops=1.5, note="a note does not count"),
        "C," + ROW.format(variant="y", mops=2.0, note="").replace(",64,48,", ",256,48,"),
    ])
    pairs, _ = _pairs([path])
    # A-B: variant; B-C: memtable; A-C: variant and memtable (not a pair)
    assert _ids(pairs) == [("A", "B", "variant"), ("B", "C", "memtable_mb")]
    assert pairs[0].values == ("x", "y")
    assert pairs[0].measured == pytest.approx(1.5)


def test_non_knob_columns_alone_make_no_pair(tmp_path):
    path = _tuning(tmp_path, "t.csv", [
        "A," + ROW.format(variant="x", mops=1.0, note="first"),
        "B," + ROW.format(variant="x", mops=1.2, note="second"),
    ])
    assert _pairs([path])[0] == []


def test_duplicates_collapse_and_repeats_do_not_pair(tmp_path):
    path = _tuning(tmp_path, "t.csv", [
        "A," + ROW.format(variant="x", mops=1.0, note=""),
        "A2," + ROW.format(variant="x", mops="1.00", note="the same run listed again"),
        "R," + ROW.format(variant="x", mops=1.1, note="a repeat run: other mops"),
        "B," + ROW.format(variant="y", mops=2.0, note=""),
    ])
    pairs, runs = _pairs([path])
    # A2 is A listed twice (dropped); A and R are repeats (no pair between them),
    # each pairs with B once
    assert _ids(pairs) == [("A", "B", "variant"), ("R", "B", "variant")]
    assert [r.id for r in runs if r.duplicate_of is not None] == ["A2"]


def test_rows_without_mops_are_not_paired(tmp_path):
    path = _tuning(tmp_path, "t.csv", [
        "A," + ROW.format(variant="x", mops="", note=""),
        "B," + ROW.format(variant="y", mops=2.0, note=""),
    ])
    assert _pairs([path])[0] == []


def test_numbers_are_compared_by_value_and_empty_queries_is_10(tmp_path):
    path = _tuning(tmp_path, "t.csv", [
        "A,farreach,16,1024,,64,48,64,flush,0,normal,x,1.0,",
        "B,farreach,16.0,1024,10.0,64.0,48,64,flush,0,normal,y,1.3,",
    ])
    pairs, _ = _pairs([path])
    assert _ids(pairs) == [("A", "B", "variant")]
    assert K.normalise("64.0") == K.normalise("64") == "64"
    assert K.normalise("0.50") == "0.5" and K.normalise(" zipf ") == "zipf"


def test_pairs_never_cross_kinds_but_do_cross_files_of_one_kind(tmp_path):
    t1 = _tuning(tmp_path, "t1.csv", ["A," + ROW.format(variant="x", mops=1.0, note="")])
    t2 = _tuning(tmp_path, "t2.csv", ["B," + ROW.format(variant="y", mops=2.0, note="")])
    # a breakdown row with the same system/servers/clients/queries as the tuning rows
    bd = ROOT / "data" / "farreach_breakdown.csv"
    lines = bd.read_text().splitlines()
    b = _write(tmp_path, "b.csv", lines[0] + "\n" + lines[2].replace("B04,", "X1,")
               .replace(",10,0.78,", ",100,0.78,") + "\n")
    pairs, runs = _pairs([t1, b, t2])
    assert {r.kind for r in runs} == {"farreach_tuning", "farreach_breakdown"}
    assert _ids(pairs) == [("A", "B", "variant")]


def test_data_duplicates_are_dropped():
    pairs, runs = _pairs([RUNS])
    dropped = {r.id: r.duplicate_of.id for r in runs if r.duplicate_of is not None}
    assert dropped["F011"] == "F001" and dropped["F012"] == "F002"
    assert ("F001", "F002", "system") in _ids(pairs)
    assert not any("F011" in (p.a.id, p.b.id) for p in pairs)


def test_holdout_folds_hold_out_the_configurations_once_each():
    pairs, runs = _pairs([RUNS])
    folds, of_pair = K.holdout_folds(pairs, runs)
    assert len(of_pair) == len(pairs) and len(set(folds)) == len(folds)
    ids = {i: r.id for i, r in enumerate(runs)}
    by = {(p.a.id, p.b.id): {ids[i] for i in folds[f]} for p, f in zip(pairs, of_pair)}
    # F001 is listed again as F011 and, without mops, as F009: all held out with it
    assert by[("F001", "F002")] >= {"F001", "F002", "F011", "F012", "F009", "F010"}
    # F027 and F061 are one configuration: the two pairs share one refit
    assert by[("F016", "F027")] == by[("F016", "F061")]


# ---------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("measured, predicted, expected", [
    (1.5, 1.3, "agree"),
    (0.6, 0.9, "agree"),
    (1.5, 0.8, "disagree"),
    (0.7, 1.2, "disagree"),
    (1.5, 1.01, "flat"),
    (0.5, 1 / 1.015, "flat"),
    (1.05, 2.0, "small"),
    (1 / 1.05, 0.5, "small"),
    (1.1, 1.03, "agree"),              # exactly 10 %: scored
    (1 / 1.1, 1.03, "disagree"),
    (1.5, 1.02, "agree"),              # exactly 2 %: not flat
    (1.5, None, "-"),
    (1.5, math.nan, "-"),
])
def test_direction(measured, predicted, expected):
    assert K.direction(measured, predicted, 0.10) == expected


def test_scoring_threshold_and_ratio_error():
    assert K.scored(1.1, 0.1) and K.scored(1 / 1.1, 0.1) and not K.scored(1.099, 0.1)
    assert not K.scored(1.0, 0.0)                    # no direction to agree with
    assert K.scored(1.001, 0.0)
    assert K.direction(1.3, 1.25, 0.5) == "small"
    assert K.ratio_error(2.0, 1.5) == pytest.approx(0.25)
    assert K.ratio_error(0.5, 0.6) == pytest.approx(0.2)
    assert K.ratio_error(2.0, None) is None


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------

SUBSET = ["F001", "F002", "F003", "F004", "F011", "F013", "F014", "F021"]


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    d = tmp_path_factory.mktemp("knobs")
    path = d / "runs.csv"
    path.write_text(_data_rows(RUNS, SUBSET))
    return path


def _table(path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_cli_analytic_end_to_end(subset, tmp_path, capsys):
    out, html = tmp_path / "knobs.csv", tmp_path / "knobs.html"
    rc = cli.main(["knobs", "--runs", str(subset), "--engine", "analytic", "--out", str(out),
                   "--html", str(html), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "measured (x)" in cap.out and "analytic" in cap.out
    assert "pairs found: 6" in cap.out and "F011 = F001" in cap.out
    assert "direction right, analytic" in cap.out and "median ratio error" in cap.out
    rows = _table(out)
    expected = {("F001", "F002", "system"), ("F001", "F013", "memtable_mb"),
                ("F002", "F014", "memtable_mb"), ("F003", "F004", "workload"),
                ("F013", "F014", "system"), ("F003", "F021", "wal")}
    # F003 -> F013 differs in flushnum and maxnum, F001 -> F003 in three knobs: no pair
    assert {(r["row_a"], r["row_b"], r["knob"]) for r in rows} == expected
    assert list(rows[0]) == [
        "kind", "knob", "from", "to", "row_a", "row_b", "source_a", "line_a", "source_b",
        "line_b", "mops_a", "mops_b", "measured_x", "scored", "same_scenario",
        "analytic_mops_a", "analytic_mops_b", "analytic_x", "analytic_direction",
        "analytic_ratio_error_pct"]
    for r in rows:
        m = float(r["mops_b"]) / float(r["mops_a"])
        assert float(r["measured_x"]) == pytest.approx(m, rel=1e-12)
        a, b = float(r["analytic_mops_a"]), float(r["analytic_mops_b"])
        assert float(r["analytic_x"]) == pytest.approx(b / a, rel=1e-12)
        assert r["analytic_direction"] == K.direction(m, b / a, 0.10)
        assert r["scored"] == ("true" if K.scored(m, 0.10) else "false")
        assert float(r["analytic_ratio_error_pct"]) == pytest.approx(
            100 * abs(b / a / m - 1), rel=1e-9)
    assert html.exists() and not (tmp_path / "plotly.min.js").exists()
    page = html.read_text()
    assert 'id="kvperf-plotly-gz"' in page and "F013" in page and "memtable_mb" in page

    # the predicted ratios are those of `sim predict --runs` for the same rows
    from runio.kinds import KINDS
    from runio.batch import predict_rows, read_runs
    header, runs = read_runs(subset)
    preds = dict(predict_rows(KINDS["farreach_runs"], runs, load_profile("tofino-testbed"),
                              str(subset)))
    pred = {runs[i]["id"]: p["pred_mops"] for i, p in preds.items()}
    for r in rows:
        assert float(r["analytic_x"]) == pytest.approx(pred[r["row_b"]] / pred[r["row_a"]],
                                                       rel=1e-9)
    # and through the command itself (its CSV keeps 6 significant digits)
    from cli import main as sim_cli
    predicted = tmp_path / "predicted.csv"
    assert sim_cli.main(["predict", "--runs", str(subset), "--out", str(predicted),
                         "--no-progress", "--jobs", "1"]) == 0
    capsys.readouterr()
    shown = {r["id"]: float(r["pred_mops"]) for r in _table(predicted)}
    for r in rows:
        assert float(r["analytic_x"]) == pytest.approx(shown[r["row_b"]] / shown[r["row_a"]],
                                                       rel=2e-5)


def test_cli_simulator_smoke(tmp_path, capsys):
    path = _write(tmp_path, "two.csv", _data_rows(RUNS, ["F003", "F004"]))
    out = tmp_path / "sim.csv"
    rc = cli.main(["knobs", "--runs", path, "--engine", "sim", "--seconds", "0.2", "--jobs", "1",
                   "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "simulator" in cap.out and "0.2 simulated s per rack" in cap.out
    (row,) = _table(out)
    assert (row["row_a"], row["row_b"], row["knob"]) == ("F003", "F004", "workload")
    a, b = float(row["sim_mops_a"]), float(row["sim_mops_b"])
    assert a > 0 and b > 0 and float(row["sim_x"]) == pytest.approx(b / a, rel=1e-12)
    assert "analytic_x" not in row and "gap_pct" not in row


def test_cli_both_engines_report_the_gap(tmp_path, capsys):
    path = _write(tmp_path, "two.csv", _data_rows(RUNS, ["F003", "F004"]))
    out = tmp_path / "both.csv"
    rc = cli.main(["knobs", "--runs", path, "--seconds", "0.2", "--jobs", "1", "--out", str(out),
                   "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "largest analytic-vs-simulator gap" in cap.out
    (row,) = _table(out)
    assert float(row["gap_pct"]) == pytest.approx(
        100 * (float(row["analytic_x"]) / float(row["sim_x"]) - 1), rel=1e-9)


def test_cli_holdout_smoke(tmp_path, capsys):
    """Each pair predicted by a refit without its rows (three one-server rows:
    two pairs, two refits on one row each)."""
    path = _write(tmp_path, "three.csv", _data_rows(RUNS, ["F003", "F004", "F023"]))
    out = tmp_path / "held.csv"
    rc = cli.main(["knobs", "--runs", path, "--engine", "analytic", "--holdout", "--jobs", "1",
                   "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "held out" in cap.out and "2 refit(s)" in cap.out
    rows = _table(out)
    assert {(r["row_a"], r["row_b"]) for r in rows} == {("F003", "F004"), ("F003", "F023")}
    for r in rows:
        assert set(r["held_out"].split("|")) == {r["row_a"], r["row_b"]}
        assert float(r["analytic_x"]) > 0


def test_no_pairs_is_not_an_error(tmp_path, capsys):
    path = _write(tmp_path, "one.csv", _data_rows(RUNS, ["F003", "F013"]))
    out = tmp_path / "none.csv"
    rc = cli.main(["knobs", "--runs", path, "--engine", "analytic", "--out", str(out),
                   "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 0 and "no pairs" in cap.out
    assert _table(out) == [] and out.read_text().startswith("kind,knob,")


def test_ctrl_c_keeps_the_table_and_exits_130(tmp_path, capsys, monkeypatch):
    path = _write(tmp_path, "two.csv", _data_rows(RUNS, ["F003", "F004"]))
    out = tmp_path / "cut.csv"

    def interrupted(task):
        raise KeyboardInterrupt
    monkeypatch.setattr(knob_predictions, "simulate_rack", interrupted)
    rc = cli.main(["knobs", "--runs", path, "--seconds", "0.2", "--jobs", "1", "--out", str(out),
                   "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 130
    assert "PARTIAL: interrupted after 0 of 2 simulated racks" in cap.out + cap.err
    (row,) = _table(out)
    assert row["partial"] == "true" and row["sim_x"] == "" and float(row["analytic_x"]) > 0


# ---------------------------------------------------------------------------
# bad input: exit 2, a message naming the file / flag / column, no traceback
# ---------------------------------------------------------------------------

def _fails(argv, capsys, *names):
    try:
        rc = cli.main(["knobs", *argv, "--no-progress"])
    except SystemExit as exc:       # refused by the argument parser
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    for n in names:
        assert n in err, (n, err)
    return err


def test_unknown_kind(tmp_path, capsys):
    path = _write(tmp_path, "what.csv", "a,b,c\n1,2,3\n")
    _fails(["--runs", path], capsys, "what.csv", "kind")
    _fails(["--runs", str(ROOT / "data" / "morphling_c.csv")], capsys, "morphling_c.csv",
           "farreach_runs")


def test_malformed_cells_name_file_line_and_column(tmp_path, capsys):
    text = _data_rows(RUNS, ["F003", "F004"]).replace("F004,workload,v2,nocache,1,",
                                                      "F004,workload,v2,nocache,one,")
    path = _write(tmp_path, "bad.csv", text)
    _fails(["--runs", path, "--engine", "analytic"], capsys, "bad.csv", "line 3",
           "'servers'")
    text = _data_rows(RUNS, ["F003", "F004"]).replace(",0.024,", ",fast,")
    path = _write(tmp_path, "bad2.csv", text)
    _fails(["--runs", path, "--engine", "analytic"], capsys, "bad2.csv", "line 3", "'mops'")


@pytest.mark.parametrize("value", ["nan", "inf", "-0.1", "10", "ten"])
def test_min_effect_must_be_a_fraction(value, capsys):
    _fails(["--runs", str(RUNS), "--min-effect", value], capsys, "--min-effect")


def test_flags_are_checked_before_any_work(tmp_path, capsys):
    _fails(["--runs", str(RUNS), "--seconds", "0"], capsys, "--seconds")
    _fails(["--runs", str(RUNS), "--jobs", "0"], capsys, "--jobs")
    _fails(["--runs", str(RUNS), "--profile", "no-such-profile"], capsys, "no-such-profile")


def test_outputs_are_checked_before_any_work(tmp_path, capsys):
    _fails(["--runs", str(RUNS), "--out", str(tmp_path / "missing" / "t.csv")], capsys,
           "--out", "does not exist")
    copy = _write(tmp_path, "runs.csv", RUNS.read_text())
    _fails(["--runs", copy, "--out", copy], capsys, "--out", "also an input")
    assert Path(copy).read_text() == RUNS.read_text()
    _fails(["--runs", str(RUNS), "--html", str(tmp_path / "t.csv")], capsys, "--html")
    _fails(["--runs", str(RUNS), "--out", str(tmp_path / "t.txt")], capsys, "--out")


def test_bad_input_as_a_process_prints_no_traceback(tmp_path):
    text = _data_rows(RUNS, ["F003", "F004"]).replace(",zipf,64,4,5,", ",zipff,64,4,5,")
    path = _write(tmp_path, "bad.csv", text)
    p = subprocess.run([sys.executable, "-m", "calibrate", "knobs", "--runs", path,
                        "--engine", "analytic"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "bad.csv" in p.stderr and "line 2" in p.stderr and "'workload'" in p.stderr
