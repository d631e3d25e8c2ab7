"""Report builders: inputs -> sections -> one self-contained HTML page.

A report is a list of *sections* (:mod:`reports.blocks`). Builders turn a
prediction (:mod:`reports.prediction`), a timeline (:mod:`reports.timeline`),
a sweep or a validation set into sections; :func:`render` puts any mix of
them on one page with the Jinja template ``templates/report.html``
(autoescaping on, so every label is escaped) and the stylesheet
``static/report.css`` inlined, and plotly.js's cartesian bundle gzipped
inside (:mod:`reports.assets`), so the one file opens offline wherever it is
moved and makes no network request.

Every page reads top-down: headline numbers first, then the charts that
explain them, raw tables last and collapsed.
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
from markupsafe import Markup

from model.errors import InputError
from runio.safe_io import write_text

from . import analysis as A
from . import assets
from . import figures as F
from .blocks import (Figures, Section, count_figures, error_pct, grid, kpi, order, section,
                     split, table)
from .inputs import check_profile
from .prediction import prediction_sections, profile_section, scenario_section
from .timeline import timeline_sections
from .units import fmt, unit_for

# The names other modules (reports.systems, reports.questions) import from here.
_Figures, _kpi, _table, _grid, _pct = Figures, kpi, table, grid, error_pct

__all__ = ["render", "write", "build_report", "write_prediction_report", "write_sweep_report",
           "write_validation_report", "write_timeline_report", "prediction_sections",
           "timeline_sections", "sweep_sections", "validation_sections", "scenario_section",
           "profile_section", "Section"]


# ---- page -------------------------------------------------------------------

@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True)
    return env


def _template_source(name: str) -> str:
    res = resources.files("reports").joinpath("templates", name)
    if not res.is_file():
        raise jinja2.TemplateNotFound(name)
    return res.read_text(encoding="utf-8")


def _static(name: str) -> str:
    return resources.files("reports").joinpath("static", name).read_text(encoding="utf-8")


def render(sections: Sequence[Section], title: str, *, subtitle: str = "",
           inputs: Sequence[str] = ()) -> str:
    """The HTML page for these sections (collapsed ones last; plotly.js inside, gzipped)."""
    sections = order(sections)
    n_fig = sum(count_figures(s["blocks"]) for s in sections)
    tmpl = _env().get_template("report.html")
    return tmpl.render(
        title=title, subtitle=subtitle, sections=sections, inputs=list(inputs),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        css=Markup(_static("report.css")), js=Markup(_static("report.js")),
        plotly_js=assets.script_tag() if n_fig else None, n_figures=n_fig)


def write(path: str | Path, html_text: str) -> Path:
    """Write a page: one self-contained file (its plotly.js inside, reports/assets.py)."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_text(p, html_text)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", source=str(p)) from None
    return p


# ---- sweep ----------------------------------------------------------------------

def sweep_sections(rows: Sequence[Mapping[str, Any]], *, figs: Figures | None = None,
                   with_validation: bool = True) -> list[Section]:
    """Throughput curves, two-parameter heatmaps, accuracy (if measured) and the rows."""
    rows = [dict(r) for r in rows]
    if not rows:
        raise InputError("the sweep has no rows")
    figs = figs or Figures()
    cols = A.classify(rows)
    t = cols.throughput
    out: list[Section] = []
    kpis = [kpi("rows", fmt(len(rows), "runs")),
            kpi("varying inputs", ", ".join(cols.varying) or "none"),
            kpi("outputs", ", ".join(cols.outputs) or "none")]
    if t:
        vals = [r.get("pred_" + t) for r in rows if A.is_num(r.get("pred_" + t))]
        src = "predicted"
        if not vals:
            vals = [r.get(t) for r in rows if A.is_num(r.get(t))]
            src = "measured"
        if vals:
            kpis.append(kpi(f"{src} {F.label(t)}", f"{fmt(min(vals), unit_for(t))} … "
                             f"{fmt(max(vals), unit_for(t))}", "min … max over rows"))
    out.append({"id": "sweep", "title": "Sweep", "blocks": [{"kind": "kpis", "items": kpis}],
                "intro": "A batch of runs: each row is one configuration, with predicted "
                         "(pred_*) and, where available, measured values."})
    cats = [c for c in A.GROUP_COLUMNS if c in cols.inputs
            and len({r.get(c) for r in rows}) >= 2]
    cx = A.first_present(A.CLIENT_AXES, cols)
    sx = A.first_present(A.SERVER_AXES, cols)
    curve_blocks = []
    for x, other, name in ((cx, sx, "clients"), (sx, cx, "servers")):
        if x is None or t is None:
            continue
        by = cats + ([other] if other else [])
        rest = [c for c in cols.varying if c not in by and c != x]
        full = by + rest
        if _n_groups(rows, full) <= 12:
            by = full
        curve_blocks.append(figs.block(
            F.throughput_curve(rows, cols, x, by, f"{F.label(t)} against {x}"),
            f"Lines: predicted; open diamonds: measured. One colour per "
            f"{', '.join(by) if by else 'sweep'}; click a legend entry to hide it."))
    if curve_blocks:
        out.append({"id": "throughput", "title": "Throughput against clients and servers",
                    "blocks": [grid(curve_blocks)]})
    if t:
        metric = "pred_" + t if any(A.is_num(r.get("pred_" + t)) for r in rows) else t
        grids = A.find_grids(rows, cols, metric)
        if grids:
            out.append({"id": "heatmaps", "title": "Two-parameter sweeps",
                        "intro": "Pairs of inputs that vary together while every other input "
                                 "is held fixed; cells average repeated runs.",
                        "blocks": [grid([figs.block(F.heatmap(g)) for g in grids])]})
    if with_validation and A.compare(rows):
        out += validation_sections(rows, figs=figs, per_row_table=False)
    show = [c for c in ("id",) if c in cols.columns] + cats + cols.varying
    show += [c for c in cols.columns if c not in show and (c in cols.outputs or c.startswith("pred_"))]
    trows = [[_cell(r.get(c), c) for c in show] for r in rows]
    out.append(section("rows", f"All rows ({len(rows)})",
                       [table([_header(c) for c in show], trows,
                              numeric=[c != "id" and c not in cats for c in show],
                              caption="Click a header to sort.")], collapsed=True))
    return out


