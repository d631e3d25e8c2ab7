"""``python -m sim sweep``: many what-ifs side by side.

``--set KEY=V1,V2,...`` (repeatable) names the values of each scenario key;
the configurations are their cartesian product (the first key varies
slowest), or with ``--zip`` the i-th value of every key together. All
configurations are solved as one batch of the analytic solver
(:func:`model.solvers.predict_many`), with the throughput's 90 % interval
where the build provides :mod:`model.intervals` (otherwise the table says
that there is no interval; no number stands in for one).

Each row carries throughput (MOPS, interval, % against the baseline row),
client latency (us, % against the baseline; its p50, p95 and p99 with the p99's
interval), a summary of the per-server
breakdown (wait min/mean/max and process mean/max over the workers that get
requests, in us; the busiest worker's utilisation), stalled time (% of worker
time), packet loss and resends (packets per run) and the bottleneck (kind in
the table, its sentence below). ``--out`` writes the rows as CSV, JSON or an
HTML page (by extension).

``--plan FILE.csv`` takes the configurations from a hand-made table
instead: one row each, a column per scenario key (``servers``,
``storage.memtable_mb``, ... as ``--set`` spells them), an optional ``id``
column to name the rows, and an empty cell for the base scenario's value.
Nothing else is required: it is a what-if, not a measured run.

Bad input (unknown key, bad value, empty list, zip lengths, baseline out of
range, unknown output type) raises :class:`~model.errors.InputError`
naming the key (in a plan: the file, line and the user's column): exit 2,
no traceback.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from model.errors import InputError
from model.json_values import finite_or_none
from runio.exits import arg
from model.prediction import Prediction
from model.profile import Profile
from runio.safe_io import REPORT_TYPES, output_type, read_csv, write_rows_csv, write_text
from model.scenario import Scenario, parse_value, resolve_key
from runio.inputs import load_profile, load_scenario

MAX_CONFIGURATIONS = 5000
INTERVAL_LEVEL = 0.90
Z_90 = 1.645


# ---------------------------------------------------------------- axes and configurations
@dataclass(frozen=True)
class Axis:
    key: str                  # canonical section.field
    values: tuple             # parsed values, in the user's order
    given: str = ""           # the key as the user wrote it


def parse_axis(text: str, source: str = "--set") -> Axis:
    """``KEY=V1,V2,...`` -> an :class:`Axis` (values parsed like ``--set``)."""
    if "=" not in text:
        raise InputError(f"expected KEY=V1,V2,..., got {text!r}", source=source)
    key, raw = (s.strip() for s in text.split("=", 1))
    if not key:
        raise InputError(f"no key before '=' in {text!r}", source=source)
    canonical = resolve_key(key, source)
    if canonical == "name":
        raise InputError("the scenario name is not a swept setting", source=source, field=key)
    parts = [p.strip() for p in raw.split(",")]
    if not raw.strip() or any(p == "" for p in parts):
        raise InputError(f"expected a comma-separated list of values, got {raw!r}",
                         source=source, field=key)
    return Axis(canonical, tuple(parse_value(p) for p in parts), key)


def parse_axes(texts: Sequence[str] | Mapping[str, Sequence[Any]],
               source: str = "--set") -> list[Axis]:
    """Axes from ``--set`` strings, or from a mapping ``{key: [values]}`` (the API)."""
    if isinstance(texts, Mapping):
        if not texts:
            raise InputError("nothing to sweep: give at least one key and its values",
                             source=source, field="values")
        axes = []
        for key, vals in texts.items():
            canonical = resolve_key(str(key), source)
            if isinstance(vals, Mapping):
                raise InputError("expected a list of values, got a mapping", source=source,
                                 field=str(key))
            # any collection of values (a list, a range, an array, a pandas
            # Series); a single value stands for itself
            many = isinstance(vals, Iterable) and not isinstance(vals, (str, bytes))
            vals = tuple(vals) if many else (vals,)
            if not vals:
                raise InputError("no values given", source=source, field=str(key))
            axes.append(Axis(canonical, tuple(v.item() if isinstance(v, np.generic) else v
                                              for v in vals), str(key)))
    else:
        axes = [parse_axis(t, source) for t in texts]
    seen: dict[str, str] = {}
    for a in axes:
        if a.key in seen:
            raise InputError(f"given twice (as '{seen[a.key]}' and '{a.given}'); list every "
                             "value in one --set", source=source, field=a.key)
        seen[a.key] = a.given
    return axes


def configurations(axes: Sequence[Axis], zip_: bool = False) -> list[dict[str, Any]]:
    """The changes of every configuration, ``{key: value}`` in axis order."""
    if not axes:
        return [{}]
    if zip_:
        n = {len(a.values) for a in axes}
        if len(n) > 1:
            lens = ", ".join(f"{a.key}: {len(a.values)}" for a in axes)
            raise InputError(f"--zip needs the same number of values for every key ({lens})",
                             field="--zip")
        combos = list(zip(*(a.values for a in axes)))
    else:
        total = math.prod(len(a.values) for a in axes)
        if total > MAX_CONFIGURATIONS:
            raise InputError(f"{total:,} configurations is more than {MAX_CONFIGURATIONS:,}; "
                             "sweep fewer values (or use --zip)", field="--set")
        combos = list(itertools.product(*(a.values for a in axes)))
    return [{a.key: v for a, v in zip(axes, c)} for c in combos]


def build_scenarios(base: Scenario, changes: Sequence[Mapping[str, Any]]) -> list[Scenario]:
    out = []
    for ch in changes:
        try:
            out.append(base.updated(dict(ch), source="--set"))
        except InputError as exc:
            # name the configuration too: a value can be fine alone and bad in a
            # combination (flushnum must stay below maxnum)
            if len(changes) > 1:
                raise InputError(f"{exc.detail} (in the configuration {_label(ch)})",
                                 source=exc.source, field=exc.field) from None
            raise
    return out


@dataclass
class Plan:
    """Configurations read from a plan CSV (:func:`read_plan`)."""
    keys: list[str]                   # canonical keys, in column order
    changes: list[dict[str, Any]]     # per row: the non-empty cells
    scenarios: list[Scenario]
    ids: list[str]                    # per row: its id, or "" without an id column
    source: str


def read_plan(path: str | Path, base: Scenario) -> Plan:
    """A what-if plan: a CSV whose columns are scenario keys (and ``id``).

    Every problem names the file, the line and the column as the user wrote
    it: an unknown column, a value the key does not take, a combination the
    scenario refuses (flushnum not below maxnum), a table without rows."""
    src = str(path)
    header, raw = read_csv(path, what="plan CSV", field="--plan")
    column: dict[str, str] = {}                       # canonical key -> the user's column
    for col in header:
        if col == "id":
            continue
        try:
            key = resolve_key(col, src)
        except InputError as exc:
            raise InputError(f"{exc.detail} (a plan's columns are scenario keys, as "
                             "--set spells them, and an optional id)",
                             source=src, line=1, field=col) from None
        if key == "name":
            raise InputError("the scenario name is not a setting", source=src, line=1, field=col)
        if key in column:
            raise InputError(f"the same key as column '{column[key]}'", source=src, line=1,
                             field=col)
        column[key] = col
    if not column:
        raise InputError("no scenario-key columns: give at least one, e.g. servers or "
                         "storage.memtable_mb", source=src, line=1)
    if not raw:
        raise InputError("no rows after the header", source=src, line=1)
    if len(raw) > MAX_CONFIGURATIONS:
        raise InputError(f"{len(raw):,} rows is more than {MAX_CONFIGURATIONS:,}; split the plan",
                         source=src, line=int(raw[MAX_CONFIGURATIONS]["__line__"]))
    changes, scenarios, ids = [], [], []
    for row in raw:
        line = int(row["__line__"])
        ch: dict[str, Any] = {}
        for key, col in column.items():
            cell = row[col].strip()
            if cell:
                ch[key] = parse_value(cell)
        # every problem of the row is checked before any solving; a value that
        # is fine alone can be refused with the others (flushnum < maxnum)
        try:
            scenarios.append(base.updated(ch, source=src))
        except InputError as exc:
            col = column.get(exc.field or "") or next(
                (c for k, c in column.items() if exc.field and k.endswith(exc.field)), exc.field)
            raise InputError(exc.detail, source=src, line=line, field=col) from None
        changes.append(ch)
        ids.append(row.get("id", "").strip())
    return Plan(list(column), changes, scenarios, ids, src)


def _label(ch: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_val(v)}" for k, v in ch.items()) or "the base scenario"


def _val(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return f"{v:g}"
    return str(v)


# ---------------------------------------------------------------- solving
def solve(scenarios: Sequence[Scenario], profile: Profile, intervals: bool = True):
    """Predictions of all scenarios in one batch, and the throughput interval of
    each (``(lo, hi)`` in MOPS, or None: ``intervals`` off, or a profile
    without [uncertainty] and [noise])."""
    if intervals:
        from model.intervals import predict_with_intervals
        res = predict_with_intervals(list(scenarios), profile, z=Z_90)
        return [r.prediction for r in res], [
            None if r.mops_lo is None else (float(r.mops_lo), float(r.mops_hi)) for r in res]
    from model.solvers import predict_many
    preds = predict_many(list(scenarios), profile)
    return preds, [None] * len(preds)


# ---------------------------------------------------------------- rows
def summary_row(pred: Prediction, interval: tuple[float, float] | None = None) -> dict[str, Any]:
    """One prediction as the sweep's columns (units in the names)."""
    active = [s for s in pred.servers if s.share > 0]
    waits = [s.wait_us for s in active if math.isfinite(s.wait_us)]
    procs = [s.process_us for s in active]
    nan = math.nan
    return {
        "throughput_mops": pred.throughput_mops,
        "throughput_lo_mops": interval[0] if interval else None,
        "throughput_hi_mops": interval[1] if interval else None,
        "latency_us": pred.client.latency_us,
        **_percentiles(pred),
        "cache_hit_ratio": pred.cache_hit_ratio,
        "normalized_x": pred.normalized_x,
        "wait_min_us": min(waits) if waits else nan,
        "wait_mean_us": float(np.mean(waits)) if waits else nan,
        "wait_max_us": max(waits) if waits else nan,
        "process_mean_us": float(np.mean(procs)) if procs else nan,
        "process_max_us": max(procs) if procs else nan,
        "utilization_max_pct": 100.0 * max((s.utilization for s in active), default=0.0),
        "idle_workers": len(pred.servers) - len(active),
        "stall_pct": 100.0 * pred.stall_fraction,
        "pktloss": pred.pktloss,
        "false_pos": pred.false_pos,
        "bottleneck": pred.bottleneck.kind,
        "bottleneck_text": pred.bottleneck.text(),
    }


