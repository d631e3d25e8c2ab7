"""The knob table: pairs of measured runs that differ in one knob, measured
against predicted (``python -m calibrate knobs``).

A researcher turns one knob of a rack (client threads, servers, timeout,
memtable size, WAL, TransactionDB or plain DB, a server-code variant, ...)
and wants to know which way throughput moves and by how much. The reference
CSVs hold many such pairs; this module finds them and compares the measured
throughput ratio with the one the analytic solver and the simulator predict.

* **Knob columns** of a run kind are the row columns that set scenario keys
  (:data:`runio.farreach_kinds.COLUMN_OF`, and whatever else
  :func:`runio.farreach_kinds.farreach_scenario` reads, found by probing it:
  ``variant`` of the tuning kind is one). Every other column (id, block,
  setting, note, wait_stat, the measured columns) is ignored.
* Knob cells are compared after normalising: numbers by value (``64`` and
  ``64.0`` are equal), an empty cell as the value it stands for (an empty
  ``queries_m`` is 10 M queries, an empty ``workload`` is zipf, an empty
  ``memtable_mb`` the default scenario's memtable, ...: :func:`empty_means`).
* **Rows.** Rows whose knobs and measured values are all equal are one run
  listed twice (F011 re-lists F001): the first is kept. Rows without a
  measured ``mops`` are not paired.
* **Pairs**: two kept rows of one kind (possibly from two files of that kind;
  never across kinds) whose knobs differ in exactly one column, ordered as
  the files list them (a, b). Measured ratio ``mops_b / mops_a``; predicted
  ratio the same of the predictions.
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
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from model.errors import InputError
from model.rows import parse_number
from runio.inputs import load_profile

__all__ = ["KNOB_KINDS", "FLAT", "ENGINES", "Run", "Pair", "KnobTable", "knob_columns",
           "empty_means", "normalise", "load_runs_files", "keep_runs", "find_pairs", "scored",
           "direction", "ratio_error", "predict_analytic", "predict_sim", "holdout_folds",
           "fit_without", "table_header", "table_rows", "format_table", "summary",
           "format_summary", "write_csv", "parse_min_effect", "run_knobs"]

#: the run kinds the knob table compares (rows that describe a FarReach rack)
KNOB_KINDS = ("farreach_runs", "farreach_tuning", "farreach_breakdown")

#: a predicted ratio within this factor of 1 is flat (no direction)
FLAT = 1.02

#: engine name -> its label in tables
ENGINES = {"analytic": "analytic", "sim": "simulator"}

#: the measured column the ratios are taken of
THROUGHPUT = "mops"

# relative slack on the thresholds, so that a ratio of exactly 1.1 (which
# floating point may give as 1.0999999999999999) counts as a 10 % effect
_EPS = 1e-12


# ---------------------------------------------------------------------------
# knob columns and their values
# ---------------------------------------------------------------------------

class _Probe(dict):
    """A row that records every column a scenario builder reads."""

    def __init__(self, data: Mapping[str, str]):
        super().__init__(data)
        self.read: list[str] = []

    def _note(self, key):
        if isinstance(key, str) and key not in self.read:
            self.read.append(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)


def _scenario_columns(row: Mapping[str, str]) -> list[str]:
    """The columns :func:`farreach_scenario` reads from ``row`` (in the order read)."""
    from runio.farreach_kinds import farreach_scenario
    probe = _Probe(row)
    try:
        farreach_scenario(probe)
    except InputError:
        pass                     # a bad cell is reported later, with its line
    return probe.read


def knob_columns(kind: str, header: Sequence[str],
                 rows: Sequence[Mapping[str, str]] = ()) -> list[str]:
    """The knob columns of a file of ``kind`` with this ``header``, in header order.

    The columns that set scenario keys (``COLUMN_OF``) and every column
    ``farreach_scenario`` reads from the file's ``rows``: ``variant`` of the
    tuning kind, which pins the workers, is one."""
    from runio.farreach_kinds import COLUMN_OF
    if kind not in KNOB_KINDS:
        raise InputError(f"the knob table compares FarReach runs "
                         f"({', '.join(KNOB_KINDS)}); not kind {kind}", field="--runs")
    cols = set(COLUMN_OF.values())
    for row in rows:
        cols.update(_scenario_columns(row))
    return [h for h in header if h in cols and not h.startswith("__")]


#: what an empty cell of a choice column stands for (farreach_scenario's
#: defaults; tests/calibrate/test_knobs.py checks each against it)
_EMPTY_CHOICES = {"workload": "zipf", "wal": "flush", "db": "txn", "seq_check": "evicted-only",
                  "affinity": "0", "rcvbuf": "default", "queries_m": "10"}


def empty_means() -> dict[str, str]:
    """Column -> the (normalised) value an empty cell of it stands for.

    ``queries_m`` and the choice columns as :func:`farreach_scenario` reads
    them; numeric columns that keep the default scenario's value when empty
    (timeout, memtable, flushnum, maxnum, WAL bytes per sync) that value."""
    from runio.farreach_kinds import COLUMN_OF
    from model.scenario import Scenario
    base = Scenario.default().to_dict()
    out = dict(_EMPTY_CHOICES)
    for key, col in COLUMN_OF.items():
        if col in out or sum(c == col for c in COLUMN_OF.values()) != 1:
            continue
        if col in ("system", "servers", "clients"):       # required: no default
            continue
        section, _, name = key.partition(".")
        v = (base.get(section) or {}).get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[col] = _number_text(float(v))
    return {c: normalise(v) for c, v in out.items()}


def _number_text(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def normalise(text: Any, col: str | None = None, empty: Mapping[str, str] | None = None) -> str:
    """A cell as compared: a number by its value (``64.0`` -> ``64``), a
    ``|``-separated list element by element, text stripped; an empty cell as
    ``empty[col]`` when given."""
    t = "" if text is None else str(text).strip()
    if not t:
        return (empty or {}).get(col or "", "")
    if "|" in t:
        return "|".join(normalise(p) for p in t.split("|"))
    try:
        return _number_text(parse_number(t, col or ""))
    except InputError:
        return t


# ---------------------------------------------------------------------------
# rows and pairs
# ---------------------------------------------------------------------------

@dataclass
class Run:
    """One row of a runs file, as the knob table sees it."""

    index: int                       # position over all files, in the order read
    kind: str
    source: str
    line: int
    id: str
    row: dict[str, str]              # the row as read (with __kind__, __source__, __line__)
    knobs: dict[str, str]            # knob column -> normalised value
    measured: tuple                  # normalised measured cells, the kind's order
    mops: float | None
    scenario: Any                    # model.scenario.Scenario
    duplicate_of: "Run | None" = None

    @property
    def config(self) -> tuple:
        return (self.kind, tuple(sorted(self.knobs.items())))


@dataclass
class Pair:
    kind: str
    knob: str
    a: Run
    b: Run

    @property
    def values(self) -> tuple[str, str]:
        return self.a.knobs[self.knob], self.b.knobs[self.knob]

    @property
    def measured(self) -> float:
        return self.b.mops / self.a.mops

    @property
    def same_scenario(self) -> bool:
        """Do the two rows make the same scenario (the model does not see this knob)?"""
        return self.a.scenario == self.b.scenario


def _line(row: Mapping[str, str]) -> int | None:
    v = row.get("__line__")
    return int(v) if v and str(v).isdigit() else None


def load_runs_files(paths: Sequence[str]) -> tuple[list[Run], dict[str, list[str]]]:
    """Every row of the files (each file's kind detected from its header, as
    ``calibrate validate`` and ``sim predict --runs`` do), checked up front:
    a measured cell that is not a number, a knob cell the scenario refuses,
    name the file, line and column. Returns the rows and each kind's knob
    columns (the union over its files)."""
    from runio.farreach_kinds import farreach_scenario, wait_stat
    from runio.kinds import KINDS, detect
    from runio.batch import read_runs

    from .runs_io import check_measured
    if not paths:
        raise InputError("give at least one --runs FILE.csv", field="--runs")
    runs: list[Run] = []
    knobs: dict[str, list[str]] = {}
    empty = empty_means()
    read: list[tuple[str, Any, list[str], list[dict[str, str]]]] = []
    for path in paths:
        header, rows = read_runs(path)
        kind = detect(header, source=str(path))
        if kind.name not in KNOB_KINDS:
            raise InputError(f"this file is of kind {kind.name}; the knob table compares "
                             f"FarReach runs ({', '.join(KNOB_KINDS)})", source=str(path),
                             line=1, field="--runs")
        if THROUGHPUT not in kind.measured:
            raise InputError(f"kind {kind.name} measures no {THROUGHPUT}", source=str(path),
                             line=1, field="--runs")
        cols = knob_columns(kind.name, header, rows)
        known = knobs.setdefault(kind.name, [])
        known += [c for c in cols if c not in known]
        read.append((str(path), kind, header, rows))
    for path, kind, header, rows in read:
        for r in rows:
            r["__kind__"] = kind.name
            r["__source__"] = path
            line = _line(r)
            check_measured(KINDS[kind.name], r)
            try:
                sc = farreach_scenario(r)
                if kind.name == "farreach_runs":
                    wait_stat(r)
            except InputError as exc:
                raise exc.located(source=path, line=line) from None
            mops_text = str(r.get(THROUGHPUT, "") or "").strip()
            mops = parse_number(mops_text, THROUGHPUT) if mops_text else None
            runs.append(Run(
                index=len(runs), kind=kind.name, source=path, line=line or 0,
                id=str(r.get("id") or "").strip() or f"{Path(path).name}:{line}", row=r,
                knobs={c: normalise(r.get(c), c, empty) for c in knobs[kind.name]},
                measured=tuple(normalise(r.get(c)) for c in kind.measured),
                mops=mops, scenario=sc))
    return runs, knobs


def keep_runs(runs: Sequence[Run]) -> list[Run]:
    """Rows to pair: one of each run listed more than once (the first), and
    only rows with a measured throughput > 0. Later listings get
    ``duplicate_of`` set."""
    first: dict[tuple, Run] = {}
    kept = []
    for r in runs:
        key = (r.config, r.measured)
        if key in first:
            r.duplicate_of = first[key]
            continue
        first[key] = r
        if r.mops is not None and r.mops > 0:
            kept.append(r)
    return kept


def find_pairs(runs: Sequence[Run], knobs: Mapping[str, Sequence[str]]) -> list[Pair]:
    """Every two kept rows of one kind whose knobs differ in exactly one column,
    in file order (a before b)."""
    pairs = []
    kept = keep_runs(runs)
    for i, a in enumerate(kept):
        for b in kept[i + 1:]:
            if a.kind != b.kind:
                continue
            diff = [c for c in knobs[a.kind] if a.knobs.get(c, "") != b.knobs.get(c, "")]
            if len(diff) == 1:
                pairs.append(Pair(a.kind, diff[0], a, b))
    return pairs


# ---------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------

def _log(x: float | None) -> float | None:
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        return None
    return math.log(x)


def scored(measured: float, min_effect: float) -> bool:
    """Is the measured effect large enough to score: ``|log ratio| >= log(1 + min_effect)``?
    A measured ratio of exactly 1 has no direction and is never scored."""
    lm = _log(measured)
    if lm is None or lm == 0.0:
        return False
    return abs(lm) >= math.log1p(min_effect) * (1 - _EPS) - _EPS


def direction(measured: float, predicted: float | None, min_effect: float) -> str:
    """``agree``, ``disagree`` or ``flat`` for a scored pair, ``small`` for one
    below ``min_effect``; ``-`` when there is no finite positive predicted ratio."""
    lp = _log(predicted)
    if lp is None:
        return "-"
    if not scored(measured, min_effect):
        return "small"
    if abs(lp) < math.log(FLAT) * (1 - _EPS) - _EPS:
        return "flat"
    return "agree" if (lp > 0) == (math.log(measured) > 0) else "disagree"


def ratio_error(measured: float, predicted: float | None) -> float | None:
    """``|predicted / measured - 1|`` (a fraction), None without a prediction."""
    if _log(predicted) is None or _log(measured) is None:
        return None
    return abs(predicted / measured - 1.0)


# ---------------------------------------------------------------------------
# predictions
# ---------------------------------------------------------------------------

Progress = Callable[[int], None]


def predict_analytic(scenarios: Sequence[Any], profile: Any,
                     progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """Analytic predictions of ``scenarios`` under one profile: each distinct
    rack solved once, all of them in one batch (:func:`model.solvers.predict_many`),
    smallest racks first as batch prediction orders them."""
    from runio.row_prediction import rack_size
    from model.solvers import predict_many
    distinct = sorted(dict.fromkeys(scenarios), key=rack_size)
    preds = predict_many(distinct, profile, progress=progress) if distinct else []
    solved = dict(zip(distinct, preds))
    return [solved[s] for s in scenarios]


def _quiet_worker() -> None:
    # Ctrl-C goes to the whole process group: the parent keeps what is done and
    # stops the workers, which must not print tracebacks of their own
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from model.solvers._jit import one_thread
    one_thread()                         # the processes share the cores already


def _simulate_task(task: tuple) -> tuple[int, float | None, bool]:
    """(task number, simulated throughput in MOPS, interrupted) of one rack."""
    from model.rack import compile_rack
    from sim.run import FastSimulator, interrupted_after
    n, scenario, profile, seconds, seed = task
    pred = FastSimulator(seconds, seed).solve(compile_rack(scenario, profile))
    if interrupted_after(pred) is not None:
        return n, None, True
    return n, float(pred.throughput_mops), False


def _pool_map(fn: Callable[[tuple], tuple], tasks: Sequence[tuple], jobs: int) -> Iterator[tuple]:
    """``fn(task)`` for every task, yielded as each finishes: in this process
    (``jobs`` 1, or one task), else by ``jobs`` worker processes that ignore
    Ctrl-C and never outlive the call. ``fn`` returns its task number first."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield fn(t)
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from runio.exits import RunFailed
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else methods[0])
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                               initializer=_quiet_worker)
    try:
        pending = {pool.submit(fn, t) for t in tasks}
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for fut in done:
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    raise RunFailed(f"a worker process of --jobs {jobs} ended abruptly "
                                    "(killed, or out of memory?); run again with --jobs 1"
                                    ) from None
    finally:
        for proc in list(getattr(pool, "_processes", {}).values()):
            if proc.is_alive():
                proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


