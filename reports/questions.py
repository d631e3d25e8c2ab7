"""Pages for the question commands: ``sim sweep``, ``sim explain`` and ``sim tune``.

Built from the same parts as every other report (:mod:`reports.page`:
sections of KPI, figure, table and text blocks, rendered by the one page
template with plotly.js embedded as that module decides), so a change to
how pages carry plotly applies here too. Figures are plain plotly dicts
(:func:`reports.figures.layout`); every axis and header carries its unit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from .blocks import callout
from .figures import LEGEND_ABOVE, PALETTE, layout, ptext
from .page import _Figures, _kpi, _table, _unique_ids, render, scenario_section, write

_KIND_COLOR = {"server": PALETTE[0], "clients": PALETTE[2], "timeouts": PALETTE[3],
               "write-stall": PALETTE[1], "wal-switch": PALETTE[5], "cores": PALETTE[4]}


def _n(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1e5 else f"{v:.{digits}g}"
    return str(v)


def _signed(v: Any, unit: str = "%") -> str:
    if v is None or not math.isfinite(v):
        return "–"
    return f"{v:+.1f} {unit}"


# ---------------------------------------------------------------- sweep
_SHORT = {"servers.count": "servers", "clients.threads": "clients"}


def short_key(key: str, keys: Sequence[str] = ()) -> str:
    """``storage.memtable_mb`` -> ``memtable_mb`` (the full key when the field name
    is not unique among ``keys``)."""
    if key in _SHORT:
        return _SHORT[key]
    name = key.split(".")[-1]
    return key if sum(k.split(".")[-1] == name for k in keys) > 1 else name


def key_header(key: str) -> str:
    from dataclasses import fields
    from model.scenario import SECTIONS
    sec, name = key.split(".")
    unit = {f.name: f.metadata.get("unit") for f in fields(SECTIONS[sec])}.get(name) or ""
    return f"{key} ({unit})" if unit else key


def _config_label(row: dict, keys: Sequence[str]) -> str:
    return ", ".join(f"{short_key(k, keys)}={_n(row[k])}" for k in keys) or f"row {row['row']}"


def sweep_figure(res) -> dict:
    """Throughput per configuration (horizontal bars, 90 % interval as error bars),
    coloured by bottleneck kind; the baseline outlined, its value dashed."""
    rows = res.rows
    labels = [f"{r['row']}: {_config_label(r, res.keys)}" for r in rows]
    data = []
    kinds = list(dict.fromkeys(r["bottleneck"] for r in rows))
    for kind in kinds:
        idx = [i for i, r in enumerate(rows) if r["bottleneck"] == kind]
        tr = {"type": "bar", "orientation": "h", "name": ptext(f"bottleneck: {kind}"),
              "y": [ptext(labels[i]) for i in idx], "x": [rows[i]["throughput_mops"] for i in idx],
              "marker": {"color": _KIND_COLOR.get(kind, PALETTE[8]),
                         "line": {"width": [3 if rows[i]["is_baseline"] else 0 for i in idx],
                                  "color": "#1a202c"}},
              "customdata": [[rows[i]["throughput_vs_baseline_pct"], rows[i]["latency_us"]]
                             for i in idx],
              "hovertemplate": "%{y}<br>%{x:.4f} MOPS (%{customdata[0]:+.1f} % vs baseline)"
                               "<br>latency %{customdata[1]:,.0f} µs<extra></extra>"}
        if res.has_intervals:
            tr["error_x"] = {"type": "data", "symmetric": False,
                             "array": [rows[i]["throughput_hi_mops"] - rows[i]["throughput_mops"]
                                       for i in idx],
                             "arrayminus": [rows[i]["throughput_mops"] - rows[i]["throughput_lo_mops"]
                                            for i in idx],
                             "color": "#1a202c", "thickness": 1.2}
        data.append(tr)
    base = rows[res.baseline - 1]["throughput_mops"]
    title = "Throughput per configuration" + (" with its 90 % interval" if res.has_intervals
                                              else " (no interval: --no-intervals, or a "
                                                   "profile without [uncertainty])")
    lay = layout(title, "throughput (MOPS)", "", height=max(260, 60 + 28 * len(rows)),
                 barmode="overlay", margin={"l": 20, "r": 20, "t": 70, "b": 50},
                 legend=dict(LEGEND_ABOVE),
                 shapes=[{"type": "line", "x0": base, "x1": base, "yref": "paper", "y0": 0,
                          "y1": 1, "line": {"dash": "dash", "color": "#4a5568", "width": 1}}])
    lay["yaxis"].update({"autorange": "reversed", "type": "category",
                         "categoryorder": "array", "categoryarray": [ptext(x) for x in labels]})
    lay["xaxis"]["rangemode"] = "tozero"
    return {"data": data, "layout": lay}


def sweep_time_figure(res) -> dict:
    """Mean wait and mean process per request at the workers, per configuration (µs)."""
    rows = res.rows
    labels = [ptext(f"{r['row']}: {_config_label(r, res.keys)}") for r in rows]
    data = [{"type": "bar", "orientation": "h", "name": "process, mean over workers (µs)",
             "y": labels, "x": [r["process_mean_us"] for r in rows],
             "marker": {"color": "#2b6cb0"}},
            {"type": "bar", "orientation": "h", "name": "wait, mean over workers (µs)",
             "y": labels, "x": [r["wait_mean_us"] for r in rows], "marker": {"color": "#90cdf4"}}]
    lay = layout("Where a worker's time goes", "time per request (µs)", "", barmode="stack",
                 height=max(260, 60 + 28 * len(rows)),
                 margin={"l": 20, "r": 20, "t": 70, "b": 50},
                 legend=dict(LEGEND_ABOVE))
    lay["yaxis"].update({"autorange": "reversed", "type": "category"})
    return {"data": data, "layout": lay}


def _numeric_key(res) -> str | None:
    """The one key a sweep varies, if it has one and its values are numbers."""
    if len(res.keys) != 1:
        return None
    k = res.keys[0]
    vals = [r[k] for r in res.rows]
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    return k if ok and len(set(vals)) > 1 else None


def sweep_curve_figure(res) -> dict | None:
    """Throughput (with its 90 % band), mean and p99 client latency (the p99
    with its band) against the one numeric key a sweep varies: the curve a
    researcher reads a knob from."""
    k = _numeric_key(res)
    if k is None:
        return None
    rows = sorted(res.rows, key=lambda r: r[k])
    xs = [r[k] for r in rows]
    data = []
    if res.has_intervals:
        data.append({"type": "scatter", "mode": "lines", "x": xs + xs[::-1], "fill": "toself",
                     "y": [r["throughput_hi_mops"] for r in rows]
                     + [r["throughput_lo_mops"] for r in rows][::-1],
                     "line": {"width": 0}, "fillcolor": "rgba(43,108,176,0.18)",
                     "name": "throughput, 90 % interval", "hoverinfo": "skip"})
    data.append({"type": "scatter", "mode": "lines+markers", "x": xs,
                 "y": [r["throughput_mops"] for r in rows], "name": "throughput (MOPS)",
                 "line": {"color": "#2b6cb0"},
                 "hovertemplate": f"{ptext(short_key(k))} %{{x}}<br>%{{y:.4f}} MOPS<extra></extra>"})
    data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "yaxis": "y2",
                 "y": [r["latency_us"] for r in rows], "name": "mean client latency (µs)",
                 "line": {"color": "#c05621", "dash": "dot"},
                 "hovertemplate": f"{ptext(short_key(k))} %{{x}}<br>%{{y:,.0f}} µs<extra></extra>"})
    p99 = [r.get("latency_p99_us") for r in rows]
    if all(isinstance(v, (int, float)) and math.isfinite(v) for v in p99):
        lo = [r.get("latency_p99_lo_us") for r in rows]
        hi = [r.get("latency_p99_hi_us") for r in rows]
        if all(isinstance(v, (int, float)) for v in lo + hi):
            data.append({"type": "scatter", "mode": "lines", "x": xs + xs[::-1], "yaxis": "y2",
                         "y": hi + lo[::-1], "fill": "toself", "line": {"width": 0},
                         "fillcolor": "rgba(151,90,22,0.12)", "hoverinfo": "skip",
                         "name": "p99 latency, 90 % interval"})
        data.append({"type": "scatter", "mode": "lines+markers", "x": xs, "yaxis": "y2",
                     "y": p99, "name": "p99 client latency (µs)",
                     "line": {"color": "#975a16", "dash": "dash"},
                     "hovertemplate": f"{ptext(short_key(k))} %{{x}}<br>p99 %{{y:,.0f}} µs"
                                      "<extra></extra>"})
    lay = layout(f"Throughput and latency against {key_header(k)}", key_header(k),
                 "throughput (MOPS)", height=380, legend=dict(LEGEND_ABOVE),
                 margin={"l": 70, "r": 70, "t": 80, "b": 60})
    lay["yaxis"]["rangemode"] = "tozero"
    lay["yaxis2"] = {"title": {"text": "client latency (µs)"}, "overlaying": "y",
                     "side": "right", "rangemode": "tozero", "showgrid": False}
    span = max(xs) / max(min(xs), 1e-300) if min(xs) > 0 else 0
    if span >= 30:                      # client threads, records, timeouts: decades apart
        lay["xaxis"]["type"] = "log"
    if all(isinstance(x, int) for x in xs):
        lay["xaxis"]["tickformat"] = ",d"      # workers and threads are whole: no 8.5 tick
    return {"data": data, "layout": lay}


def sweep_tradeoff_figure(res) -> dict:
    """Throughput against mean client latency over every configuration: which
    buys throughput with latency, and which gets both (up and to the left)."""
    rows = res.rows
    k = _numeric_key(res)
    ordered = sorted(rows, key=lambda r: r[k]) if k else rows
    tr = {"type": "scatter", "mode": "lines+markers+text" if k else "markers+text",
          "x": [r["latency_us"] for r in ordered], "y": [r["throughput_mops"] for r in ordered],
          "text": [str(r["row"]) for r in ordered], "textposition": "top center",
          "marker": {"size": 9, "color": [_KIND_COLOR.get(r["bottleneck"], PALETTE[8])
                                          for r in ordered]},
          "line": {"color": "#a0aec0", "width": 1},
          "customdata": [_config_label(r, res.keys) for r in ordered],
          "hovertemplate": "row %{text}: %{customdata}<br>%{y:.4f} MOPS at %{x:,.0f} µs"
                           "<extra></extra>", "name": "configurations"}
    if res.has_intervals:
        tr["error_y"] = {"type": "data", "symmetric": False, "thickness": 1,
                         "array": [r["throughput_hi_mops"] - r["throughput_mops"] for r in ordered],
                         "arrayminus": [r["throughput_mops"] - r["throughput_lo_mops"]
                                        for r in ordered], "color": "#718096"}
    lay = layout("Throughput against latency", "mean client latency (µs)", "throughput (MOPS)",
                 height=380, margin={"l": 70, "r": 30, "t": 70, "b": 60})
    lay["yaxis"]["rangemode"] = "tozero"
    lay["showlegend"] = False
    lat = [r["latency_us"] for r in rows if r["latency_us"] and r["latency_us"] > 0
           and math.isfinite(r["latency_us"])]
    if lat and max(lat) / min(lat) >= 30:        # 84 us to 200 ms: decades apart
        lay["xaxis"]["type"] = "log"
    return {"data": [tr], "layout": lay}


def sweep_sections(res, figs: _Figures | None = None) -> list[dict]:
    figs = figs or _Figures()
    rows = res.rows
    best = max(rows, key=lambda r: r["throughput_mops"])
    b = rows[res.baseline - 1]

    def thr(r):
        s = f"{r['throughput_mops']:.4f} MOPS"
        if res.has_intervals:
            s += f" [{r['throughput_lo_mops']:.4f}, {r['throughput_hi_mops']:.4f}]"
        return s

    kpis = [_kpi("configurations", f"{len(rows)}", "zip" if res.zipped else "every combination"),
            _kpi("baseline", f"{b['throughput_mops']:.4f} MOPS", f"row {res.baseline}: "
                 + _config_label(b, res.keys)),
            _kpi("best throughput", f"{best['throughput_mops']:.4f} MOPS",
                 f"row {best['row']}: {_signed(best['throughput_vs_baseline_pct'])} vs baseline",
                 "good"),
            _kpi("interval", "90 %" if res.has_intervals else "none",
                 "of the throughput" if res.has_intervals else
                 "point predictions: --no-intervals, or a profile without [uncertainty]",
                 "" if res.has_intervals else "warn")]
    cols = ["row"] + [key_header(k) for k in res.keys] + [
        "throughput (MOPS)" + (" [90 % interval]" if res.has_intervals else ""),
        "vs baseline (%)", "latency (µs)", "latency vs baseline (%)",
        "wait min / mean / max (µs)", "process mean / max (µs)", "busiest worker (% busy)",
        "stalled (% of worker time)", "packet loss (packets per run of workload.queries_m)",
        "resends (packets per run of workload.queries_m)",
        "bottleneck"]
    trows, classes = [], []
    for r in rows:
        trows.append([str(r["row"])] + [_n(r[k]) for k in res.keys] + [
            thr(r).replace(" MOPS", ""),
            "baseline" if r["is_baseline"] else _signed(r["throughput_vs_baseline_pct"], ""),
            _n(r["latency_us"]),
            "baseline" if r["is_baseline"] else _signed(r["latency_vs_baseline_pct"], ""),
            f"{_n(r['wait_min_us'], 3)} / {_n(r['wait_mean_us'], 3)} / {_n(r['wait_max_us'], 3)}",
            f"{_n(r['process_mean_us'], 3)} / {_n(r['process_max_us'], 3)}",
            f"{r['utilization_max_pct']:.0f}", f"{r['stall_pct']:.2f}",
            f"{r['pktloss']:,.0f}", f"{r['false_pos']:,.0f}", r["bottleneck_text"]])
        classes.append("hl" if r["is_baseline"] else "")
    table = _table(cols, trows, numeric=[True] + [False] * len(res.keys) + [True] * 10 + [False],
                   row_classes=classes,
                   caption="One row per configuration; the baseline row is highlighted. Wait and "
                           "process: over the workers that get requests. Click a header to sort.")
    out = [{"id": "sweep", "title": "Sweep",
            "intro": "Every configuration predicted by the analytic model in one batch "
                     f"(profile '{res.profile}').",
            "blocks": [{"kind": "kpis", "items": kpis},
                       figs.block(sweep_figure(res),
                                  "Dashed: the baseline's throughput; the outlined bar is the "
                                  "baseline. Colour: what limits the rack."),
                       table]},
           {"id": "time", "title": "Per-worker time", "blocks": [figs.block(sweep_time_figure(res))]}]
    curve = sweep_curve_figure(res)
    out.insert(1, {"id": "curves", "title": "Curves", "blocks": (
        [figs.block(curve, "Solid: throughput (left axis), with its 90 % interval as the band; "
                           "dotted: mean client latency, dashed: p99 client latency with "
                           "its 90 % band (right axis).")] if curve else [])
        + [figs.block(sweep_tradeoff_figure(res),
                      "Each point a configuration (its row number); colour: what limits the "
                      "rack" + ("; bars: the throughput's 90 % interval" if res.has_intervals
                                else "") + ".")]})
    out.append(scenario_section(res.scenarios[res.baseline - 1].to_dict()))
    out[-1]["title"] = "Baseline scenario (all settings)"
    return out


def write_sweep_page(res, path: str | Path, title: str | None = None) -> Path:
    sections = sweep_sections(res)
    _unique_ids(sections)
    return write(path, render(sections, title or f"Sweep: {' x '.join(res.keys)}"))


# ---------------------------------------------------------------- explain
def waterfall_figure(ex, method: str | None = None) -> dict:
    """From the runtime gain up to the normalized gain, one step per part."""
    method = method or ("shapley" if ex.shapley else "alone")
    bars = ex.waterfall(method)
    names = ["runtime gain"] + [ptext(_short(lbl)) for lbl, _ in bars] + ["normalized gain"]
    values = [ex.runtime_x] + [v for _, v in bars] + [ex.normalized_x]
    measure = ["absolute"] + ["relative"] * len(bars) + ["total"]
    text = [f"{ex.runtime_x:.3f}×"] + [f"{v:+.3f}×" for _, v in bars] + [f"{ex.normalized_x:.3f}×"]
    # floating bars (a bar's base is the running total before it): the
    # cartesian plotly.js bundle the pages carry has no waterfall trace
    bases, heights, colours, run = [], [], [], 0.0
    for m, v in zip(measure, values):
        if m == "relative":
            bases.append(run)
            heights.append(v)
            colours.append("#c53030" if v > 0 else "#2f855a")
            run += v
        else:
            bases.append(0.0)
            heights.append(v)
            colours.append("#2b6cb0")
            run = v
    data = [{"type": "bar", "orientation": "v", "x": names, "y": heights, "base": bases,
             "text": text, "textposition": "outside", "cliponaxis": False,
             "marker": {"color": colours},
             "hovertemplate": "%{x}: %{text}<extra></extra>", "showlegend": False}]
    lo = min(ex.runtime_x, ex.normalized_x, *(ex.runtime_x + sum(v for _, v in bars[:i + 1])
                                             for i in range(len(bars))))
    hi = max(ex.runtime_x, ex.normalized_x, *(ex.runtime_x + sum(v for _, v in bars[:i + 1])
                                             for i in range(len(bars))))
    pad = 0.15 * (hi - lo) + 1e-3
    lay = layout("Why the runtime gain falls short of the normalized gain",
                 "", "gain over NoCache (×)", height=460,
                 margin={"l": 70, "r": 20, "t": 50, "b": 150})
    lay["yaxis"]["range"] = [max(0.0, lo - pad), hi + pad]
    lay["xaxis"]["tickangle"] = -30
    return {"data": data, "layout": lay}


def _short(label: str) -> str:
    if label.startswith("closed loop"):
        return "too few clients"
    if label.startswith("interactions"):
        return "interactions"
    return label.split(" (")[0]


def explain_sections(ex, figs: _Figures | None = None, section_id: str = "explain",
                     title: str = "Why the gain falls short") -> list[dict]:
    figs = figs or _Figures()
    kpis = [_kpi("normalized gain", f"{ex.normalized_x:.3f}×", "what the workload allows"),
            _kpi("runtime gain", f"{ex.runtime_x:.3f}×",
                 f"{ex.cache_mops:.4f} MOPS vs {ex.nocache_mops:.4f} MOPS without the cache"),
            _kpi("gap", f"{ex.gap_x:.3f}×", f"≈ {ex.gap_mops:.4f} MOPS at today's NoCache "
                 "throughput", "alert" if ex.gap_x > 0 else "good"),
            _kpi("bottleneck (cache)", ex.bottleneck, "", "alert")]
    rows = []
    for p in ex.parts:
        rows.append([p.label, "yes" if p.present else "no (exactly 0)", f"{p.alone_x:+.4f}",
                     f"{p.cumulative_x:+.4f}",
                     "–" if p.shapley_x is None else f"{p.shapley_x:+.4f}",
                     f"{100 * p.alone_x / ex.gap_x:+.0f}" if ex.gap_x else "–", p.off_means])
    rows.append(["interactions", "", f"{ex.interactions_x:+.4f}", "–", "–" if not ex.shapley
                 else "shared out", f"{100 * ex.interactions_x / ex.gap_x:+.0f}" if ex.gap_x else "–",
                 "all mechanisms off, beyond the sum of the alone parts"])
    rows.append(["too few clients (closed loop)", "", f"{ex.closed_loop_x:+.4f}",
                 f"{ex.closed_loop_x:+.4f}", f"{ex.closed_loop_x:+.4f}",
                 f"{100 * ex.closed_loop_x / ex.gap_x:+.0f}" if ex.gap_x else "–",
                 f"everything off, {ex.threads:,} -> {ex.ideal_threads:,} client threads"])
    rows.append(["remainder (numerical)", "", f"{ex.remainder_x:+.5f}", f"{ex.remainder_x:+.5f}",
                 f"{ex.remainder_x:+.5f}", "", "normalized gain minus the saturated gain"])
    rows.append(["total = gap", "", f"{ex.gap_x:+.4f}", f"{ex.gap_x:+.4f}",
                 f"{ex.gap_x:+.4f}" if ex.shapley else "–", "+100", ""])
    cols = ["part", "present", "alone off (× gain)", "cumulative (× gain)", "Shapley (× gain)",
            "share of gap (alone, %)", "switched off means"]
    numeric = [False, False, True, True, True, True, False]
    if not ex.shapley:                    # not computed: no column of dashes
        cols, numeric = cols[:4] + cols[5:], numeric[:4] + numeric[5:]
        rows = [r[:4] + r[5:] for r in rows]
    table = _table(cols, rows, numeric=numeric, sortable=False,
                   caption="Positive: the mechanism costs the cache that much gain; negative: it "
                           "costs NoCache more. Each column adds up to the gap.")
    text = [{"kind": "text", "text": s} for s in ex.sentences()]
    return [{"id": section_id, "title": title,
             "intro": "Each mechanism of the rack model switched off alone, all together, and "
                      "with enough clients to saturate every worker (analytic model).",
             "blocks": [{"kind": "kpis", "items": kpis}] + text +
                       [figs.block(waterfall_figure(ex),
                                   "Red: takes gain away from the cache; green: adds gain "
                                   "(hurts NoCache more). The bars add up to the gap."),
                        table]}]


def write_explain_page(ex, path: str | Path, scenario: dict | None = None,
                       title: str | None = None) -> Path:
    sections = explain_sections(ex)
    if scenario:
        sections.append(scenario_section(scenario))
    _unique_ids(sections)
    return write(path, render(sections, title or f"Explain: {ex.scenario}"))


# ---------------------------------------------------------------- tune
def tune_sections(t, figs: _Figures | None = None) -> list[dict]:
    figs = figs or _Figures()
    kpis = [_kpi("tuned throughput", f"{t.best_mops:.4f} MOPS"
                 + (f" [{t.best_interval[0]:.4f}, {t.best_interval[1]:.4f}]"
                    if t.best_interval else ""),
                 "90 % interval" if t.best_interval else
                 "no interval: the profile has no [uncertainty]", "good"),
            _kpi("given configuration", f"{t.start_mops:.4f} MOPS"
                 + (f" [{t.start_interval[0]:.4f}, {t.start_interval[1]:.4f}]"
                    if t.start_interval else "")),
            _kpi("predicted gain", f"{t.gain_pct:+.1f} %", "tuned vs given"),
            _kpi("evaluations", f"{t.evaluations}", f"{t.method}")]
    rows = [[k, _n(t.start_values[k]), _n(t.best_values[k]), _key_unit(k) or "–", t.ranges[k]]
            for k in t.keys]
    rows.append(["throughput", f"{t.start_mops:.4f}", f"{t.best_mops:.4f}", "MOPS", ""])
    stat = getattr(t, "latency_stat", "mean")
    rows.append([f"client latency ({stat})", _n(t.start_latency_us), _n(t.best_latency_us), "µs",
                 f"at most {t.max_latency_us:,.0f}" if t.max_latency_us is not None else ""])
    table = _table(["setting", "given", "tuned", "unit", "searched"], rows, sortable=False)
    out = [{"id": "tune", "title": "Tuned configuration",
            "intro": t.objective_text.replace(" us", " µs"),
            "blocks": [{"kind": "kpis", "items": kpis}, table,
                       figs.block(search_figure(t),
                                  "Every configuration the search solved; the tuned one is the "
                                  "large marker, the given one the open square; grey x: beyond "
                                  "the latency bound.")]}]
    edges = getattr(t, "edges", [])
    if edges:
        out[0]["blocks"].insert(1, callout(" ".join(
            f"{k} = {v} is the {side} edge of the range searched ({t.ranges[k]}): the optimum "
            f"may lie beyond it; widen --vary {k}." for k, side, v in edges)))
    pf = pareto_figure(t)
    if pf is not None:
        out[0]["blocks"].append(figs.block(pf, "The line: the configurations no other beats on "
                                               "both throughput and p99 latency (the trade-off "
                                               "the search saw); grey x: beyond the latency "
                                               "bound" + ("; dashed: the bound." if stat == "p99"
                                                          else f" (on the {stat}).")))
    if t.explanation is not None:
        out += explain_sections(t.explanation, figs, "explain",
                                "Why the tuned gain falls short of the normalized gain")
    return out


def _key_unit(key: str) -> str:
    from dataclasses import fields
    from model.scenario import SECTIONS
    sec, name = key.split(".")
    return {f.name: f.metadata.get("unit") for f in fields(SECTIONS[sec])}.get(name) or ""


def search_figure(t) -> dict | None:
    """Throughput of every configuration solved against the first varied key."""
    if not t.history:
        return None
    k = t.keys[0]
    pts = [h for h in t.history if not isinstance(h[k], str)]
    if not pts:
        return None
    unit = _key_unit(k)
    xs = [float(h[k]) for h in pts]
    hover = "<br>".join(f"{kk}=%{{customdata[{i}]}}" for i, kk in enumerate(t.keys))
    ok = [t.feasible(h) if hasattr(t, "feasible") else True for h in pts]
    data = [{"type": "scatter", "mode": "markers", "name": name,
             "x": [x for x, f in zip(xs, ok) if f is want],
             "y": [h["throughput_mops"] for h, f in zip(pts, ok) if f is want],
             "customdata": [[str(h[kk]) for kk in t.keys] for h, f in zip(pts, ok) if f is want],
             "marker": ({"color": PALETTE[0], "size": 7, "opacity": 0.6} if want else
                        {"color": "#a0aec0", "size": 7, "symbol": "x"}),
             "hovertemplate": hover + "<br>%{y:.4f} MOPS<extra></extra>"}
            for want, name in ((True, "solved"), (False, "beyond the latency bound"))
            if any(f is want for f in ok)]
    data += [
            {"type": "scatter", "mode": "markers", "name": "tuned",
             "x": [float(t.best_values[k])], "y": [t.best_mops],
             "marker": {"color": PALETTE[3], "size": 14, "symbol": "star"}},
            {"type": "scatter", "mode": "markers", "name": "given",
             "x": [float(t.start_values[k])], "y": [t.start_mops],
             "marker": {"color": "#1a202c", "size": 11, "symbol": "square-open"}}]
    lay = layout(f"Throughput of the configurations solved, against {k}",
                 f"{k} ({unit})" if unit else k, "throughput (MOPS)",
                 legend=dict(LEGEND_ABOVE), margin={"t": 70})
    if any(d.key == k and d.log for d in getattr(t, "dims", ())) or (
            "log scale" in t.ranges[k]):
        lay["xaxis"]["type"] = "log"
    return {"data": data, "layout": lay}


def pareto_figure(t) -> dict | None:
    """Throughput against p99 client latency of every configuration solved,
    the front of those no other beats on both drawn as a line; beyond the
    latency bound marked (the bound line where the bound reads the p99)."""
    if not t.history or not hasattr(t, "pareto"):
        return None
    lk = "latency_p99_us"
    pts = [h for h in t.history if math.isfinite(h["throughput_mops"])
           and math.isfinite(h.get(lk, math.nan))]
    front = t.pareto
    ok = [t.feasible(h) for h in pts]
    data = [{"type": "scatter", "mode": "markers", "name": name,
             "x": [h[lk] for h, f in zip(pts, ok) if f is want],
             "y": [h["throughput_mops"] for h, f in zip(pts, ok) if f is want],
             "marker": ({"color": PALETTE[0], "size": 6, "opacity": 0.5} if want else
                        {"color": "#a0aec0", "size": 7, "symbol": "x"}),
             "hovertemplate": "%{y:.4f} MOPS at %{x:,.0f} µs<extra></extra>"}
            for want, name in ((True, "solved"), (False, "beyond the latency bound"))
            if any(f is want for f in ok)]
    data.append({"type": "scatter", "mode": "lines+markers", "name": "trade-off front",
                 "x": [h[lk] for h in front], "y": [h["throughput_mops"] for h in front],
                 "line": {"color": PALETTE[3], "shape": "hv"}, "marker": {"size": 8},
                 "customdata": [", ".join(f"{k}={h[k]}" for k in t.keys) for h in front],
                 "hovertemplate": "%{customdata}<br>%{y:.4f} MOPS at %{x:,.0f} µs"
                                  "<extra></extra>"})
    lay = layout("Throughput against p99 client latency", "p99 client latency (µs)",
                 "throughput (MOPS)", legend=dict(LEGEND_ABOVE), margin={"t": 70})
    if t.max_latency_us is not None and getattr(t, "latency_stat", "mean") == "p99":
        lay["shapes"] = [{"type": "line", "x0": t.max_latency_us, "x1": t.max_latency_us,
                          "yref": "paper", "y0": 0, "y1": 1,
                          "line": {"dash": "dash", "color": "#c53030", "width": 1}}]
    lat = [h[lk] for h in pts if h[lk] > 0]
    if lat and max(lat) / min(lat) >= 30:
        lay["xaxis"]["type"] = "log"
    return {"data": data, "layout": lay}


def write_tune_page(t, path: str | Path, title: str | None = None) -> Path:
    sections = tune_sections(t)
    _unique_ids(sections)
    return write(path, render(sections, title or "Tune"))
