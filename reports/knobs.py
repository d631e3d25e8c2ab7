"""The page of the knob table (``python -m calibrate knobs --html``).

One point per pair of measured runs that differ in one knob: the measured
throughput ratio (row b / row a) across, the predicted one up, both on log
axes, one colour per knob and one chart per engine (analytic solver,
simulator). The diagonal is a perfect prediction; the 1/1 cross splits the
plane into the quadrants where the predicted direction agrees (top right,
bottom left) or not; the shaded bands are the effects too small to score
(measured, vertical) and the flat predictions (horizontal). The headline
figures come first, the whole table last.

Built from the same parts as every other page (:mod:`reports.page`): plotly
dicts (:func:`reports.figures.layout`), rendered by the one template with
plotly.js written once beside the page (:mod:`reports.assets`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from .blocks import Figures, Section, grid, kpi, section, table, text
from .figures import PALETTE, layout, ptext
from .page import render, write

__all__ = ["knob_sections", "ratio_figure", "write_knob_report"]

_LABEL = {"analytic": "analytic", "sim": "simulator"}
_TONE = {"agree": "ok", "disagree": "bad", "flat": "warn"}
_FLAT = 1.02
_SYMBOLS = {"analytic": ("circle", "square", "triangle-up"),
            "sim": ("diamond", "cross", "triangle-down")}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
        and math.isfinite(v) and v > 0 else None


def _x(v: Any) -> str:
    x = _num(v)
    return "–" if x is None else f"{x:.3f}×"


def _pct(v: Any, signed: bool = False) -> str:
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "–"
    return f"{v:+.1f} %" if signed else f"{v:.1f} %"


def _pair(r: Mapping[str, Any]) -> str:
    return f"{r['row_a']} → {r['row_b']}"


def _change(r: Mapping[str, Any]) -> str:
    return f"{r['knob']}: {r['from'] or '(empty)'} → {r['to'] or '(empty)'}"


def ratio_figure(rows: Sequence[Mapping[str, Any]], engine: str, min_effect: float,
                 knobs: Sequence[str], title: str | None = None) -> dict:
    """Predicted against measured ratio (log-log), one trace per knob."""
    col = "analytic" if engine == "analytic" else "sim"
    pts = [r for r in rows if _num(r.get("measured_x")) and _num(r.get(f"{col}_x"))]
    vals = [1.0] + [_num(r["measured_x"]) for r in pts] + [_num(r[f"{col}_x"]) for r in pts]
    span = max(abs(math.log10(v)) for v in vals) + 0.06
    span = max(span, math.log10(1 + min_effect) + 0.06, 0.1)
    lo, hi = 10 ** -span, 10 ** span
    data = []
    for k, knob in enumerate(knobs):
        mine = [r for r in pts if r["knob"] == knob]
        if not mine:
            continue
        data.append({
            "type": "scatter", "mode": "markers", "name": ptext(knob), "legendgroup": ptext(knob),
            "x": [_num(r["measured_x"]) for r in mine], "y": [_num(r[f"{col}_x"]) for r in mine],
            "text": [ptext(f"{_pair(r)} ({r['kind']})<br>{_change(r)}") for r in mine],
            "customdata": [[r.get(f"{col}_direction") or "–",
                            _pct(r.get(f"{col}_ratio_error_pct"))] for r in mine],
            "marker": {"color": PALETTE[k % len(PALETTE)], "size": 10,
                       # past the palette's colours, another shape: each knob its own look
                       "symbol": _SYMBOLS[engine][(k // len(PALETTE)) % len(_SYMBOLS[engine])],
                       "line": {"color": "#1a202c", "width": 0.5}},
            "hovertemplate": ("%{text}<br>measured %{x:.3f}×<br>" + _LABEL[engine]
                              + " %{y:.3f}× (%{customdata[0]})<br>ratio error "
                              "%{customdata[1]}<extra></extra>")})
    data.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi],
                 "line": {"color": "#4a5568", "width": 1}, "name": "predicted = measured",
                 "hoverinfo": "skip"})
    small = 1 + min_effect
    shapes = [
        # the effects too small to score (measured) and the flat predictions
        {"type": "rect", "xref": "x", "yref": "paper", "x0": 1 / small, "x1": small,
         "y0": 0, "y1": 1, "fillcolor": "#e2e8f0", "opacity": 0.5, "line": {"width": 0},
         "layer": "below"},
        {"type": "rect", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": 1 / _FLAT,
         "y1": _FLAT, "fillcolor": "#fefcbf", "opacity": 0.6, "line": {"width": 0},
         "layer": "below"},
        # the 1/1 cross
        {"type": "line", "xref": "x", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1,
         "line": {"color": "#a0aec0", "width": 1, "dash": "dash"}},
        {"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
         "line": {"color": "#a0aec0", "width": 1, "dash": "dash"}},
    ]
    lay = layout(title or f"{_LABEL[engine].capitalize()}: predicted against measured ratio",
                 "measured ratio, row b / row a (×)",
                 f"{_LABEL[engine]} ratio, row b / row a (×)", shapes=shapes, height=460)
    for ax in ("xaxis", "yaxis"):
        lay[ax]["type"] = "log"
        lay[ax]["range"] = [-span, span]
    lay["legend"]["title"] = {"text": "knob:", "side": "top left"}
    return {"data": data, "layout": lay}


def knob_sections(rows: Sequence[Mapping[str, Any]], *, engines: Sequence[str],
                  min_effect: float, summary: Mapping[str, Any], summary_text: str = "",
                  holdout: bool = False, figs: Figures | None = None) -> list[Section]:
    """Headline figures, one ratio chart per engine, how to read them, the table."""
    figs = figs or Figures()
    n, n_scored = len(rows), summary.get("scored", 0)
    how = "held out" if holdout else "in sample"
    kpis = [kpi("pairs found", f"{n}", ", ".join(f"{k} {v}" for k, v in
                                                 (summary.get("by_kind") or {}).items())),
            kpi("scored pairs", f"{n_scored}",
                f"measured effect ≥ {100 * min_effect:g} %")]
    for e in engines:
        s = summary.get(e) or {}
        agree = s.get("agree", 0)
        tone = "" if not n_scored else ("good" if agree >= 0.8 * n_scored else
                                        "warn" if agree >= 0.6 * n_scored else "alert")
        kpis.append(kpi(f"direction right, {_LABEL[e]}", f"{agree} of {n_scored}",
                        f"wrong {s.get('disagree', 0)}, flat {s.get('flat', 0)} ({how})", tone))
        med = s.get("median_ratio_error")
        kpis.append(kpi(f"median ratio error, {_LABEL[e]}",
                        "–" if med is None else f"{100 * med:.1f} %", "over the scored pairs"))
    gap = summary.get("largest_gap")
    if len(engines) == 2:
        kpis.append(kpi("largest analytic / simulator gap",
                        "–" if not gap else f"{100 * gap['gap']:+.1f} %",
                        "" if not gap else f"{gap['pair']}, {gap['knob']}"))
    intro = ("Pairs of measured runs of one kind that differ in exactly one knob column. "
             "Ratios are the throughput of row b over row a (×), measured and predicted "
             f"({how}). A pair is scored when its measured effect is at least "
             f"{100 * min_effect:g} % (|log ratio| ≥ log(1 + {min_effect:g})); the "
             "predicted direction agrees when it moves the same way by at least 2 %, and "
             "is flat within 2 % of 1. Ratio error = |predicted / measured − 1|.")
    out: list[Section] = [section("knobs", "Knob table", [{"kind": "kpis", "items": kpis}],
                                  intro)]
    if not rows:
        out[0]["blocks"].append(text("No pairs: no two rows of one kind with a measured "
                                     "throughput differ in exactly one knob."))
        return out
    knobs = list(dict.fromkeys(r["knob"] for r in rows))
    charts = [figs.block(ratio_figure(rows, e, min_effect, knobs),
                         "Top right and bottom left: the predicted direction agrees. Grey "
                         "band: measured effects too small to score; yellow band: flat "
                         "predictions (within 2 % of 1). Hover a point for its pair.")
              for e in engines]
    out.append(section("ratios", "Predicted against measured ratio", [grid(charts)]))
    if summary_text:
        out.append(section("summary", "Summary", [text(line) for line in
                                                   summary_text.splitlines() if line.strip()]))
    head = ["kind", "knob", "from → to", "rows a → b", "measured (×)"]
    numeric = [False, False, False, False, True]
    for e in engines:
        head += [f"{_LABEL[e]} (×)", f"{_LABEL[e]} direction", f"{_LABEL[e]} ratio error (%)"]
        numeric += [True, False, True]
    if len(engines) == 2:
        head.append("analytic / simulator gap (%)")
        numeric.append(True)
    trows, classes = [], []
    for r in rows:
        cells = [r["kind"], r["knob"], f"{r['from'] or '(empty)'} → {r['to'] or '(empty)'}",
                 _pair(r), _x(r["measured_x"])]
        for e in engines:
            c = "analytic" if e == "analytic" else "sim"
            d = r.get(f"{c}_direction") or "–"
            cells += [_x(r.get(f"{c}_x")), d + (" (same scenario)" if r.get("same_scenario")
                                                else ""),
                      _pct(r.get(f"{c}_ratio_error_pct"))]
        if len(engines) == 2:
            cells.append(_pct(r.get("gap_pct"), signed=True))
        trows.append(cells)
        classes.append(_TONE.get(r.get(f"{'analytic' if engines[0] == 'analytic' else 'sim'}"
                                       "_direction") or "", ""))
    out.append(section("pairs", f"All pairs ({len(rows)})", [table(
        head, trows, numeric=numeric, row_classes=classes,
        caption="Rows coloured by the first engine's direction: green agree, red disagree, "
                "amber flat. 'same scenario': the two rows make the same scenario, so the "
                "model does not see this knob. Click a header to sort.")], collapsed=True))
    return out


def write_knob_report(rows: Sequence[Mapping[str, Any]], path: str | Path, *,
                      engines: Sequence[str], min_effect: float,
                      summary: Mapping[str, Any], summary_text: str = "",
                      holdout: bool = False, title: str = "Knob table",
                      inputs: Sequence[str] = ()) -> Path:
    """The knob table (rows as :func:`calibrate.knobs.table_rows` gives them) as a page."""
    sections = knob_sections(rows, engines=engines, min_effect=min_effect, summary=summary,
                             summary_text=summary_text, holdout=holdout)
    return write(path, render(sections, title, inputs=inputs))