def predict_sim(items: Sequence[tuple[Any, Any]], seconds: float, seed: int, jobs: int = 1,
                progress: Progress | None = None) -> tuple[dict[int, float], bool]:
    """Simulated throughput (MOPS) of each distinct ``(scenario, profile)``
    (``seconds`` simulated seconds each, the fast engine): ``{item index:
    MOPS}`` and whether Ctrl-C stopped the runs (the finished ones are kept).
    ``progress(n)`` hears of each rack finished."""
    tasks = [(i, sc, prof, seconds, seed) for i, (sc, prof) in enumerate(items)]
    # the largest racks first, so that the last ones to finish are short
    from runio.row_prediction import rack_size
    tasks.sort(key=lambda t: rack_size(t[1]), reverse=True)
    out: dict[int, float] = {}
    try:
        for n, mops, stopped in _pool_map(_simulate_task, tasks, jobs):
            if stopped:                   # Ctrl-C inside a run in this process
                return out, True
            out[n] = mops
            if progress is not None:
                progress(1)
    except KeyboardInterrupt:
        return out, True
    return out, False


# ---------------------------------------------------------------------------
# held out
# ---------------------------------------------------------------------------

def holdout_folds(pairs: Sequence[Pair], runs: Sequence[Run]) -> tuple[list[tuple[int, ...]],
                                                                        list[int]]:
    """The distinct sets of held-out rows (indices into ``runs``) and, per
    pair, which set it is predicted under. A pair holds out its two rows and
    every row of the same configuration as either (same kind and knobs)."""
    by_config: dict[tuple, list[int]] = {}
    for r in runs:
        by_config.setdefault(r.config, []).append(r.index)
    folds: dict[tuple[int, ...], int] = {}
    of_pair = []
    for p in pairs:
        held = tuple(sorted(set(by_config[p.a.config]) | set(by_config[p.b.config])))
        of_pair.append(folds.setdefault(held, len(folds)))
    return list(folds), of_pair


