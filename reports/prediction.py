"""The sections of a prediction: headline, bottleneck, then the raw details.

In the order a reader needs them:

1. *Prediction*: the headline numbers, each with its unit, and the
   throughput with its interval (the profile's 90 % prediction interval when
   the solver attached one, the confidence interval of the simulated mean
   for a simulation);
2. *Bottleneck*: what limits the rack (the model's structured bottleneck),
   what that means, and where each server's time goes;
3. collapsed, last: per-server numbers, the solver's extras, the scenario
   and the profile with provenance.

Counters per run (packet loss, false positives) say what a run is: the
scenario's ``workload.queries_m``.
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Mapping

from . import analysis as A
from . import figures as F
from .blocks import Figures, Section, callout, grid, kpi, section, table, text
from .inputs import check_prediction, check_profile
from .units import fmt, num, shown_unit, unit_for


def prediction_sections(pred: Mapping[str, Any], scenario: Mapping[str, Any] | None = None,
                        profile: Mapping[str, Any] | None = None, *,
                        figs: Figures | None = None) -> list[Section]:
    """Headline, bottleneck, per-server numbers, extras, scenario and profile."""
    check_prediction(dict(pred))
    if profile is not None:
        check_profile(profile)
    figs = figs or Figures()
    out = [headline_section(pred, scenario), bottleneck_section(pred, figs),
           run_section(pred, figs), servers_section(pred), details_section(pred)]
    if scenario:
        out.append(scenario_section(scenario))
    if profile:
        out.append(profile_section(profile))
    return [s for s in out if s is not None]


# ---- headline -------------------------------------------------------------------

def run_size(scenario: Mapping[str, Any] | None) -> str | None:
    """What one run is, e.g. "10 M queries" (None without a scenario)."""
    q = ((scenario or {}).get("workload") or {}).get("queries_m")
    return f"{num(q)} M queries" if A.is_num(q) else None


def per_run(scenario: Mapping[str, Any] | None) -> str:
    r = run_size(scenario)
    return f"per run of {r}" if r else "per run"


def throughput_interval(pred: Mapping[str, Any]) -> str:
    """The throughput's interval in words, or why there is none."""
    d = pred.get("details") or {}
    iv = d.get("throughput_interval")
    if isinstance(iv, Mapping) and A.is_num(iv.get("lo_mops")) and A.is_num(iv.get("hi_mops")):
        level = iv.get("level", 0.9)
        return (f"{100 * level:.0f} % interval {num(iv['lo_mops'])} – "
                f"{fmt(iv['hi_mops'], 'MOPS')}: where a new run is expected")
    tl = d.get("timeline")
    if isinstance(tl, list) and tl:
        thr = [r.get("throughput_mops") for r in tl if isinstance(r, Mapping)]
        half = A.mean_interval(thr)
        if half is not None:
            dt = A.sample_step([r["t_s"] for r in tl if A.is_num(r.get("t_s"))])
            return (f"± {fmt(half, 'MOPS', digits=2)}: 95 % confidence interval of the simulated "
                    f"mean ({len(thr)} samples of {num(dt)} s)")
    return "no interval: the profile carries no fitted uncertainty"


def _latency_note(pred: Mapping[str, Any]) -> str:
    return "mean response time per request (Little's law: client threads / throughput)"


def _percentile_kpi(pred: Mapping[str, Any]) -> list[dict]:
    """p50 / p95 / p99 of the client latency, with their intervals where the
    prediction has them (the simulator's: of the requests it completed)."""
    d = pred.get("details") or {}
    p = d.get("latency_us_percentiles") or {}
    keys = [k for k in ("p50", "p95", "p99") if A.is_num(p.get(k))]
    if not keys:
        return []
    iv = d.get("latency_us_percentile_intervals") or {}
    if iv:
        note = "; ".join(f"{k} {num(iv[k]['lo_us'])} – {fmt(iv[k]['hi_us'], 'µs')}"
                         for k in keys if k in iv) + " (90 % intervals)"
    elif pred.get("engine") == "sim":
        note = "of the requests the simulation completed"
    else:
        note = "no interval: the profile carries no fitted uncertainty"
    return [kpi("latency " + " / ".join(keys), " / ".join(num(p[k]) for k in keys) + " µs",
                note)]


def _counter_note(pred: Mapping[str, Any], key: str, scenario) -> str:
    """Counters are per run; a simulation also says what it counted itself."""
    d = pred.get("details") or {}
    raw, secs = d.get(f"{key}_sim"), d.get("simulated_s")
    note = per_run(scenario)
    if A.is_num(raw) and A.is_num(secs):
        note += f" (scaled from {num(raw)} in the {num(secs)} s simulated)"
    return note


