"""Open a report in headless Chromium and check it really renders.

One :func:`check_report` call:

1. starts Chromium headless (:class:`reports.chromium.Chromium`, driven over
   the DevTools pipe) with a fresh, empty ``--user-data-dir`` and the
   network emulated as offline;
2. records console messages, uncaught exceptions, log errors and every
   ``Network.requestWillBeSent`` URL;
3. loads the file, waits until the page says every figure is drawn
   (``<body data-plots-rendered>``) and counts plotly's ``.main-svg`` and
   ``.plot-container`` elements;
4. takes a full-page PNG screenshot and counts its distinct colours and the
   share of pixels that differ from the background (:mod:`reports.png_colours`);
5. with ``geometry=True``, also measures the drawn page
   (:class:`reports.page_geometry.PageGeometry`): per figure the boxes of its
   title, modebar, legend, axis titles and plot areas, its x tick labels and
   every scatter marker (centre, box, whether plotly clips it to the plot
   area), and the page's text, so layout defects (a title under the modebar,
   a legend off the figure, a cut marker, run labels plotly left out) can be
   asserted on.

The result (:class:`CheckResult`) says whether there were console errors,
whether all plots rendered, whether the screenshot is blank and whether any
request went anywhere but ``file:`` or ``data:``. The names of those three
modules are importable from here too, as before they were split out.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from .chromium import CHROMIUM_FLAGS, BrowserError, Chromium, find_chromium
from .page_geometry import (GEOMETRY_JS, Axis, Box, FigureGeometry, Marker, PageGeometry, Tick,
                            page_geometry)
from .png_colours import colour_stats, decode_png, distinct_colours

__all__ = ["check_report", "CheckResult", "BrowserError", "Chromium", "find_chromium",
           "CHROMIUM_FLAGS", "PageGeometry", "FigureGeometry", "Axis", "Tick", "Marker", "Box",
           "decode_png", "colour_stats", "distinct_colours"]


@dataclass
class CheckResult:
    path: Path
    figures_expected: int
    figures_rendered: int          # plot divs that contain a plotly .main-svg
    main_svgs: int
    plot_containers: int
    console_errors: list[str]
    requests: list[str]            # every URL the page asked for
    screenshot: Path | None
    distinct_colours: int
    ink_fraction: float            # share of screenshot pixels not in the background colour
    load_s: float                  # navigation start -> every figure drawn, seconds
    page_height_px: int
    extra: dict = field(default_factory=dict)
    geometry: PageGeometry | None = None   # check_report(..., geometry=True)

    @property
    def external_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file:", "data:", "about:"))]

    @property
    def blank(self) -> bool:
        return self.distinct_colours < 32 or self.ink_fraction < 0.01

    @property
    def ok(self) -> bool:
        return (not self.console_errors and not self.external_requests and not self.blank
                and self.figures_rendered == self.figures_expected
                and self.plot_containers >= self.figures_expected)

    def summary(self) -> str:
        lines = [
            f"report:            {self.path} ({self.path.stat().st_size / 1e6:.2f} MB)",
            f"figures rendered:  {self.figures_rendered}/{self.figures_expected} "
            f"({self.main_svgs} .main-svg, {self.plot_containers} .plot-container)",
            f"load + draw time:  {self.load_s:.2f} s",
            f"console errors:    {len(self.console_errors)}"
            + "".join(f"\n  {e}" for e in self.console_errors[:10]),
            f"requests:          {len(self.requests)} "
            f"({len(self.external_requests)} not file:/data:)"
            + "".join(f"\n  {u}" for u in self.external_requests[:10]),
            f"screenshot:        {self.screenshot} ({self.distinct_colours} distinct colours, "
            f"{self.ink_fraction:.1%} non-background pixels, page {self.page_height_px} px tall)",
            f"verdict:           {'OK' if self.ok else 'FAILED'}",
        ]
        return "\n".join(lines)


_WAIT_JS = """
new Promise(function (resolve) {
  var t0 = performance.now();
  (function poll() {
    var b = document.body;
    var done = b && b.hasAttribute("data-plots-rendered");
    if (done || performance.now() - t0 > %d) {
      var divs = document.querySelectorAll("div.plot");
      var drawn = 0;
      divs.forEach(function (d) { if (d.querySelector(".main-svg")) { drawn++; } });
      resolve(JSON.stringify({
        expected: b ? parseInt(b.getAttribute("data-figures") || "0", 10) : -1,
        divs: divs.length, drawn: drawn,
        svgs: document.querySelectorAll(".main-svg").length,
        containers: document.querySelectorAll(".plot-container").length,
        flag: b ? b.getAttribute("data-plots-rendered") : null,
        height: document.documentElement.scrollHeight,
        title: document.title
      }));
    } else { setTimeout(poll, 25); }
  })();
})
"""


def check_report(path: str | Path, *, screenshot: str | Path | None = None,
                 chromium: str | None = None, timeout: float = 60.0,
                 width: int = 1280, height: int = 900,
                 max_screenshot_height: int = 12000, geometry: bool = False) -> CheckResult:
    """Load ``path`` in headless Chromium (offline) and report what happened;
    ``geometry=True`` also measures the drawn page (``result.geometry``, a
    :class:`PageGeometry`, laid out ``width`` px wide)."""
    path = Path(path).resolve()
    exe = chromium or find_chromium()
    if exe is None:
        raise BrowserError("no Chromium found (set $CHROMIUM or install chromium)")
    with Chromium(exe, width=width, height=height, timeout=timeout) as br:
        br.open_page(offline=True)
        t0 = time.monotonic()
        nav = br.call("Page.navigate", {"url": path.as_uri()})
        if nav.get("errorText"):
            raise BrowserError(f"navigation failed: {nav['errorText']}")
        br.wait_event("Page.loadEventFired")
        res = br.call("Runtime.evaluate", {"expression": _WAIT_JS % int(timeout * 1000),
                                           "awaitPromise": True, "returnByValue": True},
                      timeout=timeout + 10)
        load_s = time.monotonic() - t0
        if "exceptionDetails" in res:
            raise BrowserError(f"page check failed: {res['exceptionDetails'].get('text')}")
        info = json.loads(res["result"]["value"])
        geo = None
        if geometry:    # before the screenshot's resize makes plotly redraw
            g = br.call("Runtime.evaluate", {"expression": GEOMETRY_JS, "awaitPromise": True,
                                             "returnByValue": True}, timeout=timeout)
            if "exceptionDetails" in g:
                raise BrowserError("measuring the page failed: "
                                   + str(g["exceptionDetails"].get("exception", {})
                                         .get("description") or g["exceptionDetails"]))
            geo = page_geometry(json.loads(g["result"]["value"]))
        shot_path = None
        full_h = min(int(info["height"]), max_screenshot_height)
        br.call("Emulation.setDeviceMetricsOverride",
                {"width": width, "height": max(full_h, 1), "deviceScaleFactor": 1,
                 "mobile": False})
        # encoded for speed: bigger, but unfiltered rows decode at numpy's pace
        # (Paeth-filtered ones took colour_stats seconds a page)
        png = base64.b64decode(br.call("Page.captureScreenshot",
                                       {"format": "png", "optimizeForSpeed": True})["data"])
        br.call("Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        if screenshot is not None:
            shot_path = Path(screenshot)
            shot_path.parent.mkdir(parents=True, exist_ok=True)
            shot_path.write_bytes(png)
        colours, ink = colour_stats(png)
        # Let late console messages arrive.
        br.call("Runtime.evaluate", {"expression": "1", "returnByValue": True})
        errors, requests = _collect(br.events)
    return CheckResult(path, info["expected"], info["drawn"], info["svgs"], info["containers"],
                       errors, requests, shot_path, colours, ink, load_s, int(info["height"]),
                       extra=info, geometry=geo)


def _collect(events: list[dict]) -> tuple[list[str], list[str]]:
    errors, requests = [], []
    for ev in events:
        m, p = ev["method"], ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append("console." + p["type"] + ": " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append("exception: " + str(d.get("exception", {}).get("description")
                                              or d.get("text")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
        elif m == "Network.requestWillBeSent":
            requests.append(p.get("request", {}).get("url", ""))
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            errors.append(f"network: {p.get('errorText')} (request {p.get('requestId')})")
    return errors, requests

