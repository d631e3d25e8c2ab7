"""Report content without a browser: escaping, units on axes, sections, numbers."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs

import reports
from reports import analysis as A
from reports.inputs import read_validation

from report_samples import farreach_rows_with_predictions, grid_sweep, make_prediction, timeline, write_csv

ROOT = Path(__file__).resolve().parents[2]
FIG_JSON = re.compile(r'<script type="application/json" id="(fig-\d+)-data">(.*?)</script>', re.S)


def figures(html: str) -> dict[str, dict]:
    return {m.group(1): json.loads(m.group(2)) for m in FIG_JSON.finditer(html)}


def axis_titles(fig: dict) -> list[str]:
    lay = fig["layout"]
    return [lay[k]["title"]["text"] for k in lay if re.fullmatch(r"[xy]axis\d*", k)]


def test_script_in_scenario_name_is_escaped(tmp_path, prediction, scenario, profile):
    out = reports.write_prediction_report(prediction, scenario, profile, tmp_path / "p.html")
    html = out.read_text()
    assert "<script>alert(1)</script>" not in html
    assert "rack &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "fio &lt;b&gt;seq&lt;/b&gt;" in html       # profile provenance escaped too


def test_script_in_sweep_labels_cannot_close_the_figure_script(tmp_path):
    rows = grid_sweep(40)
    for r in rows:
        r["system"] = "</script><script>alert(2)</script>" if r["system"] == "farreach" else "nocache"
    html = reports.write_sweep_report(rows, tmp_path / "s.html", title="<i>t</i>").read_text()
    assert "alert(2)</script>" not in html
    assert "<title>&lt;i&gt;t&lt;/i&gt;</title>" in html
    figs = figures(html)   # every figure JSON still parses
    names = [t.get("name", "") for f in figs.values() for t in f["data"]]
    # plotly renders a subset of HTML in SVG text: labels are passed as entities
    assert any("&lt;/script&gt;" in n for n in names)


def test_plotly_embedded_once_and_no_external_references(tmp_path, prediction):
    html = reports.write_prediction_report(prediction, None, None, tmp_path / "p.html").read_text()
    assert html.count(get_plotlyjs()[:200]) == 1
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(https?:)?//", html)
    assert "cdn.plot.ly" not in html.replace(get_plotlyjs(), "")


def test_prediction_report_marks_bottleneck_and_units(tmp_path, prediction, scenario, profile):
    html = reports.write_prediction_report(prediction, scenario, profile, tmp_path / "p.html").read_text()
    figs = figures(html)
    bars = figs["fig-1"]
    assert bars["layout"]["barmode"] == "stack"
    widths = bars["data"][0]["marker"]["line"]["width"]
    assert widths.index(max(widths)) == 3 and sum(w > 0 for w in widths) == 1
    assert bars["layout"]["annotations"][0]["text"] == "bottleneck"
    assert "server 3 ◀ bottleneck" in html
    assert "0.9 MOPS" in html and "47 %" in html and "2.1×" in html
    # scenario units come from the declarations, profile rows carry provenance
    assert re.search(r"<td>storage.memtable_mb</td><td>64 MiB</td><td>MiB</td>", html)
    assert "fit: farreach_runs.csv (29 rows)" in html and "± 0.05 us" in html


def test_every_axis_has_a_unit(tmp_path, prediction):
    out = reports.build_report(tmp_path / "all.html", prediction=prediction,
                               sweep=grid_sweep(200), timeline=timeline(60),
                               validation=farreach_rows_with_predictions())
    figs = figures(out.read_text())
    assert len(figs) >= 12
    for fid, fig in figs.items():
        for t in axis_titles(fig):
            assert re.search(r"\(.+\)$", t), f"{fid}: axis title {t!r} has no unit"


def test_sweep_finds_two_parameter_grids():
    rows = grid_sweep(500)
    cols = A.classify(rows)
    assert cols.throughput == "mops"
    assert set(cols.varying) >= {"servers", "clients", "memtable_mb", "flushnum"}
    grids = A.find_grids(rows, cols, "pred_mops", limit=10)
    pairs = {frozenset((g.x, g.y)) for g in grids}
    assert frozenset(("clients", "memtable_mb")) in pairs
    g = next(g for g in grids if {g.x, g.y} == {"clients", "memtable_mb"})
    # every other input is held fixed, and the cells are the rows' predictions
    assert set(g.fixed) >= {"system", "servers", "flushnum"}
    assert all(v is not None for row in g.z for v in row)
    assert len(g.xs) * len(g.ys) == g.cells


def test_memtable_by_flushnum_heatmap():
    rows = [{"id": f"R{m}-{f}", "memtable_mb": float(m), "flushnum": float(f),
             "maxnum": 8.0, "pred_mops": m / 100 + f}
            for m in (4, 16, 64) for f in (1, 2, 4)]
    grids = A.find_grids(rows, A.classify(rows), "pred_mops")
    assert [(g.x, g.y) for g in grids] == [("memtable_mb", "flushnum")]
    g = grids[0]
    assert g.xs == [4.0, 16.0, 64.0] and g.ys == [1.0, 2.0, 4.0]
    assert g.z[2][1] == pytest.approx(16 / 100 + 4)


def test_sweep_report_sections(tmp_path):
    html = reports.write_sweep_report(grid_sweep(500), tmp_path / "s.html").read_text()
    for title in ("Throughput against clients and servers", "Two-parameter sweeps",
                  "Predicted vs measured", "All rows (500)"):
        assert title in html
    figs = figures(html)
    titles = [f["layout"]["title"]["text"] for f in figs.values()]
    assert "throughput (MOPS) against clients" in titles
    assert "throughput (MOPS) against servers" in titles
    assert sum(f["data"][0]["type"] == "heatmap" for f in figs.values()) >= 1
    assert html.count("<tr") >= 501


def test_validation_errors_are_computed(tmp_path):
    rows = [{"id": "A", "mops": 1.0, "pred_mops": 1.05}, {"id": "B", "mops": 2.0, "pred_mops": 1.6},
            {"id": "C", "mops": 4.0, "pred_mops": 4.4},
            {"id": "D", "wait_us": "2|4", "pred_wait_us": "3|4", "mops": None, "pred_mops": 1.0}]
    comps = A.compare(rows)
    assert [(c.row, c.metric, round(c.error_pct, 6)) for c in comps] == [
        ("A", "mops", 5.0), ("B", "mops", -20.0), ("C", "mops", 10.0),
        ("D[0]", "wait_us", 50.0), ("D[1]", "wait_us", 0.0)]
    s = {x.metric: x for x in A.summarize(comps)}["mops"]
    assert s.mdape == pytest.approx(10.0) and s.mape == pytest.approx(35 / 3)
    assert s.within10 == pytest.approx(2 / 3) and s.within20 == pytest.approx(1.0)
    assert s.worst == "B"
    html = reports.write_validation_report(rows, tmp_path / "v.html").read_text()
    assert "+5.0 %" in html and "-20.0 %" in html
    assert "10.0 %" in html   # MdAPE of mops


def test_validation_from_reference_csv(tmp_path):
    p = write_csv(tmp_path / "val.csv", farreach_rows_with_predictions())
    rows = read_validation(p)
    comps = A.compare(rows)
    errs = [abs(c.error_pct) for c in comps if c.metric == "mops"]
    assert errs and max(errs) <= 25.0 + 1e-6
    html = reports.write_validation_report(rows, tmp_path / "v.html").read_text()
    figs = figures(html)
    parity = next(f for f in figs.values() if f["layout"]["title"]["text"].startswith(
        "Predicted vs measured: throughput"))
    names = [t["name"] for t in parity["data"]]
    assert names.count("±10 %") == 2 and names.count("±20 %") == 2
    band = next(t for t in parity["data"] if t["name"] == "±10 %")
    assert band["y"][1] / band["x"][1] == pytest.approx(1.1) or \
        band["y"][1] / band["x"][1] == pytest.approx(0.9)


def test_timeline_shades_stalls(tmp_path, prediction):
    tl = timeline(120)
    assert A.stall_spans([r["t_s"] for r in tl], [r["stalled_frac"] for r in tl]) == [
        (39.0, 47.0, 0.8), (89.0, 92.0, 0.8)]
    html = reports.write_timeline_report(tl, prediction, tmp_path / "t.html").read_text()
    fig = figures(html)["fig-1"]
    rects = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"]) for r in rects] == [(39.0, 47.0), (89.0, 92.0)]
    assert any(s["type"] == "line" and s["y0"] == 0.9 for s in fig["layout"]["shapes"])
    assert "Server wait per second" in html and "Server process time per second" in html
    assert "Stall periods".lower() in html.lower()


def test_api_accepts_a_prediction_object_dict(tmp_path):
    p = make_prediction(n=32, bottleneck=31)
    out = reports.write_prediction_report(p.to_dict(), None, None, tmp_path / "x" / "p.html")
    assert out.exists() and "server 31 ◀ bottleneck" in out.read_text()


def test_cli_builds_a_combined_page(tmp_path, prediction, scenario, profile):
    pj = tmp_path / "pred.json"
    pj.write_text(json.dumps({"prediction": prediction, "scenario": scenario, "profile": profile}))
    sw = write_csv(tmp_path / "sweep.csv", [{k: ("" if v is None else v) for k, v in r.items()}
                                            for r in grid_sweep(100)])
    tl = write_csv(tmp_path / "tl.csv", timeline(30))
    va = write_csv(tmp_path / "val.csv", farreach_rows_with_predictions())
    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-m", "reports", "build", "--out", str(out),
                        "--prediction", str(pj), "--sweep", str(sw), "--validation", str(va),
                        "--timeline", str(tl)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    html = out.read_text()
    for sec in ('id="timeline"', 'id="prediction"', 'id="scenario"', 'id="profile"',
                'id="sweep"', 'id="validation"', 'id="errors"'):
        assert sec in html
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert len(ids) == len(set(ids))