def _check_train(runs: Sequence[Run], held: Sequence[int]) -> list[dict[str, str]]:
    drop = set(held)
    train = [r.row for r in runs if r.index not in drop]
    if not train:
        names = ", ".join(runs[i].id for i in held)
        raise InputError(f"holding out {names} leaves no row to fit on; give more rows",
                         field="--holdout")
    return train


def fit_without(runs: Sequence[Run], held: Sequence[int], make: Callable[[], Any]) -> Any:
    """The profile the fitter makes from every row but ``held``, and its warnings."""
    fitter = make().fit(_check_train(runs, held))
    return fitter.profile_, list(getattr(fitter, "warnings_", ()))


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

@dataclass
class KnobTable:
    """Pairs with their measured and predicted ratios, and what was run."""

    pairs: list[Pair]
    engines: list[str]                           # "analytic", "sim"
    min_effect: float
    predicted: dict[str, list[tuple[float | None, float | None]]]   # engine -> per pair (a, b) MOPS
    runs: int = 0                                # rows read
    duplicates: list[Run] = field(default_factory=list)
    holdout: bool = False
    held: list[list[str]] = field(default_factory=list)             # per pair: ids held out
    profile: str = ""                            # which profile predicted, in words
    seconds: float | None = None
    seed: int | None = None
    partial: str = ""                            # the PARTIAL line when Ctrl-C cut it short

    def ratio(self, engine: str, i: int) -> float | None:
        a, b = self.predicted[engine][i]
        if _log(a) is None or _log(b) is None:
            return None
        return b / a

    def gap(self, i: int) -> float | None:
        """(analytic ratio / simulator ratio - 1), a fraction."""
        if "analytic" not in self.engines or "sim" not in self.engines:
            return None
        an, si = self.ratio("analytic", i), self.ratio("sim", i)
        if an is None or si is None:
            return None
        return an / si - 1.0


