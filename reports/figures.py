"""Plotly figures as plain ``{"data": [...], "layout": {...}}`` dictionaries.

Figures are built as JSON-ready dicts rather than ``plotly.graph_objects``
so a 500-row sweep costs milliseconds, and they are drawn by the plotly.js
that :mod:`reports.assets` writes once per output folder. Every axis title carries a
unit. Strings that come from the user (row ids, system names, series labels)
pass through :func:`ptext`, because plotly interprets a small HTML subset
in SVG text: ``<b>`` would be bold, so ``<script>`` is shown as text.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from . import analysis as A
from .units import fmt, label, nice_name, num, unit_for

PALETTE = ["#2b6cb0", "#dd6b20", "#2f855a", "#c53030", "#6b46c1", "#b7791f",
           "#0987a0", "#d53f8c", "#4a5568", "#718096"]
WAIT_COLOR, PROCESS_COLOR, BOTTLENECK_COLOR = "#90cdf4", "#2b6cb0", "#c53030"


def ptext(s: Any) -> str:
    """A user string made literal for plotly's SVG text (entities, no tags)."""
    return html.escape(str(s), quote=False)


# Legends sit at the bottom of the figure (container coordinates), where
# plotly reserves room for them below the axis title; placed in plot
# coordinates they ran into rotated tick labels and axis titles.
# :func:`fit_legend` makes the figure taller by the rows the legend takes.
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0,
                "yanchor": "bottom", "font": {"size": 11}}
#: Between the title and the plot, in container coordinates too:
#: :func:`fit_layout` hangs it just below the title (anchored at its top, so
#: however many rows it wraps into it grows down, and plotly reserves the
#: room it takes above the plot). Hung from the plot's top edge (paper y = 1)
#: instead, a legend that wrapped into two rows on a narrow page grew up into
#: the title.
LEGEND_ABOVE = {"orientation": "h", "xref": "container", "x": 0.01, "xanchor": "left",
                "yref": "container", "y": 1.0, "yanchor": "top", "font": {"size": 11}}

#: plotly's modebar (its zoom, pan and download tools, drawn while the pointer
#: is over a chart) takes the figure's top-right corner, 2-26 px from the top
#: and about 240 px wide: :func:`fit_layout` puts every title below it, where a
#: long title (or any title in a grid cell) can no longer run under it.
MODEBAR_PX = 30
#: one line of a title (15 px font), px
TITLE_LINE_PX = 20
#: longest title line, characters: about what the narrowest chart on a page
#: (a 520 px grid cell) shows of a 15 px title; longer titles are broken
#: into lines at spaces (plotly never wraps them, and cuts them at the edge)
TITLE_CHARS = 60


def layout(title: str, xtitle: str, ytitle: str, **extra) -> dict:
    lay = {
        "title": {"text": ptext(title), "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "template": None,
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
                 "size": 12, "color": "#1a202c"},
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        "xaxis": _axis(xtitle), "yaxis": _axis(ytitle),
        "legend": dict(LEGEND_BELOW),
        "hovermode": "closest", "height": 380,
    }
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(lay.get(k), dict):
            lay[k] = {**lay[k], **v}
        else:
            lay[k] = v
    return lay


def _axis(title: str) -> dict:
    return {"title": {"text": ptext(title)}, "gridcolor": "#e2e8f0", "zerolinecolor": "#cbd5e0",
            "linecolor": "#a0aec0", "ticks": "outside", "automargin": True}


# ---- prediction -------------------------------------------------------------

