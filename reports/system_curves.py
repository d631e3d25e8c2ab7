"""A system's predicted curves with its measured runs on them (one page's figures).

:func:`place_measured` finds where a measured cell of a run kind sits on the
curves that ``System.curves`` predicts (series, x, quantity, y);
:func:`curve_blocks` draws one figure per quantity and x axis
(:func:`curve_figure`: the predicted line solid over the measured range and
dashed past it, the runs as dots, the saturation / peak / collapse points as
markers). The axis titles (:func:`y_title`, :func:`x_title`) and
:func:`finite_number` are shared with the cross-validation figures
(:mod:`reports.system_cv`) and with the rows' computation
(:mod:`calibrate.systems_pages`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from . import figures as F
from .blocks import Figures
from .units import label, unit_for


def finite_number(row: Mapping[str, Any], key: str, default: float | None = None) -> float | None:
    """``row[key]`` as a finite float, else ``default`` (CSV cells are text, maybe empty)."""
    v = row.get(key)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return default
    return x if math.isfinite(x) else default


def place_measured(run_kind: str, row: Mapping[str, Any], column: str, value: float
                   ) -> tuple[str, float, str, float] | None:
    """``(series, x, metric, y)`` of a measured cell on the predicted curves, or None.

    ``series`` and ``x`` follow the naming of the systems' ``curves``;
    ``metric`` is ``"y"`` for the curve's own quantity, or the key of an extra
    predicted quantity the curve rows carry (``latency_us``, ``requests``);
    ``y`` is converted to that quantity's unit (``latency_ns`` -> µs).
    """
    g = row.get
    if run_kind == "morphling_c" and column == "kops":
        mode = str(g("read_mode") or "")
        series = "unreplicated" if mode.startswith("unreplicated") else mode
        x = finite_number(row, "client_threads")
        return None if x is None else (series, x, "y", value)
    if run_kind == "morphling_go":
        cn = finite_number(row, "conns_per_client")
        if cn is None:
            return None
        x = cn * (finite_number(row, "client_machines", 2.0) or 2.0)
        if column == "ops":
            return (str(g("read_mode")), x, "y", value)
        if column == "latency_ns":
            return (str(g("read_mode")), x, "latency_us", value / 1e3)
        return None
    if run_kind == "morphling_go_control":
        n = finite_number(row, "clients_by_littles_law", 0.0) or 0.0
        x = float(round(n)) if n >= 1 else float(round(2 * (finite_number(row, "step", 0.0) or 0.0)))
        if x < 1:
            return None
        metric = {"ops": "y", "latency_us": "latency_us"}.get(column)
        return None if metric is None else (str(g("read_mode")), x, metric, value)
    if run_kind == "runtimes_curves":
        c = finite_number(row, "server_cores")
        x = finite_number(row, "connections") or ((finite_number(row, "client_cores") or 0) *
                                         (finite_number(row, "conns_per_core") or 0))
        metric = {"qps": "y", "latency_us": "latency_us"}.get(column)
        if c is None or not x or metric is None:
            return None
        return (f"{g('runtime')} {int(c)}c", x, metric, value)
    if run_kind == "runtimes_best" and column == "best_qps":
        c = finite_number(row, "server_cores")
        return None if c is None else (f"{g('runtime')} best", c, "y", value)
    if run_kind == "thread_coroutine":
        m, t, n = finite_number(row, "matrix_size"), finite_number(row, "send_interval_ms"), finite_number(row, "connections")
        metric = {"latency_mean_us": "y", "requests": "requests"}.get(column)
        if None in (m, t, n) or metric is None:
            return None
        model = str(g("model"))
        pr = str(g("prio_recv_server_send") or "")
        series = f"{model} m={int(m)} {int(t)}ms" + (f" {pr}" if model == "coroutine" and pr else "")
        return (series, n, metric, value)
    if run_kind == "coroutine_priority":
        v, k = finite_number(row, "server_vcpus"), finite_number(row, "connection_priority")
        metric = {"latency_mean_us": "y", "requests": "requests"}.get(column)
        if None in (v, k) or metric is None:
            return None
        return (f"{int(v)} vCPU", k, metric, value)
    return None


# ---- axes and flags ----------------------------------------------------------------

# y_label of System.curves -> the column it is a prediction of (its unit follows)
_Y_COLUMN = {"kops": "kops", "ops/s": "ops", "qps": "qps", "best qps": "best_qps",
             "latency_mean_us": "latency_mean_us", "latency_us": "latency_us",
             "requests": "requests"}
# x_label of System.curves -> (axis name, unit)
X_TITLES = {
    "client threads": ("client threads", "threads"),
    "clients (2 x conns_per_client)": ("clients = 2 machines × conns_per_client", "connections"),
    "connections": ("client connections", "connections"),
    "server cores": ("server cores", "cores"),
    "connection priority": ("connection priority", "level 1–7"),
}
_EXTRA = ("latency_us", "requests")      # other predicted quantities on the curve rows

# flag of a predicted point -> (plotly marker symbol, what it means)
FLAGS = {
    "saturation": ("triangle-up", "saturation: the busy resource is (nearly) fully used; more "
                   "load adds queueing, not throughput"),
    "peak": ("star", "peak: the highest predicted throughput on the curve"),
    "collapse": ("x-thin-open", "collapse: the first point past the peak where throughput has "
                 "fallen below 90 % of the peak"),
}
_TEXTPOS = {"saturation": "top left", "peak": "top center", "collapse": "top right"}


def y_title(y_label: str) -> str:
    """Axis title with unit for a curve's y quantity."""
    col = _Y_COLUMN.get(y_label, y_label.replace(" ", "_").replace("/", "_"))
    if col == "requests":
        return "completed requests per run (requests)"
    t = label(col)
    return t if t.endswith(")") else f"{t} (model units)"


