"""The real pages' layout, measured in headless Chromium (marker ``browser``).

Each page is built as a user builds it (``sim sweep``, ``sim predict --runs``
then ``reports build``, ``sim tune``, ``sim predict --html``, run in-process),
opened offline at a laptop's width (1280 px) and a narrow window's (800 px),
and measured (:func:`reports.browser.check_report` with ``geometry=True``).
For every figure:

- its title lies inside the figure and clear of plotly's modebar (the tools
  drawn in the top-right corner while the pointer is over a chart) and of
  the axis titles;
- every legend lies inside its figure, over neither the title, the plot nor
  an axis title, and shows every entry (plotly scrolls a legend it has no
  room for);
- every marker (and marker label) is drawn whole: its centre in the plot
  area and, when plotly clips it to the plot area, all of it inside; drawn
  unclipped, inside the figure;
- every category x axis names every category, readably (no label over the
  one before), and the error-per-run charts have one label per run;

and the page's text says MiB, never MB, and the page is under 1 MB.
Screenshots are kept under pytest's ``tmp_path``.

Skipped, with the reason, only when no Chromium binary is installed
(``/usr/bin/chromium``, or ``$CHROMIUM``); CI installs Debian's chromium.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from reports.browser import PageGeometry, check_report
from reports.figures import MAX_RUN_LABELS

from report_samples import CHROMIUM, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM

DATA = Path(__file__).resolve().parents[2] / "data"
WIDTHS = [1280, 800]
#: runs in the `reports build` page: more than the 30 from which the error
#: charts used to leave every run unnamed
RUNS = 35


# ---- the pages, built once --------------------------------------------------

@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    from reports.cli import main as reports_main
    from cli.main import main as sim_main

    d = tmp_path_factory.mktemp("layout")
    out: dict[str, Path] = {}

    def sim(*argv: str) -> None:
        assert sim_main(list(argv)) == 0, argv

    # a sweep of 35 server counts; without intervals the chart's title is long
    out["sweep"] = d / "sweep.html"
    sim("sweep", "--set", "servers=" + ",".join(str(n) for n in range(2, 72, 2)),
        "--no-intervals", "--out", str(out["sweep"]))
    # 35 client counts, 20 to 100 000 threads: latencies from ~80 µs, on the
    # floor of a latency axis that starts at 0
    out["sweep_clients"] = d / "sweep_clients.html"
    sim("sweep", "--set", "clients=" + ",".join(str(int(2 ** (i / 3))) for i in range(15, 50)),
        "--no-intervals", "--out", str(out["sweep_clients"]))
    # the first 35 reference runs that measured throughput, predicted, then
    # the report of them
    runs = d / "runs.csv"
    with open(DATA / "farreach_runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(runs, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows([r for r in rows if r["mops"]][:RUNS])
    predicted = d / "predicted.csv"
    sim("predict", "--runs", str(runs), "--out", str(predicted))
    out["build"] = d / "build.html"
    assert reports_main(["build", "--sweep", str(predicted), "--out", str(out["build"])]) == 0
    out["tune"] = d / "tune.html"
    sim("tune", "--vary", "storage.memtable_mb=16:256", "--vary", "clients.timeout_ms=100:5000",
        "--out", str(out["tune"]))
    out["predict"] = d / "predict.html"
    sim("predict", "--html", str(out["predict"]))
    return out


def measure(path: Path, width: int) -> PageGeometry:
    res = check_report(path, screenshot=path.with_suffix(f".{width}.png"), chromium=CHROMIUM,
                       timeout=60, width=width, geometry=True)
    print(f"\n{res.summary()}")
    assert res.console_errors == []
    assert res.figures_expected >= 1 and res.figures_rendered == res.figures_expected
    geo = res.geometry
    assert geo is not None and geo.width == width
    assert len(geo.figures) == res.figures_expected
    return geo


# ---- what a page must not show ----------------------------------------------

def layout_problems(geo: PageGeometry) -> list[str]:
    """Every layout defect on the page, one line each (empty: none)."""
    out = []
    for f in geo.figures:
        name = f"{f.id} {f.title[:70]!r}"
        for t in f.titles:
            if not f.box.contains(t):
                out.append(f"{name}: the title runs off the figure ({t} in {f.box})")
            if any(t.intersects(m) for m in f.modebars):
                out.append(f"{name}: the title is under the modebar ({t}, {f.modebars})")
            for k, a in f.axis_titles.items():
                if t.intersects(a):
                    out.append(f"{name}: the title overlaps the {k}")
        for k, a in f.axis_titles.items():
            if not f.box.contains(a):
                out.append(f"{name}: the {k} runs off the figure")
        for leg in f.legends:
            if not f.box.contains(leg):
                out.append(f"{name}: the legend is cut: {leg} outside the figure {f.box}")
            if any(leg.intersects(t) for t in f.titles):
                out.append(f"{name}: the legend covers the title")
            if any(leg.intersects(a) for a in f.plot_areas.values()):
                out.append(f"{name}: the legend covers the plot")
            if any(leg.intersects(a) for a in f.axis_titles.values()):
                out.append(f"{name}: the legend covers an axis title")
        if f.legend_scrolls:
            out.append(f"{name}: the legend scrolls: some entries are out of sight")
        cut = [m for m in f.markers if m.cut or not f.box.contains(m.box)]
        if cut:
            out.append(f"{name}: {len(cut)} of {len(f.markers)} markers or labels cut, e.g. "
                       f"{cut[0]}")
        for ax in f.axes:
            named = ax.ticks or len(ax.categories) <= MAX_RUN_LABELS
            if ax.type == "category" and named and ax.visible_ticks != ax.categories:
                out.append(f"{name}: {ax.name} names {len(ax.visible_ticks)} of its "
                           f"{len(ax.categories)} categories readably")
    return out


def units_problems(geo: PageGeometry) -> list[str]:
    """Memory sizes in MB beside the MiB of the scenario (the toolkit's sizes are binary)."""
    return [m.group(0) for m in re.finditer(r".{0,30}(?<![A-Za-z])(MB|KB|GB)(?![A-Za-z]).{0,10}",
                                            geo.text)]


def assert_clean(path: Path, width: int) -> PageGeometry:
    assert path.stat().st_size < 1_000_000, f"{path.name}: {path.stat().st_size} bytes"
    geo = measure(path, width)
    problems = layout_problems(geo) + [f"MB on the page: {u!r}" for u in units_problems(geo)]
    assert problems == [], "\n".join(problems)
    return geo


# ---- the pages ------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_page(pages, width):
    geo = assert_clean(pages["sweep"], width)
    bars = geo.figure("Throughput per configuration")
    assert len(bars.legends) == 1 and bars.titles          # the bottleneck colours' key
    trade = geo.figure("Throughput against latency")
    assert sum(m.kind == "point" for m in trade.markers) == 35
    assert sum(m.kind == "text" for m in trade.markers) == 35   # the row numbers


def test_sweep_over_client_threads(pages):
    geo = assert_clean(pages["sweep_clients"], 1280)
    curve = geo.figure("Throughput and latency against clients.threads")
    per_trace: dict[str, int] = {}
    for m in curve.markers:
        per_trace[m.trace] = per_trace.get(m.trace, 0) + (m.kind == "point")
    assert len(per_trace) >= 2 and set(per_trace.values()) == {35}, per_trace


@pytest.mark.parametrize("width", WIDTHS)
def test_reports_build_of_35_runs(pages, width):
    geo = assert_clean(pages["build"], width)
    with open(pages["build"].with_name("predicted.csv"), newline="") as fh:
        runs = [r["id"] for r in csv.DictReader(fh) if r["mops"] and r["pred_mops"]]
    assert len(runs) == RUNS
    errors = geo.figure("Percentage error per run: throughput")
    ax = errors.axis("xaxis")
    assert ax.type == "category" and ax.categories == runs
    assert ax.visible_ticks == runs           # every run named, readably
    # per-server metrics: one bar (and one label) per run and server
    wait = geo.figure("Percentage error per run: server wait")
    assert len(wait.axis("xaxis").visible_ticks) == len(wait.axis("xaxis").categories) > RUNS
    assert "memtable_mb (MiB)" in geo.text


@pytest.mark.parametrize("width", WIDTHS)
def test_tune_page(pages, width):
    geo = assert_clean(pages["tune"], width)
    search = geo.figure("Throughput of the configurations solved")
    assert any(m.trace == "tuned" for m in search.markers)
    assert len(search.legends) == 1


def test_predict_page(pages):
    geo = assert_clean(pages["predict"], 1280)
    servers = geo.figure("Per-server time per request")
    assert len(servers.axis("xaxis").visible_ticks) == len(servers.axis("xaxis").categories) > 1


def test_the_checks_see_each_defect(tmp_path):
    """Not vacuous: figures drawn as they were before these checks (no
    :func:`reports.figures.fit_layout`), each with a defect, fail each check."""
    from reports.blocks import clean, script_json, section
    from reports.figures import layout
    from reports.page import render, write

    def raw(n: int, fig: dict) -> dict:          # a figure block, laid out as given
        return {"kind": "figure", "id": f"fig-{n}", "json": script_json(clean(fig)),
                "caption": ""}

    long_title = "A title long enough to run under the modebar and off the figure " * 3
    lay = layout(long_title, "run (row id)", "memory (MB)", height=300)
    runs = [f"R{i:03d}" for i in range(40)]
    lay["xaxis"].update({"type": "category", "showticklabels": False})  # as for > 30 runs
    bars = {"data": [{"type": "bar", "x": runs, "y": list(range(40)), "name": "error"}],
            "layout": lay}
    edge = layout("Markers on the edges", "x (s)", "y (s)", height=300)
    edge["xaxis"]["range"] = edge["yaxis"]["range"] = [0, 2]
    pts = {"data": [{"type": "scatter", "mode": "markers", "x": [0, 1, 2], "y": [0, 1, 2],
                     "marker": {"size": 12}, "name": f"series {i} with a long, long name"}
                    for i in range(40)], "layout": edge}
    page = write(tmp_path / "bad.html",
                 render([section("s", "Bad", [raw(1, bars), raw(2, pts)])], "bad"))
    geo = measure(page, 1280)
    problems = "\n".join(layout_problems(geo))
    print(problems)
    assert "the title is under the modebar" in problems
    assert "the title runs off the figure" in problems
    assert "fig-1 'A title" in problems and "xaxis names" in problems
    assert "markers or labels cut" in problems
    assert "the legend scrolls" in problems
    assert any("memory (MB)" in u for u in units_problems(geo))