def _n_groups(rows, by) -> int:
    return len({tuple(r.get(c) for c in by) for r in rows})


def _header(col: str) -> str:
    u = unit_for(col)
    return f"{col} ({u})" if u and u != "fraction" else col


def _cell(v: Any, col: str) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return fmt(v, "")
    return str(v)


# ---- validation --------------------------------------------------------------------

def validation_sections(rows: Sequence[Mapping[str, Any]], *, figs: Figures | None = None,
                        per_row_table: bool = True, max_error_bars: int = 150) -> list[Section]:
    """Predicted vs measured: summary per metric, parity plots, per-row errors."""
    rows = [dict(r) for r in rows]
    comps = A.compare(rows)
    if not comps:
        raise InputError("nothing to compare: no row has both a measured column and its "
                         "pred_<column> filled in")
    figs = figs or Figures()
    summ = A.summarize(comps)
    srows = [[s.metric, unit_for(s.metric) or "–", str(s.n),
              error_pct(s.mdape), error_pct(s.mape), error_pct(s.bias, signed=True),
              error_pct(None if s.within10 is None else s.within10 * 100),
              error_pct(None if s.within20 is None else s.within20 * 100), s.worst or "–"]
             for s in summ]
    kpis = []
    for s in summ[:4]:
        tone = "good" if (s.mdape or 0) <= 10 else "warn" if (s.mdape or 0) <= 20 else "alert"
        kpis.append(kpi(f"{F.label(s.metric)}: MdAPE", error_pct(s.mdape),
                         f"MAPE {error_pct(s.mape)}, n = {s.n}", tone))
    blocks: list = [{"kind": "kpis", "items": kpis},
                    table(["metric", "unit", "points", "MdAPE (%)", "MAPE (%)", "bias (%)",
                            "within ±10 % (%)", "within ±20 % (%)", "worst row"], srows,
                           numeric=[False, False] + [True] * 6 + [False],
                           caption="MdAPE / MAPE: median / mean absolute percentage error; "
                                   "bias: mean signed error (positive = over-prediction).")]
    plots = []
    for s in summ:
        plots.append(figs.block(F.parity(comps, s.metric),
                                "Dashed: ±10 %; dotted: ±20 %. Green within ±10 %, amber "
                                "within ±20 %, red beyond."))
    blocks.append(grid(plots))
    for s in summ:
        n = sum(1 for c in comps if c.metric == s.metric)
        if n <= max_error_bars:
            blocks.append(figs.block(F.error_bars(comps, s.metric)))
    out = [{"id": "validation", "title": "Predicted vs measured", "blocks": blocks,
            "intro": "Each point is one run (or one server of a run when both sides "
                     "list per-server values). Error = (predicted − measured) / measured."}]
    if per_row_table:
        ids = {str(r.get("id") or f"row {i + 1}"): r for i, r in enumerate(rows)}
        ctx = [c for c in A.classify(rows).varying][:4]
        trows, classes = [], []
        for c in comps:
            e = c.error_pct
            base = ids.get(c.row.split("[")[0].replace(" (mean)", ""), {})
            u = unit_for(c.metric)
            trows.append([c.row] + [_cell(base.get(k), k) for k in ctx] +
                         [c.metric, fmt(c.measured, u), fmt(c.predicted, u),
                          error_pct(e, signed=True)])
            classes.append("" if e is None else "ok" if abs(e) <= 10 else
                           "warn" if abs(e) <= 20 else "bad")
        out.append({"id": "errors", "title": f"Per-row errors ({len(comps)} points)",
                    "collapsed": True, "blocks": [table(["row"] + [_header(k) for k in ctx] +
                                      ["metric", "measured", "predicted", "error (%)"], trows,
                                      numeric=[False] + [True] * len(ctx) + [False, True, True, True],
                                      row_classes=classes,
                                      caption="Green within ±10 %, amber within ±20 %, red "
                                              "beyond. Click a header to sort.")]})
    return out


