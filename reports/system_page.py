"""One system's HTML page from computed rows: measured points on the predicted curves.

Rendering only, in the house style of :mod:`reports.page` (same template,
stylesheet and inlined plotly.js, every label escaped). :func:`render_system_page`
takes what :mod:`calibrate.systems_pages` computed -- the rows of
:func:`calibrate.systems_pages.curves` (measured cells with their
predictions, then the predicted curves), the profile, and optionally the
cross-validation of :func:`calibrate.systems_pages.cv_rows` -- and lays out
(:func:`system_sections`):

* a summary: what sets saturation, peak and collapse for the system
  (:mod:`reports.system_mechanisms`) and, per run kind, the median and mean
  absolute percentage error of every predicted column with its number of points;
* the curves (:mod:`reports.system_curves`);
* the held-out points of the cross-validation (:mod:`reports.system_cv`);
* predicted against measured per run kind and column, every measured cell
  in a sortable table, and the profile with provenance.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.profile import Profile
from model.systems import SYSTEMS
from model.systems.base import System

from . import analysis as A
from . import figures as F
from .blocks import Figures, Section, error_pct, grid, kpi, table
from .page import profile_dict, render
from .prediction import profile_section
from .system_curves import curve_blocks, series_of
from .system_cv import cv_section
from .system_mechanisms import mechanisms
from .units import fmt, label, unit_for

__all__ = ["render_system_page", "system_sections", "system_by_name"]


def system_by_name(system: str | System) -> System:
    """The :class:`System` named ``system`` (a System passes through)."""
    if isinstance(system, System):
        return system
    if system not in SYSTEMS:
        raise InputError(f"unknown system {system!r}; systems: {', '.join(sorted(SYSTEMS))}",
                         field="system")
    return SYSTEMS[system]


def render_system_page(sysm: System, rows: Sequence[Mapping[str, Any]], prof: Profile, *,
                       cv: tuple[Sequence[Mapping[str, Any]], Any] | None = None) -> str:
    """The HTML of one system's page: ``rows`` as :func:`calibrate.systems_pages.curves`
    returns them, ``cv`` as :func:`calibrate.systems_pages.cv_rows` (None: no
    cross-validation section)."""
    return render(system_sections(sysm, rows, prof, cv=cv), f"System report: {sysm.name}",
                  subtitle=f"{sysm.description} — measured runs against the model's predicted "
                           f"curves (profile {prof.name})",
                  inputs=[f"data/{f}.csv" for f in sysm.data_files])


def system_sections(sysm: System, rows: Sequence[Mapping[str, Any]], prof: Profile, *,
                    figs: Figures | None = None,
                    cv: tuple[Sequence[Mapping[str, Any]], Any] | None = None) -> list[Section]:
    """Summary, curves, held-out points of the cross-validation (``cv`` =
    :func:`calibrate.systems_pages.cv_rows`, if given), predicted vs measured,
    measured cells and profile."""
    figs = figs or Figures()
    meas = [r for r in rows if r.get("kind") == "measured"]
    pred = [r for r in rows if r.get("kind") == "predicted"]
    by_kind = _comparisons_by_kind(sysm, meas)
    out: list[Section] = [{"id": "summary", "title": "Summary",
                           "intro": f"{sysm.description}. What the model says sets "
                                    "saturation, peak and collapse, and how close it is to "
                                    "the measurements, per run kind.",
                           "blocks": _summary_blocks(sysm, prof, meas, pred, by_kind)}]
    blocks, notes = curve_blocks(pred, meas, figs)
    if blocks:
        out.append({"id": "curves", "title": "Measured points on the predicted curves",
                    "intro": "Each colour is one configuration. Legend: solid line = "
                             "predicted over the measured range; dashed = predicted past "
                             "the last measured point; dots = measured runs; ▲ saturation, "
                             "★ peak, ✕ collapse where the model expects them. Click a legend "
                             "entry to hide it.",
                    "blocks": [grid(blocks)] + [{"kind": "text", "text": n} for n in notes]})
    if cv is not None:
        out.append(cv_section(sysm, cv[0], cv[1], figs))
    parity = _parity_section(by_kind, figs)
    if parity is not None:
        out.append(parity)
    measured = _measured_section(meas)
    if measured is not None:
        out.append(measured)
    out.append(profile_section(profile_dict(prof)))
    return out


def _comparisons_by_kind(sysm: System, meas: Sequence[Mapping[str, Any]]
                         ) -> dict[str, list[A.Comparison]]:
    # one row per run (its measured columns and their predictions), in the
    # system's order of kinds, then any other kind the cells name
    order = list(dict.fromkeys([k.name for k in sysm.kinds] + [r["run_kind"] for r in meas]))
    by_kind: dict[str, list[A.Comparison]] = {}
    for k in order:
        merged: dict[str, dict] = {}
        for r in meas:
            if r["run_kind"] != k:
                continue
            d = merged.setdefault(str(r["id"] or f"row {len(merged) + 1}"), {"id": r["id"]})
            d[r["column"]] = r["measured"]
            if r.get("predicted") is not None:
                d["pred_" + r["column"]] = r["predicted"]
        comps = A.compare(list(merged.values()))
        if comps:
            by_kind[k] = comps
    return by_kind


def _summary_blocks(sysm: System, prof: Profile, meas: Sequence[Mapping[str, Any]],
                    pred: Sequence[Mapping[str, Any]],
                    by_kind: Mapping[str, list[A.Comparison]]) -> list:
    # the figures at a glance, the mechanisms, and one error table per run kind
    kinds = {k.name: k for k in sysm.kinds}
    series = series_of(pred)
    flags = sum(1 for r in pred if r.get("flag"))
    all_comps = [c for cs in by_kind.values() for c in cs]
    overall = A.summarize([A.Comparison(c.row, "all", c.measured, c.predicted) for c in all_comps])
    kpis = [kpi("measured cells", fmt(len(meas), "values"),
                 f"{len({(r['run_kind'], r['id']) for r in meas})} runs in {len(by_kind)} kinds"),
            kpi("predicted curves", fmt(len(series), "curves"), f"{flags} flagged points"),
            kpi("median abs. error, all columns", error_pct(overall[0].mdape) if overall else "–",
                 f"mean {error_pct(overall[0].mape)}" if overall else "",
                 "good" if overall and (overall[0].mdape or 0) <= 10 else
                 "warn" if overall and (overall[0].mdape or 0) <= 20 else "alert"),
            kpi("profile", prof.name, str(prof.meta.get("fitted_by", "")))]
    summary: list = [{"kind": "kpis", "items": kpis}]
    summary += [{"kind": "text", "text": t} for t in mechanisms(sysm, prof, pred)]
    for k, comps in by_kind.items():
        rk = kinds.get(k)
        trows = []
        for s in A.summarize(comps):
            u = unit_for(s.metric)
            trows.append([label(s.metric), u or "–", fmt(s.n, "points"), error_pct(s.mdape),
                          error_pct(s.mape), error_pct(s.bias, signed=True),
                          error_pct(None if s.within10 is None else s.within10 * 100), s.worst or "–"])
        summary.append(table(
            ["predicted column", "unit", "points", "MdAPE (%)", "MAPE (%)", "bias (%)",
             "within ±10 % (%)", "worst run"], trows,
            numeric=[False, False, True, True, True, True, True, False],
            caption=f"{k}: {rk.description if rk else ''} (data/{k}.csv). MdAPE / MAPE: "
                    "median / mean absolute percentage error; bias: mean signed error "
                    "(positive = over-prediction)."))
    return summary


def _parity_section(by_kind: Mapping[str, list[A.Comparison]], figs: Figures
                    ) -> Section | None:
    parity = []
    for k, comps in by_kind.items():
        for s in A.summarize(comps):
            fig = F.parity(comps, s.metric)
            fig["layout"]["title"]["text"] = F.ptext(f"{k}: {label(s.metric)}")
            parity.append(figs.block(fig, f"{s.n} runs of {k}; error = (predicted − measured) "
                                          "/ measured."))
    if not parity:
        return None
    return {"id": "parity", "title": "Predicted vs measured",
            "intro": "One panel per run kind and column, each in that column's unit.",
            "blocks": [grid(parity)]}


def _measured_section(meas: Sequence[Mapping[str, Any]]) -> Section | None:
    trows, classes = [], []
    for r in meas:
        u = unit_for(r["column"])
        e = (None if r.get("predicted") is None or r["measured"] == 0 else
             (r["predicted"] - r["measured"]) / abs(r["measured"]) * 100)
        trows.append([r["run_kind"], str(r["id"]), label(r["column"]), fmt(r["measured"], u),
                      fmt(r.get("predicted"), u), error_pct(e, signed=True)])
        classes.append("" if e is None else "ok" if abs(e) <= 10 else
                       "warn" if abs(e) <= 20 else "bad")
    if not trows:
        return None
    return {"id": "measured", "title": f"Measured cells ({len(trows)})",
            "blocks": [table(["run kind", "run", "column", "measured", "predicted",
                               "error (%)"], trows,
                              numeric=[False, False, False, True, True, True],
                              row_classes=classes,
                              caption="Green within ±10 %, amber within ±20 %, red "
                                      "beyond. Click a header to sort.")]}
