"""Command line: ``python -m sim predict``, ``simulate``, ``workload``, ``workload-fit``,
``sweep`` (cli/sweep.py), ``explain`` (cli/explain.py), ``tune`` (cli/tune.py)
and ``scenario show``.

Bad input (scenario keys, --set values, profiles, runs CSVs) prints one
message naming the file, line and field, and exits with code 2. Long work
(``simulate``, ``predict --engine sim``, ``predict --runs``) shows progress
and stops on Ctrl-C with exit code 130, its output marked partial
(:mod:`runio.progress`); ``predict`` of one rack shows its racks solved (the
centre and sigma points of its interval) when that takes a while.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

from runio.exits import ArgumentParser, arg, at_least, run_command
from model.errors import InputError
from model.json_values import finite_or_none
from runio.safe_io import output_path
from model.prediction import Prediction
from model.profile import Profile
from model.scenario import Scenario

from runio.progress import Interrupted, add_flag, partial_text, wanted
from runio.inputs import load_profile, load_scenario
from runio.notes import note, scenario_notes

DEFAULT_PROFILE = "tofino-testbed"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", metavar="FILE.toml",
                   help="scenario TOML (default: the embedded FarReach rack)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. servers=32 or storage.memtable_mb=16")
    p.add_argument("--profile", metavar="NAME|FILE.toml",
                   help=f"calibrated profile (default: embedded {DEFAULT_PROFILE!r})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="OUT.html", help="also write an HTML report")
    p.add_argument("--list-profiles", action="store_true",
                   help="list the embedded profiles (name, what they model, the run kinds "
                        "that use them, how they were fitted) and exit")
    add_flag(p)


#: Commands that live in their own modules (each has ``run(args)``), and the
#: function there that adds their parsers: imported only when the command is
#: used or the whole command line is listed (``predict`` should not pay for
#: ``sweep``'s imports).
_OWN_PARSERS = {
    "workload": ("workload", "add_parsers"), "workload-fit": ("workload", "add_parsers"),
    "sweep": ("sweep", "add_parser"), "explain": ("explain", "add_parser"),
    "tune": ("tune", "add_parser"), "scenario": ("scenario", "add_parsers"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (``predict``, ``sweep``, ...)
    only that command's part of it, which parses that command the same way."""
    import importlib
    ap = ArgumentParser(prog="python -m sim",
                                 description="Predict key-value rack performance.")
    sub = ap.add_subparsers(dest="command", required=True)
    if command in _OWN_PARSERS:
        mod, fn = _OWN_PARSERS[command]
        getattr(importlib.import_module(f"{__package__}.{mod}"), fn)(sub)
        return ap
    p = sub.add_parser("predict", help="analytic prediction (or --engine sim)")
    _common(p)
    p.add_argument("--engine", choices=("analytic", "sim"), default="analytic")
    p.add_argument("--runs", metavar="RUNS.csv", help="batch: predict every row of a runs CSV")
    p.add_argument("--out", metavar="OUT.csv", help="batch output CSV (with --runs)")
    p.add_argument("--seconds", type=arg("seconds"), default=None,
                   help="--engine sim: simulate at most the run's first SECONDS (default: the "
                        "whole run, its workload.queries_m queries)")
    p.add_argument("--seed", type=arg("seed"), default=1, help="random seed (--engine sim)")
    p.add_argument("--no-intervals", dest="intervals", action="store_false",
                   help="skip the 90 %% prediction intervals (with --runs the "
                        "pred_<column>_lo/_hi columns): about 9x less solving")
    p.add_argument("--jobs", type=at_least(1, int), default=None, metavar="N",
                   help="with --runs: worker processes for the racks (default: one per "
                        "core; 1 solves in this process)")
    p.add_argument("--measure", choices=("concurrent", "rotation"), default="concurrent",
                   help="how the rack is measured: all workers at once (default), or by "
                        "FarReach's server rotation (its static-pattern experiments: the "
                        "bottleneck partition beside each other in turn, aggregated as its "
                        "statistics script does; docs/model.md)")
    _ignored_options(p)
    s = sub.add_parser("simulate", help="discrete-event simulation with a per-second timeline")
    _common(s)
    s.add_argument("--seconds", type=arg("seconds"), default=None,
                   help="simulate at most the run's first SECONDS (default: the whole run, its "
                        "workload.queries_m queries)")
    s.add_argument("--seed", type=arg("seed"), default=1)
    s.add_argument("--timeline", metavar="OUT.csv", help="write the per-second timeline")
    s.add_argument("--sim-engine", choices=("fast", "simpy"), default="fast",
                   help="compiled engine (default) or the SimPy reference engine")
    if command in ("predict", "simulate"):
        return ap
    # the other commands; the question commands (sweep, explain, tune) have
    # the same from Python (docs/api.md)
    added = set()
    for mod, fn in _OWN_PARSERS.values():
        if (mod, fn) not in added:
            added.add((mod, fn))
            getattr(importlib.import_module(f"{__package__}.{mod}"), fn)(sub)
    return ap


