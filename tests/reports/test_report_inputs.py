"""Bad input files give InputError naming the file, line and column; the CLI exits 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model.errors import InputError
from reports import inputs
from reports.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_wrong_field_count_names_line_and_column(tmp_path):
    p = tmp_path / "sweep.csv"
    p.write_text("id,servers,clients,mops,pred_mops\nA,1,32,0.1,0.11\nB,2,64,0.2\n")
    with pytest.raises(InputError) as ei:
        inputs.read_sweep(p)
    e = ei.value
    assert (e.source, e.line, e.field) == (str(p), 3, "pred_mops")
    assert str(p) in str(e) and "line 3" in str(e) and "pred_mops" in str(e)


def test_non_numeric_prediction_cell(tmp_path):
    p = tmp_path / "val.csv"
    p.write_text("id,mops,pred_mops\nA,0.1,0.11\nB,0.2,fast\n")
    with pytest.raises(InputError) as ei:
        inputs.read_validation(p)
    assert (ei.value.line, ei.value.field) == (3, "pred_mops")
    assert "'fast'" in str(ei.value)


def test_line_numbers_count_quoted_newlines(tmp_path):
    p = tmp_path / "val.csv"
    p.write_text('id,note,mops,pred_mops\nA,"two\nlines",0.1,0.11\nB,x,0.2,nan\n')
    with pytest.raises(InputError) as ei:
        inputs.read_validation(p)
    assert (ei.value.line, ei.value.field) == (4, "pred_mops")


def test_per_server_lists_are_accepted(tmp_path):
    p = tmp_path / "val.csv"
    p.write_text("id,wait_us,pred_wait_us\nA,1.6|2.0,1.7|2.1\n")
    rows = inputs.read_validation(p)
    assert rows[0]["pred_wait_us"] == "1.7|2.1"


def test_validation_needs_a_pair(tmp_path):
    p = tmp_path / "val.csv"
    p.write_text("id,mops,pred_kops\nA,0.1,0.11\n")
    with pytest.raises(InputError, match="pred_<column>"):
        inputs.read_validation(p)


def test_timeline_cells_must_be_numbers(tmp_path):
    p = tmp_path / "tl.csv"
    p.write_text("t_s,throughput_mops,wait_us_0\n1,1.0,2.0\n2,1.1,slow\n")
    with pytest.raises(InputError) as ei:
        inputs.read_timeline(p)
    assert (ei.value.line, ei.value.field) == (3, "wait_us_0")


def test_timeline_requires_columns(tmp_path):
    p = tmp_path / "tl.csv"
    p.write_text("time,throughput_mops\n1,1.0\n")
    with pytest.raises(InputError) as ei:
        inputs.read_timeline(p)
    assert (ei.value.line, ei.value.field) == (1, "t_s")


@pytest.mark.parametrize("text, problem", [("", "empty file"), ("id,mops,pred_mops\n", "no data rows"),
                                           ("id,mops,mops\nA,1,2\n", "duplicate")])
def test_degenerate_csv(tmp_path, text, problem):
    p = tmp_path / "x.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=problem):
        inputs.read_sweep(p)


def test_missing_file():
    with pytest.raises(InputError, match="file not found"):
        inputs.read_sweep("/nonexistent/sweep.csv")


def test_bad_json_names_line_and_column(tmp_path):
    p = tmp_path / "pred.json"
    p.write_text('{\n  "throughput_mops": 1.0,\n  "servers": [,]\n}\n')
    with pytest.raises(InputError) as ei:
        inputs.read_prediction(p)
    assert ei.value.line == 3 and "column 15" in str(ei.value)


def test_prediction_fields_are_checked(tmp_path, prediction):
    prediction["servers"][2]["wait_us"] = "slow"
    p = tmp_path / "pred.json"
    p.write_text(json.dumps({"prediction": prediction}))
    with pytest.raises(InputError) as ei:
        inputs.read_prediction(p)
    assert ei.value.field == "prediction.servers[2].wait_us"


def test_wrapped_prediction_is_split(tmp_path, prediction, scenario, profile):
    p = tmp_path / "pred.json"
    p.write_text(json.dumps({"prediction": prediction, "scenario": scenario, "profile": profile}))
    pred, scen, prof = inputs.read_prediction(p)
    assert pred["throughput_mops"] == 0.9 and scen["name"].startswith("rack") and prof["name"] == "testbed"


def test_cli_exit_code_2_without_traceback(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("id,mops,pred_mops\nA,0.1\n")
    r = subprocess.run([sys.executable, "-m", "reports", "build", "--out", str(tmp_path / "r.html"),
                        "--validation", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert f"{p}, line 2, field 'pred_mops'" in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_cli_needs_an_input(tmp_path, capsys):
    assert main(["build", "--out", str(tmp_path / "r.html")]) == 2
    assert "at least one" in capsys.readouterr().err
