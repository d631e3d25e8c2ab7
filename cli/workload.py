"""``python -m sim workload`` and ``python -m sim workload-fit`` (docs/workload.md).

``workload``: hit ratio, per-server shares with and without the cache and
normalized throughput for the scenario's generator, partitioning and cache
(same ``--scenario`` / ``--set`` as ``predict``), or for a workload profile,
a measured description or a key trace.

``workload-fit``: fit the lab workload profile from runs CSVs and report how
well it explains the observations it was not fitted on.

Bad input exits with code 2 and one located message (``run_command``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from runio.exits import at_least
from runio.inputs import load_scenario
from runio import workload_files


def add_parsers(sub) -> None:
    w = sub.add_parser("workload", help="workload alone: hit ratio, per-server shares, normalized throughput")
    w.add_argument("--scenario", metavar="FILE.toml",
                   help="scenario TOML (default: the embedded FarReach rack)")
    w.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. servers=32 or switch.partition=hash")
    src = w.add_mutually_exclusive_group()
    src.add_argument("--workload-profile", metavar="NAME|FILE.toml",
                     help="workload profile (embedded: lab); default: the scenario's workload.profile")
    src.add_argument("--measured", metavar="FILE.toml|FILE.json",
                     help="measured per-server load ratios and hit ratio (TOML, or FarReach's "
                          "client statistics JSON)")
    src.add_argument("--trace", metavar="FILE", help="key trace: one request per line")
    w.add_argument("--hot-records", type=at_least(1, int), default=10_000, metavar="N",
                   help="keys per server counted in the hot fractions (default 10000)")
    w.add_argument("--json", action="store_true", help="print one JSON object")

    f = sub.add_parser("workload-fit", help="fit the lab workload profile from runs CSVs")
    f.add_argument("--runs", action="append", default=[], metavar="RUNS.csv",
                   help="FarReach runs / breakdown CSV (repeatable)")
    f.add_argument("--fit-on", choices=("all", "hit", "split"), default="all",
                   help="observations to fit: 1-server hit ratios, per-server splits, or both")
    f.add_argument("--theta", type=float, default=0.99, help="zipf constant (fixed)")
    f.add_argument("--partition", choices=("range", "range-even", "hash"), default="range",
                   help="partitioning the runs used (default: range)")
    f.add_argument("--out", metavar="PROFILE.toml", help="write the fitted profile")
    f.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    from model.errors import InputError
    if args.command == "workload-fit":
        return _fit(args)
    from model import workload
    from model.scenario import Scenario
    sc = load_scenario(args.scenario) if args.scenario is not None else Scenario.default()
    sc = sc.with_overrides(args.sets)
    if args.hot_records < 1:
        raise InputError("must be at least 1", field="--hot-records")
    source = None
    if args.workload_profile or args.measured or args.trace:
        from model import workload_sources as ws
        layout = workload.stock_spec(sc.workload).layout
        if args.workload_profile:
            import os
            if os.path.exists(args.workload_profile) and not args.workload_profile.endswith(".toml"):
                raise InputError("a workload profile is a .toml file (key traces go to --trace, "
                                 "measured descriptions to --measured)",
                                 source=args.workload_profile, field="--workload-profile")
            source = ws.load_source(args.workload_profile, layout=layout)
            if not isinstance(source, ws.WorkloadProfile):
                raise InputError("not a workload profile (use --measured or --trace)",
                                 source=args.workload_profile, field="--workload-profile")
        elif args.measured:
            source = ws.load_source(args.measured, layout=layout)
            if not isinstance(source, ws.MeasuredWorkload):
                raise InputError("not a measured description: a TOML with hit_ratio and "
                                 "load_ratio, or FarReach's statistics JSON", source=args.measured,
                                 field="--measured")
        else:
            source = workload_files.trace(args.trace, layout)
    res = workload.evaluate_scenario(sc, source, hot_records=args.hot_records)
    if args.json:
        d = res.to_dict()
        d["scenario"] = {"name": sc.name, "servers": sc.servers.count,
                         "cache": sc.switch.cache, "mode": sc.switch.mode,
                         "cache_keys": sc.switch.cache_keys,
                         "distribution": sc.workload.distribution,
                         "zipf_theta": sc.workload.zipf_theta, "records": sc.workload.records,
                         "generator": sc.workload.generator,
                         "insertorder": sc.workload.insertorder}
        print(json.dumps(d, indent=1))
    else:
        print(format_table(res, sc))
    return 0


def _pct(v: float) -> str:
    return f"{100 * v:8.3f}" if math.isfinite(v) else f"{'?':>8}"


def format_table(res, sc) -> str:
    x = res.normalized_x
    lines = [
        f"workload '{res.source}', {res.servers} servers, partition {res.partition}, "
        f"cache {'on' if sc.switch.cache else 'off'} ({res.cached_keys:,} keys"
        f"{', read-only' if sc.switch.mode == 'read-only' and sc.switch.cache else ''})",
        "",
        f"  cache hit ratio      {100 * res.hit_ratio:.2f} %",
        f"  normalized thrpt     {x:.3f} x over NoCache" if math.isfinite(x) else
        "  normalized thrpt     unknown",
        f"  idle servers         {int((res.shares_nocache == 0).sum())}",
        f"  tolerance            ±{res.tolerance:.1e} (absolute, on shares and hit ratio)",
    ]
    lines += [f"  note                 {n}" for n in res.notes]
    lines += ["", f"  {'server':>6}  {'share %':>8}  {'nocache %':>9}  {'hot %':>7}"]
    for i in range(res.servers):
        lines.append(f"  {i:>6}  {_pct(res.shares[i])}  {_pct(res.shares_nocache[i]):>9}  "
                     f"{100 * res.server_hot_fraction[i]:7.2f}")
    return "\n".join(lines)


def _fit(args) -> int:
    from model import workload_fit as wf
    from model.errors import InputError
    if not args.runs:
        raise InputError("give at least one runs CSV", field="--runs")
    if not 0 <= args.theta <= 5:
        raise InputError("must be within [0, 5]", field="--theta")
    if args.out is not None:
        from runio.safe_io import output_path
        output_path(args.out, "--out", args.runs, types=(".toml",))
    from runio.inputs import read_observations
    obs = read_observations(args.runs)
    kw = dict(partition=args.partition)
    main = wf.fit(obs, theta=args.theta, fit_on=args.fit_on, **kw)
    cross = {}
    for other in ("hit", "split"):
        if other != args.fit_on and any(o.kind == other for o in obs):
            cross[f"fit_on_{other}"] = wf.fit(obs, theta=args.theta, fit_on=other, **kw)
    command = "python -m sim workload-fit " + " ".join(
        [f"--runs {r}" for r in args.runs] + ([f"--fit-on {args.fit_on}"] if args.fit_on != "all" else [])
        + ([f"--theta {args.theta}"] if args.theta != 0.99 else [])
        + ([f"--out {args.out}"] if args.out else []))
    if args.out:
        text = wf.profile_toml(main, command=command, runs=list(args.runs), cross=cross)
        from runio.safe_io import write_text
        write_text(args.out, text)
        print(f"profile written to {args.out}", file=sys.stderr)

    def rows(r):
        return [{"kind": o.kind, "servers": o.servers, "cache": o.cache, "rows": list(o.rows),
                 "measured": [round(v, 4) for v in o.value],
                 "predicted": [round(float(v), 4) for v in p], "fitted": o in r.used}
                for o, p in r.checks]
    if args.json:
        print(json.dumps({"theta": main.theta, "items": main.items, "fit_on": main.fit_on,
                          "cost": main.cost, "observations": rows(main),
                          "cross": {k: {"items": v.items, "observations": rows(v)}
                                    for k, v in cross.items()}}, indent=1))
        return 0
    print(f"lab workload: zipf {main.theta} over items = {main.items:.4g} keys "
          f"(rank-ordered, synthetic key layout, {args.partition} partitioning), fitted on "
          f"{main.fit_on}; cost {main.cost:.3f}")
    for name, r in [("this fit", main)] + list(cross.items()):
        print(f"\n  {name}: items = {r.items:.4g}")
        for d in rows(r):
            tag = "fitted" if d["fitted"] else "check "
            print(f"    {tag} {d['kind']:<10} {d['servers']:>2} srv {'cache' if d['cache'] else 'nocache':<7}"
                  f" {','.join(d['rows'][:3]):<16} measured {d['measured']}  predicted {d['predicted']}")
    return 0
