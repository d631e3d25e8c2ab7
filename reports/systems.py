"""Per-system HTML reports: measured points on the predicted curves.

``python -m reports.systems --out DIR`` writes ``DIR/<system>.html`` for
every system in :mod:`model.systems` (``morphling-c``, ``morphling-go``,
``runtimes``, ``thread-coroutine``); :func:`write_system_report` writes one.
Each page, in the house style of :mod:`reports.page` (same template,
stylesheet and inlined plotly.js, every label escaped), shows:

* a summary: what sets saturation, peak and collapse for the system (from
  the model modules' docstrings, with the profile's numbers) and, per run
  kind, the median and mean absolute percentage error of every predicted
  column with its number of points;
* the curves: every predicted series of ``System.curves`` as a line, solid
  over the measured range and dashed past the last measured point, the
  measured runs as dots of the same colour, and the saturation / peak /
  collapse points the model flags as annotated markers;
* the cross-validation (:mod:`calibrate.cv`, grouping ``first:2`` by
  default): the profile is refitted on the first points of every curve and
  predicts the rest; per run kind and column, the refitted model's curve
  through every measured configuration with its 90 % interval as a band,
  the points it was fitted on as open circles and the held-out points as
  filled diamonds, and a table of out-of-sample errors and interval coverage;
* predicted against measured per run kind and column, every measured cell
  in a sortable table, and the profile with provenance.

:func:`curves` returns the rows behind the page (measured cells with their
predictions, then the predicted curves).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from runio.exits import ArgumentParser, run_command
from model.errors import InputError
from model.profile import Profile
from model.systems import SYSTEMS, system_of
from model.systems.base import System
from model.systems.base import measured as _measured

from . import analysis as A
from . import figures as F
from .page import Section, _Figures, _grid, _kpi, _pct, _table, profile_section, render, write
from .units import fmt, label, unit_for
from runio.inputs import load_profile

__all__ = ["curves", "write_system_report", "system_sections", "place_measured", "main"]


# ---- rows ---------------------------------------------------------------------

def curves(kind: str, profile: Profile | None = None, data_dir: str | None = None
           ) -> list[dict[str, Any]]:
    """Report rows for a system (or one of its kinds): every measured cell of its
    calibration CSVs with the prediction for that row (``kind = "measured"``),
    then the predicted curves extended past the last measured point
    (``kind = "predicted"``, ``flag`` = saturation / peak / collapse where expected).
    """
    sysm = system_of(kind)
    return _rows(sysm, sysm.profile(profile), data_dir)


def _rows(sysm: System, prof: Profile, data_dir: str | None) -> list[dict[str, Any]]:
    from calibrate.systems_fit import DATA, load_rows
    out: list[dict[str, Any]] = []
    kinds = {k.name: k for k in sysm.kinds}
    prof = prof.with_values({}, "") if prof.uncertainty or prof.noise else prof  # no intervals here
    for r in load_rows(sysm.name, data_dir or DATA):
        k = kinds[r["__kind__"]]
        pred = k.predict_row(r, prof)
        for c in k.measured:
            m = _measured(r, c)
            if m is None:
                continue
            out.append({"kind": "measured", "run_kind": k.name, "id": r.get("id", ""),
                        "column": c, "measured": m, "predicted": pred.get(f"pred_{c}"),
                        "row": {kk: v for kk, v in r.items() if not kk.startswith("__")}})
    out.extend(sysm.curves(prof))
    return out


# ---- where a measured cell sits on the predicted curves --------------------------

def _num(row: Mapping[str, Any], key: str, default: float | None = None) -> float | None:
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
        x = _num(row, "client_threads")
        return None if x is None else (series, x, "y", value)
    if run_kind == "morphling_go":
        cn = _num(row, "conns_per_client")
        if cn is None:
            return None
        x = cn * (_num(row, "client_machines", 2.0) or 2.0)
        if column == "ops":
            return (str(g("read_mode")), x, "y", value)
        if column == "latency_ns":
            return (str(g("read_mode")), x, "latency_us", value / 1e3)
        return None
    if run_kind == "morphling_go_control":
        n = _num(row, "clients_by_littles_law", 0.0) or 0.0
        x = float(round(n)) if n >= 1 else float(round(2 * (_num(row, "step", 0.0) or 0.0)))
        if x < 1:
            return None
        metric = {"ops": "y", "latency_us": "latency_us"}.get(column)
        return None if metric is None else (str(g("read_mode")), x, metric, value)
    if run_kind == "runtimes_curves":
        c = _num(row, "server_cores")
        x = _num(row, "connections") or ((_num(row, "client_cores") or 0) *
                                         (_num(row, "conns_per_core") or 0))
        metric = {"qps": "y", "latency_us": "latency_us"}.get(column)
        if c is None or not x or metric is None:
            return None
        return (f"{g('runtime')} {int(c)}c", x, metric, value)
    if run_kind == "runtimes_best" and column == "best_qps":
        c = _num(row, "server_cores")
        return None if c is None else (f"{g('runtime')} best", c, "y", value)
    if run_kind == "thread_coroutine":
        m, t, n = _num(row, "matrix_size"), _num(row, "send_interval_ms"), _num(row, "connections")
        metric = {"latency_mean_us": "y", "requests": "requests"}.get(column)
        if None in (m, t, n) or metric is None:
            return None
        model = str(g("model"))
        pr = str(g("prio_recv_server_send") or "")
        series = f"{model} m={int(m)} {int(t)}ms" + (f" {pr}" if model == "coroutine" and pr else "")
        return (series, n, metric, value)
    if run_kind == "coroutine_priority":
        v, k = _num(row, "server_vcpus"), _num(row, "connection_priority")
        metric = {"latency_mean_us": "y", "requests": "requests"}.get(column)
        if None in (v, k) or metric is None:
            return None
        return (f"{int(v)} vCPU", k, metric, value)
    return None


# ---- axes, flags, mechanisms ------------------------------------------------------

# y_label of System.curves -> the column it is a prediction of (its unit follows)
_Y_COLUMN = {"kops": "kops", "ops/s": "ops", "qps": "qps", "best qps": "best_qps",
             "latency_mean_us": "latency_mean_us", "latency_us": "latency_us",
             "requests": "requests"}
_X_TITLE = {
    "client threads": ("client threads", "threads"),
    "clients (2 x conns_per_client)": ("clients = 2 machines × conns_per_client", "connections"),
    "connections": ("client connections", "connections"),
    "server cores": ("server cores", "cores"),
    "connection priority": ("connection priority", "level 1–7"),
}
_EXTRA = ("latency_us", "requests")      # other predicted quantities on the curve rows

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
    if x_label in _X_TITLE:
        name, unit = _X_TITLE[x_label]
        return f"{name} ({unit})"
    u = unit_for(x_label.replace(" ", "_"))
    return f"{x_label} ({u or 'count'})"


def _unit_of_title(title: str) -> str:
    return title.rsplit("(", 1)[-1].rstrip(")") if title.endswith(")") else ""


def _p(prof: Profile, key: str, unit: str, scale: float = 1.0) -> str:
    return fmt(prof.get(key, float("nan")) * scale, unit) if key in prof else f"{key} (not set)"


def mechanisms(sysm: System, prof: Profile, pred: Sequence[Mapping[str, Any]]) -> list[str]:
    """Short texts naming what sets saturation, peak and collapse (from the model docstrings)."""
    caps: dict[str, float] = {}
    for r in pred:
        for k in ("capacity_kops", "capacity_ops"):
            if isinstance(r.get(k), (int, float)):
                caps[f"{r['series']}|{k}"] = r[k]
    name = sysm.name
    if name == "morphling-c":
        cap = next((v for k, v in caps.items() if k.startswith("unreplicated|")), None)
        return [
            "Saturation: every read queues at one single-threaded serving replica thread that "
            f"spends server_us = {_p(prof, 'server_us', 'µs')} of CPU per read, so throughput "
            f"levels off at 1/server_us ≈ {fmt(cap, 'Kops') if cap else '–'} however many client "
            "threads there are. The knee is the balanced-bound N* = (Z + D) / D_max client "
            f"threads, with Z the client + network delay (net_us = {_p(prof, 'net_us', 'µs')}; "
            f"guidance reads take the shorter guidance_net_us = {_p(prof, 'guidance_net_us', 'µs')}"
            ", so they saturate at fewer threads).",
            "No peak or collapse: nothing in this closed loop gets slower with load.",
            "Source: model/systems/morphling.py (C implementation).",
        ]
    if name == "morphling-go":
        capl = "; ".join(f"{k.split('|')[0]} {fmt(round(v), 'ops/s')}" for k, v in caps.items())
        who = {r["series"]: r.get("bottleneck", "") for r in pred if r.get("bottleneck")}
        return [
            "Closed loop of clients = 2 × conns_per_client connections on 2 client machines "
            "(Little's law: clients = ops/s × latency). Who serves a read: an unreplicated read "
            "crosses 2 network hops and the server node's pool of "
            f"{_p(prof, 'server_cores', 'cores')} (an assumption: one serial loop cannot carry "
            f"the measured 33-34 Kops; read_us = {_p(prof, 'read_us', 'µs')} each); a Morphling "
            "read crosses the same 2 hops and is "
            f"served by one of {_p(prof, 'morphling_replicas', 'replicas')} (an assumption "
            "that matches the public benchmark's plateau), skipping the log, and its "
            "guidance check adds "
            f"morphling_extra_us = {_p(prof, 'morphling_extra_us', 'µs')} of delay; a Raft read "
            "crosses 4 hops (client → leader → followers → leader → client) plus a quorum delay "
            f"(quorum_us = {_p(prof, 'quorum_us', 'µs')}): the leader's pool serves the read, and "
            "every node's serial log loop the append "
            f"(append_us = {_p(prof, 'append_us', 'µs')}) and its messages "
            f"(msg_us = {_p(prof, 'msg_us', 'µs')} each, four at the leader). The client "
            f"machines' CPU (client_cpu_us = {_p(prof, 'client_cpu_us', 'µs')} per read) caps "
            "the unreplicated and Morphling reads.",
            f"Network stack: each hop costs hop_us = {_p(prof, 'hop_us', 'µs')} of pure delay, "
            f"plus wake_us = {_p(prof, 'wake_us', 'µs')} when the receiving node's threads are "
            "parked; that extra falls as exp(−rate × spin_us) under load, which is why Raft "
            "latency drops from 2 to 8 clients.",
            "Saturation: the resource with the largest demand per core sets the ceiling, and "
            "past the knee N* = (Z + D)/D_max latency grows linearly with clients. A loop's "
            "time per read is a fixed code path (loop_scv = "
            f"{_p(prof, 'loop_scv', '')}), so below the knee a read waits at most about half a "
            "read for the one in service and the curve bends late: " + capl
            + " (" + "; ".join(f"{k}: {v}" for k, v in who.items()) + "). No collapse: "
            "nothing in this loop gets slower per read with load.",
            "Source: model/systems/morphling.py (Go implementation).",
        ]
    if name == "runtimes":
        return [
            "Saturation: the server's c cores are busy; QPS reaches 90 % of the pool capacity "
            "c/s, where one request costs s = (service_us + per_kb_us × KB) × scaling(c) × "
            "(1 + kappa × N/c). Before that every connection is a closed loop whose ~2.3 ms "
            "client + network delay sets QPS = connections / latency.",
            "Peak: kappa is per-connection contention (poll set, buffers, cache footprint per "
            "core), so the saturated throughput c/s falls as connections grow and each "
            "runtime peaks; the runtime's best QPS is that maximum.",
            "Collapse: past the peak, the first point below 90 % of the peak. Tokio shares a "
            "work-stealing scheduler between cores (a multi-thread penalty plus USL serial and "
            "coherency terms), so it scales poorly past 8 cores; Glommio and Monoio are "
            "thread-per-core (scaling = 1).",
            "Source: model/systems/runtimes.py.",
        ]
    if name == "thread-coroutine":
        return [
            "Each connection sends on a timer and all timers fire in phase, so every interval "
            "brings a burst of N requests that must drain through the scheduler.",
            "Saturation (thread model): every one of the 3 stage handoffs is a kernel context "
            "switch whose cost grows with the runnable threads per core, so the serial cost "
            "per request grows with connections and the burst wait with N²; at a few tens of "
            f"connections (16–32 measured; server_cores = {_p(prof, 'server_cores', 'cores')}) "
            "the burst no longer drains within the interval and latency explodes.",
            "Coroutine model: a constant user-space switch "
            f"(coroutine_switch_us = {_p(prof, 'coroutine_switch_us', 'µs')}), so latency stays "
            "low and no saturation is predicted in range. Priorities: below saturation each "
            "class waits the non-preemptive priority M/G/c time; past it (1 vCPU) the client's "
            "one poll thread runs late, every tick period stretches to the pool's capacity, "
            "and each class's connections arrive as one burst: the mean wait over the classes "
            "is that of periodic bursts at load 1 (Benes), the top class waits for its own "
            "burst only, and the classes between step up linearly.",
            "Source: model/systems/threads.py.",
        ]
    mod = sys.modules.get(getattr(sysm.curves, "__module__", ""), None)
    doc = (getattr(mod, "__doc__", "") or "").strip().split("\n\n")
    return [" ".join(doc[0].split())] if doc and doc[0] else []


# ---- figures ------------------------------------------------------------------------

def _series_of(pred: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
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
    xu, yu = _unit_of_title(xt), _unit_of_title(yt)
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


def _curve_blocks(sysm: System, pred: Sequence[Mapping[str, Any]],
                  meas: Sequence[Mapping[str, Any]], figs: _Figures
                  ) -> tuple[list[dict], list[str]]:
    series = _series_of(pred)
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


# ---- cross-validation: held-out points against the refitted curve ----------------------

DEFAULT_CV = "first:2"


def cv_rows(sysm: System, grouping: str = DEFAULT_CV, data_dir: str | None = None
            ) -> tuple[list[dict[str, Any]], Any]:
    """Every measured cell of the system predicted by the profile refitted on a
    grouping's training rows (with its interval), marked ``held_out`` when the
    fit did not see it; and the :class:`calibrate.cv.CVResult`."""
    from calibrate.cv import cross_validate, curve_spec
    from calibrate.systems_fit import DATA, SystemFitter, load_rows
    rows = load_rows(sysm.name, data_dir or DATA)

    def refit(by: str):
        res = cross_validate(rows, by, fitter=SystemFitter, fitter_kwargs={"system": sysm.name})
        if res.partial:
            # cross_validate returns the folds finished when Ctrl-C stops it
            # (for its own command's partial output); a page of some folds
            # (or none: an IndexError below) is no report: stop as asked
            raise KeyboardInterrupt
        return res

    try:
        res = refit(grouping)
    except InputError as exc:
        # curves too short for first:K (Morphling C has two points on its
        # longest curve): hold out fewer points of each
        name, _, k = grouping.partition(":")
        if name != "first" or k == "1" or "holds out no row" not in str(exc):
            raise
        res = refit("first:1")
    test = {i for f in res.folds for i in f.test}
    prof = res.profiles[0]
    kinds = {k.name: k for k in sysm.kinds}
    out = []
    for i, r in enumerate(rows):
        k = kinds[r["__kind__"]]
        spec = curve_spec(k.name)
        pred = k.predict_row(r, prof)
        for c in k.measured:
            m = _measured(r, c)
            if m is None or c == spec["order"]:
                continue
            out.append({"run_kind": k.name, "id": r.get("id", ""), "column": c, "measured": m,
                        "predicted": pred.get(f"pred_{c}"), "lo": pred.get(f"pred_{c}_lo"),
                        "hi": pred.get(f"pred_{c}_hi"), "held_out": i in test,
                        "curve": _curve_name(r, spec["by"]),
                        "x": _num(r, spec["order"]), "x_col": spec["order"]})
    return out, res


def _curve_name(r: Mapping[str, Any], cols: Sequence[str]) -> str:
    """A curve's legend name: its text values, numbers with their column."""
    parts = []
    for c in cols:
        v = str(r.get(c, "") or "").strip()
        if not v:
            continue
        parts.append(f"{c}={v}" if _num(r, c) is not None else v)
    return ", ".join(parts) or "all"


