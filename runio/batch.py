"""Batch prediction over a runs CSV (docs/contracts.md).

Reads any CSV with the columns of one of the reference kinds, infers the
kind from the header, and writes every input row with all its input columns
plus ``pred_<column>`` for each measured column the kind can predict. A kind
that measures columns the model cannot predict (latency percentiles, stall
counters) keeps them as they are and names them, per row, in an
``unpredicted`` column. Bad input raises :class:`~model.errors.InputError`
naming file, line and column.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

from model.errors import InputError
from runio.exits import RunFailed
from runio.safe_io import read_csv, write_rows_csv
from model.profile import Profile
from runio.kinds import RunKind, detect
from runio.row_prediction import NOTE, predict_kind_rows, rack_size, row_racks
from runio.plan_pieces import MIN_PARALLEL_ROWS, balanced, even, pieces, rows_per_piece, solves_per_rack
from runio.inputs import load_profile


def read_runs(path: str | Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a runs CSV (:func:`runio.safe_io.read_csv`)."""
    return read_csv(path, "runs CSV", "--runs")


def predict_rows(kind: RunKind, rows: list[dict[str, str]], profile: Profile,
                 source: str, progress: bool = False, intervals: bool = True,
                 chunk: int | None = None, jobs: int = 1) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row index, pred_ columns)`` for every row, as rows finish.

    Every row is checked before any solving (a bad row 2,000 is reported at
    once). Rack kinds are solved in pieces of ``chunk`` rows (by default
    about one solver batch of racks), smallest racks first: a batch pads
    every rack to its largest, and a Ctrl-C keeps every piece finished
    before it, so a plan with one huge rack keeps all the small ones. A rack
    several pieces need (a NoCache baseline) is solved once and kept until
    the last piece that needs it. Other kinds go row by row, in order.

    ``jobs`` > 1: the pieces of a rack kind are solved by that many worker
    processes, largest first (:func:`_parallel_pieces`); a rack two pieces
    share is then solved by each."""
    from .progress import bar
    needs = row_racks(kind, rows, source)
    if kind.rack is None:
        order, step, solves = list(range(len(rows))), 1, 1
    else:
        order = sorted(range(len(rows)),
                       key=lambda i: max(map(rack_size, needs[i]), default=(0,)))
        solves = solves_per_rack(profile, intervals)
        step = chunk or rows_per_piece(solves, needs)
        # worker processes pay off from a few hundred rows (a fork and the
        # solver's fixed cost per step); a short file stays in this process
        jobs = jobs if len(rows) >= 2 * MIN_PARALLEL_ROWS else 1
    if jobs > 1 and kind.rack is not None and chunk is None:
        # about two runs per worker, so that the last ones balance out, of
        # about equal work rather than equal rows (a 1,024-client rack costs
        # three a 32-client one), but none so small that each solver step's
        # fixed cost dominates. With intervals (many solves a rack) a run is
        # cut further, into equal pieces of about one solver block (``step``
        # rows), so that Ctrl-C keeps every finished piece, not whole quarters
        cap = step if solves > 1 else len(rows)
        cut = [p for part in balanced(order, needs, 2 * jobs)
               for part_even in even(part, cap)
               for p in pieces(part_even, needs, len(part_even), solves)]
    else:
        cut = pieces(order, needs, step, solves)
    if jobs > 1 and kind.rack is not None and len(cut) > 1:
        yield from _parallel_pieces(kind, rows, cut, profile, source, progress, intervals,
                                    jobs, needs)
        return
    last_piece = {s: n for n, part in enumerate(cut) for i in part for s in needs[i]}
    evict: dict[int, list] = {}                  # piece -> racks no later piece needs
    for s, piece in last_piece.items():
        evict.setdefault(piece, []).append(s)
    solved: dict = {}
    with bar(len(rows), f"predicting {kind.name}", "row", progress) as b:
        a = 0
        for n, part in enumerate(cut):

            def moved(done: int, total: int, a=a, part=part) -> None:
                # racks solved within the piece, shown as a share of its rows, so
                # a piece of slow racks does not look like a hang
                b.n = a + int(len(part) * done / max(total, 1))
                b.refresh()

            preds = predict_kind_rows(kind, [rows[i] for i in part], profile, source,
                                      intervals=intervals, progress=moved, solved=solved,
                                      needs=[needs[i] for i in part])
            yield from zip(part, preds)
            for s in evict.get(n, ()):
                solved.pop(s, None)
            a += len(part)
            b.n = a
            b.refresh()




#: worker side of the progress channel: set in the parent before the pool
#: forks, so the workers inherit it (a queue cannot be pickled into a task)
_PROGRESS_QUEUE = None

#: the racks of every row, checked and built by the parent: set before the
#: pool forks, so that workers do not build each row's scenarios again (a
#: quarter of a second over 1,000 rows); None where workers are not forked
_NEEDS: list | None = None


def _solve_piece(task: tuple) -> list[dict[str, Any]]:
    """One piece in a worker process: (piece number, kind name, row indices,
    rows, profile, source, intervals). Reports its racks solved as (piece, done, total)."""
    from runio.kinds import get
    n, name, part, part_rows, profile, source, intervals = task
    q = _PROGRESS_QUEUE

    def moved(done: int, total: int) -> None:
        if q is not None:
            q.put((n, done, total))
    needs = None if _NEEDS is None else [_NEEDS[i] for i in part]
    return predict_kind_rows(get(name), part_rows, profile, source, intervals=intervals,
                             progress=moved, needs=needs)


class WorkerDied(RunFailed):
    """A worker process of a parallel batch ended without a result (killed,
    out of memory): not the input's fault, and no reason for a traceback."""


