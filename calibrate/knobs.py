"""The knob table: pairs of measured runs that differ in one knob, measured
against predicted (``python -m calibrate knobs``).

A researcher turns one knob of a rack (client threads, servers, timeout,
memtable size, WAL, TransactionDB or plain DB, a server-code variant, ...)
and wants to know which way throughput moves and by how much. The reference
CSVs hold many such pairs; this module finds them and compares the measured
throughput ratio with the one the analytic solver and the simulator predict.

* **Knob columns, rows and pairs** (two rows of one kind whose knobs differ
  in exactly one column; measured ratio ``mops_b / mops_a``, predicted ratio
  the same of the predictions): :mod:`calibrate.knob_pairs`.
* **Scoring** (:func:`direction`): a pair is *scored* when the measured
  effect is at least ``min_effect`` in log terms,
  ``|log ratio| >= log(1 + min_effect)``. The predicted direction *agrees*
  when the predicted ratio moves the same way by at least 2 %
  (``|log predicted| >= log 1.02``); within 2 % of 1 it is *flat* (a miss for
  a scored pair); a pair below ``min_effect`` is *small*. Ratio error
  ``|predicted / measured - 1|``.
* **Held out** (``holdout=True``): each pair is predicted by a profile
  refitted (by the fitter registered for the rows' kind, as ``calibrate
  fit`` runs it) on every row of the given files except the pair's two rows
  and every other row of the same configuration (duplicates, repeats, and
  rows that list only part of that run, as F009 lists F001's wait and
  process time): one fit per distinct set of held-out rows.

This module holds the command (its flags checked, the pairs predicted, the
outputs written) and the names of the modules it draws on, importable from
here: :mod:`calibrate.knob_pairs` (knob columns, rows, pairs),
:mod:`calibrate.knob_scoring` (scored, direction, ratio error),
:mod:`calibrate.knob_predictions` (analytic, simulated and held-out
predictions) and :mod:`calibrate.knob_table` (the table and its CSV, text
and summary).
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from model.errors import InputError
from runio.inputs import load_profile

# the names the knob table's modules define stay importable from here, as
# before the split (tests/calibrate/test_knobs.py reads them as calibrate.knobs)
from .knob_pairs import (KNOB_KINDS, THROUGHPUT, Pair, Run, empty_means, find_pairs,
                         keep_runs, knob_columns, load_runs_files, normalise)
from .knob_predictions import (fit_without, holdout_folds, predict_analytic, predict_sim,
                               training_rows)
from .knob_scoring import FLAT, direction, ratio_error, scored
from .knob_table import (ENGINES, KnobTable, format_summary, format_table, summary,
                         table_header, table_rows, write_csv)

__all__ = ["KNOB_KINDS", "FLAT", "ENGINES", "Run", "Pair", "KnobTable", "knob_columns",
           "empty_means", "normalise", "load_runs_files", "keep_runs", "find_pairs", "scored",
           "direction", "ratio_error", "predict_analytic", "predict_sim", "holdout_folds",
           "fit_without", "table_header", "table_rows", "format_table", "summary",
           "format_summary", "write_csv", "parse_min_effect", "run_knobs"]


def distinct(items: Iterable[Any]) -> list[Any]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


def parse_min_effect(text: Any) -> float:
    """``--min-effect``: a finite fraction in [0, 10) (0.1 = 10 %)."""
    try:
        x = float(str(text).strip())
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and 0.0 <= x < 10.0):
        raise InputError(f"expected a fraction from 0 up to (not including) 10, e.g. 0.1 for "
                         f"10 %; got {text!r}", field="--min-effect")
    return x


def check_args(args) -> None:
    """Every flag and output path, checked before any work."""
    from runio.safe_io import output_path, same_file
    args.min_effect = parse_min_effect(args.min_effect)
    if not (isinstance(args.seconds, (int, float)) and math.isfinite(args.seconds)
            and 0 < args.seconds <= 1e5):
        raise InputError(f"expected simulated seconds per rack in (0, 1e5], got {args.seconds!r}",
                         field="--seconds")
    if not 0 <= args.seed < 2 ** 63:
        raise InputError(f"the seed must be an integer from 0 to 2**63 - 1, got {args.seed}",
                         field="--seed")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {args.jobs}", field="--jobs")
    inputs = list(args.runs or [])
    if args.profile and Path(args.profile).suffix.lower() == ".toml":
        inputs.append(args.profile)
    if args.out:
        output_path(args.out, "--out", inputs, types=(".csv",))
    if args.html:
        output_path(args.html, "--html", inputs, types=(".html", ".htm"))
    if args.out and args.html and (Path(args.out) == Path(args.html) or (
            Path(args.out).exists() and same_file(args.out, args.html))):
        raise InputError("--out and --html name the same file", source=args.out, field="--html")


def run_knobs(args) -> int:
    """``python -m calibrate knobs`` (see the module docstring)."""
    from runio.progress import Interrupted, partial_text, wanted
    check_args(args)
    show = wanted(args.progress)
    engines = ["analytic", "sim"] if args.engine == "both" else [args.engine]
    given = load_profile(args.profile) if args.profile is not None else None
    runs, knobs = load_runs_files(args.runs)
    pairs = find_pairs(runs, knobs)
    dups = [r for r in runs if r.duplicate_of is not None]
    if not pairs:
        print(f"no pairs: no two rows of one kind with a measured {THROUGHPUT} differ in "
              f"exactly one knob ({len(runs)} rows read)")
        t = KnobTable([], engines, args.min_effect, {e: [] for e in engines}, runs=len(runs),
                      duplicates=dups, holdout=args.holdout)
        _write_outputs(t, args)
        return 0
    print(f"{len(pairs)} pairs among {len(runs)} rows; predicting with "
          f"{' and '.join(ENGINES[e] for e in engines)}"
          + (" (held out: one refit per pair)" if args.holdout else ""), file=sys.stderr)
    chosen = (held_out_profiles(args, pairs, runs, given, show) if args.holdout
              else given_profiles(pairs, given))
    predicted, stopped = predict_pairs(args, pairs, chosen, engines, show)
    t = KnobTable(pairs, engines, args.min_effect, predicted, runs=len(runs), duplicates=dups,
                  holdout=args.holdout, held=chosen.held, profile=chosen.text,
                  seconds=args.seconds if "sim" in engines else None,
                  seed=args.seed if "sim" in engines else None,
                  partial=partial_text(*stopped) if stopped else "")
    _write_outputs(t, args)              # before printing: `| head` must not lose them
    print(format_table(t))
    print()
    print(format_summary(t))
    if stopped:
        where = [p for p in (args.out, args.html) if p]
        raise Interrupted(*stopped, f"the table so far is in {' and '.join(where)}"
                          if where else "")
    return 0


@dataclass
class PairProfiles:
    """The profiles the pairs are predicted under."""

    profiles: list[Any]                # profile number -> Profile
    of_pair: list[int | None]          # pair -> profile number (None: its refit never ran)
    text: str                          # which profiles, in words
    held: list[list[str]] = field(default_factory=list)     # per pair: ids held out
    stopped: tuple | None = None       # (done, total, unit) when Ctrl-C cut the refits short


def given_profiles(pairs: Sequence[Pair], given: Any) -> PairProfiles:
    """The ``--profile`` for every pair, else each kind's embedded profile."""
    from runio.kinds import KINDS
    profiles: list[Any] = []
    of_pair: list[int | None] = []
    by_name: dict[str, int] = {}
    for p in pairs:
        name = given.name if given is not None else KINDS[p.kind].profile
        if name not in by_name:
            by_name[name] = len(profiles)
            profiles.append(given if given is not None else load_profile(name))
        of_pair.append(by_name[name])
    return PairProfiles(profiles, of_pair, "profile " + ", ".join(f"'{n}'" for n in by_name))