def server_breakdown(pred: dict) -> dict:
    """Stacked wait + process per server; the bottleneck server outlined in red."""
    servers = pred["servers"]
    names = _server_names(servers)
    b = A.bottleneck_servers(pred)
    line_w = [3 if i in b else 0 for i in range(len(servers))]
    line_c = [BOTTLENECK_COLOR] * len(servers)
    util = [s["utilization"] * 100 for s in servers]
    share = [s["share"] * 100 for s in servers]
    hover = ("server %{x}: %{y:.4g} µs<br>utilisation %{customdata[0]:.1f} %"
             "<br>share %{customdata[1]:.2f} %<extra>%{fullData.name}</extra>")
    data = [
        {"type": "bar", "name": "process (µs)", "x": names, "y": [s["process_us"] for s in servers],
         "marker": {"color": PROCESS_COLOR, "line": {"width": line_w, "color": line_c}},
         "customdata": list(zip(util, share)), "hovertemplate": hover},
        {"type": "bar", "name": "wait (µs)", "x": names, "y": [s["wait_us"] for s in servers],
         "marker": {"color": WAIT_COLOR, "line": {"width": line_w, "color": line_c}},
         "customdata": list(zip(util, share)), "hovertemplate": hover},
    ]
    ann = []
    if len(b) == 1:
        (i,) = b
        top = servers[i]["process_us"] + servers[i]["wait_us"]
        ann.append({"x": names[i], "y": top, "text": "bottleneck", "showarrow": True,
                    "arrowhead": 2, "ay": -30, "font": {"color": BOTTLENECK_COLOR, "size": 12}})
    title = "Per-server time per request: process + wait"
    lay = layout(title, "server (worker thread number)", "time per request (µs)",
                 barmode="stack", annotations=ann)
    lay["xaxis"]["type"] = "category"
    return {"data": data, "layout": lay}


def _server_names(servers) -> list[str]:
    # Bare numbers: "server 12" labels needed rotating from about ten servers
    # on, and then ran into the axis title; the axis title says what they are.
    return [str(i) for i in range(len(servers))]


def server_shares(pred: dict) -> dict:
    servers = pred["servers"]
    names = _server_names(servers)
    data = [
        {"type": "bar", "name": "share with cache (%)", "x": names,
         "y": [s["share"] * 100 for s in servers], "marker": {"color": PROCESS_COLOR},
         "hovertemplate": "server %{x}: %{y:.3g} %<extra>with cache</extra>"},
        {"type": "bar", "name": "share without cache (%)", "x": names,
         "y": [s.get("share_nocache", 0.0) * 100 for s in servers],
         "marker": {"color": "#cbd5e0"},
         "hovertemplate": "server %{x}: %{y:.3g} %<extra>without cache</extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": "utilisation (%)", "x": names,
         "y": [s["utilization"] * 100 for s in servers], "yaxis": "y2",
         "line": {"color": "#dd6b20"},
         "hovertemplate": "server %{x}: %{y:.3g} % busy<extra>utilisation</extra>"},
    ]
    lay = layout("Per-server share of requests and utilisation", "server (worker thread number)",
                 "share of all requests (%)", barmode="group",
                 yaxis2={**_axis("utilisation (%)"), "overlaying": "y", "side": "right",
                         "range": [0, 105], "tickvals": [0, 20, 40, 60, 80, 100],
                         "showgrid": False})
    lay["margin"]["r"] = 70
    lay["xaxis"]["type"] = "category"
    return {"data": data, "layout": lay}


# ---- sweep ------------------------------------------------------------------

