"""Every kind of report opened in headless Chromium (marker ``browser``).

Each check loads the file (which inflates the plotly.js inside it)
with the network emulated offline and asserts:
no console errors or uncaught exceptions, every figure drawn (plotly's
``.main-svg`` and ``.plot-container`` present), a non-blank full-page
screenshot (many distinct colours) and no request other than ``file:`` or
``data:``. Screenshots are kept under pytest's ``tmp_path``; their paths
are printed (run with ``-s`` to see them).

Skipped, with the reason, only when no Chromium binary is installed
(``/usr/bin/chromium``, or ``$CHROMIUM``); CI installs Debian's chromium.
"""

from __future__ import annotations

import time

import pytest

import reports
from reports.browser import check_report

from report_samples import (CHROMIUM, NEEDS_CHROMIUM, farreach_rows_with_predictions, grid_sweep,
                            timeline)

pytestmark = NEEDS_CHROMIUM


def assert_renders(path, shot, *, min_figures: int):
    res = check_report(path, screenshot=shot, chromium=CHROMIUM, timeout=90)
    print(f"\n{res.summary()}")
    assert res.console_errors == []
    assert res.external_requests == []
    assert res.requests and res.requests[0].startswith("file:")
    assert res.figures_expected >= min_figures
    assert res.figures_rendered == res.figures_expected
    assert res.main_svgs >= res.figures_expected
    assert res.plot_containers == res.figures_expected
    assert shot.exists() and shot.stat().st_size > 10_000
    assert res.distinct_colours >= 100, "screenshot looks blank"
    assert res.ink_fraction >= 0.05, "screenshot is mostly background"
    assert res.ok
    return res


def test_prediction_report(tmp_path, prediction, scenario, profile):
    out = reports.write_prediction_report(prediction, scenario, profile, tmp_path / "prediction.html")
    res = assert_renders(out, tmp_path / "prediction.png", min_figures=2)
    assert res.extra["title"] == "Prediction: rack <script>alert(1)</script>"


def test_sweep_report(tmp_path):
    out = reports.write_sweep_report(grid_sweep(120), tmp_path / "sweep.html", title="sweep")
    assert_renders(out, tmp_path / "sweep.png", min_figures=4)


def test_validation_report(tmp_path):
    out = reports.write_validation_report(farreach_rows_with_predictions(),
                                          tmp_path / "validation.html")
    assert_renders(out, tmp_path / "validation.png", min_figures=5)


def test_timeline_report(tmp_path, prediction):
    out = reports.write_timeline_report(timeline(120), prediction, tmp_path / "timeline.html")
    assert_renders(out, tmp_path / "timeline.png", min_figures=4)


def test_large_sweep_renders_within_seconds(tmp_path):
    rows = grid_sweep(500)
    assert len(rows) == 500
    t0 = time.perf_counter()
    out = reports.write_sweep_report(rows, tmp_path / "large.html", title="500-row sweep")
    build_s = time.perf_counter() - t0
    res = assert_renders(out, tmp_path / "large.png", min_figures=5)
    print(f"500-row sweep: built in {build_s:.2f} s, loaded and drawn in {res.load_s:.2f} s, "
          f"{out.stat().st_size / 1e3:.0f} kB")
    assert out.stat().st_size < 1_000_000
    assert build_s < 5.0
    assert res.load_s < 15.0   # typically 2-4 s on 2 shared cores


def test_checker_catches_errors_and_external_requests(tmp_path):
    """The checks are not vacuous: a broken page fails each of them."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head>'
                   '<body data-figures="1" data-plots-rendered="0"><div class="plot"></div>'
                   '<img src="http://example.invalid/x.png">'
                   '<script>console.error("boom"); undefinedFunction();</script></body></html>')
    res = check_report(bad, screenshot=tmp_path / "bad.png", chromium=CHROMIUM, timeout=30)
    print(f"\n{res.summary()}")
    assert any("boom" in e for e in res.console_errors)
    assert any("undefinedFunction" in e for e in res.console_errors)
    assert res.external_requests == ["http://example.invalid/x.png"]
    assert res.figures_rendered == 0 and res.blank
    assert not res.ok


def test_a_page_moved_alone_still_draws(tmp_path, prediction):
    """A page is one file: moved to another folder on its own, offline, every
    chart still draws (issue 44)."""
    out = reports.write_prediction_report(prediction, None, None, tmp_path / "p.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.html"]
    moved = tmp_path / "elsewhere" / "deeper"
    moved.mkdir(parents=True)
    page = out.rename(moved / "p.html")
    res = check_report(page, screenshot=tmp_path / "moved.png", chromium=CHROMIUM, timeout=60)
    print(f"\n{res.summary()}")
    assert res.figures_expected >= 2 and res.figures_rendered == res.figures_expected
    assert res.ok

def test_a_large_table_travels_packed_and_is_built(tmp_path):
    """A table of more than PACKED_ROWS rows is gzipped in the page and built by
    report.js: a 400-row sweep keeps every row, and the page stays small."""
    import re
    import subprocess

    from reports.blocks import PACKED_ROWS
    rows = grid_sweep(400)
    assert len(rows) > PACKED_ROWS
    out = reports.write_sweep_report(rows, tmp_path / "big.html")
    html = out.read_text()
    assert "data-rows-gz=" in html and html.count("<tr") < 50
    assert_renders(out, tmp_path / "big.png", min_figures=1)
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=10000", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-rows-gz="' not in dom
    assert len(re.findall(r"<tr", dom)) >= len(rows)
