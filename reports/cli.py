"""Command line: ``python -m reports build`` and ``python -m reports check``.

``build`` writes one self-contained HTML page (it renders offline, moved anywhere)
from any mix of inputs::

    python -m reports build --out report.html \\
        --prediction pred.json      # Prediction.to_dict(), or {"prediction", "scenario", "profile"}
        --sweep sweep.csv           # batch-prediction CSV: inputs, measured, pred_* columns
        --validation val.csv        # rows with <col> and pred_<col>; errors are computed
        --timeline timeline.csv     # t_s, throughput_mops, stalled_frac, pktloss, false_pos,
                                    # wait_us_<i>, process_us_<i>
        [--scenario rack.toml] [--profile NAME|profile.toml] [--title TEXT]

``check`` opens a report in headless Chromium and fails (exit 1) on console
errors, undrawn plots, a blank screenshot or any non-file/data request::

    python -m reports check report.html [--screenshot shot.png] [--chromium PATH]

Exit codes: 0 success; 1 a check failed; 2 bad input (the message names the
file, line and column; no traceback).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from runio.exits import ArgumentParser, at_least, run_command
from model.errors import InputError
from runio.inputs import load_profile, load_scenario


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m reports",
                                description="Self-contained HTML reports for kvperf.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write an HTML report")
    b.add_argument("--out", required=True, help="HTML file to write")
    b.add_argument("--prediction", help="Prediction JSON (optionally with scenario and profile)")
    b.add_argument("--sweep", help="batch-prediction CSV")
    b.add_argument("--validation", help="CSV with measured <col> and pred_<col> columns")
    b.add_argument("--timeline", help="simulator per-second timeline CSV")
    b.add_argument("--scenario", help="scenario TOML shown with its units (overrides the JSON's)")
    b.add_argument("--profile", help="profile name or TOML shown with provenance")
    b.add_argument("--title", help="page title")
    c = sub.add_parser("check", help="open a report in headless Chromium and check it")
    c.add_argument("report", help="HTML file")
    c.add_argument("--screenshot", help="PNG to write (default: next to the report)")
    c.add_argument("--chromium", help="browser binary (default: $CHROMIUM or /usr/bin/chromium)")
    c.add_argument("--timeout", type=at_least(0, exclusive=True), default=60.0, help="seconds to wait (default 60)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(lambda: _build(args) if args.cmd == "build" else _check(args))


def _build(args) -> int:
    from . import inputs, profile_dict
    from .page import build_report

    from runio.safe_io import output_path

    if not any(f is not None for f in (args.prediction, args.sweep, args.validation,
                                       args.timeline)):
        raise InputError("give at least one of --prediction, --sweep, --validation, --timeline")
    # the page is an output like any other: checked before any work, and never
    # one of the files it is built from (that would replace the user's data)
    given = [args.prediction, args.sweep, args.validation, args.timeline, args.scenario]
    if args.profile and Path(args.profile).suffix.lower() == ".toml":
        given.append(args.profile)
    output_path(args.out, "--out", inputs=given, types=(".html", ".htm"))
    t0 = time.perf_counter()
    pred = scen = prof = None
    used = []
    if args.prediction is not None:
        data = inputs.read_json(args.prediction)
        if inputs.is_rotation(data):
            return _build_rotation(args, data, t0)
        pred, scen, prof = inputs.split_prediction(data, args.prediction)
        used.append(Path(args.prediction).name)
    if args.scenario is not None:
        scen = load_scenario(args.scenario).to_dict()
        used.append(Path(args.scenario).name)
    if args.profile is not None:
        prof = profile_dict(load_profile(args.profile))
        used.append(Path(args.profile).name)
    sweep = inputs.read_sweep(args.sweep) if args.sweep is not None else None
    val = inputs.read_validation(args.validation) if args.validation is not None else None
    tl = inputs.read_timeline(args.timeline) if args.timeline is not None else None
    used += [Path(f).name for f in (args.sweep, args.validation, args.timeline) if f is not None]
    title = args.title or ("kvperf report: " + ", ".join(used))
    out = build_report(args.out, prediction=pred, scenario=scen, profile=prof, sweep=sweep,
                       validation=val, timeline=tl, title=title, inputs=used)
    size = out.stat().st_size
    print(f"wrote {out} ({size / 1e3:.0f} kB, self-contained) in "
          f"{time.perf_counter() - t0:.2f} s")
    return 0


def _build_rotation(args, rot: dict, t0: float) -> int:
    """``--prediction`` holding a server rotation (``predict --measure rotation
    --json``, or ``kvperf.rotation(...).to_dict()``): its own page."""
    from . import profile_dict
    from .rotation import write_rotation_report
    others = [o for o, v in (("--sweep", args.sweep), ("--validation", args.validation),
                             ("--timeline", args.timeline)) if v is not None]
    if others:
        raise InputError(f"{Path(args.prediction).name} is a server rotation, whose page "
                         "stands alone; write the other inputs to another report",
                         field=others[0])
    # the command line names the scenario and profile; the API gives them whole
    scen = rot.get("scenario") if isinstance(rot.get("scenario"), dict) else None
    prof = rot.get("profile") if isinstance(rot.get("profile"), dict) else None
    if args.scenario is not None:
        scen = load_scenario(args.scenario).to_dict()
    if args.profile is not None:
        prof = profile_dict(load_profile(args.profile))
    elif isinstance(rot.get("profile"), str):
        try:                  # an embedded profile, named; a file's name is not its path
            prof = profile_dict(load_profile(rot["profile"]))
        except InputError:
            prof = None
    out = write_rotation_report(rot, scen, prof, args.out, title=args.title)
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB, self-contained) in "
          f"{time.perf_counter() - t0:.2f} s")
    return 0


def _check(args) -> int:
    from .browser import BrowserError, check_report, find_chromium

    from runio.safe_io import input_path, output_path
    path = input_path(args.report, "report", field="REPORT")
    shot = Path(args.screenshot) if args.screenshot else path.with_suffix(".png")
    output_path(shot, "--screenshot", [path], types=(".png",))
    exe = args.chromium or find_chromium()
    if exe is None:
        print("error: no Chromium found (set $CHROMIUM or install chromium)", file=sys.stderr)
        return 1
    try:
        res = check_report(path, screenshot=shot, chromium=exe, timeout=args.timeout)
    except BrowserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(res.summary())
    return 0 if res.ok else 1