def _ignored_options(p: ArgumentParser) -> None:
    """``predict``'s options that only some of its forms use: a NOTE says so."""
    def sim(a) -> bool:
        return a.engine == "sim" and not a.runs
    p.ignored_unless("--seconds", sim, "only the simulator has simulated time (--engine sim)")
    p.ignored_unless("--seed", sim, "only the simulator draws random numbers (--engine sim)")
    p.ignored_unless("--no-intervals", lambda a: not sim(a), "the simulator gives no interval")
    p.ignored_unless("--engine", lambda a: not (a.runs and a.engine == "sim"),
                     "--runs predicts every row with the analytic model")
    p.ignored_unless("--jobs", lambda a: bool(a.runs),
                     "worker processes solve the rows of --runs; one rack is solved here")


def _command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names (its first word), if it is one."""
    first = argv[0] if argv else None
    return first if first in ("predict", "simulate", *_OWN_PARSERS) else None


def load_inputs(args) -> tuple[Scenario, Profile]:
    sc = load_scenario(args.scenario) if args.scenario is not None else Scenario.default()
    sc = sc.with_overrides(args.sets)
    profile = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile)
    for text in scenario_notes([sc], profile):
        note(text)
    return sc, profile


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_command_of(argv)).parse_args(argv)
    if args.command in _OWN_PARSERS:        # each of those modules runs its own command
        import importlib
        mod = importlib.import_module(f"{__package__}.{_OWN_PARSERS[args.command][0]}")
        return run_command(lambda: mod.run(args))
    if args.list_profiles:
        return run_command(list_profiles)
    return run_command(lambda: _predict(args) if args.command == "predict" else _simulate(args))


def list_profiles() -> int:
    """``--list-profiles``: every embedded profile, one paragraph each."""
    from runio.kinds import KINDS
    from model.profile import embedded_profiles
    for name in embedded_profiles():
        prof = load_profile(name)
        meta = prof.meta
        kinds = sorted(k.name for k in KINDS.values() if k.profile == name)
        default = "  (the default)" if name == DEFAULT_PROFILE else ""
        runs = meta.get("runs") or meta.get("runs_files")
        what = meta.get("description") or ("the rack model of docs/model.md"
                                           + (f", fitted to {', '.join(runs) if isinstance(runs, list) else runs}" if runs else ""))
        print(f"{name}{default}: {what}")
        print(f"  {len(prof.params)} parameters; predicts the run kinds: "
              f"{', '.join(kinds) or '-'}")
        if meta.get("fitted_by"):
            print(f"  fitted by: {meta['fitted_by']}")
    return 0


def check_outputs(args, out_types: Sequence[str] = (".csv",)) -> None:
    """Every output path of the command, checked before any work is done
    (runio.safe_io.output_path); ``--out`` must have one of ``out_types``."""
    inputs = [getattr(args, k, None) for k in ("runs", "scenario", "profile", "plan")]
    types = {"out": out_types, "html": (".html", ".htm"), "timeline": (".csv",)}
    for opt in ("out", "html", "timeline"):
        if getattr(args, opt, None) is not None:
            output_path(getattr(args, opt), f"--{opt}", inputs, types=types[opt])


def _predict(args) -> int:
    check_outputs(args)
    if args.runs or args.out:
        if not (args.runs and args.out):
            raise InputError("--runs and --out go together", field="--out" if args.runs else "--runs")
        if args.sets or args.scenario:
            raise InputError("--runs takes each row's configuration; drop --scenario/--set",
                             field="--runs")
        if args.measure != "concurrent":
            raise InputError("--runs predicts each row as it was run (concurrently); "
                             "--measure rotation takes one scenario", field="--measure")
        from runio.batch import run_batch
        profile = load_profile(args.profile) if args.profile is not None else None
        jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
        if jobs < 1:
            raise InputError(f"--jobs must be at least 1, got {jobs}", field="--jobs")
        kind, n = run_batch(args.runs, args.out, profile, progress=wanted(args.progress),
                            intervals=args.intervals, jobs=jobs)
        print(f"predicted {n} rows of kind {kind.name} -> {args.out}", file=sys.stderr)
        if args.html:
            from reports import write_sweep_report
            from reports.inputs import read_sweep
            write_sweep_report(read_sweep(args.out), args.html,
                               title=f"Batch prediction: {kind.name}")
            print(f"report written to {args.html}", file=sys.stderr)
        return 0
    sc, profile = load_inputs(args)
    if args.measure == "rotation":
        return _rotation(sc, profile, args)
    if args.engine == "sim":
        from sim.run import simulate
        pred = simulate(sc, profile, seconds=args.seconds, seed=args.seed,
                        progress=wanted(args.progress, json=args.json))
        _prefix_note(pred, args)
    elif args.intervals:
        from model.intervals import predict_one
        from runio.progress import bar, note_compiling
        if wanted(args.progress, json=args.json):
            from model.solvers._jit import cache_dir
            note_compiling("the analytic solver", cache_dir())
        # the centre and every sigma point: seconds to a minute where workers
        # can collapse (a short timeout), each with its own chain of states
        with bar(1, "predicting (centre and sigma points)", "rack",
                 wanted(args.progress, json=args.json)) as b:
            def moved(done: int, total: int) -> None:
                b.total, b.n = total, done
                b.refresh()
            pred = predict_one(sc, profile, progress=moved)
    else:
        from model.solvers import predict
        pred = predict(sc, profile)
    _emit(pred, sc, profile, args)
    return _done(pred, args)


def _rotation(sc: Scenario, profile: Profile, args) -> int:
    """``predict --measure rotation``: every rotation's rack through the
    analytic solver (with an interval) or the simulator (model.rotation),
    reported as FarReach's statistics script reports it; table, --json, --html."""
    from model.rotation import predict_rotation
    from runio.progress import bar
    show = wanted(args.progress, json=args.json)
    if args.engine == "sim":
        # every rotation's rack through the simulator, --seconds each (no
        # interval, as for one simulated rack)
        from sim.run import FastSimulator
        sim = FastSimulator(args.seconds, args.seed)

        def solve(racks):
            out = []
            with bar(len(racks), "rotation, simulated racks", "rack", show) as b:
                for r in racks:
                    out.append(sim.solve(r))
                    b.update(1)
            cut = sum(bool(p.details.get("prefix_of_run")) for p in out)
            if cut:
                note(f"{cut} of the {len(out)} racks simulated for their run's first "
                     f"{args.seconds:g} s only; without --seconds each whole run is")
            return out
        rot = predict_rotation(sc, profile, solve=solve)
    else:
        with bar(1, "rotation, per profile", "profile", show) as b:
            def moved(done: int, total: int) -> None:
                b.total, b.n = total, done          # profiles: the centre and sigma points
                b.refresh()
            rot = predict_rotation(sc, profile, intervals=args.intervals, progress=moved)
    d = rot.to_dict()
    d.update({"scenario": sc.name, "profile": profile.name})
    if args.html:
        from reports import profile_dict
        from reports.rotation import write_rotation_report
        write_rotation_report(d, sc.to_dict(), profile_dict(profile), args.html)
    if args.json:
        print(json.dumps(d, indent=1, allow_nan=False))
    else:
        _print_rotation(rot, sc, profile, args)
    if args.html:
        print(f"report written to {args.html}", file=sys.stderr)
    return 0


