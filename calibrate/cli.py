"""Command line: ``python -m calibrate run | fit | validate | ingest | knobs | public``.

* ``run``: a plan of local runs on the native server (resumable).
* ``fit``: a profile from runs CSVs, by the fitter registered for their kind.
* ``validate``: predicted vs measured with error statistics; ``--max-error``
  makes it a gate, ``--html`` writes a report. ``--cv GROUP`` cross-validates
  instead (:mod:`calibrate.cv`): refit without each group, predict it.
* ``ingest``: FarReach's own output files -> a farreach_runs row; with
  ``--format ycsb|dbbench FILE...``, YCSB client or RocksDB db_bench output ->
  ycsb_runs / dbbench_runs rows (:mod:`calibrate.bench_ingest`).
* ``knobs``: pairs of measured runs that differ in one knob, measured
  throughput ratio against the analytic solver's and the simulator's
  (:mod:`calibrate.knobs`); ``--holdout`` predicts each pair by a refit
  without it.
* ``public``: FarReach's own published experiments (``data/public``),
  predicted against published (:mod:`calibrate.public`).

Exit codes: 0 success; 1 a validation gate failed; 2 bad input (the message
names file, line and field; no traceback) or a missing native module or
fitter; 130 interrupted.
"""

from __future__ import annotations

import argparse
import inspect
import math
import shlex
import sys
from typing import Any

from runio.exits import ArgumentParser, at_least, run_command
from model.errors import InputError
from runio.safe_io import output_path
from runio.inputs import load_profile, save_profile
from runio.notes import note


def build_parser() -> argparse.ArgumentParser:
    ap = ArgumentParser(prog="python -m calibrate",
                        description="Local runs, fitting and validation of profiles.")
    sub = ap.add_subparsers(dest="command", required=True)
    # the subcommands in the order --help lists them
    _add_run_parser(sub)
    _add_fit_parser(sub)
    _add_validate_parser(sub)
    _add_ingest_parser(sub)
    _add_knobs_parser(sub)
    _add_public_parser(sub)
    sub.add_parser("kinds", help="the run kinds a runs CSV can be: key columns, predicted "
                                 "columns, profile")
    return ap


def _add_run_parser(sub) -> None:
    """``run``: a plan of local runs on the native server."""
    from runio.progress import add_flag
    r = sub.add_parser("run", help="run a plan of local runs on the native server")
    r.add_argument("--plan", metavar="PLAN.toml", action="append",
                   help="plan file (default: the shipped default plan); repeat to run several "
                        "plans in one session, interleaved if a plan has order = \"random\"")
    r.add_argument("--out", metavar="RUNS.csv", default="local-runs.csv",
                   help="runs CSV to append to (default: local-runs.csv); existing runs are skipped")
    r.add_argument("--cluster", metavar="ADDRESS",
                   help="Dask scheduler address: run points on the cluster's workers")
    r.add_argument("--quiet-below", type=at_least(0), default=0.5, metavar="CORES",
                   help="before each run, wait until other processes use fewer cores than this "
                        "(default 0.5 cores; interference is recorded in external_cores)")
    r.add_argument("--quiet-timeout", type=at_least(0), default=10.0, metavar="S",
                   help="longest wait for a quiet machine before each run (default 10 s)")
    r.add_argument("--dry-run", action="store_true", help="list the points and exit")
    add_flag(r)


def _add_fit_parser(sub) -> None:
    """``fit``: a profile from runs CSVs."""
    f = sub.add_parser("fit", help="fit a profile to runs")
    f.add_argument("--runs", metavar="RUNS.csv", action="append", required=True,
                   help="runs CSV (repeat for several files of the same kind)")
    f.add_argument("--out", metavar="PROFILE.toml", required=True, help="profile to write")
    f.add_argument("--kind", help="run kind (default: detected from the header)")
    f.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                   help="use only rows with this value (V1,V2: any of them; repeat: all must "
                        "hold), e.g. plan=default or plan=default,writepath")
    f.add_argument("--priors", metavar="PRIORS.toml", help="starting values (fitter default otherwise)")
    f.add_argument("--free", metavar="P1,P2", help="comma-separated parameters to fit")
    f.add_argument("--bootstrap", type=at_least(0, int), default=0, metavar="B",
                   help="standard errors from B bootstrap refits (default: Jacobian covariance)")
    f.add_argument("--jobs", type=at_least(1, int), default=None, metavar="N",
                   help="processes for model evaluations and bootstrap refits")
    f.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler for bootstrap refits")
    f.add_argument("--name", help="profile name (default: the output file's stem)")
    f.ignored_unless("--cluster", lambda a: bool(a.bootstrap),
                     "the cluster runs bootstrap refits (--bootstrap B)")


