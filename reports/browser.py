"""Open a report in headless Chromium and check it really renders.

Talks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON), so it needs nothing beyond the
standard library, numpy and a ``chromium`` binary: no websocket client, no
Node. One :func:`check_report` call:

1. starts Chromium headless with a fresh, empty ``--user-data-dir`` and the
   network emulated as offline;
2. records console messages, uncaught exceptions, log errors and every
   ``Network.requestWillBeSent`` URL;
3. loads the file, waits until the page says every figure is drawn
   (``<body data-plots-rendered>``) and counts plotly's ``.main-svg`` and
   ``.plot-container`` elements;
4. takes a full-page PNG screenshot and counts its distinct colours and the
   share of pixels that differ from the background;
5. with ``geometry=True``, also measures the drawn page (:class:`PageGeometry`):
   per figure the boxes of its title, modebar, legend, axis titles and plot
   areas, its x tick labels and every scatter marker (centre, box, whether
   plotly clips it to the plot area), and the page's text, so layout defects
   (a title under the modebar, a legend off the figure, a cut marker, run
   labels plotly left out) can be asserted on.

The result says whether there were console errors, whether all plots
rendered, whether the screenshot is blank and whether any request went
anywhere but ``file:`` or ``data:``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import math
import os
import select
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--mute-audio", "--no-default-browser-check", "--disable-extensions",
                  "--remote-debugging-pipe"]


class BrowserError(RuntimeError):
    """Chromium could not be started or stopped answering."""


def find_chromium() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if cand and os.access(cand, os.X_OK):
            return cand
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Chromium:
    """A headless Chromium driven over the DevTools pipe. Use as a context manager."""

    def __init__(self, exe: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.exe, self.width, self.height, self.timeout = exe, width, height, timeout
        self.events: list[dict] = []
        self._id = 0
        self._buf = b""
        self.profile_dir = tempfile.mkdtemp(prefix="kvperf-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def child_fds():  # runs in the child before exec: put the pipe ends on fds 3 and 4
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile_dir}",
                f"--window-size={width},{height}", "about:blank"]
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.stderr, close_fds=False,
                                         preexec_fn=child_fds)
        except OSError as exc:
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            raise BrowserError(f"cannot start {exe}: {exc}") from None
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.session: str | None = None

    # ---- protocol ---------------------------------------------------------
    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                n = os.write(self._to_child, data)
                data = data[n:]
        except BrokenPipeError:
            raise BrowserError(f"Chromium exited: {self._stderr_tail()}") from None
        return self._id

    def _read_one(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_child], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe: {self._stderr_tail()}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, *, session: str | None = "page",
             timeout: float | None = None) -> dict:
        """Send a command and wait for its result; events that arrive meanwhile are kept."""
        sid = self.session if session == "page" else session
        mid = self._send(method, params, sid)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read_one(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        for ev in self.events:
            if ev["method"] == method:
                return ev
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read_one(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def _stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode(errors="replace")[-800:]
        except (OSError, ValueError):
            return ""

    # ---- lifecycle -----------------------------------------------------------
    def open_page(self, *, offline: bool = True) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)
        att = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                        session=None)
        self.session = att["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(m)
        if offline:
            self.call("Network.emulateNetworkConditions",
                      {"offline": True, "latency": 0, "downloadThroughput": -1,
                       "uploadThroughput": -1})
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self._send("Browser.close")
                except BrowserError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.stderr.close()
            shutil.rmtree(self.profile_dir, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
    geometry: "PageGeometry | None" = None   # check_report(..., geometry=True)

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


# ---- geometry ------------------------------------------------------------------

@dataclass(frozen=True)
class Box:
    """A rectangle in page pixels (CSS px from the page's top-left corner)."""
    x: float
    y: float
    w: float
    h: float

    @classmethod
    def of(cls, d: dict | None) -> "Box | None":
        return None if not d else cls(d["x"], d["y"], d["w"], d["h"])

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def empty(self) -> bool:
        return self.w <= 0 or self.h <= 0

    def overlap(self, other: "Box") -> float:
        """Area shared with ``other`` (px²)."""
        dx = min(self.right, other.right) - max(self.x, other.x)
        dy = min(self.bottom, other.bottom) - max(self.y, other.y)
        return max(dx, 0.0) * max(dy, 0.0)

    def intersects(self, other: "Box", tol: float = 0.5) -> bool:
        """Overlapping by more than ``tol`` px in both directions."""
        return (min(self.right, other.right) - max(self.x, other.x) > tol
                and min(self.bottom, other.bottom) - max(self.y, other.y) > tol)

    def contains(self, other: "Box", tol: float = 0.5) -> bool:
        return (other.x >= self.x - tol and other.y >= self.y - tol
                and other.right <= self.right + tol and other.bottom <= self.bottom + tol)

    def contains_point(self, x: float, y: float, tol: float = 0.5) -> bool:
        return self.x - tol <= x <= self.right + tol and self.y - tol <= y <= self.bottom + tol


@dataclass
class Marker:
    """One scatter marker (``.point``) or marker label (``.textpoint``) as drawn."""
    trace: str              # the trace's name
    kind: str               # "point" or "text"
    cx: float               # centre, page px
    cy: float
    box: Box
    area: Box               # the plot area of the trace's axes
    clipped: bool           # drawn inside plotly's clip-path (cliponaxis true)
    hidden: bool            # not displayed (plotly hides out-of-range points)

    @property
    def cut(self) -> bool:
        """Not (wholly) seen: hidden, a marker centred outside its plot area,
        or part of it cut off by the clip-path at the plot area's edge. (A
        label beside its marker may lie beyond the plot area when drawn
        unclipped; whether it stays on the figure is the figure's to check.)"""
        return (self.hidden
                or (self.kind == "point" and not self.area.contains_point(self.cx, self.cy))
                or (self.clipped and not self.area.contains(self.box)))


@dataclass
class Tick:
    """One x tick label as drawn."""
    text: str
    box: Box                # its axis-aligned box (of the rotated text, if rotated)
    at: float               # the tick's x, page px
    angle: float            # rotation, degrees (plotly angles long labels)
    length: float           # the text's length along its baseline, px
    size: float             # font size, px

    def collides(self, other: "Tick") -> bool:
        """Do the two labels' glyphs overlap? Rotated labels are compared along
        and across their baseline (their axis-aligned boxes overlap long before
        the text does)."""
        if abs(self.angle) < 1 and abs(other.angle) < 1:
            return self.box.intersects(other.box, tol=1.0)
        a = math.radians(self.angle)
        d = abs(self.at - other.at)
        return (d * abs(math.sin(a)) < 0.9 * min(self.size, other.size)
                and d * abs(math.cos(a)) < min(self.length, other.length))


@dataclass
class Axis:
    """One x axis of a figure and the tick labels it shows."""
    name: str               # "xaxis", "xaxis2", ...
    type: str               # "category", "linear", "log", "date"
    categories: list[str]   # the category axis's categories, in order
    ticks: list[Tick]       # the tick labels drawn (non-empty, displayed), in axis order

    @property
    def visible_ticks(self) -> list[str]:
        """The labels a reader can read: drawn, with a box, and not overlapping
        the last readable label before them."""
        out, last = [], None
        for t in sorted(self.ticks, key=lambda t: t.at):
            if t.box.empty or (last is not None and t.collides(last)):
                continue
            out.append(t.text)
            last = t
        return out


@dataclass
class FigureGeometry:
    """What plotly drew for one figure (``div.plot``), boxes in page px."""
    id: str
    title: str
    box: Box                # the figure (plotly's paper, the first .main-svg)
    titles: list[Box]       # .gtitle
    modebars: list[Box]     # .modebar (drawn on hover; its place is fixed)
    legends: list[Box]      # .legend (with its scrollbar, if plotly had to scroll it)
    legend_scrolls: bool    # plotly made the legend scroll: not every entry is shown
    axis_titles: dict[str, Box]  # "xtitle", "ytitle", "y2title", ...
    plot_areas: dict[str, Box]   # subplot ("xy", "xy2", ...) -> its .nsewdrag box
    axes: list[Axis]        # the x axes
    markers: list[Marker]

    def axis(self, name: str = "xaxis") -> Axis:
        return next(a for a in self.axes if a.name == name)


@dataclass
class PageGeometry:
    width: int              # viewport width the page was laid out at, px
    figures: list[FigureGeometry]
    text: str               # every text node outside script/style, SVG text included

    def figure(self, title_part: str) -> FigureGeometry:
        """The first figure whose title contains ``title_part``."""
        for f in self.figures:
            if title_part in f.title:
                return f
        raise KeyError(f"no figure titled like {title_part!r}: "
                       f"{[f.title for f in self.figures]}")


def _page_geometry(info: dict) -> PageGeometry:
    figs = []
    for f in info["figures"]:
        figs.append(FigureGeometry(
            id=f["id"], title=f["title"], box=Box.of(f["box"]),
            titles=[Box.of(b) for b in f["titles"]],
            modebars=[Box.of(b) for b in f["modebars"]],
            legends=[Box.of(b) for b in f["legends"]], legend_scrolls=f["legend_scrolls"],
            axis_titles={k: Box.of(b) for k, b in f["axis_titles"].items()},
            plot_areas={k: Box.of(b) for k, b in f["plot_areas"].items()},
            axes=[Axis(a["name"], a["type"], a["categories"],
                       [Tick(t["text"], Box.of(t["box"]), t["at"], t["angle"], t["length"],
                             t["size"]) for t in a["ticks"]]) for a in f["axes"]],
            markers=[Marker(m["trace"], m["kind"], m["cx"], m["cy"], Box.of(m["box"]),
                            Box.of(m["area"]), m["clipped"], m["hidden"])
                     for m in f["markers"]]))
    return PageGeometry(info["width"], figs, info["text"])


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


# Measures the drawn page two animation frames after every figure is drawn
# (plotly's margin pushes redraw once more). Boxes are page px.
_GEOMETRY_JS = r"""
new Promise(function (resolve) {
  function box(el) {
    var r = el.getBoundingClientRect();
    return {x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height};
  }
  function shown(el) {
    for (var e = el; e && e.nodeType === 1; e = e.parentNode) {
      var cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden") { return false; }
    }
    return true;
  }
  function clippedBy(el, stop) {
    for (var e = el; e && e !== stop; e = e.parentNode) {
      var c = e.getAttribute && e.getAttribute("clip-path");
      if (c && c !== "none") { return true; }
    }
    return false;
  }
  function axisName(id) { return id.charAt(0) + "axis" + id.slice(1); }
  function all(root, sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); }
  function pageText() {
    var out = [];
    var skip = {SCRIPT: 1, STYLE: 1, TEMPLATE: 1, NOSCRIPT: 1};
    var w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) {
        for (var p = n.parentNode; p && p !== document.body; p = p.parentNode) {
          if (skip[p.nodeName.toUpperCase()]) { return NodeFilter.FILTER_REJECT; }
        }
        return NodeFilter.FILTER_ACCEPT;
      }});
    while (w.nextNode()) {
      var v = w.currentNode.nodeValue.replace(/\s+/g, " ").trim();
      if (v) { out.push(v); }
    }
    return out.join(" ");
  }
  function figure(gd) {
    var fl = gd._fullLayout, svg = gd.querySelector(".main-svg");
    if (!fl || !svg) { return null; }
    var sb = box(svg);
    var f = {id: gd.id, title: (fl.title && fl.title.text) || "", box: sb,
             titles: all(gd, ".gtitle").filter(function (t) { return t.textContent.trim(); })
                                         .map(box),
             modebars: all(gd, ".modebar").map(box),
             legends: all(gd, ".infolayer .legend").map(box),
             legend_scrolls: all(gd, ".legend .scrollbar").some(function (b) {
               var r = b.getBoundingClientRect(); return r.width > 0 && r.height > 0; }),
             axis_titles: {}, plot_areas: {}, axes: [], markers: []};
    all(gd, ".infolayer g[class^='g-'] > text").forEach(function (t) {
      var c = t.getAttribute("class") || "";
      if (/^[xy]\d*title$/.test(c) && t.textContent.trim()) { f.axis_titles[c] = box(t); }
    });
    all(gd, ".draglayer .nsewdrag").forEach(function (r) {
      f.plot_areas[r.parentNode.getAttribute("class")] = box(r);
    });
    Object.keys(fl).filter(function (k) { return /^xaxis\d*$/.test(k); }).sort()
      .forEach(function (k) {
        var ax = fl[k];
        var ticks = all(gd, "g." + ax._id + "tick > text").filter(function (t) {
          return t.textContent.trim() && shown(t);
        });
        f.axes.push({name: k, type: ax.type, categories: (ax._categories || []).map(String),
                     ticks: ticks.map(function (t) {
                       var d = t.__data__ || {}, b = box(t);
                       var rot = /rotate\((-?[\d.e+-]+)/.exec(t.getAttribute("transform") || "");
                       var at = (typeof d.x === "number" && isFinite(ax.l2p(d.x)))
                         ? sb.x + ax._offset + ax.l2p(d.x) : b.x + b.w / 2;
                       return {text: t.textContent, box: b, at: at,
                               angle: rot ? parseFloat(rot[1]) : 0,
                               length: t.getComputedTextLength(),
                               size: parseFloat(getComputedStyle(t).fontSize) || 12}; })});
      });
    all(gd, ".scatterlayer .trace").forEach(function (tr) {
      var cd = tr.__data__, trace = cd && cd[0] && cd[0].trace;
      if (!trace || trace.visible !== true) { return; }
      var xa = fl[axisName(trace.xaxis || "x")], ya = fl[axisName(trace.yaxis || "y")];
      var area = {x: sb.x + xa._offset, y: sb.y + ya._offset, w: xa._length, h: ya._length};
      [["point", ".point"], ["text", ".textpoint"]].forEach(function (kind) {
        all(tr, kind[1]).forEach(function (pt) {
          var b = box(pt);
          f.markers.push({trace: String(trace.name || ""), kind: kind[0],
                          cx: b.x + b.w / 2, cy: b.y + b.h / 2, box: b, area: area,
                          clipped: clippedBy(pt, svg), hidden: !shown(pt)});
        });
      });
    });
    return f;
  }
  requestAnimationFrame(function () { requestAnimationFrame(function () {
    resolve(JSON.stringify({
      width: document.documentElement.clientWidth,
      figures: all(document, "div.plot").map(figure).filter(function (f) { return f; }),
      text: pageText()
    }));
  }); });
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
            g = br.call("Runtime.evaluate", {"expression": _GEOMETRY_JS, "awaitPromise": True,
                                             "returnByValue": True}, timeout=timeout)
            if "exceptionDetails" in g:
                raise BrowserError("measuring the page failed: "
                                   + str(g["exceptionDetails"].get("exception", {})
                                         .get("description") or g["exceptionDetails"]))
            geo = _page_geometry(json.loads(g["result"]["value"]))
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


# ---- PNG -----------------------------------------------------------------------

def decode_png(data: bytes) -> np.ndarray:
    """8-bit, non-interlaced greyscale/RGB/RGBA PNG -> uint8 array (h, w, channels)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, []
    width = height = ctype = None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, ctype, interlace = body[8], body[9], body[12]
            if depth != 8 or interlace or ctype not in (0, 2, 4, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype})")
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    stride = width * bpp
    raw = raw[: height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:]
        if f == 0:
            cur = line.copy()
        elif f == 1:
            cur = (np.cumsum(line.reshape(width, bpp).astype(np.uint32), axis=0) & 0xFF
                   ).astype(np.uint8).reshape(-1)
        elif f == 2:
            cur = line + prev
        elif f == 3:
            cur = _unfilter_scalar(line, prev, bpp, avg=True)
        elif f == 4:
            cur = _unfilter_scalar(line, prev, bpp, avg=False)
        else:
            raise ValueError(f"bad PNG filter {f}")
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def _unfilter_scalar(line: np.ndarray, prev: np.ndarray, bpp: int, *, avg: bool) -> np.ndarray:
    cur = bytearray(line.tobytes())
    up = prev.tobytes()
    n = len(cur)
    if avg:
        for i in range(n):
            left = cur[i - bpp] if i >= bpp else 0
            cur[i] = (cur[i] + ((left + up[i]) >> 1)) & 0xFF
    else:
        for i in range(n):
            if i >= bpp:
                a, c = cur[i - bpp], up[i - bpp]
            else:
                a = c = 0
            b = up[i]
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[i] = (cur[i] + pred) & 0xFF
    return np.frombuffer(bytes(cur), dtype=np.uint8)


def colour_stats(png: bytes) -> tuple[int, float]:
    """(distinct colours, ink fraction): ink = pixels not of the most common colour."""
    img = decode_png(png)
    h, w, c = img.shape
    flat = img[..., :3] if c >= 3 else img[..., :1]
    packed = np.zeros((h, w), dtype=np.uint32)
    for k in range(flat.shape[2]):
        packed = (packed << 8) | flat[..., k].astype(np.uint32)
    _, counts = np.unique(packed, return_counts=True)
    return int(counts.size), float(1.0 - counts.max() / packed.size)


def distinct_colours(png: bytes) -> int:
    return colour_stats(png)[0]