def throughput_curve(rows: Sequence[dict], cols: A.SweepColumns, x: str, by: list[str],
                     title: str) -> dict | None:
    """Throughput against ``x``: predicted lines and measured markers, one colour per group."""
    t = cols.throughput
    if t is None:
        return None
    meas = A.series(rows, x, by, t)
    pred = A.series(rows, x, by, "pred_" + t)
    keys = list(dict.fromkeys(list(pred) + list(meas)))
    if not keys:
        return None
    names = {A.group_key(r, by): legend_entry(r, by) for r in rows}
    data = []
    unit = unit_for(t)
    for k, key in enumerate(keys[:12]):
        color = PALETTE[k % len(PALETTE)]
        name = ptext(names.get(key, key))
        if key in pred:
            pts = pred[key]
            data.append({"type": "scatter", "mode": "lines+markers", "name": name,
                         "legendgroup": name, "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                         "text": [ptext(p[2]) for p in pts], "line": {"color": color},
                         "marker": {"size": 5},
                         "hovertemplate": f"%{{text}}: %{{y:.4g}} {unit} predicted<extra>{name}</extra>"})
        if key in meas:
            pts = meas[key]
            data.append({"type": "scatter", "mode": "markers", "name": name,
                         "legendgroup": name, "showlegend": key not in pred,
                         "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                         "text": [ptext(p[2]) for p in pts],
                         "marker": {"color": color, "symbol": "diamond-open", "size": 10,
                                    "line": {"width": 2}},
                         "hovertemplate": f"%{{text}}: %{{y:.4g}} {unit} measured<extra>{name}</extra>"})
    lay = layout(title, label(x), label(t), height=420)
    if by:
        lay["legend"]["title"] = {"text": ptext(legend_title(by)) + ":", "side": "top"}
    xs = sorted({p[0] for pts in list(meas.values()) + list(pred.values()) for p in pts})
    if xs and xs[0] > 0 and xs[-1] / xs[0] >= 16:
        lay["xaxis"]["type"] = "log"
        if len(xs) <= 12:
            lay["xaxis"]["tickvals"] = xs
            lay["xaxis"]["ticktext"] = [f"{v:g}" for v in xs]
    lay["yaxis"]["rangemode"] = "tozero"
    if len(keys) > 12:
        lay["title"]["text"] += f" (first 12 of {len(keys)} groups)"
    return {"data": data, "layout": lay}


def legend_title(by: Sequence[str]) -> str:
    """What the legend entries list, e.g. ``system, memtable, timeout``."""
    return ", ".join(nice_name(c) for c in by)


def legend_entry(row: dict, by: Sequence[str]) -> str:
    """A group's values with units, e.g. ``farreach, 16 MiB, 100 ms`` (the keys are in
    the legend title: repeating ``storage.memtable_mb=`` per entry let legends
    take two thirds of a chart)."""
    if not by:
        return "all rows"
    parts = []
    for c in by:
        v = row.get(c)
        parts.append("–" if v is None else fmt(v, unit_for(c.rsplit(".", 1)[-1]))
                     if A.is_num(v) else str(v))
    return ", ".join(parts)


# Narrowest chart on a page (a grid cell), a legend glyph's average width
# and a legend row's height, px: enough to estimate how many rows a legend takes.
_CHART_PX, _GLYPH_PX, _LEGEND_ROW_PX = 520, 6.6, 22


def legend_groups(fig: dict) -> list[list[str]]:
    """The names a figure's legend shows, by legend group (plotly stacks a
    group's entries and flows the groups along the row)."""
    lay = fig["layout"]
    shown = [t for t in fig["data"] if t.get("name") and t.get("showlegend", True)
             and t.get("type") != "heatmap"]
    if lay.get("showlegend") is False or (len(shown) < 2 and lay.get("showlegend") is not True):
        return []
    groups: dict[str, list[str]] = {}
    for i, t in enumerate(shown):
        groups.setdefault(t.get("legendgroup") or f"#{i}", []).append(t["name"])
    return list(groups.values())