def _add_validate_parser(sub) -> None:
    """``validate``: predicted vs measured (or ``--cv``)."""
    from runio.progress import add_flag
    v = sub.add_parser("validate", help="predicted vs measured error report")
    v.add_argument("--profile", metavar="NAME|FILE.toml",
                   help="profile to validate (required unless --cv); with --cv: starting values")
    v.add_argument("--runs", metavar="RUNS.csv", action="append", required=True)
    v.add_argument("--kind", help="run kind (default: detected from the header)")
    v.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                   help="use only rows with this value (repeat: all must hold), e.g. plan=holdout")
    v.add_argument("--html", metavar="REPORT.html", help="also write an HTML report")
    v.add_argument("--out", metavar="PRED.csv", help="write rows with pred_<col> and ape_<col>")
    v.add_argument("--max-error", type=at_least(0), metavar="PCT",
                   help="exit 1 if any column's median absolute percentage error exceeds PCT")
    v.add_argument("--cluster", metavar="ADDRESS", help="Dask scheduler for predictions")
    v.add_argument("--jobs", type=at_least(1, int), default=None, metavar="N", help="processes for predictions")
    v.add_argument("--summary-only", action="store_true", help="no per-row table")
    v.add_argument("--aggregate", action="store_true",
                   help="compare the median of repeated runs of a configuration, not each run")
    v.add_argument("--max-interference", type=at_least(0), metavar="CORES",
                   help="leave out local runs during which other processes kept more than "
                        "CORES cores busy (column external_cores)")
    v.add_argument("--cv", metavar="GROUP",
                   help="cross-validate instead: refit without each group and predict it; "
                        "first:K (fit on the first K points of every curve), last:K, "
                        "top:K (leave each series' K largest connection or core counts "
                        "out: extrapolation), column:NAME (leave one value out at a time)")
    v.add_argument("--priors", metavar="PRIORS.toml", help="with --cv: starting values for refits")
    add_flag(v)
    v.ignored_unless("--priors", lambda a: bool(a.cv), "it gives the refits of --cv their "
                     "starting values")
    for option in ("--aggregate", "--max-interference", "--cluster", "--jobs"):
        v.ignored_unless(option, lambda a: not a.cv, "--cv refits and predicts each fold in "
                         "this process, run by run")


def _add_ingest_parser(sub) -> None:
    """``ingest``: tools' output files -> runs rows."""
    g = sub.add_parser("ingest", help="FarReach, YCSB or db_bench output files -> runs rows")
    g.add_argument("files", nargs="*", metavar="FILE",
                   help="with --format ycsb or dbbench: the tool's output files (stdout, or "
                        "stdout and stderr together)")
    g.add_argument("--format", choices=("farreach", "ycsb", "dbbench"), default="farreach",
                   help="farreach (default: --stats/--server-log/--client-log), ycsb (one "
                        "ycsb_runs row per file) or dbbench (one dbbench_runs row per benchmark)")
    g.add_argument("--one-run", action="store_true",
                   help="ycsb: the files are the physical clients of one run; combine them "
                        "into one row")
    g.add_argument("--stats", metavar="CLIENT.out", action="append", default=[],
                   help="client statistics JSON (repeat for each physical client)")
    g.add_argument("--server-log", metavar="SERVER.log", help="server stdout with latency dumps")
    g.add_argument("--client-log", metavar="CLIENT.log", help="client stdout with send latency dumps")
    g.add_argument("--set", dest="sets", action="append", default=[], metavar="COLUMN=VALUE",
                   help="configuration column, e.g. system=farreach servers=2 clients=512")
    g.add_argument("--wait-stat", default="avg", help="avg, min, max or per-server")
    g.add_argument("--out", metavar="RUNS.csv", required=True,
                   help="runs CSV to append to (created if missing; never cut or rewritten)")
    g.ignored_unless("--one-run", lambda a: a.format == "ycsb", "it combines YCSB clients' "
                     "files (--format ycsb)")
    g.ignored_unless("--wait-stat", lambda a: a.format == "farreach", "it reads FarReach's "
                     "server log (--format farreach)")