def x_title(x_label: str) -> str:
    """Axis title with unit for a curve's x quantity."""
    if x_label in X_TITLES:
        name, unit = X_TITLES[x_label]
        return f"{name} ({unit})"
    u = unit_for(x_label.replace(" ", "_"))
    return f"{x_label} ({u or 'count'})"


def unit_of_title(title: str) -> str:
    """The unit in an axis title's closing parentheses ("" if none)."""
    return title.rsplit("(", 1)[-1].rstrip(")") if title.endswith(")") else ""


# ---- figures ------------------------------------------------------------------------

def series_of(pred: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The predicted rows per series, each sorted by x."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in pred:
        out.setdefault(str(r["series"]), []).append(r)
    for pts in out.values():
        pts.sort(key=lambda r: r["x"])
    return out


def _groups(series: dict[str, list]) -> list[tuple[str, str, str, list[str]]]:
    """(y_label, x_label, subset, series names): one figure each. A group of more than
    six series that all name a runtime is split per runtime."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name, pts in series.items():
        groups.setdefault((pts[0]["y_label"], pts[0]["x_label"]), []).append(name)
    out = []
    for (y, x), names in groups.items():
        rts = [series[n][0].get("runtime") for n in names]
        if len(names) > 6 and all(rts):
            for rt in dict.fromkeys(rts):
                out.append((y, x, str(rt), [n for n in names if series[n][0].get("runtime") == rt]))
        else:
            out.append((y, x, "", names))
    return out


def curve_figure(title: str, xt: str, yt: str, series: Mapping[str, Sequence[tuple]],
                 measured: Mapping[str, Sequence[tuple]]) -> dict:
    """Predicted lines (solid up to the last measured x, dashed beyond), measured dots in
    the same colour, flagged points as annotated markers.

    ``series[name]`` = [(x, y, flag)], sorted by x; ``measured[name]`` = [(x, y, id, kind)].
    """
    xu, yu = unit_of_title(xt), unit_of_title(yt)
    data: list[dict] = []
    flags: dict[str, list[tuple[float, float, str, str]]] = {}
    xs_all: list[float] = []
    for i, (name, pts) in enumerate(series.items()):
        col = F.PALETTE[i % len(F.PALETTE)]
        meas = list(measured.get(name, ()))
        xmax = max((m[0] for m in meas), default=None)
        xs_all += [p[0] for p in pts] + [m[0] for m in meas]
        hover = (f"{F.ptext(name)}, predicted<br>%{{x:.4g}} {xu}: %{{y:.4g}} {yu}<extra></extra>")
        inside = [p for p in pts if xmax is not None and p[0] <= xmax]
        beyond = [p for p in pts if xmax is None or p[0] >= xmax]
        if inside:
            data.append({"type": "scatter", "mode": "lines", "name": F.ptext(f"{name} predicted"),
                         "legendgroup": F.ptext(name), "x": [p[0] for p in inside],
                         "y": [p[1] for p in inside], "line": {"color": col, "width": 2},
                         "hovertemplate": hover})
        if beyond:
            data.append({"type": "scatter", "mode": "lines",
                         "name": F.ptext(f"{name} predicted" + ("" if inside else " (not measured)")),
                         "legendgroup": F.ptext(name), "showlegend": not inside,
                         "x": [p[0] for p in beyond], "y": [p[1] for p in beyond],
                         "line": {"color": col, "width": 2, "dash": "dash"},
                         "hovertemplate": hover.replace("predicted", "predicted past the "
                                                        "measured range")})
        if meas:
            data.append({"type": "scatter", "mode": "markers", "name": F.ptext(f"{name} measured"),
                         "legendgroup": F.ptext(name), "x": [m[0] for m in meas],
                         "y": [m[1] for m in meas],
                         "text": [F.ptext(f"{m[2]} ({m[3]})") for m in meas],
                         "marker": {"color": col, "size": 8, "symbol": "circle",
                                    "line": {"color": "#1a202c", "width": 1}},
                         "hovertemplate": (f"{F.ptext(name)}, measured %{{text}}<br>%{{x:.4g}} "
                                           f"{xu}: %{{y:.4g}} {yu}<extra></extra>")})
        for p in pts:
            if p[2]:
                flags.setdefault(p[2], []).append((p[0], p[1], name, col))
    for flag, fpts in flags.items():
        symbol, note = FLAGS.get(flag, ("diamond", flag))
        data.append({"type": "scatter", "mode": "markers+text", "name": F.ptext(note.split(":")[0]),
                     "legendgroup": f"flag-{flag}", "x": [f[0] for f in fpts],
                     "y": [f[1] for f in fpts], "text": [F.ptext(flag)] * len(fpts),
                     "textposition": _TEXTPOS.get(flag, "top center"),
                     "textfont": {"size": 10, "color": [f[3] for f in fpts]},
                     "customdata": [F.ptext(f[2]) for f in fpts],
                     "marker": {"symbol": symbol, "size": 14, "color": [f[3] for f in fpts],
                                "line": {"color": "#1a202c", "width": 1.5}},
                     "hovertemplate": (f"%{{customdata}}: {F.ptext(flag)} expected<br>%{{x:.4g}} "
                                       f"{xu}: %{{y:.4g}} {yu}<extra></extra>")})
    pos = [x for x in xs_all if x > 0]
    logx = bool(pos) and len(pos) == len(xs_all) and max(pos) / min(pos) >= 30
    lay = F.layout(title, xt, yt, height=440)
    if logx:
        lay["xaxis"]["type"] = "log"
    return {"data": data, "layout": lay}


def curve_blocks(pred: Sequence[Mapping[str, Any]], meas: Sequence[Mapping[str, Any]],
                 figs: Figures) -> tuple[list[dict], list[str]]:
    """One figure block per quantity and x axis of the predicted curves ``pred``
    with the measured cells ``meas`` placed on them; and notes naming the cells
    no curve carries."""
    series = series_of(pred)
    placed: dict[tuple[str, str], list[tuple]] = {}     # (series, metric) -> points
    unplaced: dict[str, int] = {}
    for r in meas:
        p = place_measured(r["run_kind"], r["row"], r["column"], r["measured"])
        if p is None:
            continue
        s, x, metric, y = p
        if s not in series or (metric != "y" and metric not in series[s][0]):
            unplaced[f"{r['run_kind']} {s}"] = unplaced.get(f"{r['run_kind']} {s}", 0) + 1
            continue
        placed.setdefault((s, metric), []).append((x, y, r["id"], r["run_kind"]))
    blocks = []
    notes = []
    for y_label, x_label, subset, names in _groups(series):
        for metric in ("y",) + _EXTRA:
            if metric != "y" and not any((n, metric) in placed for n in names):
                continue
            if metric != "y" and not all(metric in series[n][0] for n in names):
                continue
            yt = y_title(y_label if metric == "y" else metric)
            xt = x_title(x_label)
            key = "y" if metric == "y" else metric
            lines = {n: [(p["x"], p[key], p.get("flag", "") if metric == "y" else "")
                         for p in series[n] if isinstance(p.get(key), (int, float))]
                     for n in names}
            dots = {n: placed.get((n, metric), []) for n in names}
            name = yt.rsplit(" (", 1)[0]
            title = f"{subset + ': ' if subset else ''}{name} vs {xt.rsplit(' (', 1)[0].split(' = ')[0]}"
            fig = curve_figure(title, xt, yt, lines, dots)
            present = sorted({p[2] for pts in lines.values() for p in pts if p[2]})
            n_meas = sum(len(v) for v in dots.values())
            cap = (f"{n_meas} measured runs (dots) on {len(names)} predicted curves. Solid: "
                   "predicted within the measured range; dashed: predicted past the last "
                   "measured point (or not measured at all).")
            if present:
                cap += " Markers: " + "; ".join(FLAGS.get(f, ("", f))[1] for f in present) + "."
            blocks.append(figs.block(fig, cap))
    for k, n in sorted(unplaced.items()):
        notes.append(f"{k}: {n} measured cells have no predicted curve to sit on "
                     "(they are in the tables below).")
    return blocks, notes