def _csv_prefix(engine: str) -> str:
    return "analytic" if engine == "analytic" else "sim"


def table_header(t: KnobTable) -> list[str]:
    """The CSV columns (``--out``): one row per pair."""
    cols = ["kind", "knob", "from", "to", "row_a", "row_b", "source_a", "line_a", "source_b",
            "line_b", "mops_a", "mops_b", "measured_x", "scored", "same_scenario"]
    for e in t.engines:
        p = _csv_prefix(e)
        cols += [f"{p}_mops_a", f"{p}_mops_b", f"{p}_x", f"{p}_direction",
                 f"{p}_ratio_error_pct"]
    if len(t.engines) == 2:
        cols.append("gap_pct")
    if t.holdout:
        cols.append("held_out")
    if t.partial:
        cols.append("partial")
    return cols


def table_rows(t: KnobTable) -> list[dict[str, Any]]:
    """One dict per pair, keyed by :func:`table_header` (numbers as numbers)."""
    out = []
    for i, p in enumerate(t.pairs):
        m = p.measured
        row: dict[str, Any] = {
            "kind": p.kind, "knob": p.knob, "from": p.values[0], "to": p.values[1],
            "row_a": p.a.id, "row_b": p.b.id, "source_a": p.a.source, "line_a": p.a.line,
            "source_b": p.b.source, "line_b": p.b.line, "mops_a": p.a.mops, "mops_b": p.b.mops,
            "measured_x": m, "scored": scored(m, t.min_effect),
            "same_scenario": p.same_scenario}
        missing = False
        for e in t.engines:
            pre = _csv_prefix(e)
            a, b = t.predicted[e][i]
            r = t.ratio(e, i)
            err = ratio_error(m, r)
            missing = missing or a is None or b is None
            row.update({f"{pre}_mops_a": a, f"{pre}_mops_b": b, f"{pre}_x": r,
                        f"{pre}_direction": direction(m, r, t.min_effect),
                        f"{pre}_ratio_error_pct": None if err is None else 100.0 * err})
        if len(t.engines) == 2:
            g = t.gap(i)
            row["gap_pct"] = None if g is None else 100.0 * g
        if t.holdout:
            row["held_out"] = "|".join(t.held[i]) if i < len(t.held) else ""
        if t.partial:
            row["partial"] = missing
        out.append(row)
    return out


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return str(v)