def _add_knobs_parser(sub) -> None:
    """``knobs``: the knob table (:mod:`calibrate.knobs`)."""
    from runio.progress import add_flag
    k = sub.add_parser("knobs", help="pairs of runs that differ in one knob: measured vs "
                                     "predicted throughput ratio",
                       description="Find every pair of rows (of one run kind) that differ in "
                                   "exactly one knob column and compare the measured throughput "
                                   "ratio (mops of row b / row a) with the predicted one.")
    k.add_argument("--runs", metavar="RUNS.csv", action="append", required=True,
                   help="FarReach runs CSV (farreach_runs, farreach_tuning or farreach_breakdown; "
                        "repeat for several files, of one kind or several)")
    k.add_argument("--profile", metavar="NAME|FILE.toml",
                   help="profile to predict with (default: each kind's embedded profile); with "
                        "--holdout the refits' starting values")
    k.add_argument("--engine", choices=("analytic", "sim", "both"), default="both",
                   help="analytic solver, fast simulator, or both (default)")
    k.add_argument("--seconds", type=at_least(0, exclusive=True), default=4.0, metavar="S",
                   help="simulated seconds per rack (default 4)")
    k.add_argument("--seed", type=at_least(0, int), default=1, metavar="N",
                   help="simulator random seed (default 1)")
    k.add_argument("--min-effect", default="0.10", metavar="FRACTION",
                   help="smallest measured effect that is scored, as a fraction (default 0.10: "
                        "a ratio of at least 1.1, or at most 1/1.1)")
    k.add_argument("--holdout", action="store_true",
                   help="out of sample: predict each pair by a profile refitted without its "
                        "two rows (and other rows of their configurations)")
    k.add_argument("--out", metavar="TABLE.csv", help="write the table as CSV (one row per pair)")
    k.add_argument("--html", metavar="TABLE.html",
                   help="write an HTML page: predicted against measured ratio, and the table")
    k.add_argument("--jobs", type=at_least(1, int), default=None, metavar="N",
                   help="processes: simulator runs (default: one per core) and each --holdout "
                        "refit's model evaluations (default: the fitter's)")
    add_flag(k)
    for option in ("--seconds", "--seed"):
        k.ignored_unless(option, lambda a: a.engine != "analytic",
                         "only the simulator has simulated time and random numbers "
                         "(--engine sim or both)")


def _add_public_parser(sub) -> None:
    """``public``: FarReach's published experiments (:mod:`calibrate.public`)."""
    from runio.progress import add_flag

    from .public import DATA, SCENARIO
    p = sub.add_parser("public", help="FarReach's own published experiments (data/public): "
                                      "predicted against published",
                       description="Predict every published experiment of FarReach's public "
                                   "repository that a scenario can express (server rotation "
                                   "for the static ones) and print it beside the published "
                                   "rounds, with the targets' figures.")
    p.add_argument("--scenario", metavar="FILE.toml", default=str(SCENARIO),
                   help="the public testbed's scenario (default data/public/testbed.toml)")
    p.add_argument("--profile", metavar="NAME|FILE.toml", default="tofino-testbed",
                   help="profile to predict with (default tofino-testbed)")
    p.add_argument("--data", metavar="DIR", default=str(DATA),
                   help="folder of the published tables (default data/public)")
    p.add_argument("--out", metavar="TABLE.csv", help="write one row per configuration")
    p.add_argument("--html", metavar="PAGE.html",
                   help="write a page: predicted against published, per experiment")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_flag(p)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    action = {"run": _run, "fit": _fit, "validate": _validate, "ingest": _ingest,
              "knobs": _knobs, "kinds": _kinds, "public": _public}[args.command]
    return run_command(lambda: action(args))


# ---------------------------------------------------------------------------

def _kinds(args) -> int:
    """Every kind a runs CSV can be, as ``--runs`` infers it from the header."""
    from runio.kinds import KINDS
    for k in KINDS.values():
        print(f"{k.name}: {k.description}" if k.description else k.name)
        print(f"  key columns (all needed): {', '.join(sorted(k.signature))}")
        print(f"  predicted: {', '.join(k.measured) or '-'}; profile: {k.profile}")
    return 0