def _print_rotation(rot, sc: Scenario, profile: Profile, args) -> None:
    det = rot.details
    lines = [
        f"scenario '{sc.name}': {sc.servers.count} servers (partitions), {sc.clients.threads} "
        f"client threads, cache {'on' if sc.switch.cache else 'off'}, "
        f"{sc.workload.distribution} workload ({pred_source(sc)})",
        f"measured by server rotation: partition {rot.bottleneck} (the most requests after the "
        f"cache) alone, then beside each of the other {rot.rotations - 1} that receive "
        "requests, in turn",
        f"engine {rot.engine}"
        f"{_sim_length(args) if rot.engine == 'sim' else ''}"
        f", profile '{profile.name}'",
        "",
        f"  throughput           {rot.throughput_mops:.4f} MOPS (aggregate, switch hits included)"
        f"{_interval_of(rot.details, 'a new rotation run')}",
        f"  normalized thrpt     {rot.normalized_x:.3f} x (aggregate / largest partition's "
        "server throughput)" if math.isfinite(rot.normalized_x) else
        "  normalized thrpt     undefined (no partition's server replies: the switch "
        "answers every request)",
        f"  cache hit ratio      {100 * rot.cache_hit_ratio:.1f} %",
        f"  bottleneck alone     {det['bottleneck_alone_mops']:.4f} MOPS, process "
        f"{_us(det['bottleneck_alone_process_us'])}, wait {_us(det['bottleneck_alone_wait_us'])}",
        "",
        f"  {'partition':>9}  {'thrpt MOPS':>10}  {'server MOPS':>11}",
    ]
    for i, (a, b) in enumerate(zip(rot.partition_mops, rot.partition_server_mops)):
        lines.append(f"  {i:>9}  {a:10.5f}  {b:11.5f}")
    print("\n".join(lines))


