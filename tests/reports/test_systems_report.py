"""Per-system pages (reports.systems; computed by calibrate.systems_pages, rendered by
reports.system_page): measured points on the predicted curves.

The four reference systems' pages are built once per module (about 1 s
each); the checks read the figure JSON back out of the sections.
"""

from __future__ import annotations

import json
import re
import statistics

import pytest

from model.profile import Param, Profile
from model.systems import SYSTEMS
from model.systems.base import System
from calibrate import systems_pages as pages
from reports import system_curves, system_page
from reports import systems as RS
from reports.page import render, write
from reports.browser import check_report

from report_samples import CHROMIUM, needs_chromium

NAMES = sorted(SYSTEMS)
UNIT_AT_END = re.compile(r"\([^()]+\)$")


def _figures(sections, section_id=None):
    out = []

    def walk(blocks):
        for b in blocks:
            if b is None:
                continue
            if b["kind"] == "figure":
                out.append((json.loads(str(b["json"])), b["caption"]))
            elif b["kind"] == "grid":
                walk(b["blocks"])
    for s in sections:
        if section_id is None or s["id"] == section_id:
            walk(s["blocks"])
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (rows, sections, html path) for every reference system."""
    out_dir = tmp_path_factory.mktemp("systems")
    res = {}
    for name in NAMES:
        sysm = SYSTEMS[name]
        prof = sysm.profile()
        rows = pages.curves(name)
        sections = system_page.system_sections(sysm, rows, prof, cv=pages.cv_rows(sysm))
        path = write(out_dir / f"{name}.html",
                     render(sections, f"System report: {name}", subtitle=sysm.description))
        res[name] = (rows, sections, path)
    return res


@pytest.mark.parametrize("name", NAMES)
def test_held_out_points_sit_on_the_refitted_curve_with_its_band(built, name):
    _, sections, _ = built[name]
    assert "cv" in [s["id"] for s in sections]
    figs = _figures(sections, "cv")
    assert figs
    for fig, caption in figs:
        held = [t for t in fig["data"] if t["mode"] == "markers" and t["name"].endswith("held out")
                and t["marker"]["symbol"] == "diamond"]
        bands = [t for t in fig["data"] if t.get("fill") == "toself"]
        lines = [t for t in fig["data"] if "predicted (refitted)" in t["name"]]
        assert held and bands and lines
        for b in bands:                      # upper edge above the lower edge everywhere
            n = len(b["y"]) // 2
            assert all(hi >= lo for hi, lo in zip(b["y"][:n], b["y"][n:][::-1]))
        assert "held-out" in caption and "90 % prediction interval" in caption
    cv = next(s for s in sections if s["id"] == "cv")
    table = next(b for b in cv["blocks"] if b.get("kind") == "table")
    assert table["rows"] and "inside 90 % interval (%)" in table["columns"]


def test_expected_systems_present():
    assert {"morphling-c", "morphling-go", "runtimes", "thread-coroutine"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_system_page_builds(built, name):
    rows, sections, path = built[name]
    text = path.read_text(encoding="utf-8")
    assert f"<title>System report: {name}</title>" in text
    assert [s["id"] for s in sections][:2] == ["summary", "curves"]
    assert "profile" in [s["id"] for s in sections]
    n_fig = len(_figures(sections))
    assert f'data-figures="{n_fig}"' in text and n_fig >= 2
    assert text.count("Plotly.newPlot") == 1          # plotly.js and our script once each
    assert 'class="card"' in text and "<table" in text


@pytest.mark.parametrize("name", NAMES)
def test_each_curves_figure_has_measured_and_predicted(built, name):
    _, sections, _ = built[name]
    figs = _figures(sections, "curves")
    assert figs
    for fig, caption in figs:
        names = [t["name"] for t in fig["data"]]
        assert any(t["mode"] == "lines" and "predicted" in t["name"] for t in fig["data"]), names
        meas = [t for t in fig["data"] if t["mode"] == "markers" and t["name"].endswith("measured")]
        assert meas and sum(len(t["x"]) for t in meas) >= 1, names
        assert "measured runs (dots)" in caption


@pytest.mark.parametrize("name", NAMES)
def test_every_axis_title_carries_a_unit(built, name):
    _, sections, _ = built[name]
    for fig, _ in _figures(sections):
        for ax in ("xaxis", "yaxis"):
            title = fig["layout"][ax]["title"]["text"]
            assert UNIT_AT_END.search(title), f"{name}: {fig['layout']['title']['text']}: {title!r}"


def test_axis_titles_name_the_units():
    assert system_curves.y_title("kops") == "throughput (Kops)"
    assert system_curves.y_title("ops/s") == "throughput (ops/s)"
    assert system_curves.y_title("qps") == "throughput (QPS)"
    assert system_curves.y_title("latency_mean_us") == "mean latency (µs)"
    assert system_curves.y_title("requests").endswith("(requests)")
    assert system_curves.x_title("client threads") == "client threads (threads)"
    assert system_curves.x_title("server cores") == "server cores (cores)"
    assert system_curves.x_title("connections").endswith("(connections)")


def test_measured_dots_share_colour_and_dashes_start_at_last_measured_point(built):
    _, sections, _ = built["runtimes"]
    fig, _ = next(f for f in _figures(sections, "curves")
                  if f[0]["layout"]["title"]["text"].startswith("glommio: throughput"))
    by = {}
    for t in fig["data"]:
        by.setdefault(t.get("legendgroup"), []).append(t)
    checked = 0
    for group, traces in by.items():
        meas = [t for t in traces if t["mode"] == "markers"]
        solid = [t for t in traces if t["mode"] == "lines" and "dash" not in t["line"]]
        dashed = [t for t in traces if t["mode"] == "lines" and t["line"].get("dash") == "dash"]
        if not meas:
            continue
        xmax = max(meas[0]["x"])
        assert solid and max(solid[0]["x"]) <= xmax
        assert dashed and min(dashed[0]["x"]) == pytest.approx(xmax)
        assert max(dashed[0]["x"]) > xmax                       # extends past the data
        assert meas[0]["marker"]["color"] == solid[0]["line"]["color"] == dashed[0]["line"]["color"]
        checked += 1
    assert checked == 4          # 1, 4, 8, 16 cores measured; 20 cores only predicted
    assert "glommio 20c predicted (not measured)" in [t["name"] for t in fig["data"]]


def test_flags_are_annotated_markers_with_notes(built):
    _, sections, _ = built["runtimes"]
    fig, caption = next(f for f in _figures(sections, "curves")
                        if f[0]["layout"]["title"]["text"].startswith("glommio: throughput"))
    flags = {t["name"]: t for t in fig["data"] if t["mode"] == "markers+text"}
    assert set(flags) == {"saturation", "peak", "collapse"}
    assert set(flags["peak"]["text"]) == {"peak"} and len(flags["peak"]["x"]) == 5
    for note in ("saturation: the busy resource", "peak: the highest", "collapse: the first point"):
        assert note in caption
    curves_intro = next(s for s in sections if s["id"] == "curves")["intro"]
    assert "dashed = predicted past the last measured point" in curves_intro


def test_summary_table_per_kind_matches_the_rows(built):
    rows, sections, _ = built["morphling-c"]
    summary = next(s for s in sections if s["id"] == "summary")
    tables = [b for b in summary["blocks"] if b["kind"] == "table"]
    assert [t["caption"].split(":")[0] for t in tables] == ["morphling_c"]
    apes = [abs(r["predicted"] - r["measured"]) / r["measured"] * 100
            for r in rows if r["kind"] == "measured" and r["column"] == "kops"]
    (row,) = tables[0]["rows"]
    assert row[:3] == ["throughput (Kops)", "Kops", f"{len(apes)} points"]
    assert row[3] == f"{statistics.median(apes):.1f} %"
    assert row[4] == f"{statistics.fmean(apes):.1f} %"
    go_tables = [b["caption"].split(":")[0] for s in built["morphling-go"][1] if s["id"] == "summary"
                 for b in s["blocks"] if b["kind"] == "table"]
    assert go_tables == ["morphling_go", "morphling_go_control"]


@pytest.mark.parametrize("name,word", [("morphling-c", "single-threaded serving"),
                                        ("morphling-go", "quorum"),
                                        ("runtimes", "per-connection contention"),
                                        ("thread-coroutine", "context switch")])
def test_mechanism_text_names_the_cause(built, name, word):
    _, sections, path = built[name]
    texts = [b["text"] for b in sections[0]["blocks"] if b["kind"] == "text"]
    assert any(word in t for t in texts)
    assert any(t.startswith("Source: model/systems/") for t in texts)
    assert word in path.read_text(encoding="utf-8")


def test_place_measured_converts_units_and_names_series():
    row = {"read_mode": "raft", "conns_per_client": "3", "client_machines": "2"}
    assert system_curves.place_measured("morphling_go", row, "latency_ns", 677804.0) == \
        ("raft", 6.0, "latency_us", pytest.approx(677.804))
    row = {"runtime": "tokio", "server_cores": "4", "connections": "1200"}
    assert system_curves.place_measured("runtimes_curves", row, "qps", 5.0) == ("tokio 4c", 1200.0, "y", 5.0)
    assert system_curves.place_measured("runtimes_limited", row, "qps", 5.0) is None


def _fake_system(evil: str) -> tuple[System, list[dict], Profile]:
    pred = [{"series": evil, "x": n, "x_label": "connections", "y": 10.0 * n, "y_label": "qps",
             "kind": "predicted", "flag": "saturation" if n == 3 else ""} for n in (1, 2, 3, 4)]
    sysm = System(name=evil, params=(), kinds=(), data_files=(), curves=lambda p: pred,
                  description=f"desc {evil}")
    prof = Profile(evil, {"x_us": Param(1.0, "us", f"src {evil}")}, {"fitted_by": evil})
    return sysm, pred, prof


def test_labels_are_escaped(tmp_path):
    evil = "<script>alert(1)</script>"
    sysm, pred, prof = _fake_system(evil)
    html_text = pages.system_page(sysm, pred, prof)
    assert evil not in html_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text      # header, tables
    sections = system_page.system_sections(sysm, pred, prof)
    (fig, _), = _figures(sections, "curves")
    assert all("<script>" not in t["name"] for t in fig["data"])
    assert any(t["name"].startswith("&lt;script&gt;") for t in fig["data"])


def test_cli_writes_pages_and_rejects_unknown_systems(tmp_path, capsys):
    assert RS.main(["--out", str(tmp_path), "--system", "morphling-c"]) == 0
    page = (tmp_path / "morphling-c.html")
    assert 'class="plot"' in page.read_text() and page.stat().st_size < 1_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["morphling-c.html"]   # self-contained
    assert RS.main(["--out", str(tmp_path), "--system", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown system 'nope'" in err and "Traceback" not in err


@needs_chromium
def test_system_page_renders_in_chromium(built, tmp_path):
    _, sections, path = built["runtimes"]
    shot = tmp_path / "runtimes.png"
    res = check_report(path, screenshot=shot, chromium=CHROMIUM, timeout=90)
    print(f"\n{res.summary()}")
    assert res.console_errors == []
    assert res.external_requests == []
    assert res.figures_expected == len(_figures(sections)) >= 6
    assert res.figures_rendered == res.figures_expected
    assert res.plot_containers == res.figures_expected
    assert res.distinct_colours >= 100 and res.ink_fraction >= 0.05
    assert res.ok
    assert res.extra["title"] == "System report: runtimes"


def test_progress_and_output_folder(tmp_path, capsys):
    # one line per system before its refits and one after (issue 44); the
    # folder is made when its parent exists, and a file there is refused
    from reports.systems import main
    assert main(["--out", str(tmp_path / "pages"), "--system", "morphling-c", "--cv", "none"]) == 0
    err = capsys.readouterr().err
    assert "[1/1] morphling-c: predicting" in err and "[1/1] wrote" in err
    assert (tmp_path / "pages" / "morphling-c.html").is_file()
    (tmp_path / "f").write_text("x")
    assert main(["--out", str(tmp_path / "f"), "--system", "morphling-c"]) == 2
    assert (tmp_path / "f").read_text() == "x"
    assert main(["--out", str(tmp_path / "no" / "pages"), "--system", "morphling-c"]) == 2
    assert not (tmp_path / "no").exists()