def _run(args) -> int:
    from .local_runner import NativeUnavailable, native_run, pending_points, require_native, run_plan
    from .plan import expand_all, load_plan
    output_path(args.out, "--out", args.plan or [], types=(".csv",))
    plans = [load_plan(p) for p in (args.plan or [None])]
    points = expand_all(plans)
    todo = pending_points(points, args.out)
    names = ", ".join(f"'{p.name}' ({p.source})" for p in plans)
    print(f"plan {names}: {len(points)} runs, {len(points) - len(todo)} "
          f"already in {args.out}, {len(todo)} to run", file=sys.stderr)
    if args.dry_run:
        for p in points:
            mark = " " if p in todo else "x"
            print(f"[{mark}] {p['id']}  {p['config_hash']}  workers={p['workers']} "
                  f"clients={p['clients']} memtable={p['memtable_mb']} MiB wal={p['wal']} "
                  f"db={p['db']} seq={p['seq_check']} {p['distribution']} "
                  f"read={p['read_ratio']:g} timeout={p['timeout_ms']:g} ms")
        return 0
    if todo and args.cluster is None:
        try:
            require_native()
        except NativeUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    import functools
    runner = functools.partial(native_run, quiet_below=args.quiet_below,
                               quiet_timeout_s=args.quiet_timeout)
    from runio.progress import Interrupted, wanted
    saved = {"n": 0}
    try:
        counts = run_plan(points, args.out, runner, cluster=args.cluster,
                          progress=wanted(args.progress),
                          on_row=lambda r: saved.__setitem__("n", saved["n"] + 1))
    except KeyboardInterrupt:
        # every finished run is a complete row of the file; the one in progress is dropped
        raise Interrupted(len(points) - len(todo) + saved["n"], len(points), "runs",
                          f"{saved['n']} runs of this session are saved in {args.out}; run the "
                          "same command again to resume") from None
    print(f"{counts['ran']} runs done, {counts['skipped']} skipped (already measured); "
          f"results in {args.out}", file=sys.stderr)
    return 0


def _fit(args) -> int:
    from pathlib import Path

    from .fitters import fitter_spec
    from .runs_io import load_runs
    from runio.row_prediction import row_racks
    output_path(args.out, "--out", [*args.runs, args.priors], types=(".toml",))
    kind, rows = load_runs(args.runs, args.kind, where=_where(args.where), same_fitter=True)
    # every input is read and checked before the fit says it starts: each
    # row's racks (its values in range) and the priors file
    row_racks(kind, rows)
    priors = load_profile(args.priors) if args.priors is not None else None
    free = _free_params(args.free, kind, priors)
    cls, fixed = fitter_spec(kind.name)
    command = "python -m calibrate " + " ".join(shlex.quote(a) for a in sys.argv[1:]) \
        if sys.argv and sys.argv[0].endswith(("__main__.py", "calibrate")) else None
    wanted: dict[str, Any] = {
        "priors": args.priors, "free": free,
        "bootstrap": args.bootstrap or None, "n_jobs": args.jobs,
        "cluster": args.cluster if args.bootstrap else None,         # (a NOTE says so)
        "name": args.name or Path(args.out).stem, "command": command, "progress": True,
    }
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {**fixed, **{k: v for k, v in wanted.items() if v is not None and k in accepted}}
    dropped = [k for k, v in wanted.items() if v is not None and k not in accepted
               and k not in ("name", "command", "progress")]
    if dropped:
        note(f"{cls.__name__} does not take {', '.join(dropped)}; ignored")
    print(f"fitting {len(rows)} {kind.name} rows with {cls.__module__}.{cls.__name__}",
          file=sys.stderr)
    fitter = cls(**kwargs).fit(rows)
    for w in getattr(fitter, "warnings_", ()):
        print(f"warning: {w}", file=sys.stderr)
    profile = fitter.profile_
    save_profile(profile, args.out)
    print(format_fit(fitter, profile))
    print(f"profile written to {args.out}", file=sys.stderr)
    return 0