def headline_kpis(pred: Mapping[str, Any], scenario: Mapping[str, Any] | None) -> list[dict]:
    client = pred.get("client") or {}
    n = len(pred.get("servers") or [])
    return [
        kpi("throughput", fmt(pred["throughput_mops"], "MOPS"), throughput_interval(pred)),
        kpi("client latency", fmt(client.get("latency_us"), "µs"), _latency_note(pred)),
        *_percentile_kpi(pred),
        kpi("cache hit ratio", fmt(pred["cache_hit_ratio"], "fraction"),
            "of requests answered by the switch"),
        kpi("normalized gain", fmt(pred["normalized_x"], "×"),
            "the gain the workload allows the cache over NoCache (max NoCache share / max "
            "cached share); the rack's own gain: sim explain"),
        kpi("packet loss", fmt(pred.get("pktloss", 0.0), unit_for("pktloss")),
            _counter_note(pred, "pktloss", scenario)),
        kpi("resends", fmt(pred.get("false_pos", 0.0), "packets"),
            _counter_note(pred, "false_pos", scenario) + " (the notes' false positives: each "
            "loss, and each reply slower than the timeout)"),
        kpi("write stalls", fmt(pred.get("stall_fraction", 0.0), "fraction"),
            "of worker time, writes stopped or blocked"),
        kpi("client send", fmt(client.get("send_us"), "µs"), "per request"),
        kpi("servers", fmt(n, "workers"), f"engine: {pred.get('engine', '?')}"),
    ]


def headline_section(pred: Mapping[str, Any], scenario: Mapping[str, Any] | None) -> Section:
    return section("prediction", "Prediction", [{"kind": "kpis", "items": headline_kpis(pred, scenario)}],
                   f"Engine: {pred.get('engine', '?')}. Every number is for the whole rack "
                   "unless it says per server or per request.")


# ---- bottleneck -------------------------------------------------------------------

_KIND_TITLE = {"server": "the servers", "clients": "too few clients", "timeouts": "timeouts",
               "write-stall": "write stalls", "wal-switch": "WAL switches",
               "cores": "CPU cores"}


def bottleneck_section(pred: Mapping[str, Any], figs: Figures) -> Section:
    kind = A.bottleneck_kind(pred)
    blocks: list = [callout(A.bottleneck_text(pred))]
    meaning = A.bottleneck_meaning(pred)
    if meaning:
        blocks.append(text(meaning))
    blocks.append(grid([figs.block(F.server_breakdown(pred),
                                   "Wait is idle time plus the receive call between requests; "
                                   "process is receive to reply sent. A saturated worker waits "
                                   "only the receive floor. The bottleneck is outlined in red."),
                        figs.block(F.server_shares(pred))]))
    title = "Bottleneck" + (f": {_KIND_TITLE[kind]}" if kind in _KIND_TITLE else "")
    return section("bottleneck", title, blocks,
                   "What limits throughput, as the model classifies it, and where each "
                   "server's time goes.")


# ---- the run as RocksDB moves it -------------------------------------------------------

def trajectory_rows(pred: Mapping[str, Any]) -> list[dict]:
    """The predicted run per second, as timeline rows (``t_s`` the end of the
    second, its throughput, the share of it the writes were stopped)."""
    traj = (pred.get("details") or {}).get("trajectory") or {}
    per_s = traj.get("per_second_mops") or []
    stopped = [0.0] * len(per_s)
    for ph in traj.get("phases") or []:
        if ph.get("kind") != "stop" or not A.is_num(ph.get("seconds")):
            continue
        a, b = ph["start_s"], ph["start_s"] + ph["seconds"]
        k = int(a)
        while k < len(per_s) and k < b:
            stopped[k] += min(b, k + 1) - max(a, k)
            k += 1
    return [{"t_s": float(k + 1), "throughput_mops": v, "stalled_frac": min(1.0, stopped[k])}
            for k, v in enumerate(per_s)]


def run_section(pred: Mapping[str, Any], figs: Figures) -> Section | None:
    """The predicted throughput of the run second by second with its write
    stops shaded, and what RocksDB's LOG would show per worker."""
    d = pred.get("details") or {}
    lsm = d.get("lsm")
    rows = trajectory_rows(pred)
    if not lsm or not rows:
        return None
    phases = (d.get("trajectory") or {}).get("phases") or []
    kinds = {k: sum(p["seconds"] for p in phases if p.get("kind") == k)
             for k in ("run", "slow", "stop")}
    blocks: list = [text(
        f"The run takes {fmt(lsm.get('run_s'), 's')} in {len(phases)} phases: writes flowing "
        f"{fmt(kinds['run'], 's')}, slowed by RocksDB {fmt(kinds['slow'], 's')}, stopped "
        f"{fmt(kinds['stop'], 's')}. Each phase is served at the rate the rack has in that "
        "state of its RocksDB instances; the run's throughput is its queries over the sum of "
        "its phase times.")]
    blocks.append(figs.block(F.timeline_throughput(rows, dict(pred)),
                             "Predicted throughput per second (a phase's rate spread over the "
                             "seconds it covers); shaded: seconds with writes stopped."))
    cols = [("memtables", "memtables sealed"), ("flushes", "flushes"),
            ("compactions", "compactions"), ("stop_s", "stopped (s)"), ("slow_s", "slowed (s)"),
            ("l0_files_end", "L0 files at the end"),
            ("pending_compaction_mib_end", "pending compaction at the end (MiB)")]
    n = len(lsm.get("memtables") or [])
    table_rows = [[f"server {i}"] + [num(lsm[k][i]) if k in lsm else "–" for k, _ in cols]
                  for i in range(n)]
    blocks.append(table(["server"] + [c for _, c in cols], table_rows,
                        numeric=[False] + [True] * len(cols),
                        caption="Per worker, what RocksDB's LOG would show for this run."))
    return section("run", "The run, as RocksDB moves it", blocks,
                   "Memtables filled, flushes, compactions and write stalls over the run, "
                   "predicted from the database's state when the run starts.")