def _parallel_pieces(kind: RunKind, rows: list[dict[str, str]], pieces: list[list[int]],
                     profile: Profile, source: str, progress: bool, intervals: bool,
                     jobs: int, needs: list | None = None
                     ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Pieces solved by ``jobs`` worker processes, the largest racks first
    (the pieces come smallest first), yielded as each finishes. The bar moves
    with the racks solved within the pieces, as in one process."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool
    from .progress import bar
    from .workers import solver_worker, worker_pool
    global _PROGRESS_QUEUE, _NEEDS
    forked = "fork" in mp.get_all_start_methods()
    _PROGRESS_QUEUE = mp.get_context("fork").SimpleQueue() if (progress and forked) else None
    _NEEDS = needs if forked else None
    share = [0.0] * len(pieces)                  # each piece's share done, 0..1
    try:
        with worker_pool(min(jobs, len(pieces)), initializer=solver_worker) as pool, \
                bar(len(rows), f"predicting {kind.name}", "row", progress) as b:
            pending = {pool.submit(_solve_piece, (n, kind.name, part, [rows[i] for i in part],
                                                  profile, source, intervals)): n
                       for n, part in reversed(list(enumerate(pieces)))}
            while pending:
                done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                q = _PROGRESS_QUEUE
                while q is not None and not q.empty():
                    n, d, t = q.get()
                    share[n] = max(share[n], d / max(t, 1))
                for fut in done:
                    n = pending.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool:
                        raise WorkerDied(
                            f"a worker process of --jobs {jobs} ended abruptly (killed, or out "
                            "of memory?); run again with --jobs 1, or fewer jobs") from None
                    yield from zip(pieces[n], result)
                    share[n] = 1.0
                b.n = int(sum(len(part) * f for part, f in zip(pieces, share)))
                b.refresh()
    finally:
        # (on Ctrl-C or an error the pool has ended its workers: runio.workers)
        _PROGRESS_QUEUE = _NEEDS = None


def format_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):              # per-server values, as the notes write them
        return "|".join(format_value(float(x)) or "inf" for x in v)
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def run_batch(runs: str, out: str, profile: Profile | None = None,
              progress: bool = False, intervals: bool = True,
              jobs: int = 1) -> tuple[RunKind, int]:
    """Predict every row of ``runs`` into ``out``; returns the kind and the row count.
    ``jobs``: worker processes for a rack kind's pieces (:func:`predict_rows`).

    Ctrl-C writes the rows predicted so far (in the input's order; rack kinds
    are solved smallest first, so these need not be the first rows), each
    with ``partial`` = ``true``, and raises :class:`runio.progress.Interrupted`."""
    from .progress import Interrupted
    header, rows = read_runs(runs)
    kind = detect(header, source=runs)
    profile = profile or load_profile(kind.profile)
    for col in ([UNPREDICTED] if kind.unpredicted else []) + ["partial"]:
        if col in header:
            raise InputError(f"the input already has a column '{col}' (a previous "
                             "prediction?); rename or remove it", source=runs, line=1, field=col)
    results: dict[int, dict[str, Any]] = {}
    try:
        for i, preds in predict_rows(kind, rows, profile, runs, progress, intervals,
                                     jobs=jobs):
            for k in preds:
                if k in header:
                    # Writing over it would lose the user's column; keeping it
                    # would hide the new prediction.
                    raise InputError(f"the input already has a column '{k}' (a previous "
                                     "prediction?); rename or remove it", source=runs, line=1,
                                     field=k)
            results[i] = preds
    except KeyboardInterrupt:
        kept = _write(out, kind, header, rows, results, partial=True)
        raise Interrupted(len(results), len(rows), "rows",
                          f"the rows predicted so far are in {out} (column partial)" if kept
                          else f"no row was finished; {out} was not written") from None
    except WorkerDied as exc:
        kept = _write(out, kind, header, rows, results, partial=True)
        raise WorkerDied(f"{exc}; the {len(results)} of {len(rows)} rows predicted before "
                         f"are in {out} (column partial)" if kept else
                         f"{exc}; no row was finished and {out} was not written") from None
    for i, preds in results.items():
        preds.update(errors(kind, rows[i], preds))
    _write(out, kind, header, rows, results)
    summary = compare_summary(kind, rows, results, profile, runs)
    if summary:
        import sys
        print("\n".join(summary), file=sys.stderr)
    jumps = sum(1 for r in results.values() if r.get(NOTE))
    if jumps:
        import sys
        print(f"NOTE: {jumps} of {len(rows)} rows sit where the rack's load balance jumps "
              f"(column {NOTE} in {out}): their figures are those at the jump", file=sys.stderr)
    return kind, len(rows)