def _free_params(text: str | None, kind, priors) -> list[str] | None:
    """``--free P1,P2``, each a parameter some profile of the kind can have,
    checked before the fit starts (the fitter checks them against its own
    priors, once fitting)."""
    if text is None:
        return None
    import difflib

    from model.rack.params import all_params
    names = [p.strip() for p in text.split(",")]
    known = set(all_params()) | set(load_profile(kind.profile).params)
    if priors is not None:
        known |= set(priors.params)
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
            raise InputError(f"no profile parameter {name!r}"
                             + (f"; did you mean {' or '.join(close)}?" if close else
                                " (the parameters are in the profile's [params])"),
                             field="--free")
    return names


def _where(items: list[str]) -> dict[str, str]:
    out = {}
    for text in items:
        if "=" not in text:
            raise InputError(f"expected COLUMN=VALUE, got {text!r}", field="--where")
        k, v = text.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def format_fit(fitter, profile) -> str:
    import numpy as np
    free = getattr(fitter, "free_", None) or list(getattr(fitter, "params_", {}) or [])
    lines = [f"profile '{profile.name}': {len(profile.params)} parameters"
             + (f", {len(free)} fitted" if free else "")]
    for k in free:
        p = profile.params[k]
        se = f" +- {p.stderr:.3g}" if p.stderr is not None and math.isfinite(p.stderr) else ""
        lines.append(f"  {k:<24} {p.value:10.4g}{se} {p.unit}")
    if hasattr(fitter, "residual_table_"):          # LocalFitter: log(predicted / measured)
        res = np.asarray(fitter.residuals_, dtype=float)
        if res.size:
            pct = 100 * (np.exp(np.abs(res)) - 1)
            lines.append(f"  residuals: {res.size} values, median |error| "
                         f"{float(np.median(pct)):.1f}%, max {float(np.max(pct)):.1f}%")
    return "\n".join(lines)


def _validate(args) -> int:
    if args.cv:
        return _validate_cv(args)
    if not args.profile:
        raise InputError("give --profile NAME|FILE.toml (or --cv GROUP to cross-validate)",
                         field="--profile")

    from .runs_io import write_rows
    from .validate import format_report, gate, report_rows, validate
    for opt, types in (("out", (".csv",)), ("html", (".html", ".htm"))):
        if getattr(args, opt):
            output_path(getattr(args, opt), f"--{opt}", args.runs, types=types)
    profile = load_profile(args.profile)
    if args.html:
        try:
            import reports
            writer = reports.write_validation_report
        except (ImportError, AttributeError) as exc:
            raise InputError(f"--html needs the reports package with write_validation_report "
                             f"({exc})", field="--html") from None
    from runio.progress import wanted
    v = validate(profile, args.runs, kind=args.kind, cluster=args.cluster, n_jobs=args.jobs,
                 aggregate=args.aggregate, max_interference=args.max_interference,
                 where=_where(args.where), progress=wanted(args.progress))
    print(format_report(v, per_row=not args.summary_only))
    if args.out:
        header = [c for c in v.rows[0] if not c.startswith("__")]
        for r in v.rows:
            header += [c for c in r if c not in header and not c.startswith("__")]
        write_rows(args.out, header, v.rows)
        print(f"predictions written to {args.out}", file=sys.stderr)
    if args.html:
        from reports import profile_dict
        writer(report_rows(v), args.html, title=f"Validation of {profile.name}",
               profile=profile_dict(profile))
        print(f"report written to {args.html}", file=sys.stderr)
    if args.max_error is not None:
        failed = gate(v, args.max_error)
        if failed:
            for msg in failed:
                print(f"FAIL: {msg}", file=sys.stderr)
            return 1
        print(f"PASS: every column's median error is within {args.max_error:g}%", file=sys.stderr)
    return 0


