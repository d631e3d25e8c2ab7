"""``python -m sim explain``: the gap between normalized and runtime gain, part by part.

The computation is :func:`model.explain.explain` (mechanisms of the rack
model switched off alone, cumulatively and all together; optional Shapley
values). This module prints it as a table with units and a few sentences,
and writes it with ``--out`` as an HTML page with the waterfall chart, or as
JSON or CSV (by extension).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from model.errors import InputError
from model.json_values import finite_or_none
from runio.safe_io import REPORT_TYPES, output_type


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="why the runtime gain falls short of the normalized gain "
                                       "(a waterfall of mechanisms)",
                       description="Split the gap between the normalized (workload-only) gain "
                                   "and the runtime gain of the cache into the rack model's "
                                   "mechanisms, each switched off in turn.")
    p.add_argument("--scenario", metavar="FILE.toml",
                   help="scenario TOML (default: the embedded FarReach rack)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. servers=32 (repeatable)")
    p.add_argument("--profile", metavar="NAME|FILE.toml",
                   help="calibrated profile (default: embedded 'tofino-testbed')")
    p.add_argument("--shapley", action="store_true",
                   help="also compute Shapley values (every subset of mechanisms: slower)")
    p.add_argument("--out", metavar="FILE.html|.json|.csv", help="also write the waterfall")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def run(args) -> int:
    from model.explain import explain
    from .main import check_outputs, load_inputs
    check_outputs(args, out_types=REPORT_TYPES)
    sc, profile = load_inputs(args)
    ex = explain(sc, profile, shapley=args.shapley)
    if args.json:
        print(json.dumps(finite_or_none(ex.to_dict()), indent=1))
    else:
        print(format_explanation(ex, sc, profile.name))
    if args.out:
        write_explanation(ex, args.out, sc)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def format_explanation(ex, sc=None, profile_name: str = "") -> str:
    lines = []
    if sc is not None:
        lines.append(f"explain '{sc.name}': {sc.servers.count} servers, {sc.clients.threads} "
                     f"client threads, {sc.switch.mode} cache of {sc.switch.cache_keys:,} keys "
                     f"vs NoCache; analytic model, profile '{profile_name}'")
    lines += [
        "",
        f"  normalized gain  {ex.normalized_x:8.3f} x   what the workload allows "
        "(max NoCache share / max cached share)",
        f"  runtime gain     {ex.runtime_x:8.3f} x   {ex.cache_mops:.4f} MOPS with the cache / "
        f"{ex.nocache_mops:.4f} MOPS without",
        f"  gap              {ex.gap_x:8.3f} x   about {ex.gap_mops:.4f} MOPS at today's NoCache "
        "throughput",
        "",
    ]
    sh = ex.shapley
    head = ["part", "present", "alone off", "cumulative"] + (["Shapley"] if sh else []) + \
        ["share of gap"]
    units = ["", "", "x gain", "x gain"] + (["x gain"] if sh else []) + ["% (alone)"]
    rows = []
    pct = (lambda v: f"{100 * v / ex.gap_x:+.0f}") if abs(ex.gap_x) > 1e-12 else (lambda v: "–")
    for p in ex.parts:
        rows.append([p.label, "yes" if p.present else "no", f"{p.alone_x:+.4f}",
                     f"{p.cumulative_x:+.4f}"] + ([f"{p.shapley_x:+.4f}"] if sh else [])
                    + [pct(p.alone_x)])
    rows.append(["interactions (all off, beyond the alone parts)", "", f"{ex.interactions_x:+.4f}",
                 ""] + ([""] if sh else []) + [pct(ex.interactions_x)])
    rows.append([f"too few clients ({ex.threads:,} of {ex.ideal_threads:,} threads)", "",
                 f"{ex.closed_loop_x:+.4f}", f"{ex.closed_loop_x:+.4f}"]
                + ([f"{ex.closed_loop_x:+.4f}"] if sh else []) + [pct(ex.closed_loop_x)])
    rows.append(["remainder (numerical)", "", f"{ex.remainder_x:+.5f}", f"{ex.remainder_x:+.5f}"]
                + ([f"{ex.remainder_x:+.5f}"] if sh else []) + [pct(ex.remainder_x)])
    rows.append(["total = gap", "", f"{ex.gap_x:+.4f}", f"{ex.gap_x:+.4f}"]
                + ([f"{ex.gap_x:+.4f}"] if sh else []) + ["+100"])
    widths = [max(len(h), len(u), *(len(r[i]) for r in rows)) for i, (h, u) in
              enumerate(zip(head, units))]

    def line(cells):
        return "  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines += [line(head), line(units)]
    for r in rows[:-1]:
        lines.append(line(r))
    lines.append("  " + "-" * (sum(widths) + 2 * (len(widths) - 1)))
    lines.append(line(rows[-1]))
    lines.append("")
    lines += ["  " + s for s in ex.sentences()]
    lines.append(f"  bottleneck with the cache: {ex.bottleneck}")
    lines.append(f"  bottleneck without it:     {ex.nocache_bottleneck}")
    lines.append(f"  ({ex.configurations} racks solved; positive = costs the cache gain, "
                 "negative = costs NoCache more)")
    return "\n".join(lines)


def write_explanation(ex, path: str, sc=None) -> Path:
    from runio.safe_io import atomic_write, write_text
    p = Path(path)
    ext = output_type(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if ext in (".html", ".htm"):
            from reports.questions import write_explain_page
            write_explain_page(ex, p, scenario=sc.to_dict() if sc is not None else None)
        elif ext == ".json":
            write_text(p, json.dumps(finite_or_none(ex.to_dict()), indent=1) + "\n")
        else:
            with atomic_write(p) as fh:
                w = csv.writer(fh)
                w.writerow(["part", "key", "present", "alone_x", "cumulative_x", "shapley_x"])
                for q in ex.parts:
                    w.writerow([q.label, q.key, q.present, f"{q.alone_x:.6g}",
                                f"{q.cumulative_x:.6g}",
                                "" if q.shapley_x is None else f"{q.shapley_x:.6g}"])
                w.writerow(["interactions", "interactions", "", f"{ex.interactions_x:.6g}", "", ""])
                w.writerow(["too few clients", "closed_loop", "", f"{ex.closed_loop_x:.6g}",
                            f"{ex.closed_loop_x:.6g}", f"{ex.closed_loop_x:.6g}" if ex.shapley else ""])
                w.writerow(["remainder", "remainder", "", f"{ex.remainder_x:.6g}",
                            f"{ex.remainder_x:.6g}", f"{ex.remainder_x:.6g}" if ex.shapley else ""])
                w.writerow(["gap", "gap", "", f"{ex.gap_x:.6g}", f"{ex.gap_x:.6g}",
                            f"{ex.gap_x:.6g}" if ex.shapley else ""])
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=str(p), field="--out") from None
    return p
