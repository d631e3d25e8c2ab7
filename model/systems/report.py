"""Per-system HTML reports: measured points against the predicted curves.

``python -m model.systems.report --out DIR`` writes ``DIR/<system>.html`` for
every system in :mod:`model.systems`: one self-contained page (plotly.js
inlined) with the predicted curves extended past the measured range, markers
where saturation, a peak or a collapse is expected, and a measured-vs-predicted
scatter with the median absolute percentage error per column. Deliberately
plain; the reports package may restyle it.
"""

from __future__ import annotations

import argparse
import html
import statistics
import sys
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio

from model.errors import InputError

from . import SYSTEMS, curves


def _figure_curves(rows, title: str):
    fig = go.Figure()
    series: dict[str, list] = {}
    for r in rows:
        if r["kind"] == "predicted":
            series.setdefault(r["series"], []).append(r)
    groups: dict[str, list[str]] = {}
    for name, pts in series.items():
        groups.setdefault(f"{pts[0]['y_label']} vs {pts[0]['x_label']}", []).append(name)
    figs = []
    for label, names in groups.items():
        fig = go.Figure()
        for name in names:
            pts = series[name]
            fig.add_trace(go.Scatter(x=[p["x"] for p in pts], y=[p["y"] for p in pts],
                                     mode="lines", name=f"{name} (predicted)"))
            fl = [p for p in pts if p.get("flag")]
            if fl:
                fig.add_trace(go.Scatter(x=[p["x"] for p in fl], y=[p["y"] for p in fl],
                                         mode="markers+text", text=[p["flag"] for p in fl],
                                         textposition="top center", showlegend=False,
                                         marker={"symbol": "x", "size": 10}))
        fig.update_layout(title=f"{title}: {label}", xaxis_title=label.split(" vs ")[1],
                          yaxis_title=label.split(" vs ")[0], height=480)
        figs.append(fig)
    return figs


def _figure_scatter(rows, title: str):
    fig = go.Figure()
    by: dict[str, list] = {}
    for r in rows:
        if r["kind"] == "measured" and r["predicted"] is not None:
            by.setdefault(f"{r['run_kind']}.{r['column']}", []).append(r)
    lines = []
    for name, pts in by.items():
        apes = [abs(p["predicted"] - p["measured"]) / abs(p["measured"]) * 100 for p in pts]
        lines.append(f"{name}: median APE {statistics.median(apes):.1f} % over {len(pts)} points")
        fig.add_trace(go.Scatter(x=[p["measured"] for p in pts], y=[p["predicted"] for p in pts],
                                 mode="markers", name=name, text=[p["id"] for p in pts]))
    lo = min((min(p["measured"], p["predicted"]) for v in by.values() for p in v), default=1)
    hi = max((max(p["measured"], p["predicted"]) for v in by.values() for p in v), default=1)
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x",
                             line={"dash": "dot"}))
    fig.update_layout(title=f"{title}: predicted vs measured (each in its column's unit)",
                      xaxis_type="log", yaxis_type="log", xaxis_title="measured",
                      yaxis_title="predicted", height=520)
    return fig, lines


def write_report(system: str, out_dir: str | Path) -> Path:
    rows = curves(system)
    sysm = SYSTEMS[system]
    figs = _figure_curves(rows, system)
    scatter, lines = _figure_scatter(rows, system)
    parts = [f"<h1>{html.escape(system)}</h1><p>{html.escape(sysm.description)}</p>",
             "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"]
    first = True
    for f in [scatter] + figs:
        parts.append(pio.to_html(f, include_plotlyjs=True if first else False, full_html=False))
        first = False
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(system)}</title></head><body>" + "\n".join(parts) + "</body></html>")
    out = Path(out_dir) / f"{system}.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m model.systems.report")
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--system", action="append", default=[])
    args = ap.parse_args(argv)
    try:
        for name in args.system or sorted(SYSTEMS):
            if name not in SYSTEMS:
                raise InputError(f"unknown system {name!r}", field="--system")
            print(f"wrote {write_report(name, args.out)}", file=sys.stderr)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
