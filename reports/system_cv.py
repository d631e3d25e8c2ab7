"""A system page's cross-validation section: held-out points against the refitted curves.

Rendering only: :func:`cv_section` takes the cells and the
:class:`calibrate.cv.CVResult` that :func:`calibrate.systems_pages.cv_rows`
computed (refitting a profile is calibration's work, and reports does not
depend on calibrate) and draws, per run kind and column, one figure
(:func:`cv_figure`: the refitted curve per configuration with its 90 %
interval, fitted-on and held-out points) and the out-of-sample error table.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from model.systems.base import System

from . import figures as F
from .blocks import Figures, Section, error_pct, grid, table
from .system_curves import X_TITLES, unit_of_title, x_title
from .units import fmt, label, unit_for


def cv_figure(title: str, xt: str, yt: str, cells: Sequence[Mapping[str, Any]]) -> dict:
    """One curve per configuration: the refitted model (line) with its 90 %
    interval (band), fitted-on points (open circles), held-out points (filled
    diamonds)."""
    xu, yu = unit_of_title(xt), unit_of_title(yt)
    data: list[dict] = []
    by: dict[str, list[Mapping[str, Any]]] = {}
    common = None
    for c in cells:
        toks = set(c["curve"].split(", "))
        common = toks if common is None else common & toks
    for c in cells:
        # legend names without what every curve of the figure shares
        name = ", ".join(t for t in c["curve"].split(", ") if t not in (common or set()))
        by.setdefault(name or c["curve"], []).append(c)
    for i, (name, pts) in enumerate(by.items()):
        col = F.PALETTE[i % len(F.PALETTE)]
        # one value per x (repeats of a configuration share the prediction)
        line: dict[float, Mapping[str, Any]] = {}
        for p in sorted(pts, key=lambda p: p["x"]):
            line.setdefault(p["x"], p)
        xs = list(line)
        lo = [line[x]["lo"] for x in xs]
        hi = [line[x]["hi"] for x in xs]
        if all(isinstance(v, (int, float)) for v in lo + hi):
            data.append({"type": "scatter", "mode": "lines", "name": F.ptext(f"{name} 90 % interval"),
                         "legendgroup": F.ptext(name), "showlegend": False,
                         "x": xs + xs[::-1], "y": hi + lo[::-1], "fill": "toself",
                         "fillcolor": col + "33", "line": {"color": col + "00", "width": 0},
                         "hoverinfo": "skip"})
        data.append({"type": "scatter", "mode": "lines+markers" if len(xs) == 1 else "lines",
                     "name": F.ptext(f"{name}: predicted (refitted)"), "legendgroup": F.ptext(name),
                     "x": xs, "y": [line[x]["predicted"] for x in xs],
                     "line": {"color": col, "width": 2}, "marker": {"color": col, "size": 4},
                     "hovertemplate": (f"{F.ptext(name)}, predicted by the refit<br>%{{x:.4g}} {xu}: "
                                       f"%{{y:.4g}} {yu}<extra></extra>")})
        for held, sym, label_ in ((False, "circle-open", "fitted on"), (True, "diamond", "held out")):
            ms = [p for p in pts if bool(p["held_out"]) == held]
            if not ms:
                continue
            data.append({"type": "scatter", "mode": "markers", "showlegend": False,
                         "name": F.ptext(f"{name} measured, {label_}"), "legendgroup": F.ptext(name),
                         "x": [p["x"] for p in ms], "y": [p["measured"] for p in ms],
                         "text": [F.ptext(p["id"]) for p in ms],
                         "marker": {"color": col, "size": 10 if held else 8, "symbol": sym,
                                    "line": {"color": "#1a202c" if held else col, "width": 1.5}},
                         "hovertemplate": (f"{F.ptext(name)}, measured %{{text}} ({label_})<br>"
                                           f"%{{x:.4g}} {xu}: %{{y:.4g}} {yu}<extra></extra>")})
    lay = F.layout(title, xt, yt, height=420)
    return {"data": data, "layout": lay}


def cv_section(sysm: System, cells: Sequence[Mapping[str, Any]], res: Any,
               figs: Figures) -> Section:
    """Held-out points of the cross-validation on the refitted curves, and the
    out-of-sample error table."""
    blocks = []
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["run_kind"], c["column"]), []).append(c)
    for (kind, col), cs in groups.items():
        if not any(c["held_out"] for c in cs) or any(c["x"] is None for c in cs):
            continue
        xc = cs[0]["x_col"]
        xt = x_title(xc.replace("_", " ")) if xc.replace("_", " ") in X_TITLES else \
            f"{label(xc).rsplit(' (', 1)[0]} ({unit_for(xc) or 'level'})"
        yt = label(col)
        yt = yt if yt.endswith(")") else f"{yt} (count)"
        fig = cv_figure(f"{kind}: {yt.rsplit(' (', 1)[0]} — held-out points", xt, yt, cs)
        s = res.summary.get((kind, col))
        cap = (f"{sum(1 for c in cs if c['held_out'])} held-out and "
               f"{sum(1 for c in cs if not c['held_out'])} fitted-on measurements (open circles: "
               "fitted on; filled diamonds: held out) against the curve (line, one colour per "
               "configuration) of the profile refitted without the held-out points; band: its "
               "90 % prediction interval. Click a legend entry to hide a configuration.")
        if s is not None:
            cap += (f" Out of sample: median error {s.median_ape:.1f} %"
                    + (f", {s.coverage * 100:.0f} % of held-out points inside the band"
                       if s.coverage is not None else "") + ".")
        blocks.append(figs.block(fig, cap))
    trows = []
    for (kind, col), s in sorted(res.summary.items()):
        trows.append([kind, label(col), s.unit or "–", fmt(s.n, "points"), error_pct(s.median_ape),
                      error_pct(s.mean_ape), "–" if s.spearman is None else f"{s.spearman:.3f}",
                      "–" if s.coverage is None else error_pct(s.coverage * 100)])
    errors_table = table(["run kind", "column", "unit", "held-out points", "median APE (%)",
                    "mean APE (%)", "Spearman", "inside 90 % interval (%)"], trows,
                   numeric=[False, False, False, True, True, True, True, True],
                   caption=f"Cross-validation {res.grouping}: the profile refitted on the first "
                           "points of every curve (the low-load end) predicts the rest. APE: "
                           "absolute percentage error.")
    return {"id": "cv", "title": f"Held-out points ({res.grouping} cross-validation)",
            "intro": "What a user gets when a campaign starts small: the profile is fitted on the "
                     "low-load end of each measured curve only, and predicts the points past it. "
                     "Command: python -m calibrate validate --cv " + res.grouping + " --runs "
                     + " --runs ".join(f"data/{f}.csv" for f in sysm.data_files) + ".",
            "blocks": ([grid(blocks)] if blocks else []) + [errors_table]}