def write_csv(t: KnobTable, path: str | os.PathLike) -> None:
    """The table as CSV, written atomically (numbers at full precision)."""
    import csv

    from runio.safe_io import atomic_write
    header = table_header(t)
    with atomic_write(path) as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in table_rows(t):
            w.writerow([_csv_cell(r.get(c)) for c in header])


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"


def format_table(t: KnobTable) -> str:
    """The per-pair table printed on stdout, with what each column means."""
    labels = [ENGINES[e] for e in t.engines]
    how = " (held out)" if t.holdout else ""
    lines = [f"knob pairs: rows of one kind that differ in exactly one knob column; "
             f"ratios (x) are throughput of row b / row a (mops_b / mops_a); a pair is "
             f"scored when the measured effect is >= {100 * t.min_effect:g} %",
             f"direction: agree / disagree / flat (predicted within {100 * (FLAT - 1):g} % "
             f"of 1) for a scored pair, small below {100 * t.min_effect:g} %; ratio error "
             f"= |predicted / measured - 1| (%)"
             + ("; gap = analytic / simulator ratio - 1 (%); an = analytic, sim = simulator"
                if len(t.engines) == 2 else ""),
             ""]
    head = ["kind", "knob", "from -> to", "rows a -> b", "measured (x)"]
    head += [f"{lab}{how} (x)" for lab in labels]
    both = " an / sim" if len(labels) > 1 else ""
    head += ["direction" + both, "ratio error (%)" + both]
    if len(t.engines) == 2:
        head.append("gap (%)")
    body = []
    for i, p in enumerate(t.pairs):
        m = p.measured
        ratios = [t.ratio(e, i) for e in t.engines]
        dirs = [direction(m, r, t.min_effect) for r in ratios]
        errs = [_pct(ratio_error(m, r)) for r in ratios]
        cells = [p.kind, p.knob, f"{p.values[0] or '(empty)'} -> {p.values[1] or '(empty)'}",
                 f"{p.a.id} -> {p.b.id}", _x(m)] + [_x(r) for r in ratios]
        cells += [" / ".join(dirs) + ("*" if p.same_scenario else ""), " / ".join(errs)]
        if len(t.engines) == 2:
            cells.append(_pct(t.gap(i), signed=True))
        body.append(cells)
    n_eng = len(t.engines)
    left = {0, 1, 2, 3, 5 + n_eng}                  # text columns; numbers are right-aligned
    widths = [max(len(r[k]) for r in [head] + body) for k in range(len(head))]
    for r in [head] + body:
        lines.append("  " + "  ".join((c.ljust(w) if k in left else c.rjust(w))
                                      for k, (c, w) in enumerate(zip(r, widths))).rstrip())
    if any(p.same_scenario for p in t.pairs):
        lines.append("  * the two rows make the same scenario: the model does not see this "
                     "knob (its predicted ratio is 1)")
    return "\n".join(lines)


