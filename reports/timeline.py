"""The sections of a simulator timeline (one row per simulated second).

A row at ``t`` covers the second that *ends* at ``t``; every chart draws it
over ``[t - dt, t]`` (steps and bars, :mod:`reports.figures`), so the stall
shading, the stall trace and the per-second bars line up.

Counts in the timeline are what the simulator itself counted in the
simulated seconds; the prediction's counters are per run (scaled to the
scenario's queries). Both are shown, each labelled, and the KPI says how
one becomes the other, so "3 666 in 20 s" and "2 201 per run" cannot be
read as a contradiction.
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

from . import analysis as A
from . import figures as F
from .blocks import Figures, Section, grid, kpi, section, table
from .inputs import check_timeline
from .prediction import run_size
from .units import fmt, num, unit_for

_COUNTERS = (("pktloss", "packets lost"), ("false_pos", "false positives (resent packets)"))


def timeline_sections(rows: Sequence[Mapping[str, Any]], pred: Mapping[str, Any] | None = None,
                      *, figs: Figures | None = None,
                      scenario: Mapping[str, Any] | None = None) -> list[Section]:
    """Per-second throughput with stalls, loss, per-server wait/process; stall table collapsed."""
    rows = [dict(r) for r in rows]
    check_timeline(rows)
    rows.sort(key=lambda r: r["t_s"])
    figs = figs or Figures()
    t = [r["t_s"] for r in rows]
    dt = A.sample_step(t)
    secs = t[-1] - t[0] + dt
    thr = [r["throughput_mops"] for r in rows if A.is_num(r.get("throughput_mops"))]
    spans = A.stall_spans(t, [r.get("stalled_frac") for r in rows])
    stalled = [r["stalled_frac"] for r in rows if A.is_num(r.get("stalled_frac"))]
    kpis = [
        kpi("simulated", fmt(secs, "s"), f"{len(rows)} samples of {num(dt)} s"),
        kpi("throughput per sample", f"{num(min(thr))} … {fmt(max(thr), 'MOPS')}" if thr else "–",
            f"mean {fmt(statistics.fmean(thr), 'MOPS')}" if thr else ""),
        kpi("stall periods", fmt(len(spans)),
            f"writes stalled {fmt(statistics.fmean(stalled), 'fraction')} of the time on "
            f"average, at most {fmt(max(stalled), 'fraction')} in one sample" if stalled else "",
            "alert" if spans else "good"),
    ]
    for col, name in _COUNTERS:
        vals = [r[col] for r in rows if A.is_num(r.get(col))]
        if vals:
            kpis.append(kpi(f"{name} in the {num(secs)} s simulated",
                            fmt(sum(vals), unit_for(col)), _per_run_note(col, pred, scenario)))
    blocks: list = [{"kind": "kpis", "items": kpis},
                    figs.block(F.timeline_throughput(rows, pred),
                               "Top: throughput per sample. Bottom: share of worker time with "
                               "writes stalled, on its own scale. Shaded: samples with any "
                               "stall (darker = larger, relative to this run's largest)."),
                    grid([figs.block(F.timeline_loss(rows)),
                          figs.block(F.timeline_servers(rows, "wait_us_",
                                                        "Server wait per second")),
                          figs.block(F.timeline_servers(rows, "process_us_",
                                                        "Server process time per second"))])]
    out = [section("timeline", "Timeline", blocks,
                   "Per-second samples from the simulator; a sample at t covers the second "
                   "that ends at t." + (" The dashed line is the run's mean prediction."
                                        if pred is not None else ""))]
    if spans:
        out.append(section("stalls", f"Stall periods ({len(spans)})", [table(
            ["stall from (s)", "to (s)", "length (s)", "peak stalled (%)"],
            [[fmt(a, "s"), fmt(b, "s"), fmt(b - a, "s"), fmt(p, "fraction")]
             for a, b, p in spans], numeric=[True] * 4,
            caption="Contiguous samples with a non-zero stalled fraction.")], collapsed=True))
    return out


def _per_run_note(col: str, pred: Mapping[str, Any] | None, scenario) -> str:
    """How the simulated count relates to the prediction's per-run counter."""
    if pred is None or not A.is_num(pred.get(col)):
        return "counted by the simulator"
    d = pred.get("details") or {}
    raw = d.get(f"{col}_sim")
    size = run_size(scenario)
    per_run = f"{fmt(pred[col], unit_for(col))} per run" + (f" of {size}" if size else "")
    if A.is_num(raw) and raw > 0:
        return f"scaled (× {num(pred[col] / raw, 3)}) to the headline's {per_run}"
    return f"the headline gives {per_run}"