def cv_figure(title: str, xt: str, yt: str, cells: Sequence[Mapping[str, Any]]) -> dict:
    """One curve per configuration: the refitted model (line) with its 90 %
    interval (band), fitted-on points (open circles), held-out points (filled
    diamonds)."""
    xu, yu = _unit_of_title(xt), _unit_of_title(yt)
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
               figs: _Figures) -> Section:
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
        xt = x_title(xc.replace("_", " ")) if xc.replace("_", " ") in _X_TITLE else \
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
        trows.append([kind, label(col), s.unit or "–", fmt(s.n, "points"), _pct(s.median_ape),
                      _pct(s.mean_ape), "–" if s.spearman is None else f"{s.spearman:.3f}",
                      "–" if s.coverage is None else _pct(s.coverage * 100)])
    table = _table(["run kind", "column", "unit", "held-out points", "median APE (%)",
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
            "blocks": ([_grid(blocks)] if blocks else []) + [table]}


# ---- sections -----------------------------------------------------------------------

def system_sections(sysm: System, rows: Sequence[Mapping[str, Any]], prof: Profile, *,
                    figs: _Figures | None = None,
                    cv: tuple[Sequence[Mapping[str, Any]], Any] | None = None) -> list[Section]:
    """Summary, curves, held-out points of the cross-validation (``cv`` =
    :func:`cv_rows`, if given), predicted vs measured, measured cells and profile."""
    from .page import profile_dict
    figs = figs or _Figures()
    meas = [r for r in rows if r.get("kind") == "measured"]
    pred = [r for r in rows if r.get("kind") == "predicted"]
    kinds = {k.name: k for k in sysm.kinds}
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
    series = _series_of(pred)
    flags = sum(1 for r in pred if r.get("flag"))
    all_comps = [c for cs in by_kind.values() for c in cs]
    overall = A.summarize([A.Comparison(c.row, "all", c.measured, c.predicted) for c in all_comps])
    kpis = [_kpi("measured cells", fmt(len(meas), "values"),
                 f"{len({(r['run_kind'], r['id']) for r in meas})} runs in {len(by_kind)} kinds"),
            _kpi("predicted curves", fmt(len(series), "curves"), f"{flags} flagged points"),
            _kpi("median abs. error, all columns", _pct(overall[0].mdape) if overall else "–",
                 f"mean {_pct(overall[0].mape)}" if overall else "",
                 "good" if overall and (overall[0].mdape or 0) <= 10 else
                 "warn" if overall and (overall[0].mdape or 0) <= 20 else "alert"),
            _kpi("profile", prof.name, str(prof.meta.get("fitted_by", "")))]
    summary: list = [{"kind": "kpis", "items": kpis}]
    summary += [{"kind": "text", "text": t} for t in mechanisms(sysm, prof, pred)]
    for k, comps in by_kind.items():
        rk = kinds.get(k)
        trows = []
        for s in A.summarize(comps):
            u = unit_for(s.metric)
            trows.append([label(s.metric), u or "–", fmt(s.n, "points"), _pct(s.mdape),
                          _pct(s.mape), _pct(s.bias, signed=True),
                          _pct(None if s.within10 is None else s.within10 * 100), s.worst or "–"])
        summary.append(_table(
            ["predicted column", "unit", "points", "MdAPE (%)", "MAPE (%)", "bias (%)",
             "within ±10 % (%)", "worst run"], trows,
            numeric=[False, False, True, True, True, True, True, False],
            caption=f"{k}: {rk.description if rk else ''} (data/{k}.csv). MdAPE / MAPE: "
                    "median / mean absolute percentage error; bias: mean signed error "
                    "(positive = over-prediction)."))
    out: list[Section] = [{"id": "summary", "title": "Summary",
                           "intro": f"{sysm.description}. What the model says sets "
                                    "saturation, peak and collapse, and how close it is to "
                                    "the measurements, per run kind.",
                           "blocks": summary}]
    curve_blocks, notes = _curve_blocks(sysm, pred, meas, figs)
    if curve_blocks:
        out.append({"id": "curves", "title": "Measured points on the predicted curves",
                    "intro": "Each colour is one configuration. Legend: solid line = "
                             "predicted over the measured range; dashed = predicted past "
                             "the last measured point; dots = measured runs; ▲ saturation, "
                             "★ peak, ✕ collapse where the model expects them. Click a legend "
                             "entry to hide it.",
                    "blocks": [_grid(curve_blocks)] + [{"kind": "text", "text": n} for n in notes]})
    if cv is not None:
        out.append(cv_section(sysm, cv[0], cv[1], figs))
    parity = []
    for k, comps in by_kind.items():
        for s in A.summarize(comps):
            fig = F.parity(comps, s.metric)
            fig["layout"]["title"]["text"] = F.ptext(f"{k}: {label(s.metric)}")
            parity.append(figs.block(fig, f"{s.n} runs of {k}; error = (predicted − measured) "
                                          "/ measured."))
    if parity:
        out.append({"id": "parity", "title": "Predicted vs measured",
                    "intro": "One panel per run kind and column, each in that column's unit.",
                    "blocks": [_grid(parity)]})
    trows, classes = [], []
    for r in meas:
        u = unit_for(r["column"])
        e = (None if r.get("predicted") is None or r["measured"] == 0 else
             (r["predicted"] - r["measured"]) / abs(r["measured"]) * 100)
        trows.append([r["run_kind"], str(r["id"]), label(r["column"]), fmt(r["measured"], u),
                      fmt(r.get("predicted"), u), _pct(e, signed=True)])
        classes.append("" if e is None else "ok" if abs(e) <= 10 else
                       "warn" if abs(e) <= 20 else "bad")
    if trows:
        out.append({"id": "measured", "title": f"Measured cells ({len(trows)})",
                    "blocks": [_table(["run kind", "run", "column", "measured", "predicted",
                                       "error (%)"], trows,
                                      numeric=[False, False, False, True, True, True],
                                      row_classes=classes,
                                      caption="Green within ±10 %, amber within ±20 %, red "
                                              "beyond. Click a header to sort.")]})
    out.append(profile_section(profile_dict(prof)))
    return out


# ---- public API ---------------------------------------------------------------------

def _system(system: str | System) -> System:
    if isinstance(system, System):
        return system
    if system not in SYSTEMS:
        raise InputError(f"unknown system {system!r}; systems: {', '.join(sorted(SYSTEMS))}",
                         field="system")
    return SYSTEMS[system]


def system_page(system: str | System, rows: Sequence[Mapping[str, Any]] | None = None,
                profile: Profile | None = None, *, data_dir: str | None = None,
                cv: str | None = DEFAULT_CV) -> str:
    """The HTML of one system's page (rows default to :func:`curves`; ``cv`` is
    the cross-validation grouping shown, None for none)."""
    sysm = _system(system)
    prof = sysm.profile(profile)
    if rows is None:
        rows = _rows(sysm, prof, data_dir)
    cvd = cv_rows(sysm, cv, data_dir) if cv and sysm.kinds else None
    return render(system_sections(sysm, rows, prof, cv=cvd), f"System report: {sysm.name}",
                  subtitle=f"{sysm.description} — measured runs against the model's predicted "
                           f"curves (profile {prof.name})",
                  inputs=[f"data/{f}.csv" for f in sysm.data_files])


def write_system_report(system: str | System, path: str | Path,
                        profile: Profile | None = None, *, data_dir: str | None = None,
                        cv: str | None = DEFAULT_CV) -> Path:
    """Write one system's page to ``path``; ``profile`` defaults to the embedded one."""
    return write(path, system_page(system, profile=profile, data_dir=data_dir, cv=cv))


def write_report(system: str, out_dir: str | Path) -> Path:
    """``out_dir/<system>.html`` (kept for callers of the old module)."""
    return write_system_report(system, Path(out_dir) / f"{system}.html")


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m reports.systems",
                                 description="One HTML page per reference system.")
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--system", action="append", default=[],
                    help=f"one of {', '.join(sorted(SYSTEMS))} (repeatable; default all)")
    ap.add_argument("--profile", metavar="TOML", help="a profile file instead of the embedded one")
    ap.add_argument("--cv", default=DEFAULT_CV, metavar="GROUP",
                    help=f"cross-validation grouping shown (default {DEFAULT_CV}; 'none' for none)")
    args = ap.parse_args(argv)
    def action() -> None:
        import time

        from runio.safe_io import output_path
        prof = load_profile(args.profile) if args.profile is not None else None
        names = args.system or sorted(SYSTEMS)
        for name in names:
            _system(name)
        # every input and output before any work: the folder is made if its
        # parent exists (as mkdir would), and each page's path must be writable
        out_dir = Path(args.out)
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError("this is a file; --out takes a folder", source=args.out,
                             field="--out")
        if not out_dir.exists():
            output_path(out_dir, "--out")
            out_dir.mkdir()
        for name in names:
            output_path(out_dir / f"{name}.html", "--out")
        for i, name in enumerate(names, 1):
            # each page refits the system once per cross-validation fold: 5-20 s
            print(f"[{i}/{len(names)}] {name}: predicting every row and cross-validating "
                  f"({args.cv if args.cv != 'none' else 'no cv'}) ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            out = write_system_report(name, Path(args.out) / f"{name}.html", prof,
                                      cv=None if args.cv == "none" else args.cv)
            print(f"[{i}/{len(names)}] wrote {out} in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)

    return run_command(action)


if __name__ == "__main__":
    sys.exit(main())   # run_command clears CPython's Ctrl-C exit mark (exit 130)