# ---- raw details (collapsed) ----------------------------------------------------------

def servers_section(pred: Mapping[str, Any]) -> Section:
    b = A.bottleneck_servers(pred)
    rows, classes = [], []
    for i, s in enumerate(pred["servers"]):
        cyc = s["wait_us"] + s["process_us"]
        rows.append([f"server {i}" + (" ◀ bottleneck" if i in b else ""),
                     fmt(s["share"], "fraction"), fmt(s.get("share_nocache", 0.0), "fraction"),
                     fmt(s["utilization"], "fraction"), fmt(s["wait_us"], "µs"),
                     fmt(s["process_us"], "µs"), fmt(1.0 / cyc if cyc > 0 else None, "MOPS")])
        classes.append("hl" if i in b else "")
    return section("servers", f"Per-server numbers ({len(rows)} workers)", [table(
        ["server", "share with cache (%)", "share without cache (%)", "utilisation (%)",
         "wait (µs)", "process (µs)", "own rate 1/(wait+process) (MOPS)"], rows,
        numeric=[False] + [True] * 6, row_classes=classes,
        caption="One row per worker thread; the bottleneck rows are highlighted.")],
        collapsed=True)


def details_section(pred: Mapping[str, Any]) -> Section | None:
    details = pred.get("details") or {}
    if not details:
        return None
    rows = [[k, detail_value(k, v), shown_unit(unit_for(k)) or "–"]
            for k, v in sorted(flatten(details).items())]
    return section("details", f"Solver details ({pred.get('engine', '?')})",
                   [table(["detail", "value", "unit"], rows,
                          caption="Solver-specific extras; units from the key names. "
                                  "Lists are summarised.")], collapsed=True)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and len(out) < 500:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def detail_value(key: str, v: Any) -> str:
    """One extra as text: numbers with units, lists summarised, never a raw repr."""
    unit = unit_for(key)
    if isinstance(v, (list, tuple)):
        nums = [x for x in v if A.is_num(x)]
        if v and len(nums) == len(v):
            if len(v) <= 4:
                return fmt(list(v), unit)
            lo, hi = fmt(min(nums), unit), fmt(max(nums), unit)
            return (f"{len(v)} values, all {lo}" if lo == hi else
                    f"{len(v)} values: {lo} … {hi}, mean {fmt(statistics.fmean(nums), unit)}")
        if v and all(isinstance(x, Mapping) for x in v):
            short = json.dumps(v, default=str)
            return short if len(short) <= 120 else f"{len(v)} entries"
        return json.dumps(v, default=str)[:200]
    if isinstance(v, str):
        return v[:200]
    return fmt(v, unit)


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
            rows.append([f"{sec}.{key}", fmt(v, unit) if not isinstance(v, bool)
                         else ("true" if v else "false"), shown_unit(unit) or "–",
                         md.get("doc", "")])
    return section("scenario", f"Scenario: {scenario.get('name', 'unnamed')}",
                   [table(["setting", "value", "unit", "meaning"], rows)],
                   "What was modelled. Units and meanings come from the scenario "
                   "declarations (model/scenario.py).", collapsed=True)


def profile_section(profile: Mapping[str, Any]) -> Section:
    """Every calibrated parameter with value, unit, standard error and source."""
    params = profile.get("params") or {}
    rows = []
    for k in sorted(params):
        p = params[k]
        unit = p.get("unit") or ""
        se = p.get("stderr")
        rows.append([k, fmt(p.get("value"), unit), shown_unit(unit) or "–",
                     "–" if se is None else f"± {fmt(se, unit)}", p.get("source") or "–"])
    meta = profile.get("meta") or {}
    blocks: list = []
    if meta:
        blocks.append(table(["meta", "value"], [[k, str(v)] for k, v in meta.items()],
                            sortable=False))
    blocks.append(table(["parameter", "value", "unit", "std. error", "source (provenance)"], rows))
    name = profile.get("name") or meta.get("name") or "unnamed"
    return section("profile", f"Profile: {name}", blocks,
                   "The calibrated numbers used, each with its unit and where it came from.",
                   collapsed=True)