def fit_legend(fig: dict) -> dict:
    """Grow a figure with a bottom legend by the rows it takes, so the plotting
    area keeps its size however many entries there are (in place; returns fig)."""
    lay = fig["layout"]
    leg = lay.get("legend") or {}
    groups = legend_groups(fig)
    if not groups or leg.get("yref") != "container":
        return fig
    entry_px = 40 + _GLYPH_PX * max(len(n) for g in groups for n in g)
    per_row = max(1, int((_CHART_PX - 40) // entry_px))
    rows = -(-len(groups) // per_row) * max(len(g) for g in groups)
    rows += 1 if (leg.get("title") or {}).get("text") else 0
    lay["height"] = lay.get("height", 380) + _LEGEND_ROW_PX * rows + 8
    # plotly lets a horizontal legend take half the figure and scrolls the rest
    # out of sight; the figure has grown by the legend's rows, so let it have them
    leg.setdefault("maxheight", 1.0)
    return fig


def wrap_title(text: str, width: int = TITLE_CHARS) -> list[str]:
    """A title as the lines to show: broken at spaces into lines of at most
    ``width`` characters (a word longer than that gets a line of its own);
    explicit ``<br>`` breaks are kept."""
    lines: list[str] = []
    for part in text.split("<br>"):
        line = ""
        for word in part.split(" "):
            if line and len(_visible(line)) + 1 + len(_visible(word)) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return [ln for ln in lines if ln] or [""]


def _visible(s: str) -> str:
    """``s`` as it shows (an ``&lt;`` is one character)."""
    return html.unescape(s)


def fit_layout(fig: dict) -> dict:
    """Lay out a figure's top (in place; returns fig), after :func:`fit_legend`.

    From the top down: the modebar's band (:data:`MODEBAR_PX`), the title
    (broken into lines of :data:`TITLE_CHARS`), a :data:`LEGEND_ABOVE`
    legend hung just below it, then the plot. Every scatter trace that draws
    markers or text is drawn unclipped (``cliponaxis``), so a marker on the
    plot's edge (a value of 0 on a ``tozero`` axis, a point at an explicit
    range's end) shows whole instead of cut in half by the plot area's clip.
    """
    fit_legend(fig)
    lay = fig["layout"]
    margin = lay.setdefault("margin", {})
    title = lay.get("title") or {}
    lines = wrap_title(title["text"]) if title.get("text") else []
    top = MODEBAR_PX
    if lines:
        title.update({"text": "<br>".join(lines), "xref": "container", "yref": "container",
                      "y": 1.0, "yanchor": "top", "pad": {"t": MODEBAR_PX}})
        top += TITLE_LINE_PX * len(lines) + 4
    leg = lay.get("legend") or {}
    if leg.get("orientation") == "h" and (leg.get("title") or {}).get("side") == "top left":
        # beside the first row, the title pushes every row right by its width,
        # but plotly wraps the rows as if it did not: the last entries of a row
        # ran off the figure's right edge
        leg["title"]["side"] = "top"
    if (legend_groups(fig) and leg.get("yref") == "container"
            and leg.get("y", 0) > 0.5):          # hung from the top (LEGEND_ABOVE)
        height = lay.get("height", 380)
        leg.update({"y": 1.0 - top / height, "yanchor": "top"})
        margin["t"] = 12          # below the legend, whose room plotly reserves
    else:
        above = any(a.get("yref") == "paper" and a.get("y", 0) >= 1
                    and a.get("yanchor") == "bottom" for a in lay.get("annotations") or [])
        margin["t"] = top + 12 + (18 if above else 0)
    for tr in fig["data"]:
        mode = tr.get("mode", "")
        if tr.get("type", "scatter") == "scatter" and ("markers" in mode or "text" in mode):
            tr.setdefault("cliponaxis", False)
    return fig


def heatmap(grid: A.Grid) -> dict:
    u = unit_for(grid.metric)
    fixed = ", ".join(f"{k}={A._short(v)}" for k, v in list(grid.fixed.items())[:6])
    title = f"{label(grid.metric)} over {nice_name(grid.x)} × {nice_name(grid.y)}"
    text = [[("" if v is None else num(v, 3)) for v in row] for row in grid.z]
    data = [{"type": "heatmap", "x": [str(A._short(v)) for v in grid.xs],
             "y": [str(A._short(v)) for v in grid.ys], "z": grid.z, "text": text,
             "texttemplate": "%{text}", "colorscale": "Viridis",
             "colorbar": {"title": {"text": ptext(u or grid.metric)}},
             "hovertemplate": (f"{ptext(grid.x)}=%{{x}}, {ptext(grid.y)}=%{{y}}: "
                               f"%{{z:.4g}} {u}<extra></extra>")}]
    lay = layout(title, label(grid.x), label(grid.y), height=360)
    lay["xaxis"]["type"] = "category"
    lay["yaxis"]["type"] = "category"
    if fixed:
        lay["annotations"] = [{"text": ptext("held fixed: " + fixed), "xref": "paper",
                               "yref": "paper", "x": 0, "y": 1.02, "showarrow": False,
                               "xanchor": "left", "yanchor": "bottom",
                               "font": {"size": 10, "color": "#4a5568"}}]
        lay["margin"]["t"] = 70
    return {"data": data, "layout": lay}


# ---- validation -------------------------------------------------------------

def parity(comps: Sequence[A.Comparison], metric: str) -> dict:
    """Predicted against measured, with the y = x line and ±10 % / ±20 % bands."""
    pts = [c for c in comps if c.metric == metric]
    u = unit_for(metric)
    xs = [c.measured for c in pts]
    ys = [c.predicted for c in pts]
    lo = min(xs + ys)
    hi = max(xs + ys)
    log = lo > 0 and hi / lo >= 30
    if log:
        lo, hi = lo / 1.3, hi * 1.3
    else:
        # padded by a share of the range shown, which starts at 0 for positive
        # values: padded by the data's own spread, ten runs of nearly one value
        # sat on the range's end, their markers cut in half
        pad = (hi - min(lo, 0.0)) * 0.08 or abs(hi) * 0.1 or 1.0
        lo, hi = min(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad
    data = []
    for k, dash, col in ((0.2, "dot", "#cbd5e0"), (0.1, "dash", "#a0aec0")):
        for sign in (1, -1):
            f = 1 + sign * k
            data.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo * f, hi * f],
                         "line": {"dash": dash, "color": col, "width": 1},
                         "name": f"±{int(k * 100)} %", "legendgroup": f"b{k}",
                         "showlegend": sign == 1, "hoverinfo": "skip"})
    data.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi],
                 "line": {"color": "#4a5568", "width": 1}, "name": "predicted = measured",
                 "hoverinfo": "skip"})
    errs = [c.error_pct for c in pts]
    colors = ["#2f855a" if e is not None and abs(e) <= 10 else
              "#b7791f" if e is not None and abs(e) <= 20 else "#c53030" for e in errs]
    data.append({"type": "scatter", "mode": "markers", "name": "runs",
                 "x": xs, "y": ys, "text": [ptext(c.row) for c in pts],
                 "customdata": [e if e is not None else None for e in errs],
                 "marker": {"color": colors, "size": 9, "line": {"color": "#1a202c", "width": 0.5}},
                 "hovertemplate": (f"%{{text}}<br>measured %{{x:.4g}} {u}<br>predicted %{{y:.4g}} {u}"
                                   "<br>error %{customdata:+.1f} %<extra></extra>")})
    lay = layout(f"Predicted vs measured: {label(metric)}", f"measured {label(metric)}",
                 f"predicted {label(metric)}", height=400)
    for ax in ("xaxis", "yaxis"):
        lay[ax]["range"] = [_log10(lo), _log10(hi)] if log else [lo, hi]
        if log:
            lay[ax]["type"] = "log"
    return {"data": data, "layout": lay}