def _write(out: str, kind: RunKind, header: list[str], rows: list[dict[str, str]],
           results: dict[int, dict[str, Any]], partial: bool = False) -> bool:
    """The predicted rows (``results``: row index -> pred_ columns), in the
    input's order; a partial output is marked, or not written without a row
    (:func:`runio.safe_io.write_rows_csv`). Returns whether it was written.

    The pred_ columns come in the order rows first name them, read in the
    input's order, whatever order the rows were solved in."""
    pred_cols = list(dict.fromkeys(k for i in sorted(results) for k in results[i]))
    extra = [UNPREDICTED] if kind.unpredicted else []
    table = []
    for i in sorted(results):
        row, preds = rows[i], results[i]
        table.append({**{h: row.get(h, "") for h in header},
                      **{c: format_value(preds.get(c)) for c in pred_cols},
                      **({UNPREDICTED: unpredicted(kind, row)} if kind.unpredicted else {})})
    return write_rows_csv(out, table, lambda v: "" if v is None else str(v),
                          header + pred_cols + extra, partial=partial)


UNPREDICTED = "unpredicted"

#: a measurement this many times off its prediction, and outside its interval,
#: is warned about by row: more than the model's error, a sign of another cause
FAR = 2.0


def _number(text: Any) -> float | None:
    try:
        x = float(str(text).strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def errors(kind: RunKind, row: dict[str, str], preds: dict[str, Any]) -> dict[str, float]:
    """``err_<column>_pct``: (predicted - measured) / measured in %, for every
    measured column of the row the kind predicts (a single number, not 0)."""
    out = {}
    for col in kind.measured:
        meas, pred = _number(row.get(col, "")), preds.get(f"pred_{col}")
        if meas is None or meas == 0 or not isinstance(pred, (int, float)) \
                or not math.isfinite(pred):
            continue
        out[f"err_{col}_pct"] = 100.0 * (pred - meas) / meas
    return out


def compare_summary(kind: RunKind, rows: list[dict[str, str]], results: dict[int, dict],
                    profile: Profile, source: str, most: int = 5) -> list[str]:
    """Measured against predicted, in a few lines: per column the rows
    compared, the median absolute error and how often the measurement fell
    in its 90 % interval; then the rows far outside it, with the likely reason."""
    import statistics
    lines, far = [], []
    for col in kind.measured:
        errs, inside, n_iv = [], 0, 0
        for i, preds in sorted(results.items()):
            e = preds.get(f"err_{col}_pct")
            if e is None:
                continue
            errs.append(abs(e))
            meas = _number(rows[i].get(col, ""))
            lo, hi = preds.get(f"pred_{col}_lo"), preds.get(f"pred_{col}_hi")
            has_iv = isinstance(lo, (int, float)) and isinstance(hi, (int, float))
            if has_iv:
                n_iv += 1
                inside += lo <= meas <= hi
            ratio = preds[f"pred_{col}"] / meas
            if not (has_iv and lo <= meas <= hi) and (ratio > FAR or ratio < 1 / FAR):
                far.append((i, col, meas, preds[f"pred_{col}"], lo if has_iv else None,
                            hi if has_iv else None, ratio))
        if errs:
            cover = f", inside the 90 % interval on {inside} of {n_iv}" if n_iv else ""
            lines.append(f"  {col:<14} {len(errs)} rows: median error "
                         f"{statistics.median(errs):.1f} %{cover}")
    lines += per_worker_summary(kind, rows, results)
    if not lines:
        return []
    out = [f"measured against predicted (profile '{profile.name}'; err_<column>_pct "
           "columns in the output):", *lines]
    for i, col, meas, pred, lo, hi, ratio in far[:most]:
        row = rows[i]
        where = row.get("id") or f"line {row.get('__line__')}"
        outside = f"outside its interval {lo:.4g}-{hi:.4g}" if lo is not None else \
            f"more than {FAR:g}x off"
        out.append(f"WARNING: {where}: {col} measured {meas:.4g}, predicted {pred:.4g} "
                   f"({ratio:.2g}x), {outside}: {_likely_reason(kind, profile)}")
    if len(far) > most:
        out.append(f"WARNING: {len(far) - most} more rows as far off (see the err_ columns)")
    return out


def per_worker_summary(kind: RunKind, rows: list[dict[str, str]],
                       results: dict[int, dict]) -> list[str]:
    """For the kind's per-worker columns (what RocksDB did, ``|``-separated):
    how often the prediction is within one of the measured count (or, for
    seconds, within 25 % where over 1 s), over every worker of every row."""
    out = []
    for col in kind.per_worker:
        hits = total = 0
        for i, preds in sorted(results.items()):
            meas, pred = _numbers(rows[i].get(col, "")), preds.get(f"pred_{col}")
            if meas is None or not isinstance(pred, (list, tuple)) or len(pred) != len(meas):
                continue
            for m, p in zip(meas, pred):
                if col.endswith("_s"):
                    if m <= 1.0 and p <= 1.0:
                        continue             # the 25 % check is for stalls over 1 s
                    ok = abs(p - m) <= 0.25 * max(m, 1e-9)
                elif col.endswith("_mb"):
                    ok = abs(p - m) <= 0.25 * max(m, 1.0)
                else:
                    ok = abs(p - m) <= 1.0
                hits += ok
                total += 1
        if total:
            rule = ("within 25 % (where over 1 s)" if col.endswith("_s") else
                    "within 25 %" if col.endswith("_mb") else "within one")
            out.append(f"  {col:<14} {total} workers: {rule} on {hits} "
                       f"({100.0 * hits / total:.0f} %)")
    return out


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(x) for x in str(text).split("|")] if str(text).strip() else None
    except ValueError:
        return None


def _likely_reason(kind: RunKind, profile: Profile) -> str:
    if profile.name != kind.profile:
        return (f"the profile '{profile.name}' is not the one fitted for {kind.name} rows "
                f"('{kind.profile}')")
    return (f"was it measured on the testbed profile '{profile.name}' was fitted on? "
            "(another machine: fit a profile to your runs, python -m calibrate fit)")


def unpredicted(kind: RunKind, row: dict[str, str]) -> str:
    """The measured columns of ``row`` the model does not predict, ``|``-separated."""
    return "|".join(c for c in kind.unpredicted if str(row.get(c, "")).strip())