# ---- public API --------------------------------------------------------------------

def build_report(path: str | Path, *, prediction: Mapping[str, Any] | None = None,
                 scenario: Mapping[str, Any] | None = None,
                 profile: Mapping[str, Any] | None = None,
                 sweep: Sequence[Mapping[str, Any]] | None = None,
                 validation: Sequence[Mapping[str, Any]] | None = None,
                 timeline: Sequence[Mapping[str, Any]] | None = None,
                 title: str = "kvperf report", inputs: Sequence[str] = ()) -> Path:
    """Write one page with every part given (at least one). Returns the path."""
    figs = Figures()
    sections: list[Section] = []
    # Headline and bottleneck first, the timeline that shows how the run got
    # there next; render() moves every collapsed (raw detail) section last.
    if prediction is not None:
        sections += prediction_sections(prediction, scenario, profile, figs=figs)
    if timeline is not None:
        shown, raw = split(sections)
        tl_shown, tl_raw = split(timeline_sections(timeline, prediction, figs=figs,
                                                   scenario=scenario))
        sections = shown + tl_shown + tl_raw + raw
    if prediction is None:
        if scenario:
            sections.append(scenario_section(scenario))
        if profile:
            check_profile(profile)
            sections.append(profile_section(profile))
    if sweep is not None:
        sections += sweep_sections(sweep, figs=figs, with_validation=validation is None)
    if validation is not None:
        sections += validation_sections(validation, figs=figs)
    if not sections:
        raise InputError("nothing to report: give a prediction, sweep, validation or timeline")
    _unique_ids(sections)
    return write(path, render(sections, title, inputs=inputs))



def _unique_ids(sections: list[Section]) -> None:
    seen: dict[str, int] = {}
    for s in sections:
        n = seen.get(s["id"], 0)
        seen[s["id"]] = n + 1
        if n:
            s["id"] = f"{s['id']}-{n + 1}"


def write_prediction_report(prediction: Mapping[str, Any], scenario: Mapping[str, Any] | None,
                            profile: Mapping[str, Any] | None, path: str | Path, *,
                            title: str | None = None) -> Path:
    """One prediction (``Prediction.to_dict()``) with its scenario and profile."""
    name = (scenario or {}).get("name")
    return build_report(path, prediction=prediction, scenario=scenario, profile=profile,
                        title=title or (f"Prediction: {name}" if name else "Prediction"))


def write_sweep_report(rows: Sequence[Mapping[str, Any]], path: str | Path,
                       title: str = "Sweep") -> Path:
    """A batch-prediction table (input, measured and ``pred_*`` columns)."""
    return build_report(path, sweep=rows, title=title)


def write_validation_report(rows: Sequence[Mapping[str, Any]], path: str | Path,
                            title: str = "Validation", *,
                            profile: Mapping[str, Any] | None = None) -> Path:
    """Predicted vs measured for rows with ``<col>`` and ``pred_<col>``; optional profile."""
    return build_report(path, validation=rows, profile=profile, title=title)


def write_timeline_report(timeline_rows: Sequence[Mapping[str, Any]],
                          prediction: Mapping[str, Any] | None, path: str | Path, *,
                          scenario: Mapping[str, Any] | None = None,
                          profile: Mapping[str, Any] | None = None,
                          title: str = "Simulation timeline") -> Path:
    """A simulator run: per-second timeline plus its summary prediction."""
    return build_report(path, timeline=timeline_rows, prediction=prediction, scenario=scenario,
                        profile=profile, title=title)


def profile_dict(profile: Any) -> dict[str, Any]:
    """A :class:`model.profile.Profile` as the plain dict the reports take."""
    return {"name": profile.name, "meta": dict(profile.meta),
            "params": {k: {"value": p.value, "unit": p.unit, "source": p.source,
                           "stderr": p.stderr} for k, p in profile.params.items()}}