def _simulate(args) -> int:
    check_outputs(args)
    sc, profile = load_inputs(args)
    from sim.run import simulate, write_timeline
    pred = simulate(sc, profile, seconds=args.seconds, seed=args.seed,
                    engine=args.sim_engine, progress=wanted(args.progress, json=args.json))
    _prefix_note(pred, args)
    if args.timeline:
        write_timeline(pred, args.timeline)
    _emit(pred, sc, profile, args)
    return _done(pred, args)


def _stopped_after(pred: Prediction) -> float | None:
    """Simulated seconds done when Ctrl-C stopped a simulation (None: it finished)."""
    if not pred.details.get("interrupted"):
        return None                   # (and an analytic prediction never loads the simulator)
    from sim.run import interrupted_after
    return interrupted_after(pred)


def _sim_length(args) -> str:
    """How much of each rotation rack's run is simulated."""
    return (f" ({args.seconds:g} simulated s per rack at most)" if args.seconds is not None
            else " (each rack's whole run)")


def _progress_of(pred: Prediction, args) -> tuple[float, float, str]:
    """(done, total, unit) of a simulation stopped by Ctrl-C: simulated
    seconds of a capped run, else millions of the run's queries."""
    if args.seconds is not None:
        return _stopped_after(pred) or 0.0, args.seconds, "s simulated"
    queries = pred.details.get("requests", 0) / 1e6
    return round(queries, 6), pred.details.get("run_queries", 0.0) / 1e6, "M queries simulated"


def _partial(pred: Prediction, args) -> str | None:
    """The PARTIAL line of a simulation stopped by Ctrl-C (None if it finished)."""
    if _stopped_after(pred) is None:
        return None
    return partial_text(*_progress_of(pred, args))


def _prefix_note(pred: Prediction, args) -> None:
    """Say on stderr when a simulation covered only the first --seconds of the run."""
    d = pred.details
    if d.get("stuck"):
        note(f"an instance's writes stopped after {d.get('simulated_s', 0):.4g} s with no "
             "flush or compaction to clear them (its L0 stop trigger below its compaction "
             "trigger?): the run never ends; the figures are of its part before")
        return
    if d.get("prefix_of_run") and not d.get("interrupted") and args.seconds is not None:
        note(f"simulated the run's first {args.seconds:g} s only ("
             f"{d.get('requests', 0) / 1e6:.4g} of its {d.get('run_queries', 0) / 1e6:g} M "
             "queries): the figures are that part's, not the whole run's; without --seconds "
             "the whole run is simulated")


def _done(pred: Prediction, args) -> int:
    """0, or -- after the partial results were printed -- Ctrl-C's exit code 130."""
    if _stopped_after(pred) is not None:
        timeline = getattr(args, "timeline", None)
        raise Interrupted(*_progress_of(pred, args),
                          f"the timeline so far is in {timeline}" if timeline else "")
    return 0


