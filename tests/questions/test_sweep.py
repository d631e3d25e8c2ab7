"""``python -m sim sweep``: configurations, one batch, baseline %, outputs, bad input."""

from __future__ import annotations

import csv
import importlib.machinery
import json
import re
import sys
import types

import pytest

import model.solvers
from model.errors import InputError
from model.scenario import Scenario
from cli import sweep as sw
from cli.main import main
from runio.inputs import load_profile

LIGHT = ["--set", "clients=32,64"]        # no loss: milliseconds per configuration


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cartesian_and_zip():
    axes = sw.parse_axes(["servers=16,32", "storage.memtable_mb=16,256", "timeout=100,5000"])
    assert [a.key for a in axes] == ["servers.count", "storage.memtable_mb", "clients.timeout_ms"]
    combos = sw.configurations(axes)
    assert len(combos) == 8
    assert combos[0] == {"servers.count": 16, "storage.memtable_mb": 16, "clients.timeout_ms": 100}
    assert combos[1]["clients.timeout_ms"] == 5000          # the last key varies fastest
    zipped = sw.configurations(sw.parse_axes(["servers=16,32", "clients=64,128"]), zip_=True)
    assert zipped == [{"servers.count": 16, "clients.threads": 64},
                      {"servers.count": 32, "clients.threads": 128}]


def test_all_configurations_in_one_batch(monkeypatch):
    calls = []
    real = model.solvers.predict_many

    def counting(scenarios, profile):
        calls.append(len(list(scenarios)))
        return real(scenarios, profile)

    monkeypatch.setattr(model.solvers, "predict_many", counting)
    res = sw.run_sweep(Scenario.default(), load_profile("tofino-testbed"),
                       sw.parse_axes(["clients=32,64", "storage.memtable_mb=16,256"]), baseline=2,
                       intervals=False)
    assert calls == [4]
    assert res.rows[1]["is_baseline"] and res.rows[1]["throughput_vs_baseline_pct"] == 0.0
    b = res.rows[1]["throughput_mops"]
    for r in res.rows:
        assert r["throughput_vs_baseline_pct"] == pytest.approx(100 * (r["throughput_mops"] / b - 1))
        assert r["throughput_lo_mops"] is None and r["throughput_hi_mops"] is None
        assert r["wait_min_us"] <= r["wait_mean_us"] <= r["wait_max_us"]
        assert r["bottleneck"] and r["bottleneck_text"]
    frame = res.to_frame()
    assert list(frame.index) == [1, 2, 3, 4] and "throughput_mops" in frame


def test_table_has_units_and_says_when_there_is_no_interval(capsys, monkeypatch):
    code, out, err = run(["sweep"] + LIGHT + ["--no-intervals"], capsys)
    assert code == 0
    assert "throughput interval: none" in out
    for unit in ("MOPS", "us", "% time", "pkts/run", "threads"):
        assert unit in out
    assert "1*" in out and "bottleneck per row" in out