def _log10(v: float) -> float:
    import math
    return math.log10(v)


#: an error-per-run chart names every run up to this many (a 1024 px page
#: has about 14 px per upright 10 px label for them); beyond, hover names them
MAX_RUN_LABELS = 60


def error_bars(comps: Sequence[A.Comparison], metric: str) -> dict:
    pts = [c for c in comps if c.metric == metric and c.error_pct is not None]
    data = [{"type": "bar", "x": [ptext(c.row) for c in pts], "y": [c.error_pct for c in pts],
             "marker": {"color": ["#2f855a" if abs(c.error_pct) <= 10 else "#b7791f"
                                  if abs(c.error_pct) <= 20 else "#c53030" for c in pts]},
             "name": "error (%)", "hovertemplate": "%{x}: %{y:+.1f} %<extra></extra>"}]
    names = [ptext(c.row) for c in pts]
    # "(predicted − measured) / measured (%)" was longer than the plot is tall
    # and ran up into the title: the section's intro defines the error
    lay = layout(f"Percentage error per run: {label(metric)}", "run (row id)", "error (%)",
                 height=320,
                 shapes=[{"type": "rect", "xref": "paper", "x0": 0, "x1": 1, "y0": -10, "y1": 10,
                          "fillcolor": "#c6f6d5", "opacity": 0.35, "line": {"width": 0},
                          "layer": "below"}])
    lay["xaxis"]["type"] = "category"
    if len(pts) > MAX_RUN_LABELS:
        lay["xaxis"]["showticklabels"] = False
        lay["xaxis"]["title"]["text"] = (f"run ({len(pts)} runs, too many to name: "
                                         "hover a bar for its row id)")
    elif len(pts) > 20:
        # every run named (they were hidden from 31 runs on, and plotly's own
        # tick spacing drops labels it finds crowded): upright, one per bar,
        # in the room the figure grows by
        lay["xaxis"].update({"tickmode": "array", "tickvals": names, "ticktext": names,
                             "tickangle": -90, "tickfont": {"size": 10}})
        longest = max(len(html.unescape(n)) for n in names)
        lay["height"] += int(6.2 * longest)
    return {"data": data, "layout": lay}