def _validate_cv(args) -> int:
    """``validate --cv GROUP``: out-of-sample errors per kind and column (calibrate.cv)."""
    from .cv import cross_validate, format_cv, held_rows
    from .runs_io import format_cell, load_runs
    from runio.progress import Interrupted, wanted
    from runio.safe_io import write_rows_csv
    if args.html:   # the validation report shows one profile's in-sample fit, not refits
        raise InputError("--html is not available with --cv (each fold has its own refit); "
                         "use --out HELD.csv for the held-out cells", field="--html")
    if args.out:     # refused before the refits, not after them
        output_path(args.out, "--out", args.runs, types=(".csv",))
    _, rows = load_runs(args.runs, args.kind, where=_where(args.where), same_fitter=True)
    res = cross_validate(rows, args.cv, fitter_kwargs={"priors": args.priors or args.profile},
                         progress=wanted(args.progress))
    print(format_cv(res, per_row=not args.summary_only))
    kept = False
    if args.out:
        header, table = held_rows(res)
        # interrupted: every row marked partial, or no file without a row
        kept = write_rows_csv(args.out, table, format_cell, header, partial=res.partial)
        if kept:
            print(f"{len(table)} held-out cells written to {args.out}", file=sys.stderr)
    if res.partial:
        raise Interrupted(len(res.folds), res.folds_planned, "refits",
                          f"the held-out cells so far are in {args.out} (column partial)"
                          if kept else (f"{args.out} was not written (no refit finished)"
                                        if args.out else ""))
    if args.max_error is not None:
        bad = [f"out-of-sample median error of {k}.{c} is {s.median_ape:.1f}% > "
               f"{args.max_error:g}% (over {s.n} cells)"
               for (k, c), s in res.summary.items() if s.median_ape > args.max_error]
        for msg in bad:
            print(f"FAIL: {msg}", file=sys.stderr)
        return 1 if bad else 0
    return 0


def _public(args) -> int:
    """``public``: published experiments against predicted (calibrate.public)."""
    from .public import run
    return run(args)


def _knobs(args) -> int:
    """``knobs``: the knob table (calibrate.knobs)."""
    from .knobs import run_knobs
    return run_knobs(args)


def _set_columns(sets: list[str]) -> dict[str, Any]:
    from model.scenario import parse_value
    config: dict[str, Any] = {}
    for text in sets:
        if "=" not in text:
            raise InputError(f"expected COLUMN=VALUE, got {text!r}", field="--set")
        k, raw = text.split("=", 1)
        config[k.strip()] = parse_value(raw.strip())
    return config


def _ingest(args) -> int:
    from .farreach_logs import FARREACH_RUNS_COLUMNS, ingest
    from .runs_io import RunsWriter
    if args.format != "farreach":
        return _ingest_bench(args)
    if args.files:
        raise InputError("FILE arguments are read with --format ycsb or dbbench; FarReach "
                         "output goes with --stats/--server-log/--client-log",
                         field=args.files[0])
    if not (args.stats or args.server_log or args.client_log):
        raise InputError("give at least one of --stats, --server-log, --client-log", field="--stats")
    output_path(args.out, "--out", [*(args.stats or []), args.server_log, args.client_log],
                types=(".csv",))
    config = _set_columns(args.sets)
    row = ingest(config, stats=args.stats, server_log=args.server_log,
                 client_log=args.client_log, wait_stat=args.wait_stat)
    with RunsWriter(args.out, FARREACH_RUNS_COLUMNS) as w:
        w.append(row)
    units = {"mops": "MOPS", "wait_us": "us", "process_us": "us", "send_us": "us",
             "normalized_x": "x"}
    shown = ", ".join((f"{k}={row[k]:.4g} {u}" if isinstance(row[k], float) else f"{k}={row[k]} {u}")
                      for k, u in units.items() if row.get(k) is not None)
    print(f"appended 1 farreach_runs row to {args.out}: {shown}")
    return 0


def _ingest_bench(args) -> int:
    """``ingest --format ycsb|dbbench FILE...`` (calibrate.bench_ingest)."""
    from .bench_ingest import ingest_files, summary
    from .runs_io import RunsWriter
    other = [o for o, v in (("--stats", args.stats), ("--server-log", args.server_log),
                            ("--client-log", args.client_log)) if v]
    if other:
        raise InputError(f"{other[0]} is FarReach output; with --format {args.format} give "
                         "the files as arguments", field=other[0])
    output_path(args.out, "--out", args.files, types=(".csv",))
    spec, rows = ingest_files(args.format, args.files, _set_columns(args.sets),
                              one_run=args.one_run)
    with RunsWriter(args.out, spec.columns) as w:
        for row in rows:
            w.append(row)
    print(f"appended {len(rows)} {spec.kind.name} row{'s' * (len(rows) != 1)} to {args.out}")
    print("\n".join(summary(spec, rows)))
    return 0