def summary(t: KnobTable) -> dict[str, Any]:
    """The figures of :func:`format_summary`, as data."""
    out: dict[str, Any] = {"pairs": len(t.pairs), "rows": t.runs,
                           "duplicates": len(t.duplicates), "min_effect": t.min_effect}
    by_kind: dict[str, int] = {}
    for p in t.pairs:
        by_kind[p.kind] = by_kind.get(p.kind, 0) + 1
    out["by_kind"] = by_kind
    idx = [i for i, p in enumerate(t.pairs) if scored(p.measured, t.min_effect)]
    out["scored"] = len(idx)
    for e in t.engines:
        dirs = [direction(t.pairs[i].measured, t.ratio(e, i), t.min_effect) for i in idx]
        errs = [ratio_error(t.pairs[i].measured, t.ratio(e, i)) for i in idx]
        errs = [x for x in errs if x is not None]
        out[e] = {"agree": dirs.count("agree"), "disagree": dirs.count("disagree"),
                  "flat": dirs.count("flat"), "predicted": sum(d != "-" for d in dirs),
                  "median_ratio_error": statistics.median(errs) if errs else None}
    if len(t.engines) == 2:
        gaps = [(abs(g), g, i) for i in range(len(t.pairs)) if (g := t.gap(i)) is not None]
        if gaps:
            _, g, i = max(gaps)
            p = t.pairs[i]
            out["largest_gap"] = {"gap": g, "pair": f"{p.a.id} -> {p.b.id}", "knob": p.knob}
        else:
            out["largest_gap"] = None
    return out


