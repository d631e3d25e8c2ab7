"""The page of FarReach's published experiments (``python -m calibrate public --html``).

One chart per quantity (throughput, normalized throughput): the published
median of each configuration across, the prediction up, log axes, one
colour per system and one marker per experiment, the diagonal a perfect
prediction; the whole table below. Built like every other page
(:mod:`reports.page`): plotly dicts rendered by the one template.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from .blocks import Figures, grid, kpi, section, table
from .figures import PALETTE, layout, ptext
from .page import render, write

__all__ = ["public_figure", "write_public_report"]

_SYSTEMS = {"farreach": "FarReach", "nocache": "NoCache", "netcache": "NetCache"}
_MARKERS = {"scalability": "circle", "value_size": "square", "dynamic": "diamond"}


def _pos(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def _label(r: Mapping[str, Any]) -> str:
    parts = [r["experiment"], f"{r.get('servers')} servers"]
    if r.get("value_bytes") is not None:
        parts.append(f"{r['value_bytes']} B")
    if r.get("rule"):
        parts.append(str(r["rule"]))
    return ", ".join(parts)


def public_figure(rows: Sequence[Mapping[str, Any]], what: str) -> dict | None:
    """Predicted against published ``mops`` or ``normalized`` (log-log)."""
    pub, pred = f"{what}_median", f"pred_{what}"
    pts = [r for r in rows if _pos(r.get(pub)) and _pos(r.get(pred))]
    if not pts:
        return None
    vals = [_pos(r[pub]) for r in pts] + [_pos(r[pred]) for r in pts]
    lo, hi = min(vals) / 1.2, max(vals) * 1.2
    data = []
    for k, (sys_, name) in enumerate(_SYSTEMS.items()):
        for ex, sym in _MARKERS.items():
            mine = [r for r in pts if r["system"] == sys_ and r["experiment"] == ex]
            if not mine:
                continue
            data.append({
                "type": "scatter", "mode": "markers", "name": ptext(f"{name}, {ex}"),
                "x": [_pos(r[pub]) for r in mine], "y": [_pos(r[pred]) for r in mine],
                "text": [ptext(_label(r)) for r in mine],
                "marker": {"color": PALETTE[k], "symbol": sym, "size": 9,
                           "line": {"color": "#1a202c", "width": 0.5}},
                "hovertemplate": "%{text}<br>published %{x:.3g}<br>predicted %{y:.3g}"
                                 "<extra></extra>"})
    data.append({"type": "scatter", "mode": "lines", "x": [lo, hi], "y": [lo, hi],
                 "line": {"color": "#4a5568", "width": 1}, "name": "predicted = published",
                 "hoverinfo": "skip"})
    unit = "MOPS" if what == "mops" else "x"
    title = "Throughput" if what == "mops" else "Normalized throughput"
    lay = layout(f"{title}: predicted against published", f"published, median of rounds ({unit})",
                 f"predicted ({unit})", height=460)
    for ax in ("xaxis", "yaxis"):
        lay[ax]["type"] = "log"
        lay[ax]["range"] = [math.log10(lo), math.log10(hi)]
    return {"data": data, "layout": lay}


def _pct(v: Any) -> str:
    return f"{v:+.1f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "–"


def _num(v: Any, fmt: str) -> str:
    return format(v, fmt) if isinstance(v, (int, float)) and math.isfinite(v) else "–"


def write_public_report(rows: Sequence[Mapping[str, Any]], summ: Mapping[str, Any],
                        path: str | Path, *, scenario: str, profile: str) -> Path:
    """The published experiments (rows as :func:`calibrate.public.to_rows` gives them)."""
    figs = Figures()
    wn = summ["normalized_worst_pct"]
    kpis = [kpi(f"normalized, worst, {n}", _pct(wn.get(s)).lstrip("+"),
                "target 5 %" if s == "netcache" else "target 2 %")
            for s, n in _SYSTEMS.items()]
    kpis += [kpi("rotation throughput, median |error|",
                 _pct(summ["rotation_median_abs_pct"]).lstrip("+"), "target 10 %"),
             kpi("rotation throughput, largest |error|",
                 _pct(summ["rotation_max_abs_pct"]).lstrip("+"),
                 f"target 25 %; {summ['rotation_over_25pct']} over it")]
    intro = (f"Every published experiment of FarReach's public repository that a scenario can "
             f"express (data/public), predicted with scenario {scenario} and profile "
             f"{profile}. No parameter is fitted to these rows.")
    charts = [figs.block(public_figure(rows, w), "Hover a point for its configuration.")
              for w in ("mops", "normalized")]
    head = ["experiment", "system", "configuration", "rounds", "published MOPS (median)",
            "predicted MOPS", "error", "published normalized (x)", "predicted (x)", "error"]
    trows = [[r["experiment"], _SYSTEMS[r["system"]], _label(r).split(", ", 1)[1],
              r["rounds"], _num(r["mops_median"], ".3f"), _num(r["pred_mops"], ".3f"),
              _pct(r["err_mops_pct"]), _num(r["normalized_median"], ".2f"),
              _num(r["pred_normalized"], ".2f"), _pct(r["err_normalized_pct"])] for r in rows]
    sections = [section("public", "FarReach's published experiments",
                        [{"kind": "kpis", "items": kpis}], intro),
                section("charts", "Predicted against published", [grid(charts)]),
                section("table", f"Every configuration ({len(rows)})", [table(
                    head, trows, numeric=[False, False, False] + [True] * 7)])]
    return write(path, render(sections, "FarReach's published experiments"))