def _percentiles(pred: Prediction) -> dict[str, Any]:
    """The latency's p50 / p95 / p99 (us), and the p99's interval where there is one."""
    from model.prediction import latency_columns
    out = {k: v for k, v in latency_columns(pred).items() if k != "latency_us"}
    iv = (pred.details.get("latency_us_percentile_intervals") or {}).get("p99") or {}
    out["latency_p99_lo_us"] = iv.get("lo_us")
    out["latency_p99_hi_us"] = iv.get("hi_us")
    return out


def _setting(sc: Scenario, key: str) -> Any:
    sec, name = key.split(".")
    return getattr(getattr(sc, sec), name)


def _pct(new: float, base: float) -> float:
    if not (math.isfinite(new) and math.isfinite(base)) or base == 0:
        return math.nan
    return 100.0 * (new / base - 1.0)


@dataclass
class SweepResult:
    """A sweep's configurations, predictions and rows (see the module docstring)."""
    keys: list[str]
    changes: list[dict[str, Any]]
    scenarios: list[Scenario]
    predictions: list[Prediction]
    intervals: list[tuple[float, float] | None]
    baseline: int                       # 1-based row number
    profile: str
    zipped: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)     # a plan's row names ("" for none)
    plan: str = ""                                   # the plan CSV the rows came from

    def __post_init__(self):
        if not self.rows:
            self.rows = self._rows()

    @property
    def has_intervals(self) -> bool:
        return any(iv is not None for iv in self.intervals)

    def _rows(self) -> list[dict[str, Any]]:
        out = []
        for i, (ch, pred, iv) in enumerate(zip(self.changes, self.predictions, self.intervals), 1):
            row: dict[str, Any] = {"row": i}
            if self.ids:
                row["id"] = self.ids[i - 1]
            # a plan's empty cell is the base scenario's value: show that value
            sc = self.scenarios[i - 1]
            row.update({k: ch[k] if k in ch else _setting(sc, k) for k in self.keys})
            row.update(summary_row(pred, iv))
            row["is_baseline"] = i == self.baseline
            out.append(row)
        b = out[self.baseline - 1]
        for r in out:
            r["throughput_vs_baseline_pct"] = _pct(r["throughput_mops"], b["throughput_mops"])
            r["latency_vs_baseline_pct"] = _pct(r["latency_us"], b["latency_us"])
        return out

    # ---- outputs
    def to_dict(self) -> dict[str, Any]:
        return finite_or_none({
            "keys": self.keys, "baseline_row": self.baseline, "profile": self.profile,
            "combination": (f"rows of {self.plan}" if self.plan else
                            "zip" if self.zipped else "cartesian product"),
            "interval": (f"{100 * INTERVAL_LEVEL:.0f} % interval of the throughput"
                         if self.has_intervals else None),
            "units": COLUMN_UNITS, "rows": self.rows})

    def to_frame(self):
        """The rows as a pandas DataFrame (one row per configuration)."""
        import pandas as pd
        return pd.DataFrame(self.rows).set_index("row")

    def table(self) -> str:
        return format_table(self)

    def write(self, path: str | Path, title: str | None = None) -> Path:
        return write_output(self, path, title=title)