def held_out_profiles(args, pairs: Sequence[Pair], runs: Sequence[Run], given: Any,
                      show: bool) -> PairProfiles:
    """``--holdout``: one refit per distinct set of held-out rows (Ctrl-C keeps
    the refits done; the pairs of the others get no profile)."""
    from runio.progress import bar

    from .cv import _fitter_for_rows
    folds, fold_of = holdout_folds(pairs, runs)
    held_ids = [[runs[i].id for i in folds[f]] for f in fold_of]
    kwargs: dict[str, Any] = {"priors": args.profile, "n_jobs": args.jobs}
    make, label = _fitter_for_rows([r.row for r in runs], None, kwargs)
    for held in folds:                     # refused before the first refit, not after it
        training_rows(runs, held)
    profiles: list[Any] = []
    fold_prof: dict[int, int] = {}
    stopped: tuple | None = None
    warned = False
    with bar(len(folds), "refits without each pair", "fit", show) as b:
        try:
            for f, held in enumerate(folds):
                prof, warnings = fit_without(runs, held, make)
                if warnings and not warned:
                    for w in warnings:
                        print(f"note (refit without {', '.join(runs[i].id for i in held)}):"
                              f" {w}", file=sys.stderr)
                    warned = True
                fold_prof[f] = len(profiles)
                profiles.append(prof)
                b.update(1)
        except KeyboardInterrupt:
            stopped = (len(fold_prof), len(folds), "refits")
    text = (f"held out: {len(fold_prof)} refit(s) by {label}"
            + (f" from '{given.name}'" if given is not None else ""))
    return PairProfiles(profiles, [fold_prof.get(f) for f in fold_of], text, held_ids, stopped)