def prediction_json(pred: Prediction, sc: Scenario | None = None,
                    profile: Profile | None = None) -> dict[str, Any]:
    """The machine-readable contract of docs/contracts.md (non-finite -> null);
    ``partial`` is true when a simulation was stopped by Ctrl-C; ``scenario``
    and ``profile`` name what was predicted when given."""
    d = pred.to_dict()
    d["partial"] = bool(pred.details.get("interrupted", False))
    pc = pred.details.get("latency_us_percentiles") or {}
    d["latency_us_percentiles"] = {k: pc.get(k) for k in ("p50", "p95", "p99")}
    iv = pred.details.get("latency_us_percentile_intervals")
    if iv:
        d["latency_us_percentiles"]["intervals"] = iv
    if sc is not None:
        d["scenario"] = sc.name
    if profile is not None:
        d["profile"] = profile.name
    return finite_or_none(d)


def _emit(pred: Prediction, sc: Scenario, profile: Profile, args) -> None:
    if args.html:
        from reports import build_report, profile_dict
        d = prediction_json(pred, sc, profile)
        # A simulation also gets its per-second timeline, with stalls shaded.
        timeline = d.get("details", {}).get("timeline")
        partial = _partial(pred, args)
        build_report(args.html, prediction=d, scenario=sc.to_dict(), profile=profile_dict(profile),
                     timeline=timeline or None,
                     title=(f"{partial} -- " if partial else "")
                     + f"{'Simulation' if timeline else 'Prediction'}: {sc.name}")
    if args.json:
        print(json.dumps(prediction_json(pred, sc, profile), indent=1))
    else:
        partial = _partial(pred, args)
        print((partial + "\n" if partial else "") + format_table(pred, sc, profile))
    if args.html:
        print(f"report written to {args.html}", file=sys.stderr)


def _interval(pred: Prediction) -> str:
    return _interval_of(pred.details if isinstance(pred.details, dict) else {})


def _interval_of(details: dict, what: str = "a new run of this rack") -> str:
    iv = details.get("throughput_interval")
    if not iv:
        return ""
    return (f"  ({100 * iv['level']:.0f} % interval {iv['lo_mops']:.4f} - "
            f"{iv['hi_mops']:.4f} MOPS: {what})")


def _us(v: float) -> str:
    return f"{v:,.2f} us" if math.isfinite(v) else "idle (no requests)"


def pred_source(sc: Scenario) -> str:
    return f"workload profile '{sc.workload.profile}'" if sc.workload.profile else \
        f"{sc.workload.generator} generator as the public code runs it"


def _percentile_lines(pred: Prediction) -> list[str]:
    """p50 / p95 / p99 of the client latency (us), with their intervals where
    the profile gives them; the simulator's are of the requests it completed."""
    pc = pred.details.get("latency_us_percentiles") or {}
    keys = [k for k in ("p50", "p95", "p99") if isinstance(pc.get(k), (int, float))
            and math.isfinite(pc[k])]
    if not keys or pred.throughput_mops <= 0:
        return []
    iv = pred.details.get("latency_us_percentile_intervals") or {}
    vals = " / ".join(f"{pc[k]:,.0f}" for k in keys)
    line = f"  latency {'/'.join(keys):<12} {vals} us"
    if iv:
        level = next(iter(iv.values()))["level"]
        line += (f"  ({100 * level:.0f} % intervals: "
                 + "; ".join(f"{k} {iv[k]['lo_us']:,.0f} - {iv[k]['hi_us']:,.0f} us"
                             for k in keys if k in iv) + ")")
    if pred.engine == "sim":
        line += "  (of the completed requests)"
    return [line]


def _caveats(pred: Prediction) -> list[str]:
    """Regimes where the analytic answer is known to be off (model.regimes):
    said with the answer, never silently."""
    return [f"  CAVEAT               {c['name']}: {c['reason']}; {c['advice']}"
            for c in pred.details.get("caveats", []) if c["name"] != "jump"]


def _jump(pred: Prediction) -> list[str]:
    """A note where the analytic answer sits at a jump of the rack's load
    balance (model.solvers.analytic): there is no steady state on either side
    of it, and the simulator alternates between them."""
    if not pred.details.get("jump"):
        return []
    return ["  NOTE                 the rack sits where its load balance jumps (a flush or "
            "resend cliff): these are the figures at the jump; check with --engine sim"]


