"""The page of a server-rotation prediction (``predict --measure rotation --html``).

A rotation is a measurement, not a rack (docs/model.md, "Server rotation"):
the headline is the aggregate throughput FarReach's statistics script would
report, with its interval; the figure shows what each partition adds to it
(switch hits and server replies), the bottleneck partition marked; the raw
numbers, the scenario and the profile follow, collapsed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from model.errors import InputError

from . import analysis as A
from .blocks import Figures, Section, kpi, section, table, text
from .figures import BOTTLENECK_COLOR, PROCESS_COLOR, layout
from .page import render, write
from .prediction import profile_section, scenario_section
from .units import fmt, num

_NEEDED = ("servers", "bottleneck", "throughput_mops", "normalized_x", "cache_hit_ratio",
           "partition_mops", "partition_server_mops", "rotations")


def _check(rot: Mapping[str, Any]) -> None:
    missing = [k for k in _NEEDED if k not in rot]
    if missing:
        raise InputError(f"not a server-rotation result: missing {', '.join(missing)}",
                         field="rotation")
    if len(rot["partition_mops"]) != rot["servers"]:
        raise InputError("one partition_mops entry per server is needed", field="partition_mops")


def _interval(rot: Mapping[str, Any]) -> str:
    iv = (rot.get("details") or {}).get("throughput_interval")
    if isinstance(iv, Mapping) and A.is_num(iv.get("lo_mops")) and A.is_num(iv.get("hi_mops")):
        return (f"{100 * iv.get('level', 0.9):.0f} % interval {num(iv['lo_mops'])} – "
                f"{fmt(iv['hi_mops'], 'MOPS')}: where a new rotation run is expected")
    return "no interval (a simulation, or --no-intervals)"


def partition_figure(rot: Mapping[str, Any]) -> dict:
    """Each partition's part of the aggregate: server replies and switch hits."""
    n = rot["servers"]
    names = [str(i) for i in range(n)]
    server = list(rot["partition_server_mops"])
    hits = [max(0.0, t - s) for t, s in zip(rot["partition_mops"], server)]
    b = int(rot["bottleneck"])
    data = [
        {"type": "bar", "name": "server replies (MOPS)", "x": names, "y": server,
         "marker": {"color": PROCESS_COLOR,
                    "line": {"color": [BOTTLENECK_COLOR if i == b else PROCESS_COLOR
                                       for i in range(n)],
                             "width": [3 if i == b else 0 for i in range(n)]}},
         "hovertemplate": "partition %{x}: %{y:.4g} MOPS<extra>server replies</extra>"},
        {"type": "bar", "name": "switch hits (MOPS)", "x": names, "y": hits,
         "marker": {"color": "#cbd5e0"},
         "hovertemplate": "partition %{x}: %{y:.4g} MOPS<extra>switch hits</extra>"},
    ]
    lay = layout("What each partition adds to the aggregate", "partition (logical server)",
                 "throughput (MOPS)", barmode="stack")
    lay["xaxis"]["type"] = "category"
    return {"data": data, "layout": lay}


def rotation_sections(rot: Mapping[str, Any], scenario: Mapping[str, Any] | None = None,
                      profile: Mapping[str, Any] | None = None, *,
                      figs: Figures | None = None) -> list[Section]:
    _check(rot)
    figs = figs or Figures()
    d = rot.get("details") or {}
    head = section("rotation", "Server rotation", [{"kind": "kpis", "items": [
        kpi("aggregate throughput", fmt(rot["throughput_mops"], "MOPS"), _interval(rot)),
        kpi("normalized throughput", fmt(rot["normalized_x"], "×"),
            "aggregate over the largest partition's server throughput"),
        kpi("cache hit ratio", fmt(rot["cache_hit_ratio"], "fraction"),
            "of requests answered by the switch"),
        kpi("bottleneck partition", f"{rot['bottleneck']}",
            f"alone: {fmt(d.get('bottleneck_alone_mops'), 'MOPS')}, process "
            f"{fmt(d.get('bottleneck_alone_process_us'), 'µs')}"),
        kpi("rotations", fmt(rot["rotations"], "racks"),
            f"{rot['servers']} partitions; engine: {rot.get('engine', '?')}"),
    ]}], "As FarReach's static-pattern experiments measure a rack: the bottleneck "
         "partition alone, then beside each other partition in turn, each rotation's "
         "throughput stitched together by its statistics script. Only two workers ever "
         "run at once, so this is not the throughput of all of them running together.")
    fig = section("partitions", "Partitions", [
        figs.block(partition_figure(rot), "Stacked: server replies and switch hits of each "
                   "partition, scaled as the script does; they add up to the aggregate. "
                   "The bottleneck partition is outlined in red."),
        text("A partition with no requests (the public range split leaves half the servers "
             "without keys) is not rotated and adds nothing.")])
    rows = [[f"partition {i}" + (" ◀ bottleneck" if i == rot["bottleneck"] else ""),
             fmt(t, "MOPS"), fmt(s, "MOPS")]
            for i, (t, s) in enumerate(zip(rot["partition_mops"], rot["partition_server_mops"]))]
    raw = section("partition-table", f"Per-partition numbers ({rot['servers']} partitions)",
                  [table(["partition", "throughput (MOPS)", "server replies (MOPS)"], rows,
                         numeric=[False, True, True])], collapsed=True)
    out = [head, fig, raw]
    if scenario:
        out.append(scenario_section(scenario))
    if profile:
        out.append(profile_section(profile))
    return out


def write_rotation_report(rot: Mapping[str, Any], scenario: Mapping[str, Any] | None,
                          profile: Mapping[str, Any] | None, path: str | Path, *,
                          title: str | None = None) -> Path:
    """One server-rotation result (``Rotation.to_dict()``) as an HTML page."""
    name = (scenario or {}).get("name")
    sections = rotation_sections(rot, scenario, profile)
    return write(path, render(sections, title or (f"Server rotation: {name}" if name
                                                  else "Server rotation")))
