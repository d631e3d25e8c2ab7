"""Per-system HTML pages computed: the rows, the cross-validation, the command.

``python -m reports.systems --out DIR`` (whose entry, :func:`reports.systems.main`,
hands over to :func:`main` here) writes ``DIR/<system>.html`` for every system
in :mod:`model.systems` (``morphling-c``, ``morphling-go``, ``runtimes``,
``thread-coroutine``); :func:`write_system_report` writes one.

This module computes what a page shows and :mod:`reports.system_page` renders
it: :func:`curves` reads a system's calibration CSVs and predicts every
measured cell, then the curves extended past the last measured point;
:func:`cv_rows` runs the cross-validation (:mod:`calibrate.cv`, grouping
``first:2`` by default: the profile is refitted on the first points of every
curve and predicts the rest). It lives in calibrate, not reports, because
refitting a profile is calibration's work: calibrate depends on reports (to
render), never the other way.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.profile import Profile
from model.systems import SYSTEMS, system_of
from model.systems.base import System
from model.systems.base import measured as _measured
from reports.page import write
from reports.system_curves import finite_number
from reports.system_page import render_system_page, system_by_name
from runio.exits import ArgumentParser, run_command
from runio.inputs import load_profile
from runio.safe_io import output_folder, output_path

from .cv import cross_validate, curve_spec
from .systems_fit import DATA, SystemFitter, load_rows

__all__ = ["curves", "cv_rows", "system_page", "write_system_report", "main", "DEFAULT_CV"]

#: the cross-validation grouping a page shows unless told otherwise
DEFAULT_CV = "first:2"


# ---- rows ---------------------------------------------------------------------

def curves(kind: str, profile: Profile | None = None, data_dir: str | None = None
           ) -> list[dict[str, Any]]:
    """Report rows for a system (or one of its kinds): every measured cell of its
    calibration CSVs with the prediction for that row (``kind = "measured"``),
    then the predicted curves extended past the last measured point
    (``kind = "predicted"``, ``flag`` = saturation / peak / collapse where expected).
    """
    sysm = system_of(kind)
    return measured_and_predicted(sysm, sysm.profile(profile), data_dir)


def measured_and_predicted(sysm: System, prof: Profile, data_dir: str | None
                           ) -> list[dict[str, Any]]:
    """:func:`curves` of a system with its profile given."""
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


# ---- cross-validation: held-out points against the refitted curve ----------------------

def cv_grouping(sysm: System, grouping: str, data_dir: str | None = None
                ) -> tuple[list[dict[str, Any]], str]:
    """The system's calibration rows and the grouping its page cross-validates
    by: ``grouping``, checked against the rows (an unknown grouping or column
    is refused), or ``first:1`` where the curves are too short for
    ``first:K`` (Morphling C has two points on its longest curve)."""
    from .cv import make_folds
    rows = load_rows(sysm.name, data_dir or DATA)
    try:
        make_folds(rows, grouping)
    except InputError as exc:
        name, _, k = grouping.partition(":")
        if name != "first" or k == "1" or "holds out no row" not in str(exc):
            raise
        grouping = "first:1"
    return rows, grouping


def cv_rows(sysm: System, grouping: str = DEFAULT_CV, data_dir: str | None = None
            ) -> tuple[list[dict[str, Any]], Any]:
    """Every measured cell of the system predicted by the profile refitted on a
    grouping's training rows (with its interval), marked ``held_out`` when the
    fit did not see it; and the :class:`calibrate.cv.CVResult`."""
    rows, grouping = cv_grouping(sysm, grouping, data_dir)
    res = cross_validate(rows, grouping, fitter=SystemFitter,
                         fitter_kwargs={"system": sysm.name})
    if res.partial:
        # cross_validate returns the folds finished when Ctrl-C stops it
        # (for its own command's partial output); a page of some folds
        # (or none: an IndexError below) is no report: stop as asked
        raise KeyboardInterrupt
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
                        "x": finite_number(r, spec["order"]), "x_col": spec["order"]})
    return out, res


def _curve_name(r: Mapping[str, Any], cols: Sequence[str]) -> str:
    """A curve's legend name: its text values, numbers with their column."""
    parts = []
    for c in cols:
        v = str(r.get(c, "") or "").strip()
        if not v:
            continue
        parts.append(f"{c}={v}" if finite_number(r, c) is not None else v)
    return ", ".join(parts) or "all"


# ---- pages -----------------------------------------------------------------------

def system_page(system: str | System, rows: Sequence[Mapping[str, Any]] | None = None,
                profile: Profile | None = None, *, data_dir: str | None = None,
                cv: str | None = DEFAULT_CV) -> str:
    """The HTML of one system's page (rows default to :func:`curves`; ``cv`` is
    the cross-validation grouping shown, None for none)."""
    sysm = system_by_name(system)
    prof = sysm.profile(profile)
    if rows is None:
        rows = measured_and_predicted(sysm, prof, data_dir)
    cvd = cv_rows(sysm, cv, data_dir) if cv and sysm.kinds else None
    return render_system_page(sysm, rows, prof, cv=cvd)


def write_system_report(system: str | System, path: str | Path,
                        profile: Profile | None = None, *, data_dir: str | None = None,
                        cv: str | None = DEFAULT_CV) -> Path:
    """Write one system's page to ``path``; ``profile`` defaults to the embedded one."""
    return write(path, system_page(system, profile=profile, data_dir=data_dir, cv=cv))


def main(argv: list[str] | None = None) -> int:
    """``python -m reports.systems``: one page per system asked for (all by default)."""
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
        prof = load_profile(args.profile) if args.profile is not None else None
        names = args.system or sorted(SYSTEMS)
        # every input and output before any work or progress: the grouping
        # against each system's rows, the folder (made, if its parent exists,
        # only once all is checked) and each page's path
        cv = None if args.cv == "none" else args.cv
        for name in names:
            try:
                sysm = system_by_name(name)
            except InputError as exc:
                raise InputError(exc.detail, field="--system") from None
            if cv and sysm.kinds:
                cv_grouping(sysm, cv)
        out_dir = output_folder(args.out, "--out")
        if out_dir.exists():
            for name in names:
                output_path(out_dir / f"{name}.html", "--out", types=None)
        out_dir.mkdir(exist_ok=True)
        for i, name in enumerate(names, 1):
            # each page refits the system once per cross-validation fold: 5-20 s
            print(f"[{i}/{len(names)}] {name}: predicting every row and cross-validating "
                  f"({args.cv if args.cv != 'none' else 'no cv'}) ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            out = write_system_report(name, out_dir / f"{name}.html", prof, cv=cv)
            print(f"[{i}/{len(names)}] wrote {out} in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)

    return run_command(action)