def format_summary(t: KnobTable) -> str:
    s = summary(t)
    kinds = ", ".join(f"{k} {n}" for k, n in s["by_kind"].items())
    lines = []
    if t.partial:
        lines.append(t.partial + " (pairs without a prediction show '-')")
    lines.append(f"pairs found: {s['pairs']}" + (f" ({kinds})" if kinds else "")
                 + f" among {s['rows']} rows"
                 + (f"; {s['duplicates']} row(s) listing a run again left out ("
                    + ", ".join(f"{d.id} = {d.duplicate_of.id}" for d in t.duplicates[:6])
                    + (", ..." if len(t.duplicates) > 6 else "") + ")" if t.duplicates else ""))
    lines.append(f"scored pairs (measured effect >= {100 * t.min_effect:g} %): {s['scored']}")
    for e in t.engines:
        d = s[e]
        n = s["scored"]
        share = f" ({100 * d['agree'] / n:.0f} %)" if n else ""
        unpred = n - d["predicted"]
        lines.append(f"direction right, {ENGINES[e]} ({t.profile}"
                     + (f"; {t.seconds:g} simulated s per rack, seed {t.seed}" if e == "sim"
                        else "") + f"): {d['agree']} of {n}{share}; wrong {d['disagree']}, "
                     f"flat {d['flat']}" + (f", not predicted {unpred}" if unpred else ""))
    med = [f"{ENGINES[e]} " + (f"{100 * s[e]['median_ratio_error']:.1f} %"
                               if s[e]["median_ratio_error"] is not None else "-")
           for e in t.engines]
    lines.append("median ratio error over scored pairs: " + ", ".join(med))
    if len(t.engines) == 2:
        g = s.get("largest_gap")
        lines.append("largest analytic-vs-simulator gap: " + (
            f"{100 * g['gap']:+.1f} % ({g['pair']}, {g['knob']})" if g else "-"))
    return "\n".join(lines)


