"""Report content without a browser: escaping, units on axes, sections, numbers."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_pages_are_self_contained_and_under_a_megabyte(tmp_path, prediction):
    """One file per page: plotly.js's cartesian bundle inside it, gzipped (issue
    44); nothing written beside it, no external reference, under 1 MB."""
    import base64
    import gzip

    from reports import assets
    a = reports.write_prediction_report(prediction, None, None, tmp_path / "a.html")
    b = reports.write_sweep_report(grid_sweep(40), tmp_path / "b.html")
    for page in (a, b):
        html = page.read_text()
        assert page.stat().st_size < 1_000_000
        assert html.count(f'id="{assets.ELEMENT_ID}"') == 1
        blob = re.search(r'id="kvperf-plotly-gz"[^>]*>([^<]+)</script>', html).group(1)
        js = gzip.decompress(base64.b64decode(blob)).decode()
        assert f"v{assets.PLOTLY_VERSION}" in js[:200] and "cartesian" in js[:200]
        assert "<script src=" not in html
        assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(https?:)?//", html)
        assert "cdn.plot.ly" not in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html"]


def test_page_without_charts_needs_no_plotly(tmp_path, profile):
    from reports import assets
    out = reports.build_report(tmp_path / "p.html", profile=profile)
    assert f'id="{assets.ELEMENT_ID}"' not in out.read_text()
    assert out.stat().st_size < 200_000


@pytest.mark.parametrize("kind", ["prediction", "sweep", "validation", "timeline", "all"])
def test_pages_cost_well_under_a_megabyte(tmp_path, kind, prediction, scenario, profile):
    parts = {"prediction": dict(prediction=prediction, scenario=scenario, profile=profile),
             "sweep": dict(sweep=grid_sweep(120)),
             "validation": dict(validation=farreach_rows_with_predictions()),
             "timeline": dict(timeline=timeline(120), prediction=prediction)}
    kw = {k: v for d in parts.values() for k, v in d.items()} if kind == "all" else parts[kind]
    out = reports.build_report(tmp_path / f"{kind}.html", **kw)
    from reports import assets
    size = out.stat().st_size
    data = size - len(str(assets.script_tag()))       # the page's own content, plotly.js aside
    print(f"{kind}: {size / 1e3:.0f} kB, of which {data / 1e3:.0f} kB its own")
    assert size < 1_000_000
    assert data < 300_000 or kind == "all"


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
    # every row, packed (reports/blocks.py PACKED_ROWS): the rows come back out of it
    import base64
    import gzip
    import json as _json
    import re as _re
    packed = _re.findall(r'data-rows-gz="([^"]+)"', html)
    assert packed and max(len(_json.loads(gzip.decompress(base64.b64decode(p)))["rows"])
                          for p in packed) == 500


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


def figure_titled(html: str, title: str) -> dict:
    return next(f for f in figures(html).values() if f["layout"]["title"]["text"] == title)


def test_timeline_shades_stalls_over_the_seconds_the_stall_trace_covers(tmp_path, prediction):
    tl = timeline(120)
    assert A.stall_spans([r["t_s"] for r in tl], [r["stalled_frac"] for r in tl]) == [
        (39.0, 47.0, 0.8), (89.0, 92.0, 0.8)]
    html = reports.write_timeline_report(tl, prediction, tmp_path / "t.html").read_text()
    fig = figure_titled(html, "Throughput per second")
    rects = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"]) for r in rects] == [(39.0, 47.0), (89.0, 92.0)]
    assert any(s["type"] == "line" and s["y0"] == 0.9 for s in fig["layout"]["shapes"])
    # the stall bars sit on the seconds they cover: non-zero exactly inside the shading
    bars = next(t for t in fig["data"] if t["type"] == "bar")
    stalled = [(x - w / 2, x + w / 2) for x, w, y in zip(bars["x"], bars["width"], bars["y"]) if y]
    assert stalled and all(any(r["x0"] - 1e-9 <= a and b <= r["x1"] + 1e-9 for r in rects)
                           for a, b in stalled)
    assert min(a for a, _ in stalled) == pytest.approx(39.05)
    # the throughput step holds each sample over the second before it
    thr = fig["data"][0]
    assert thr["line"]["shape"] == "vh" and thr["x"][:2] == [0.0, 1.0]
    assert "Server wait per second" in html and "Server process time per second" in html
    assert "Stall periods".lower() in html.lower()


def test_stall_axis_autoscales_for_small_stalls(tmp_path, prediction):
    tl = timeline(60)
    for r in tl:
        r["stalled_frac"] = 0.012 if r["stalled_frac"] else 0.0      # 1.2 %
    html = reports.write_timeline_report(tl, prediction, tmp_path / "t.html").read_text()
    lay = figure_titled(html, "Throughput per second")["layout"]
    assert "range" not in lay["yaxis2"] and lay["yaxis2"]["rangemode"] == "tozero"
    assert lay["yaxis2"]["domain"][1] < lay["yaxis"]["domain"][0]     # its own panel


def test_simulated_counts_and_per_run_counts_are_labelled_and_consistent(tmp_path, scenario):
    p = make_prediction().to_dict()
    p["engine"] = "sim"
    p["pktloss"] = 2201.0
    p["details"].update({"pktloss_sim": 3666.0, "simulated_s": 20.0, "requests": 16_660_000})
    tl = timeline(20)
    for r in tl:
        r["pktloss"] = 3666.0 / 20
    html = reports.write_timeline_report(tl, p, tmp_path / "t.html", scenario=scenario).read_text()
    text = re.sub(r"<[^>]+>", " ", html.split("<main>")[1])
    text = re.sub(r"\s+", " ", text).replace("\u202f", " ")
    assert "packets lost in the 20 s simulated 3 666 packets" in text
    assert "2 201 packets per run of 10 M queries" in text
    assert "packet loss 2 201 packets per run of 10 M queries (scaled from 3 666 in the 20 s " \
           "simulated)" in text
    assert "(total)" not in text


def test_headline_first_raw_details_last_and_collapsed(tmp_path, scenario, profile):
    p = make_prediction().to_dict()
    p["details"]["loss_probability"] = [3.5e-101, 1.4e-6, 2e-3, 0.0, 0.1]
    p["details"]["throughput_interval"] = {"lo_mops": 0.81, "hi_mops": 0.97, "level": 0.9}
    html = reports.write_prediction_report(p, scenario, profile, tmp_path / "p.html").read_text()
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids[:2] == ["prediction", "bottleneck"]
    raw = re.findall(r'<section id="([^"]+)" class="card raw">\s*<details>', html)
    assert raw == ids[2:] and {"servers", "details", "scenario", "profile"} <= set(raw)
    head = html[html.index('id="prediction"'):html.index('id="bottleneck"')]
    assert "0.9 MOPS" in head and "90 % interval 0.81 – 0.97 MOPS" in head
    assert not re.search(r"\de[-+]\d", re.sub(r"<script.*?</script>", "", html, flags=re.S))
    assert "5 values: 0 % … 10 %" in html


def test_numbers_have_sensible_precision():
    from reports.units import fmt, num
    assert num(3.5e-101) == "< 0.0001" and num(0.0) == "0"
    assert fmt(3.5e-101, "fraction") == "< 0.01 %"
    assert fmt(0.000588, "fraction") == "0.06 %"
    assert fmt(17290.4, "packets") == "17\u202f290 packets"
    assert fmt(1231.71, "µs") == "1\u202f232 µs"
    assert fmt(7.3314, "µs") == "7.331 µs"


def test_sweep_legend_lists_values_not_keys_and_keeps_the_plot_area():
    rows = [{"id": f"R{i}", "servers": float(s), "storage.memtable_mb": float(m),
             "clients.timeout_ms": float(t), "pred_mops": s * 0.05 + m / 1e4 - t / 1e5}
            for i, (s, m, t) in enumerate((s, m, t) for s in (16, 32) for m in (16, 256)
                                          for t in (100, 5000))]
    cols = A.classify(rows)
    from reports import figures as F
    fig = F.throughput_curve(rows, cols, "servers", ["storage.memtable_mb", "clients.timeout_ms"],
                             "throughput against servers")
    names = [t["name"] for t in fig["data"]]
    assert names[0] == "16 MiB, 100 ms" and all("=" not in n for n in names)
    leg = fig["layout"]["legend"]
    assert leg["orientation"] == "h" and leg["title"]["text"] == "memtable, timeout:"
    assert (leg["yref"], leg["y"], leg["yanchor"]) == ("container", 0, "bottom")
    # the figure grows by the legend's rows: its title, then 4 short entries, 3 a row
    assert F.fit_legend(fig)["layout"]["height"] == 420 + 3 * 22 + 8


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