COLUMN_UNITS = {
    "throughput_mops": "MOPS", "throughput_lo_mops": "MOPS", "throughput_hi_mops": "MOPS",
    "throughput_vs_baseline_pct": "%", "latency_us": "us", "latency_vs_baseline_pct": "%",
    "latency_p50_us": "us", "latency_p95_us": "us", "latency_p99_us": "us",
    "latency_p99_lo_us": "us", "latency_p99_hi_us": "us",
    "cache_hit_ratio": "fraction", "normalized_x": "x over NoCache", "wait_min_us": "us",
    "wait_mean_us": "us", "wait_max_us": "us", "process_mean_us": "us", "process_max_us": "us",
    "utilization_max_pct": "%", "idle_workers": "workers", "stall_pct": "% of worker time",
    "pktloss": "packets per run of workload.queries_m",
    "false_pos": "packets per run of workload.queries_m",
}


def run_sweep(base: Scenario, profile: Profile, axes: Sequence[Axis], *, zip_: bool = False,
              baseline: int = 1, intervals: bool = True) -> SweepResult:
    changes = configurations(axes, zip_)
    if not 1 <= baseline <= len(changes):
        raise InputError(f"row {baseline} does not exist; the sweep has rows 1-{len(changes)}",
                         field="--baseline")
    scenarios = build_scenarios(base, changes)
    preds, ivs = solve(scenarios, profile, intervals)
    return SweepResult([a.key for a in axes], changes, scenarios, preds, ivs, baseline,
                       profile.name, zip_)