def distinct(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------

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
    from runio.safe_io import output_path, output_type, same_file
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
        output_type(args.out, (".csv",), "--out")
        output_path(args.out, "--out", inputs)
    if args.html:
        output_type(args.html, (".html", ".htm"), "--html")
        output_path(args.html, "--html", inputs)
    if args.out and args.html and (Path(args.out) == Path(args.html) or (
            Path(args.out).exists() and same_file(args.out, args.html))):
        raise InputError("--out and --html name the same file", source=args.out, field="--html")


def run_knobs(args) -> int:
    """``python -m calibrate knobs`` (see the module docstring)."""
    import sys

    from runio.progress import Interrupted, bar, partial_text, wanted
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

    # the (scenario, profile) each pair's rows are predicted under
    profiles: list[Any] = []                     # profile number -> Profile
    prof_of_pair: list[int | None] = []
    held_ids: list[list[str]] = []
    stopped: tuple | None = None               # (done, total, unit) when Ctrl-C cut it short
    if args.holdout:
        folds, fold_of = holdout_folds(pairs, runs)
        held_ids = [[runs[i].id for i in folds[f]] for f in fold_of]
        from .cv import _fitter_for_rows
        kwargs: dict[str, Any] = {"priors": args.profile, "n_jobs": args.jobs}
        make, label = _fitter_for_rows([r.row for r in runs], None, kwargs)
        for held in folds:                     # refused before the first refit, not after it
            _check_train(runs, held)
        fold_prof: dict[int, int] = {}
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
        prof_of_pair = [fold_prof.get(f) for f in fold_of]
        profile_text = (f"held out: {len(fold_prof)} refit(s) by {label}"
                        + (f" from '{given.name}'" if given is not None else ""))
    else:
        from runio.kinds import KINDS
        by_name: dict[str, int] = {}
        for p in pairs:
            name = given.name if given is not None else KINDS[p.kind].profile
            if name not in by_name:
                by_name[name] = len(profiles)
                profiles.append(given if given is not None else load_profile(name))
            prof_of_pair.append(by_name[name])
        profile_text = "profile " + ", ".join(f"'{n}'" for n in by_name)

    # every distinct (scenario, profile) any pair needs, solved once
    needed: list[tuple[Any, int]] = []
    for p, k in zip(pairs, prof_of_pair):
        if k is not None:
            needed += [(p.a.scenario, k), (p.b.scenario, k)]
    needed = distinct(needed)
    predicted: dict[str, list[tuple[float | None, float | None]]] = {}
    if "analytic" in engines:
        solved: dict[tuple[Any, int], float] = {}
        for k, prof in enumerate(profiles):
            scs = [sc for sc, kk in needed if kk == k]
            if not scs:
                continue
            with bar(len(distinct(scs)), "analytic" + (f" (refit {k + 1})" if args.holdout
                                                       else ""), "rack",
                     show and not args.holdout) as b:
                def moved(done: int, total: int) -> None:
                    b.total, b.n = total, done
                    b.refresh()
                preds = predict_analytic(scs, prof, progress=moved)
            for sc, pr in zip(scs, preds):
                solved[(sc, k)] = float(pr.throughput_mops)
        predicted["analytic"] = [
            (solved.get((p.a.scenario, k)), solved.get((p.b.scenario, k)))
            if k is not None else (None, None) for p, k in zip(pairs, prof_of_pair)]
    if "sim" in engines and not stopped:
        jobs = args.jobs if args.jobs is not None else (os.cpu_count() or 1)
        with bar(len(needed), f"simulating {args.seconds:g} s per rack", "rack", show) as b:
            got, cut = predict_sim([(sc, profiles[k]) for sc, k in needed], args.seconds,
                                   args.seed, jobs, progress=b.update)
        sim = {needed[i]: v for i, v in got.items()}
        if cut:
            stopped = (len(got), len(needed), "simulated racks")
        predicted["sim"] = [
            (sim.get((p.a.scenario, k)), sim.get((p.b.scenario, k)))
            if k is not None else (None, None) for p, k in zip(pairs, prof_of_pair)]
    elif "sim" in engines:
        predicted["sim"] = [(None, None)] * len(pairs)
    t = KnobTable(pairs, engines, args.min_effect, predicted, runs=len(runs), duplicates=dups,
                  holdout=args.holdout, held=held_ids, profile=profile_text,
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


def _write_outputs(t: KnobTable, args) -> None:
    import sys
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