# ---- timeline ---------------------------------------------------------------
#
# A timeline row at t covers [t - dt, t] (the second that just ended). Lines
# are drawn as steps over that interval and bars centred on it, so they line
# up with the stall shading (reports.analysis.stall_spans uses the same rule).

def _covering(t: Sequence[float]) -> tuple[list[float], float]:
    """Centres of the intervals the samples cover, and the step."""
    dt = A.sample_step(t)
    return [x - dt / 2 for x in t], dt


def _stall_shapes(spans, yref: str = "paper") -> list[dict]:
    # Darker = more stalled, relative to this run's worst span: absolute
    # shading would make a run whose stalls are all under 1 % look clean.
    top = max((p for _, _, p in spans), default=0.0) or 1.0
    return [{"type": "rect", "xref": "x", "yref": yref, "x0": a, "x1": b, "y0": 0, "y1": 1,
             "fillcolor": "#fc8181", "opacity": 0.12 + 0.28 * min(max(p / top, 0.0), 1.0),
             "line": {"width": 0}, "layer": "below"} for a, b, p in spans]


def timeline_throughput(rows: Sequence[dict], pred: dict | None) -> dict:
    """Throughput per sample (top) and stalled share of worker time (bottom, own scale)."""
    t = [r["t_s"] for r in rows]
    dt = A.sample_step(t)
    # "vh" steps from a leading point at t0 - dt: each sample's value is drawn
    # over the interval it covers.
    xs = [t[0] - dt] + t
    thr = [r.get("throughput_mops") for r in rows]
    data = [{"type": "scatter", "mode": "lines", "name": "throughput (MOPS)", "x": xs,
             "y": thr[:1] + thr, "line": {"color": PROCESS_COLOR, "shape": "vh"},
             "hovertemplate": "second ending at %{x} s: %{y:.4g} MOPS<extra></extra>"}]
    spans = A.stall_spans(t, [r.get("stalled_frac") for r in rows])
    has_stall = any(r.get("stalled_frac") is not None for r in rows)
    if has_stall:
        mids, _ = _covering(t)
        data.append({"type": "bar", "name": "stalled (% of worker time)", "x": mids,
                     "width": [dt * 0.9] * len(mids), "yaxis": "y2",
                     "y": [None if r.get("stalled_frac") is None else r["stalled_frac"] * 100
                           for r in rows], "marker": {"color": BOTTLENECK_COLOR},
                     "customdata": t,
                     "hovertemplate": "second ending at %{customdata} s: %{y:.3g} % stalled"
                                      "<extra></extra>"})
    if spans:
        data.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                     "name": "shaded: seconds with writes stalled",
                     "marker": {"color": "#feb2b2", "symbol": "square", "size": 12},
                     "hoverinfo": "skip"})
    shapes = _stall_shapes(spans)
    if pred is not None:
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                       "y0": pred["throughput_mops"], "y1": pred["throughput_mops"],
                       "line": {"color": "#4a5568", "dash": "dash", "width": 1}})
        data.append({"type": "scatter", "mode": "lines", "x": [None], "y": [None],
                     "line": {"color": "#4a5568", "dash": "dash"},
                     "name": f"mean prediction ({fmt(pred['throughput_mops'], 'MOPS')})"})
    lay = layout("Throughput per second", "time (s)", "throughput (MOPS)", shapes=shapes,
                 height=440 if has_stall else 380)
    lay["yaxis"]["rangemode"] = "tozero"
    lay["xaxis"]["range"] = [t[0] - dt, t[-1]]
    if has_stall:
        # Own panel and autoscaled: stalls are often well under 1 % of the time,
        # invisible on a 0-100 % axis.
        lay["yaxis"]["domain"] = [0.34, 1.0]
        lay["yaxis2"] = {**_axis("stalled (%)"), "domain": [0.0, 0.24], "anchor": "x",
                         "rangemode": "tozero"}
        lay["xaxis"]["anchor"] = "y2"
        lay["bargap"] = 0
    return {"data": data, "layout": lay}


