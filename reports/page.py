"""Report builders: inputs -> sections -> one self-contained HTML file.

A report is a list of *sections*; a section is a title, an optional intro
and a list of *blocks* (``kpis``, ``figure``, ``table``, ``text``, ``grid``).
Builders turn a prediction, a sweep, a validation set or a timeline into
sections; :func:`render` puts any mix of sections on one page with the
Jinja template ``templates/report.html`` (autoescaping on, so every label
is escaped), the stylesheet ``static/report.css`` and plotly.js inlined
once, so the file opens offline and makes no network request.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import statistics
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
from markupsafe import Markup

from model.errors import InputError

from . import analysis as A
from . import figures as F
from .inputs import check_prediction, check_profile, check_timeline
from .units import fmt, unit_for

Section = dict[str, Any]


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


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


def _script_json(obj: Any) -> Markup:
    """JSON safe inside <script>: no '<', '>' or '&' can close the element."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_json_default)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _json_default(o: Any):
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _clean(obj: Any) -> Any:
    """NaN/inf -> None, so the figure JSON is strict."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


class _Figures:
    """Numbers figures on a page so their element ids are unique."""

    def __init__(self):
        self.n = 0

    def block(self, fig: dict | None, caption: str = "") -> dict | None:
        if fig is None:
            return None
        self.n += 1
        return {"kind": "figure", "id": f"fig-{self.n}", "json": _script_json(_clean(fig)),
                "caption": caption}


def render(sections: Sequence[Section], title: str, *, subtitle: str = "",
           inputs: Sequence[str] = ()) -> str:
    """The HTML page for these sections (plotly.js inlined once)."""
    sections = [s for s in sections if s and s.get("blocks")]
    n_fig = sum(_count_figures(s["blocks"]) for s in sections)
    tmpl = _env().get_template("report.html")
    return tmpl.render(
        title=title, subtitle=subtitle, sections=sections, inputs=list(inputs),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        css=Markup(_static("report.css")), js=Markup(_static("report.js")),
        plotly_js=Markup(_plotly_js()) if n_fig else None, n_figures=n_fig)


def _count_figures(blocks) -> int:
    n = 0
    for b in blocks:
        if b is None:
            continue
        if b["kind"] == "figure":
            n += 1
        elif b["kind"] == "grid":
            n += _count_figures(b["blocks"])
    return n


def write(path: str | Path, html_text: str) -> Path:
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(html_text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", source=str(p)) from None
    return p


def _kpi(label_: str, value: str, note: str = "", tone: str = "") -> dict:
    if len(value) > 18:
        tone = (tone + " long").strip()
    return {"label": label_, "value": value, "note": note, "tone": tone}


def _table(columns: list[str], rows: list[list[Any]], *, caption: str = "",
           numeric: list[bool] | None = None, row_classes: list[str] | None = None,
           sortable: bool = True) -> dict:
    return {"kind": "table", "columns": columns, "rows": rows, "caption": caption,
            "numeric": numeric or [False] * len(columns),
            "row_classes": row_classes or [""] * len(rows), "sortable": sortable}


def _grid(blocks: list) -> dict:
    return {"kind": "grid", "blocks": [b for b in blocks if b is not None]}


# ---- prediction ---------------------------------------------------------------

def prediction_sections(pred: Mapping[str, Any], scenario: Mapping[str, Any] | None = None,
                        profile: Mapping[str, Any] | None = None, *,
                        figs: _Figures | None = None) -> list[Section]:
    """Headline numbers, per-server breakdown, scenario and profile with provenance."""
    check_prediction(dict(pred))
    if profile is not None:
        check_profile(profile)
    figs = figs or _Figures()
    servers = pred["servers"]
    b = A.bottleneck_servers(pred)
    client = pred.get("client", {})
    kpis = [
        _kpi("throughput", fmt(pred["throughput_mops"], "MOPS"), "replies per second seen by clients"),
        _kpi("bottleneck", A.bottleneck_text(pred), "", "alert"),
        _kpi("cache hit ratio", fmt(pred["cache_hit_ratio"], "fraction"), "answered by the switch"),
        _kpi("normalized throughput", fmt(pred["normalized_x"], "×"), "cache gain over NoCache"),
        _kpi("client send", fmt(client.get("send_us"), "µs"), "per request"),
        _kpi("client latency", fmt(client.get("latency_us"), "µs"), "mean response time"),
        _kpi("stalled", fmt(pred.get("stall_fraction", 0.0), "fraction"), "of time, writes stalled"),
        _kpi("packet loss", fmt(pred.get("pktloss", 0.0), "packets"), "per run"),
        _kpi("false positives", fmt(pred.get("false_pos", 0.0), "responses"), "per run"),
        _kpi("servers", fmt(len(servers), "workers"), f"engine: {pred.get('engine', '?')}"),
    ]
    srows, classes = [], []
    for i, s in enumerate(servers):
        cyc = s["wait_us"] + s["process_us"]
        srows.append([f"server {i}" + (" ◀ bottleneck" if i in b else ""),
                      fmt(s["share"], "fraction"), fmt(s.get("share_nocache", 0.0), "fraction"),
                      fmt(s["utilization"], "fraction"), fmt(s["wait_us"], "µs"),
                      fmt(s["process_us"], "µs"),
                      fmt(1.0 / cyc if cyc > 0 else None, "MOPS")])
        classes.append("hl" if i in b else "")
    server_table = _table(["server", "share with cache (%)", "share without cache (%)",
                           "utilisation (%)", "wait (µs)", "process (µs)",
                           "own rate 1/(wait+process) (MOPS)"],
                          srows, numeric=[False] + [True] * 6, row_classes=classes,
                          caption="One row per worker thread; the bottleneck row is highlighted.")
    out: list[Section] = [
        {"id": "prediction", "title": "Prediction",
         "intro": f"Engine: {pred.get('engine', '?')}. Every number is per the whole rack "
                  "unless it says per server.",
         "blocks": [{"kind": "kpis", "items": kpis}]},
        {"id": "servers", "title": "Servers: where the time goes",
         "intro": "Wait is idle time plus the receive call between requests; process is "
                  "receive to reply sent. A saturated worker waits only the receive floor.",
         "blocks": [_grid([figs.block(F.server_breakdown(pred)),
                           figs.block(F.server_shares(pred))]), server_table]},
    ]
    details = pred.get("details") or {}
    if details:
        drows = [[k, fmt(v, unit_for(k)) if not isinstance(v, (dict, list)) else
                  json.dumps(v, default=str)[:300], unit_for(k) or "–"]
                 for k, v in sorted(_flatten(details).items())]
        out[0]["blocks"].append(_table(["detail", "value", "unit"], drows,
                                       caption="Engine-specific extras (units from key names)."))
    if scenario:
        out.append(scenario_section(scenario))
    if profile:
        out.append(profile_section(profile))
    return out


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and len(out) < 500:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def scenario_section(scenario: Mapping[str, Any]) -> Section:
    """Scenario settings with their units and meanings from the scenario declarations."""
    try:
        from dataclasses import fields as dc_fields
        from model.scenario import SECTIONS
        meta = {sec: {f.name: f.metadata for f in dc_fields(cls)} for sec, cls in SECTIONS.items()}
    except ImportError:  # pragma: no cover - model is part of the same distribution
        meta = {}
    rows = []
    for sec, values in scenario.items():
        if not isinstance(values, Mapping):
            continue
        for key, v in values.items():
            md = meta.get(sec, {}).get(key, {})
            unit = md.get("unit") or unit_for(key)
            rows.append([f"{sec}.{key}", fmt(v, unit if unit != "fraction" else "fraction")
                         if not isinstance(v, bool) else ("true" if v else "false"),
                         unit or "–", md.get("doc", "")])
    return {"id": "scenario", "title": f"Scenario: {scenario.get('name', 'unnamed')}",
            "intro": "What was modelled. Units and meanings come from the scenario "
                     "declarations (model/scenario.py).",
            "blocks": [_table(["setting", "value", "unit", "meaning"], rows)]}


def profile_section(profile: Mapping[str, Any]) -> Section:
    """Every calibrated parameter with value, unit, standard error and source."""
    params = profile.get("params") or {}
    rows = []
    for k in sorted(params):
        p = params[k]
        unit = p.get("unit") or ""
        se = p.get("stderr")
        rows.append([k, fmt(p.get("value"), unit if unit != "fraction" else "fraction")
                     if unit else fmt(p.get("value")),
                     unit or "–", "–" if se is None else f"± {fmt(se, unit)}",
                     p.get("source") or "–"])
    meta = profile.get("meta") or {}
    blocks: list = []
    if meta:
        blocks.append(_table(["meta", "value"], [[k, str(v)] for k, v in meta.items()],
                             sortable=False))
    blocks.append(_table(["parameter", "value", "unit", "std. error", "source (provenance)"], rows))
    return {"id": "profile", "title": f"Profile: {profile.get('name') or meta.get('name') or 'unnamed'}",
            "intro": "The calibrated numbers used, each with its unit and where it came from.",
            "blocks": blocks}


# ---- sweep ----------------------------------------------------------------------

def sweep_sections(rows: Sequence[Mapping[str, Any]], *, figs: _Figures | None = None,
                   with_validation: bool = True) -> list[Section]:
    """Throughput curves, two-parameter heatmaps, accuracy (if measured) and the rows."""
    rows = [dict(r) for r in rows]
    if not rows:
        raise InputError("the sweep has no rows")
    figs = figs or _Figures()
    cols = A.classify(rows)
    t = cols.throughput
    out: list[Section] = []
    kpis = [_kpi("rows", fmt(len(rows), "runs")),
            _kpi("varying inputs", ", ".join(cols.varying) or "none"),
            _kpi("outputs", ", ".join(cols.outputs) or "none")]
    if t:
        vals = [r.get("pred_" + t) for r in rows if A.is_num(r.get("pred_" + t))]
        src = "predicted"
        if not vals:
            vals = [r.get(t) for r in rows if A.is_num(r.get(t))]
            src = "measured"
        if vals:
            kpis.append(_kpi(f"{src} {F.label(t)}", f"{fmt(min(vals), unit_for(t))} … "
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
                    "blocks": [_grid(curve_blocks)]})
    if t:
        metric = "pred_" + t if any(A.is_num(r.get("pred_" + t)) for r in rows) else t
        grids = A.find_grids(rows, cols, metric)
        if grids:
            out.append({"id": "heatmaps", "title": "Two-parameter sweeps",
                        "intro": "Pairs of inputs that vary together while every other input "
                                 "is held fixed; cells average repeated runs.",
                        "blocks": [_grid([figs.block(F.heatmap(g)) for g in grids])]})
    if with_validation and A.compare(rows):
        out += validation_sections(rows, figs=figs, table=False)
    show = [c for c in ("id",) if c in cols.columns] + cats + cols.varying
    show += [c for c in cols.columns if c not in show and (c in cols.outputs or c.startswith("pred_"))]
    trows = [[_cell(r.get(c), c) for c in show] for r in rows]
    out.append({"id": "rows", "title": f"All rows ({len(rows)})",
                "blocks": [_table([_header(c) for c in show], trows,
                                  numeric=[c != "id" and c not in cats for c in show],
                                  caption="Click a header to sort.")]})
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

def validation_sections(rows: Sequence[Mapping[str, Any]], *, figs: _Figures | None = None,
                        table: bool = True, max_error_bars: int = 150) -> list[Section]:
    """Predicted vs measured: summary per metric, parity plots, per-row errors."""
    rows = [dict(r) for r in rows]
    comps = A.compare(rows)
    if not comps:
        raise InputError("nothing to compare: no row has both a measured column and its "
                         "pred_<column> filled in")
    figs = figs or _Figures()
    summ = A.summarize(comps)
    srows = [[s.metric, unit_for(s.metric) or "–", str(s.n),
              _pct(s.mdape), _pct(s.mape), _pct(s.bias, signed=True),
              _pct(None if s.within10 is None else s.within10 * 100),
              _pct(None if s.within20 is None else s.within20 * 100), s.worst or "–"]
             for s in summ]
    kpis = []
    for s in summ[:4]:
        tone = "good" if (s.mdape or 0) <= 10 else "warn" if (s.mdape or 0) <= 20 else "alert"
        kpis.append(_kpi(f"{F.label(s.metric)}: MdAPE", _pct(s.mdape),
                         f"MAPE {_pct(s.mape)}, n = {s.n}", tone))
    blocks: list = [{"kind": "kpis", "items": kpis},
                    _table(["metric", "unit", "points", "MdAPE (%)", "MAPE (%)", "bias (%)",
                            "within ±10 % (%)", "within ±20 % (%)", "worst row"], srows,
                           numeric=[False, False] + [True] * 6 + [False],
                           caption="MdAPE / MAPE: median / mean absolute percentage error; "
                                   "bias: mean signed error (positive = over-prediction).")]
    plots = []
    for s in summ:
        plots.append(figs.block(F.parity(comps, s.metric),
                                "Dashed: ±10 %; dotted: ±20 %. Green within ±10 %, amber "
                                "within ±20 %, red beyond."))
    blocks.append(_grid(plots))
    for s in summ:
        n = sum(1 for c in comps if c.metric == s.metric)
        if n <= max_error_bars:
            blocks.append(figs.block(F.error_bars(comps, s.metric)))
    out = [{"id": "validation", "title": "Predicted vs measured", "blocks": blocks,
            "intro": "Each point is one run (or one server of a run when both sides "
                     "list per-server values). Error = (predicted − measured) / measured."}]
    if table:
        ids = {str(r.get("id") or f"row {i + 1}"): r for i, r in enumerate(rows)}
        ctx = [c for c in A.classify(rows).varying][:4]
        trows, classes = [], []
        for c in comps:
            e = c.error_pct
            base = ids.get(c.row.split("[")[0].replace(" (mean)", ""), {})
            u = unit_for(c.metric)
            trows.append([c.row] + [_cell(base.get(k), k) for k in ctx] +
                         [c.metric, fmt(c.measured, u), fmt(c.predicted, u),
                          _pct(e, signed=True)])
            classes.append("" if e is None else "ok" if abs(e) <= 10 else
                           "warn" if abs(e) <= 20 else "bad")
        out.append({"id": "errors", "title": f"Per-row errors ({len(comps)} points)",
                    "blocks": [_table(["row"] + [_header(k) for k in ctx] +
                                      ["metric", "measured", "predicted", "error (%)"], trows,
                                      numeric=[False] + [True] * len(ctx) + [False, True, True, True],
                                      row_classes=classes,
                                      caption="Green within ±10 %, amber within ±20 %, red "
                                              "beyond. Click a header to sort.")]})
    return out


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:+.1f} %" if signed else f"{v:.1f} %"


# ---- timeline -----------------------------------------------------------------------

def timeline_sections(rows: Sequence[Mapping[str, Any]], pred: Mapping[str, Any] | None = None,
                      *, figs: _Figures | None = None) -> list[Section]:
    """Per-second throughput with stalls shaded, loss, and per-server wait/process."""
    rows = [dict(r) for r in rows]
    check_timeline(rows)
    rows.sort(key=lambda r: r["t_s"])
    figs = figs or _Figures()
    thr = [r["throughput_mops"] for r in rows if r.get("throughput_mops") is not None]
    t = [r["t_s"] for r in rows]
    spans = A.stall_spans(t, [r.get("stalled_frac") for r in rows])
    stalled = [r.get("stalled_frac") for r in rows if r.get("stalled_frac") is not None]
    dt = statistics.median([b - a for a, b in zip(t, t[1:])] or [1.0])
    kpis = [
        _kpi("duration", fmt(t[-1] - t[0] + dt, "s"), f"{len(rows)} samples"),
        _kpi("mean throughput", fmt(statistics.fmean(thr) if thr else None, "MOPS")),
        _kpi("per-second range", f"{fmt(min(thr), 'MOPS')} … {fmt(max(thr), 'MOPS')}"
             if thr else "–"),
        _kpi("stall periods", f"{len(spans)}",
             f"mean stalled {fmt(statistics.fmean(stalled), 'fraction')}" if stalled else "",
             "alert" if spans else "good"),
    ]
    for col, unit in (("pktloss", "packets"), ("false_pos", "responses")):
        vals = [r.get(col) for r in rows if r.get(col) is not None]
        if vals:
            kpis.append(_kpi(F.label(col).split(" (")[0] + " (total)", fmt(sum(vals), unit)))
    blocks: list = [{"kind": "kpis", "items": kpis},
                    figs.block(F.timeline_throughput(rows, pred),
                               "Shaded: seconds with writes stalled (darker = larger stalled "
                               "fraction)."),
                    _grid([figs.block(F.timeline_loss(rows)),
                           figs.block(F.timeline_servers(rows, "wait_us_",
                                                         "Server wait per second")),
                           figs.block(F.timeline_servers(rows, "process_us_",
                                                         "Server process time per second"))])]
    if spans:
        blocks.append(_table(["stall from (s)", "to (s)", "length (s)", "peak stalled (%)"],
                             [[fmt(a, "s"), fmt(b, "s"), fmt(b - a, "s"), fmt(p, "fraction")]
                              for a, b, p in spans], numeric=[True] * 4,
                             caption="Contiguous seconds with a non-zero stalled fraction."))
    return [{"id": "timeline", "title": "Timeline", "blocks": blocks,
             "intro": "Per-second samples from the simulator; a sample at t covers the second "
                      "that ends at t." + (" The dashed line is the run's mean prediction."
                                           if pred is not None else "")}]


# ---- public API --------------------------------------------------------------------

def build_report(path: str | Path, *, prediction: Mapping[str, Any] | None = None,
                 scenario: Mapping[str, Any] | None = None,
                 profile: Mapping[str, Any] | None = None,
                 sweep: Sequence[Mapping[str, Any]] | None = None,
                 validation: Sequence[Mapping[str, Any]] | None = None,
                 timeline: Sequence[Mapping[str, Any]] | None = None,
                 title: str = "kvperf report", inputs: Sequence[str] = ()) -> Path:
    """Write one page with every part given (at least one). Returns the path."""
    figs = _Figures()
    sections: list[Section] = []
    if timeline is not None:
        sections += timeline_sections(timeline, prediction, figs=figs)
    if prediction is not None:
        sections += prediction_sections(prediction, scenario, profile, figs=figs)
    else:
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
