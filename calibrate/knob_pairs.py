"""Finding the knob pairs in the runs: which columns are knobs, how cells
compare, the rows read, and the pairs of rows that differ in one knob.

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
  the files list them (a, b). Measured ratio ``mops_b / mops_a``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from model.errors import InputError
from model.rows import parse_number

#: the run kinds the knob table compares (rows that describe a FarReach rack)
KNOB_KINDS = ("farreach_runs", "farreach_tuning", "farreach_breakdown")

#: the measured column the ratios are taken of
THROUGHPUT = "mops"


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