def test_intervals_when_the_build_has_them(capsys, monkeypatch):
    """With ``model.intervals`` present (the lead's branch), its bounds are shown."""
    fake = types.ModuleType("model.intervals")
    fake.__spec__ = importlib.machinery.ModuleSpec("model.intervals", None)

    class R:
        def __init__(self, p):
            self.prediction, self.mops_lo, self.mops_hi = p, 0.9 * p.throughput_mops, \
                1.1 * p.throughput_mops

    def predict_with_intervals(scenarios, profile, z=1.645):
        assert z == pytest.approx(1.645)
        return [R(p) for p in model.solvers.predict_many(scenarios, profile)]

    fake.predict_with_intervals = predict_with_intervals
    monkeypatch.setitem(sys.modules, "model.intervals", fake)
    code, out, _ = run(["sweep"] + LIGHT + ["--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["interval"].startswith("90 %")
    for r in d["rows"]:
        assert r["throughput_lo_mops"] < r["throughput_mops"] < r["throughput_hi_mops"]
    code, out, _ = run(["sweep"] + LIGHT, capsys)
    assert "[90 % int.]" in out and "interval: none" not in out


@pytest.mark.parametrize("ext", ["csv", "json", "html"])
def test_outputs(tmp_path, capsys, ext):
    path = tmp_path / f"s.{ext}"
    code, _, err = run(["sweep"] + LIGHT + ["--baseline", "2", "--out", str(path)], capsys)
    assert code == 0 and str(path) in err
    text = path.read_text()
    if ext == "csv":
        rows = list(csv.DictReader(text.splitlines()))
        assert [r["clients.threads"] for r in rows] == ["32", "64"]
        assert rows[1]["is_baseline"] == "true" and float(rows[1]["throughput_vs_baseline_pct"]) == 0
        assert {"throughput_mops", "latency_us", "stall_pct", "pktloss", "bottleneck",
                "wait_mean_us", "process_mean_us"} <= set(rows[0])
    elif ext == "json":
        d = json.loads(text)
        assert d["baseline_row"] == 2 and len(d["rows"]) == 2 and d["units"]["latency_us"] == "us"
    else:
        assert "Plotly.newPlot" in text or "plotly" in text.lower()
        assert "Throughput per configuration" in text and "clients.threads (threads)" in text
        for fig in re.findall(r'<script type="application/json" id="fig-\d+-data">(.*?)</script>',
                              text, re.S):
            assert_legend_on_page(json.loads(fig)["layout"])


def assert_legend_on_page(lay: dict) -> None:
    """A legend anchored outside the figure is not drawn: the sweep's bar
    colours (what limits each rack) had no key when its legend sat above the
    container's top edge."""
    leg = lay.get("legend", {})
    y, anchor = leg.get("y", 1.0), leg.get("yanchor", "auto")
    if leg.get("yref") == "container":
        assert not (y >= 1.0 and anchor == "bottom") and not (y <= 0.0 and anchor == "top"), leg
    else:        # paper: above the plot only into a top margin that has room for it
        if y >= 1.0 and anchor == "bottom":
            assert lay.get("margin", {}).get("t", 0) >= 60, (leg, lay.get("margin"))


@pytest.mark.parametrize("argv,field", [
    (["--set", "nosuchkey=1,2"], "nosuchkey"),
    (["--set", "servers=16,zero"], "servers.count"),
    (["--set", "servers=16,0"], "servers.count"),
    (["--set", "servers=16,,32"], "servers"),
    (["--set", "servers="], "servers"),
    (["--set", "servers=16,32", "--set", "servers.count=8"], "servers.count"),
    (["--set", "servers=16,32", "--set", "clients=1,2,3", "--zip"], "--zip"),
    (["--set", "servers=16,32", "--baseline", "3"], "--baseline"),
    (["--set", "servers=16,32", "--out", "x.txt"], "--out"),
    ([], "--set"),
    (["--set", "storage.flushnum=4,8"], "storage.flushnum"),
])
def test_bad_input_exits_2_naming_the_key(capsys, argv, field):
    code, out, err = run(["sweep"] + argv, capsys)
    assert code == 2
    assert f"'{field}'" in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_api_mapping_input():
    axes = sw.parse_axes({"servers": [16, 32], "storage.wal": [True, False]}, source="sweep")
    assert [a.values for a in axes] == [(16, 32), (True, False)]
    with pytest.raises(InputError) as exc:
        sw.parse_axes({"servers": []}, source="sweep")
    assert exc.value.field == "servers"


def test_a_plan_csv_is_a_what_if_table(tmp_path, capsys):
    """--plan: a hand-made CSV of scenario keys, with ids and empty cells (the
    base value), needs no measured-run columns, and predicts what --set
    predicts for the same configurations."""
    plan = tmp_path / "plan.csv"
    given = b"id,servers,clients.threads\r\nnow,16,32\r\nwider,32,\r\n"     # CRLF
    plan.write_bytes(given)
    out = tmp_path / "p.csv"
    code, text, err = run(["sweep", "--plan", str(plan), "--no-intervals", "--out", str(out)],
                          capsys)
    assert code == 0, err
    assert "rows of" in text and "wider" in text
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["id"] for r in rows] == ["now", "wider"]
    base = Scenario.default()
    # the empty cell is the base scenario's value, shown as such
    assert rows[1]["clients.threads"] == str(base.clients.threads)
    code, _, _ = run(["sweep", "--set", "servers=16,32", "--set",
                      f"clients=32,{base.clients.threads}", "--zip", "--no-intervals",
                      "--out", str(tmp_path / "z.csv")], capsys)
    z = list(csv.DictReader((tmp_path / "z.csv").read_text().splitlines()))
    assert [r["throughput_mops"] for r in rows] == [r["throughput_mops"] for r in z]
    assert plan.read_bytes() == given                     # the user's file is untouched


@pytest.mark.parametrize("text,line,column", [
    ("id,servrs\na,16\n", 1, "servrs"),                          # unknown column
    ("id,servers\na,16\nb,zero\n", 3, "servers"),                # bad value: the user's column
    ("servers,storage.flushnum,storage.maxnum\n16,2,4\n16,8,4\n", 3, "storage.flushnum"),
    ("servers,servers.count\n16,32\n", 1, "servers.count"),      # one key twice
    ("servers,clients\n16,-5\n", 2, "clients"),
    ("id,servers\na,16\na,32\n", 3, "id"),
])
def test_a_bad_plan_names_file_line_and_column(tmp_path, capsys, text, line, column):
    plan = tmp_path / "plan.csv"
    plan.write_text(text)
    code, out, err = run(["sweep", "--plan", str(plan)], capsys)
    assert code == 2 and "Traceback" not in err and out == ""
    assert f"{plan}, line {line}, field '{column}'" in err, err


def test_a_plan_needs_rows_and_keys_and_goes_alone(tmp_path, capsys):
    for text, what in (("servers\n", "no rows"), ("id\na\n", "no scenario-key columns")):
        (tmp_path / "p.csv").write_text(text)
        code, _, err = run(["sweep", "--plan", str(tmp_path / "p.csv")], capsys)
        assert code == 2 and what in err
    code, _, err = run(["sweep", "--plan", str(tmp_path / "p.csv"), "--set", "servers=1,2"],
                       capsys)
    assert code == 2 and "'--plan'" in err


@pytest.mark.parametrize("command", [["sweep", "--set", "servers=16,32", "--no-intervals"],
                                     ["explain"], ["tune", "--vary", "servers=16,32"]])
def test_outputs_are_checked_before_any_work(tmp_path, capsys, command):
    """An --out in a missing folder is refused before solving (it was created
    silently), like predict's."""
    code, out, err = run(command + ["--out", str(tmp_path / "no" / "x.json")], capsys)
    assert code == 2 and "does not exist" in err and out == ""
    assert not (tmp_path / "no").exists()


def test_a_plan_is_never_its_own_output(tmp_path, capsys):
    plan = tmp_path / "plan.csv"
    plan.write_bytes(b"servers\n16\n32\n")
    code, out, err = run(["sweep", "--plan", str(plan), "--out", str(plan)], capsys)
    assert code == 2 and "also an input" in err and out == ""
    assert plan.read_bytes() == b"servers\n16\n32\n"


def test_curves_of_a_one_key_sweep():
    # a sweep over one numeric key draws throughput (with its band) and latency
    # against it, and throughput against latency (issue 44); several keys: the
    # trade-off only
    from reports.questions import sweep_curve_figure, sweep_sections, sweep_tradeoff_figure
    prof = load_profile("tofino-testbed")
    base = Scenario.default()
    res = sw.run_sweep(base, prof, sw.parse_axes(["clients=64,512,4096"]))
    fig = sweep_curve_figure(res)
    names = [t["name"] for t in fig["data"]]
    assert names == ["throughput, 90 % interval", "throughput (MOPS)", "mean client latency (µs)",
                     "p99 latency, 90 % interval", "p99 client latency (µs)"]
    p99 = fig["data"][4]
    assert p99["yaxis"] == "y2" and p99["y"] == [
        r["latency_p99_us"] for r in sorted(res.rows, key=lambda r: r["clients.threads"])]
    band99 = fig["data"][3]["y"]                                       # and inside its band
    assert all(lo <= y <= hi for lo, y, hi in zip(band99[::-1][:3], p99["y"], band99[:3]))
    thr = fig["data"][1]
    assert thr["x"] == [64, 512, 4096]
    assert thr["y"] == [r["throughput_mops"] for r in sorted(res.rows, key=lambda r: r["clients.threads"])]
    band = fig["data"][0]["y"]
    assert all(lo <= y <= hi for lo, y, hi in zip(band[::-1][:3], thr["y"], band[:3]))
    assert fig["data"][2]["yaxis"] == "y2" and fig["layout"]["xaxis"]["type"] == "log"
    trade = sweep_tradeoff_figure(res)["data"][0]
    assert trade["x"] == [r["latency_us"] for r in sorted(res.rows, key=lambda r: r["clients.threads"])]
    assert [s["id"] for s in sweep_sections(res)][:2] == ["sweep", "curves"]
    two = sw.run_sweep(base, prof, sw.parse_axes(["servers=8,16", "clients=64,128"]),
                       intervals=False)
    assert sweep_curve_figure(two) is None
    assert len(sweep_tradeoff_figure(two)["data"][0]["x"]) == 4


def test_curve_axes_follow_the_data():
    # whole-number keys get whole ticks; latencies decades apart a log axis (issue 44)
    from reports.questions import sweep_curve_figure, sweep_sections, sweep_tradeoff_figure
    prof = load_profile("tofino-testbed")
    res = sw.run_sweep(Scenario.default(), prof, sw.parse_axes(["servers=8,10,12"]),
                       intervals=False)
    assert sweep_curve_figure(res)["layout"]["xaxis"]["tickformat"] == ",d"
    assert sweep_curve_figure(res)["layout"]["xaxis"].get("type") != "log"
    wide = sw.run_sweep(Scenario.default(), prof, sw.parse_axes(["clients=16,16384"]),
                        intervals=False)
    assert sweep_tradeoff_figure(wide)["layout"]["xaxis"]["type"] == "log"
    kpis = sweep_sections(res)[0]["blocks"][0]["items"]
    assert "--no-intervals" in next(k["note"] for k in kpis if k["label"] == "interval")