#: engine -> per pair, the predicted MOPS of its rows a and b
Predicted = dict[str, list[tuple[float | None, float | None]]]


def predict_pairs(args, pairs: Sequence[Pair], chosen: PairProfiles, engines: Sequence[str],
                  show: bool) -> tuple[Predicted, tuple | None]:
    """Each engine's predictions of every pair's two rows, each distinct
    (scenario, profile) solved once; and (done, total, unit) when Ctrl-C cut
    the refits or the simulations short (no simulation after a cut refit)."""
    from runio.progress import bar
    needed: list[tuple[Any, int]] = []
    for p, k in zip(pairs, chosen.of_pair):
        if k is not None:
            needed += [(p.a.scenario, k), (p.b.scenario, k)]
    needed = distinct(needed)
    predicted: Predicted = {}
    stopped = chosen.stopped
    if "analytic" in engines:
        solved = _solve_analytic(needed, chosen.profiles, args.holdout, show)
        predicted["analytic"] = _per_pair(solved, pairs, chosen.of_pair)
    if "sim" in engines and not stopped:
        jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
        with bar(len(needed), f"simulating {args.seconds:g} s per rack", "rack", show) as b:
            got, cut = predict_sim([(sc, chosen.profiles[k]) for sc, k in needed], args.seconds,
                                   args.seed, jobs, progress=b.update)
        sim = {needed[i]: v for i, v in got.items()}
        if cut:
            stopped = (len(got), len(needed), "simulated racks")
        predicted["sim"] = _per_pair(sim, pairs, chosen.of_pair)
    elif "sim" in engines:
        predicted["sim"] = [(None, None)] * len(pairs)
    return predicted, stopped


def _solve_analytic(needed: Sequence[tuple[Any, int]], profiles: Sequence[Any], holdout: bool,
                    show: bool) -> dict[tuple[Any, int], float]:
    """(scenario, profile number) -> analytic MOPS, one batch per profile."""
    from runio.progress import bar
    solved: dict[tuple[Any, int], float] = {}
    for k, prof in enumerate(profiles):
        scs = [sc for sc, kk in needed if kk == k]
        if not scs:
            continue
        with bar(len(distinct(scs)), "analytic" + (f" (refit {k + 1})" if holdout else ""),
                 "rack", show and not holdout) as b:
            def moved(done: int, total: int) -> None:
                b.total, b.n = total, done
                b.refresh()
            preds = predict_analytic(scs, prof, progress=moved)
        for sc, pr in zip(scs, preds):
            solved[(sc, k)] = float(pr.throughput_mops)
    return solved


def _per_pair(mops: Mapping[tuple[Any, int], float], pairs: Sequence[Pair],
              of_pair: Sequence[int | None]) -> list[tuple[float | None, float | None]]:
    """Each pair's (a, b) MOPS under its profile; (None, None) without one."""
    return [(mops.get((p.a.scenario, k)), mops.get((p.b.scenario, k)))
            if k is not None else (None, None) for p, k in zip(pairs, of_pair)]


def _write_outputs(t: KnobTable, args) -> None:
    """``--out`` and ``--html``, each named on stderr once written."""
    if args.out:
        write_csv(t, args.out)
        print(f"knob table ({len(t.pairs)} pairs) written to {args.out}", file=sys.stderr)
    if args.html:
        from reports.knobs import write_knob_report
        title = "Knob table" + (" (held out)" if t.holdout else "")
        write_knob_report(table_rows(t), args.html, engines=t.engines, min_effect=t.min_effect,
                          summary=summary(t), summary_text=format_summary(t) if t.pairs else "",
                          holdout=t.holdout, title=title, inputs=list(args.runs))
        print(f"report written to {args.html}", file=sys.stderr)