def _queries(sc: Scenario) -> str:
    """The run's queries, as the notes write them (100M)."""
    q = sc.workload.queries_m
    return f"{q:g}M" if q >= 1 else f"{q * 1e3:g}K"


def format_table(pred: Prediction, sc: Scenario, profile: Profile) -> str:
    lines = [
        f"scenario '{sc.name}': {sc.servers.count} servers, {sc.clients.threads} client threads, "
        f"cache {'on' if sc.switch.cache else 'off'} ({sc.switch.cache_keys:,} keys), "
        f"{sc.workload.distribution} workload ({pred_source(sc)})",
        f"engine {pred.engine}, profile '{profile.name}'",
        "",
        f"  throughput           {pred.throughput_mops:.4f} MOPS{_interval(pred)}",
        f"  cache hit ratio      {100 * pred.cache_hit_ratio:.1f} %",
        f"  normalized gain      {pred.normalized_x:.3f} x over NoCache: what the workload "
        "allows (max NoCache share / max cached share); the rack's own gain: sim explain",
        f"  client send          {_us(pred.client.send_us)}",
        f"  client latency       "
        f"{_us(pred.client.latency_us) if pred.throughput_mops > 0 else 'never (no request completes)'}",
        *_percentile_lines(pred),
        f"  packet loss          {pred.pktloss:,.0f} packets per run of "
        f"{_queries(sc)} queries (dropped at full receive buffers)",
        f"  resends              {pred.false_pos:,.0f} packets per run of {_queries(sc)} queries "
        "(the notes' false positives: each loss, and each reply slower than the timeout)",
        f"  write stall          {100 * pred.stall_fraction:.1f} % of time",
        *_run_lines(pred, sc),
        f"  bottleneck           {pred.bottleneck.text()}",
        *_jump(pred),
        *_caveats(pred),
        "",
    ]
    lsm = pred.details.get("lsm")
    head = (f"  {'server':>6}  {'share %':>8}  {'nocache %':>9}  {'util %':>7}  {'wait us':>10}  "
            f"{'process us':>10}")
    if lsm:
        head += (f"  | {'memtables':>9}  {'flushes':>7}  {'compactions':>11}  {'stopped s':>9}  "
                 f"{'slowed s':>8}  {'L0 files':>8}")
    lines.append(head)
    for i, s in enumerate(pred.servers):
        wait = f"{s.wait_us:10.2f}" if math.isfinite(s.wait_us) else f"{'idle':>10}"
        line = (f"  {i:>6}  {100 * s.share:8.2f}  {100 * s.share_nocache:9.2f}  "
                f"{100 * s.utilization:7.1f}  {wait}  {s.process_us:10.2f}")
        if lsm:
            line += (f"  | {lsm['memtables'][i]:>9}  {lsm['flushes'][i]:>7}  "
                     f"{lsm['compactions'][i]:>11}  {lsm['stop_s'][i]:>9.1f}  "
                     f"{lsm['slow_s'][i]:>8.1f}  {lsm['l0_files_end'][i]:>8}")
        lines.append(line)
    return "\n".join(lines)


def _run_lines(pred: Prediction, sc: Scenario) -> list[str]:
    """The run as RocksDB moved it: its length, its phases, its stops and
    slowdowns (the per-worker counts are the table's right-hand columns)."""
    lsm = pred.details.get("lsm")
    traj = pred.details.get("trajectory") or {}
    if not lsm:
        return []
    phases = traj.get("phases") or []
    stops = [p for p in phases if p["kind"] == "stop"]
    slows = [p for p in phases if p["kind"] == "slow"]
    text = (f"  run                  {lsm['run_s']:,.1f} s for {_queries(sc)} queries, "
            f"{len(phases)} phase{'s' if len(phases) != 1 else ''}")
    if stops:
        text += (f"; writes stopped {sum(p['seconds'] for p in stops):,.1f} s "
                 f"({len(stops)} stop{'s' if len(stops) != 1 else ''}: the rack waits)")
    if slows:
        text += f"; slowed {sum(p['seconds'] for p in slows):,.1f} s"
    if not stops and not slows:
        text += "; no write stop or slowdown"
    return [text + " (RocksDB per worker: the columns right of |)"]