def run_plan(plan: Plan, profile: Profile, *, baseline: int = 1,
             intervals: bool = True) -> SweepResult:
    """:func:`run_sweep` over the rows of a plan CSV."""
    if not 1 <= baseline <= len(plan.changes):
        raise InputError(f"row {baseline} does not exist; the plan has rows "
                         f"1-{len(plan.changes)}", field="--baseline")
    preds, ivs = solve(plan.scenarios, profile, intervals)
    return SweepResult(plan.keys, plan.changes, plan.scenarios, preds, ivs, baseline,
                       profile.name, ids=plan.ids if any(plan.ids) else [], plan=plan.source)


# ---------------------------------------------------------------- text table
def _f(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e5 else f"{v:,.0f}"
    return str(v)


def _signed(v: float) -> str:
    return "–" if not math.isfinite(v) else f"{v:+.1f}"


def _key_unit(key: str) -> str:
    from dataclasses import fields as dc_fields
    from model.scenario import SECTIONS
    sec, name = key.split(".")
    for f in dc_fields(SECTIONS[sec]):
        if f.name == name:
            return f.metadata.get("unit") or ""
    return ""


def format_table(res: SweepResult) -> str:
    iv = res.has_intervals
    cols: list[tuple[str, str, list[str]]] = [("#", "", [str(r["row"]) + ("*" if r["is_baseline"] else "")
                                                         for r in res.rows])]
    if res.ids:
        cols.append(("id", "", [r["id"] for r in res.rows]))
    for k in res.keys:
        cols.append((k, _key_unit(k), [_val(r[k]) for r in res.rows]))
    thr = []
    for r in res.rows:
        s = f"{r['throughput_mops']:.4f}"
        if iv:
            s += f" [{_f(r['throughput_lo_mops'])}, {_f(r['throughput_hi_mops'])}]"
        thr.append(s)
    cols += [
        ("throughput", "MOPS" + (" [90 % int.]" if iv else ""), thr),
        ("vs base", "%", ["base" if r["is_baseline"] else _signed(r["throughput_vs_baseline_pct"])
                          for r in res.rows]),
        ("latency", "us", [f"{r['latency_us']:,.0f}" if math.isfinite(r["latency_us"]) else "–"
                           for r in res.rows]),
        ("vs base", "%", ["base" if r["is_baseline"] else _signed(r["latency_vs_baseline_pct"])
                          for r in res.rows]),
        ("p99 latency", "us", [f"{r['latency_p99_us']:,.0f}" if math.isfinite(r["latency_p99_us"])
                               else "–" for r in res.rows]),
        ("wait min/mean/max", "us", [f"{_f(r['wait_min_us'], 3)}/{_f(r['wait_mean_us'], 3)}/"
                                     f"{_f(r['wait_max_us'], 3)}" for r in res.rows]),
        ("process mean/max", "us", [f"{_f(r['process_mean_us'], 3)}/{_f(r['process_max_us'], 3)}"
                                    for r in res.rows]),
        ("busiest", "% busy", [f"{r['utilization_max_pct']:.0f}" for r in res.rows]),
        ("stall", "% time", [f"{r['stall_pct']:.2f}" for r in res.rows]),
        ("loss", "pkts/run", [f"{r['pktloss']:,.0f}" for r in res.rows]),
        ("bottleneck", "", [r["bottleneck"] for r in res.rows]),
    ]
    widths = [max(len(h), len(u), *(len(v) for v in vals)) for h, u, vals in cols]
    numeric = [h not in res.keys and h not in ("bottleneck", "id") for h, _, _ in cols]

    def line(cells):
        return "  ".join((c.rjust(w) if num else c.ljust(w))
                         for c, w, num in zip(cells, widths, numeric)).rstrip()

    kind = (f"rows of {res.plan}:" if res.plan else
            "zip of" if res.zipped else "cartesian product of")
    sep = ", " if res.plan else " x "
    head = [f"sweep: {len(res.rows)} configurations ({kind} {sep.join(res.keys) or 'nothing'}), "
            f"analytic model, profile '{res.profile}'; * = baseline (row {res.baseline})"]
    if not iv:
        head.append("throughput interval: none (--no-intervals, or a profile without "
                    "[uncertainty] and [noise]); point predictions only")
    out = head + ["", line([h for h, _, _ in cols]), line([u for _, u, _ in cols])]
    for i in range(len(res.rows)):
        out.append(line([vals[i] for _, _, vals in cols]))
    out.append("")
    out.append("wait and process: over the workers that get requests; loss: packets lost per run")
    if len(res.rows) <= 60:
        out.append("bottleneck per row:")
        for r in res.rows:
            out.append(f"  {r['row']:>3}: {r['bottleneck_text']}")
    return "\n".join(out)


# ---------------------------------------------------------------- files
def write_output(res: SweepResult, path: str | Path, title: str | None = None) -> Path:
    p = Path(path)
    ext = output_type(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if ext == ".csv":
            write_rows_csv(p, res.rows, _csv)
        elif ext == ".json":
            write_text(p, json.dumps(res.to_dict(), indent=1) + "\n")
        else:
            from reports.questions import write_sweep_page
            write_sweep_page(res, p, title=title)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=str(p), field="--out") from None
    return p


def _csv(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# ---------------------------------------------------------------- command line
def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="many what-ifs side by side (one batch of the analytic model)",
                       description="Predict every combination of the given values side by side.")
    p.add_argument("--scenario", metavar="FILE.toml",
                   help="base scenario TOML (default: the embedded FarReach rack)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="values of a scenario key, e.g. servers=16,32 (repeatable)")
    p.add_argument("--plan", metavar="FILE.csv",
                   help="configurations from a CSV instead of --set: a column per scenario "
                        "key, an optional id column, an empty cell for the base value")
    p.add_argument("--zip", action="store_true",
                   help="take the i-th value of every key together instead of every combination")
    p.add_argument("--baseline", type=arg("baseline"), default=1, metavar="N",
                   help="row compared against (1-based; default 1)")
    p.add_argument("--profile", metavar="NAME|FILE.toml", help="calibrated profile "
                   "(default: embedded 'tofino-testbed')")
    p.add_argument("--out", metavar="FILE.csv|.json|.html", help="also write the rows")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--no-intervals", dest="intervals", action="store_false",
                   help="skip the 90 %% throughput intervals (about 17x less solving)")


def run(args) -> int:
    from .main import DEFAULT_PROFILE, check_outputs
    base = load_scenario(args.scenario) if args.scenario is not None else Scenario.default()
    axes = parse_axes(args.sets)
    if args.plan and (axes or args.zip):
        raise InputError("a plan lists its configurations itself; give --plan or --set "
                         "(and --zip), not both", field="--plan")
    if not axes and not args.plan:
        raise InputError("nothing to sweep: give at least one --set KEY=V1,V2,... "
                         "or --plan FILE.csv", field="--set")
    # a wrong extension, a missing folder, or --out naming the plan: before any work
    check_outputs(args, out_types=REPORT_TYPES)
    plan = read_plan(args.plan, base) if args.plan else None     # all rows checked first
    profile = load_profile(DEFAULT_PROFILE if args.profile is None else args.profile)
    if plan is not None:
        res = run_plan(plan, profile, baseline=args.baseline, intervals=args.intervals)
    else:
        res = run_sweep(base, profile, axes, zip_=args.zip, baseline=args.baseline,
                        intervals=args.intervals)
    from runio.notes import note, scenario_notes
    for text in scenario_notes(res.scenarios, profile, "in some rows"):
        note(text)
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
    else:
        print(res.table())
    if args.out:
        res.write(args.out)
        print(f"written to {args.out}", file=sys.stderr)
    return 0
