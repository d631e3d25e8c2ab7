"""What plotly drew on a report page, in page pixels (:class:`PageGeometry`).

:data:`GEOMETRY_JS` runs in the page (by :func:`reports.browser.check_report`
with ``geometry=True``) and measures, per figure, the boxes of its title,
modebar, legend, axis titles and plot areas, its x tick labels and every
scatter marker, and the page's text; :func:`page_geometry` turns its answer
into the dataclasses here (:class:`Box`, :class:`Marker`, :class:`Tick`,
:class:`Axis`, :class:`FigureGeometry`) that layout tests assert on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def page_geometry(info: dict) -> PageGeometry:
    """The dataclasses of what :data:`GEOMETRY_JS` measured (its answer, parsed)."""
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


# Measures the drawn page two animation frames after every figure is drawn
# (plotly's margin pushes redraw once more). Boxes are page px.
GEOMETRY_JS = r"""
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