def timeline_loss(rows: Sequence[dict]) -> dict | None:
    t = [r["t_s"] for r in rows]
    mids, _ = _covering(t)
    data = []
    for col, color in (("pktloss", "#dd6b20"), ("false_pos", "#6b46c1")):
        if col in rows[0]:
            data.append({"type": "bar", "name": label(col), "x": mids,
                         "y": [r.get(col) for r in rows], "marker": {"color": color},
                         "customdata": t,
                         "hovertemplate": f"second ending at %{{customdata}} s: %{{y:.4g}} "
                                          f"{unit_for(col)}<extra></extra>"})
    if not data:
        return None
    spans = A.stall_spans(t, [r.get("stalled_frac") for r in rows])
    lay = layout("Packet loss and false positives per second", "time (s)",
                 "count per second (packets)", barmode="group",
                 shapes=_stall_shapes(spans), height=320)
    return {"data": data, "layout": lay}


def timeline_servers(rows: Sequence[dict], prefix: str, title: str) -> dict | None:
    cols = sorted((c for c in rows[0] if c.startswith(prefix) and c[len(prefix):].isdigit()),
                  key=lambda c: int(c[len(prefix):]))
    if not cols:
        return None
    t = [r["t_s"] for r in rows]
    spans = A.stall_spans(t, [r.get("stalled_frac") for r in rows])
    if len(cols) > 12:
        # Too many lines to tell apart: a server × time heatmap, one cell per sample.
        mids, _ = _covering(t)
        data = [{"type": "heatmap", "x": mids, "y": [f"server {c[len(prefix):]}" for c in cols],
                 "z": [[r.get(c) for r in rows] for c in cols], "colorscale": "Blues",
                 "colorbar": {"title": {"text": "µs"}}, "customdata": [t] * len(cols),
                 "hovertemplate": "second ending at %{customdata} s, %{y}: %{z:.4g} µs"
                                  "<extra></extra>"}]
        lay = layout(title, "time (s)", "server (worker thread)", height=60 + 18 * len(cols))
        return {"data": data, "layout": lay}
    dt = A.sample_step(t)
    data = [{"type": "scatter", "mode": "lines", "name": f"server {c[len(prefix):]}",
             "x": [t[0] - dt] + t, "y": [rows[0].get(c)] + [r.get(c) for r in rows],
             "line": {"color": PALETTE[i % len(PALETTE)], "width": 1.5, "shape": "vh"},
             "hovertemplate": f"second ending at %{{x}} s, server {c[len(prefix):]}: "
                              f"%{{y:.4g}} µs<extra></extra>"}
            for i, c in enumerate(cols)]
    lay = layout(title, "time (s)", f"{nice_name(prefix.rstrip('_'))} (µs)",
                 shapes=_stall_shapes(spans), height=340)
    lay["yaxis"]["rangemode"] = "tozero"
    return {"data": data, "layout": lay}
