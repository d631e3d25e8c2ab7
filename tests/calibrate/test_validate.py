"""Validation: per-column errors, Spearman, worst rows, the gate and the HTML report."""

import csv

import pytest

from calibrate import cli
from runio.local_runs import COLUMNS
from calibrate.runs_io import RunsWriter
from calibrate.validate import ape, gate, validate

from .conftest import synthetic_rows
from runio.inputs import save_profile


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory, priors, small_points):
    """Runs 'measured' by the priors; throughput of the last two rows is 30% off."""
    rows = synthetic_rows(priors, small_points)
    rows[-1]["mops"] = repr(float(rows[-1]["mops"]) * 1.3)
    rows[-2]["mops"] = repr(float(rows[-2]["mops"]) * 1.3)
    path = tmp_path_factory.mktemp("val") / "runs.csv"
    with RunsWriter(path, COLUMNS) as w:
        for r in rows:
            w.append({k: v for k, v in r.items() if not k.startswith("__")})
    prof = tmp_path_factory.mktemp("val") / "priors.toml"
    save_profile(priors, prof)
    return path, prof


def test_ape_scalars_and_lists():
    assert ape("10", 11.0) == pytest.approx(10.0)
    assert ape("1|2", "1.1|2.2") == pytest.approx(10.0)
    assert ape("", 3.0) is None and ape("0", 1.0) is None and ape("1|2", "1") is None


def test_validate_summary(runs_csv, priors):
    path, _ = runs_csv
    v = validate(priors, [str(path)])
    assert v.kind == "local_runs" and len(v.rows) == 8
    s = v.summary
    assert s["process_us"].median_ape == pytest.approx(0.0, abs=1e-6)
    assert s["mops"].median_ape == pytest.approx(0.0, abs=1e-6)
    assert s["mops"].mean_ape == pytest.approx(2 * (1 - 1 / 1.3) * 100 / 8, rel=1e-3)
    assert s["mops"].unit == "MOPS" and s["process_us"].unit == "us"
    assert s["process_us"].spearman == pytest.approx(1.0)
    assert {w["id"] for w in v.worst[:2]} == {"synthetic-007", "synthetic-008"}
    assert gate(v, 5.0) == []
    assert gate(v, -1.0)


def test_validate_cli_gate_and_outputs(runs_csv, tmp_path, capsys):
    path, prof = runs_csv
    out = tmp_path / "pred.csv"
    html = tmp_path / "report.html"
    rc = cli.main(["validate", "--profile", str(prof), "--runs", str(path), "--max-error", "5",
                   "--out", str(out), "--html", str(html)])
    cap = capsys.readouterr()
    assert rc == 0 and "PASS" in cap.err
    assert "median APE" in cap.out and "MOPS" in cap.out and "synthetic-008" in cap.out
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert "pred_mops" in rows[0] and "ape_mops" in rows[0]
    assert html.exists() and html.stat().st_size > 1000
    # a gate tighter than the 30%-off rows' effect on the mean still passes on the median,
    # but a column whose median is off fails with exit 1 and a message
    rows_bad = tmp_path / "bad.csv"
    with open(path) as src, open(rows_bad, "w") as dst:
        lines = src.read().splitlines()
        header = lines[0].split(",")
        i = header.index("process_us")
        dst.write(lines[0] + "\n")
        for line in lines[1:]:
            cells = line.split(",")
            cells[i] = repr(float(cells[i]) * 2)
            dst.write(",".join(cells) + "\n")
    rc = cli.main(["validate", "--profile", str(prof), "--runs", str(rows_bad),
                   "--max-error", "15", "--summary-only"])
    err = capsys.readouterr().err
    assert rc == 1 and "process_us" in err and "50.0% > 15%" in err


def test_validate_bad_input_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    assert cli.main(["validate", "--profile", "calibrate/priors/local.toml", "--runs",
                     str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err


def test_aggregate_repeats_takes_the_median():
    from calibrate.validate import aggregate_repeats
    base = {"workers": "2", "clients": "8", "config_hash": "", "__line__": "2"}
    rows = [dict(base, id=f"r{i}", repeat=str(i), config_hash=f"h{i}", mops=m, process_us="20")
            for i, m in enumerate(["0.1", "0.3", "0.2"])]
    rows.append(dict(base, id="other", clients="4", repeat="0", mops="0.5", process_us="10"))
    agg = aggregate_repeats(rows, ("mops", "process_us"))
    assert len(agg) == 2
    assert float(agg[0]["mops"]) == pytest.approx(0.2) and agg[0]["id"] == "r0 (x3)"
    assert agg[1]["id"] == "other" and agg[1]["mops"] == "0.5"
