"""``python -m sim tune``: the best configuration by the analytic model.

``--vary KEY=LO:HI`` (a numeric range) or ``--vary KEY=V1,V2,...`` (a set of
values) names what may change; the rest of the scenario stays as given
(``--scenario``, ``--set``). The search is scipy's differential evolution
(:func:`scipy.optimize.differential_evolution`): integer keys and value
sets are integer dimensions (``integrality``); a float range spanning a
factor of 10 or more is searched on a log scale. Each generation's
population is solved as one batch of the analytic solver (``vectorized``),
and configurations already solved are not solved again.

Objectives: the most throughput (default), or the least client latency
(``--objective latency``); ``--max-latency-us N`` keeps only configurations
whose client latency is at most N us (a penalty outside). The latency is
the mean by default, or a percentile with ``--latency-stat p50|p95|p99``
(:mod:`model.solvers.latency_tail`). Every configuration solved records
both; the trade-off the search saw is the Pareto front of throughput
against p99 latency, configurations beyond the bound marked.

The result names the tuned configuration, its predicted throughput against
the given configuration's (with the 90 % interval where the build has
:mod:`model.intervals`), and the explanation (:mod:`model.explain`) of the
tuned configuration.

This module holds the search, its result (text, JSON, CSV, page) and the
command line; the dimensions of the search space (``--vary``) are in
:mod:`cli.tune_space`.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from model.errors import InputError
from runio.exits import arg
from model.profile import Profile
from model.scenario import Scenario

from model.prediction import latency_columns

from .sweep import solve as solve_with_intervals
# what may change is defined in cli/tune_space.py; importable from here as well
# (kvperf.tune imports parse_dimensions from cli.tune)
from .tune_space import (Dimension, parse_dimension, parse_dimensions,  # noqa: F401
                         scenario_field, setting_of, show_value)


# ---------------------------------------------------------------- the search
#: Differential evolution stops when the population's objective values spread
#: less than this relative to their mean (scipy's ``tol``); configurations
#: often differ by a few per cent, so scipy's default of 1 % stops too early.
TOL = 1e-3

@dataclass
class TuneResult:
    keys: list[str]
    ranges: dict[str, str]
    start_values: dict[str, Any]
    best_values: dict[str, Any]
    start_mops: float
    best_mops: float
    start_latency_us: float
    best_latency_us: float
    start_interval: tuple[float, float] | None
    best_interval: tuple[float, float] | None
    objective: str
    max_latency_us: float | None
    evaluations: int
    generations: int
    method: str
    best_scenario: Scenario
    start_scenario: Scenario
    explanation: Any = None           # model.explain.Explanation of the tuned configuration
    explain_note: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    profile: str = ""
    feasible_start: bool = True
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)   # numeric ranges
    latency_stat: str = "mean"        # the latency the objective and the bound read

    @property
    def latency_column(self) -> str:
        return latency_column(self.latency_stat)

    def feasible(self, h: Mapping[str, Any]) -> bool:
        """A solved configuration within the latency bound (all, without one)."""
        lat = h[self.latency_column]
        return self.max_latency_us is None or (math.isfinite(lat) and lat <= self.max_latency_us)

    @property
    def pareto(self) -> list[dict[str, Any]]:
        """The solved configurations no other beats on both throughput and
        p99 latency (more MOPS at no more p99), by p99: the trade-off the
        search saw, of which the tuned configuration is one end."""
        pts = sorted((h for h in self.history if math.isfinite(h["throughput_mops"])
                      and h["throughput_mops"] > 0 and math.isfinite(h[FRONT_LATENCY])),
                     key=lambda h: (h[FRONT_LATENCY], -h["throughput_mops"]))
        front, best = [], -math.inf
        for h in pts:
            if h["throughput_mops"] > best:
                front.append(h)
                best = h["throughput_mops"]
        return front

    @property
    def edges(self) -> list[tuple[str, str, Any]]:
        """(key, "lower" or "upper", value) where the tuned value sits on the
        edge of the range searched: the optimum may lie beyond it."""
        out = []
        for k, (lo, hi) in self.bounds.items():
            v = self.best_values[k]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if math.isclose(v, hi, rel_tol=1e-9):
                    out.append((k, "upper", v))
                elif math.isclose(v, lo, rel_tol=1e-9):
                    out.append((k, "lower", v))
        return out

    @property
    def gain_pct(self) -> float:
        return 100.0 * (self.best_mops / self.start_mops - 1.0) if self.start_mops > 0 else math.nan

    @property
    def objective_text(self) -> str:
        stat = "mean" if self.latency_stat == "mean" else self.latency_stat
        what = "most throughput" if self.objective == "throughput" else \
            f"least client latency ({stat})"
        bound = (f", client latency ({stat}) at most {self.max_latency_us:,.0f} us"
                 if self.max_latency_us is not None else "")
        return (f"Objective: {what}{bound}. Search: {self.method}, {self.evaluations} "
                f"configurations solved by the analytic model (profile '{self.profile}').")

    def to_dict(self) -> dict[str, Any]:
        from model.json_values import finite_or_none
        return finite_or_none({
            "objective": self.objective, "max_latency_us": self.max_latency_us,
            "latency_stat": self.latency_stat,
            "varied": {k: self.ranges[k] for k in self.keys},
            "given": self.start_values, "tuned": self.best_values,
            "given_mops": self.start_mops, "tuned_mops": self.best_mops,
            "given_interval_mops": list(self.start_interval) if self.start_interval else None,
            "tuned_interval_mops": list(self.best_interval) if self.best_interval else None,
            "gain_pct": self.gain_pct, "given_latency_us": self.start_latency_us,
            "tuned_latency_us": self.best_latency_us, "given_within_bound": self.feasible_start,
            "evaluations": self.evaluations, "generations": self.generations,
            "method": self.method, "profile": self.profile,
            "explanation": self.explanation.to_dict() if self.explanation is not None else None,
            "explain_note": self.explain_note,
            "on_range_edge": [{"key": k, "edge": e, "value": v} for k, e, v in self.edges],
            "pareto": [{**h, "within_bound": self.feasible(h)} for h in self.pareto]})

    def to_frame(self):
        """Given against tuned, one row per varied setting (pandas)."""
        import pandas as pd
        rows = [{"setting": k, "given": self.start_values[k], "tuned": self.best_values[k],
                 "searched": self.ranges[k]} for k in self.keys]
        rows.append({"setting": "throughput_mops", "given": self.start_mops,
                     "tuned": self.best_mops, "searched": ""})
        rows.append({"setting": "latency_us", "given": self.start_latency_us,
                     "tuned": self.best_latency_us, "searched": ""})
        return pd.DataFrame(rows).set_index("setting")

    def history_frame(self):
        """Every configuration solved during the search (pandas)."""
        import pandas as pd
        return pd.DataFrame(self.history)

    def table(self) -> str:
        return format_tune(self)

    def write(self, path: str | Path) -> Path:
        return write_tune(self, path)


#: the latency statistics the objective and the bound can read -> history column
LATENCY_STATS = ("mean", "p50", "p95", "p99")
#: the latency the Pareto front is drawn against
FRONT_LATENCY = "latency_p99_us"


def latency_column(stat: str) -> str:
    return "latency_us" if stat == "mean" else f"latency_{stat}_us"


def tune(base: Scenario, profile: Profile, dims: Sequence[Dimension], *,
         objective: str = "throughput", max_latency_us: float | None = None,
         latency_stat: str = "mean",
         generations: int = 12, popsize: int = 6, seed: int = 1,
         explain_result: bool = True, progress: bool = False) -> TuneResult:
    """Search ``dims`` around ``base`` (module docstring)."""
    from scipy.optimize import differential_evolution
    _check_search(objective, max_latency_us, generations, latency_stat)
    _check_bound(max_latency_us, profile)
    lat_col = latency_column(latency_stat)
    dims = list(dims)
    search = _Search(base, profile, dims, objective, max_latency_us, lat_col, progress)
    res = differential_evolution(
        search.energies, [d.bounds for d in dims], maxiter=generations, popsize=popsize,
        seed=seed, tol=TOL, polish=False, init="latinhypercube",
        integrality=[d.integral for d in dims], vectorized=True, updating="deferred",
        x0=np.array(_start_point(base, dims)), callback=search.next_generation)
    best_v = search.best_seen(res.x, latency_stat)
    best_sc = base.updated(dict(zip((d.key for d in dims), best_v)), source="--vary")
    (p_start, p_best), (iv_start, iv_best) = solve_with_intervals([base, best_sc], profile)
    ex, note = _explain_tuned(best_sc, profile) if explain_result else (None, "")
    start_lat = latency_columns(p_start)[lat_col]
    return TuneResult(
        keys=[d.key for d in dims], ranges={d.key: d.describe() for d in dims},
        start_values={d.key: setting_of(base, d.key) for d in dims},
        best_values=dict(zip((d.key for d in dims), best_v)),
        start_mops=p_start.throughput_mops, best_mops=p_best.throughput_mops,
        start_latency_us=start_lat, best_latency_us=latency_columns(p_best)[lat_col],
        start_interval=iv_start, best_interval=iv_best, objective=objective,
        max_latency_us=max_latency_us, evaluations=len(search.cache),
        generations=int(res.nit),
        method=f"scipy differential evolution (popsize {popsize}, {int(res.nit)} generations, "
               f"seed {seed})",
        best_scenario=best_sc, start_scenario=base, explanation=ex, explain_note=note,
        history=search.history, profile=profile.name,
        feasible_start=max_latency_us is None or start_lat <= max_latency_us,
        bounds={d.key: (d.lo, d.hi) for d in dims if d.kind != "choice"},
        latency_stat=latency_stat)


def _check_search(objective: str, max_latency_us: float | None, generations: int,
                  latency_stat: str) -> None:
    """The search's settings, refused (naming the flag) before anything is solved."""
    if objective not in ("throughput", "latency"):
        raise InputError(f"unknown objective {objective!r}; allowed: throughput, latency",
                         field="--objective")
    if max_latency_us is not None and not (max_latency_us > 0 and math.isfinite(max_latency_us)):
        raise InputError(f"must be a positive number of us, got {max_latency_us!r}",
                         field="--max-latency-us")
    if generations < 1:
        raise InputError("must be at least 1", field="--generations")
    if latency_stat not in LATENCY_STATS:
        raise InputError(f"unknown latency statistic {latency_stat!r}; allowed: "
                         + ", ".join(LATENCY_STATS), field="--latency-stat")


def _check_bound(max_latency_us: float | None, profile: Profile) -> None:
    """A latency bound no configuration can meet is refused before the
    search: every request waits at least the profile's shortest round trip
    (a hit's ``hit_rtt_us`` or a miss's ``miss_rtt_us``; model.rack.clients)."""
    rtts = [profile.params[k].value for k in ("hit_rtt_us", "miss_rtt_us")
            if k in profile.params]
    if max_latency_us is None or len(rtts) < 2 or max_latency_us >= min(rtts):
        return
    raise InputError(f"{max_latency_us:g} us is below the shortest round trip of profile "
                     f"'{profile.name}' ({min(rtts):.3g} us: hit_rtt_us, miss_rtt_us); no "
                     "configuration answers that fast", field="--max-latency-us")


#: the energy of a configuration that is not one (or predicts no throughput)
INVALID_ENERGY = 1e9
#: the energy of a configuration beyond the latency bound is at least this
#: (above any valid one's, below an invalid one's)
OVER_BOUND_ENERGY = 1e3


class _Search:
    """What differential evolution minimises: the energy of each point of the
    search space, each configuration solved once (a batch per generation) and
    every one solved recorded in ``history``."""

    def __init__(self, base: Scenario, profile: Profile, dims: Sequence[Dimension],
                 objective: str, max_latency_us: float | None, lat_col: str, progress: bool):
        self.base, self.profile, self.dims = base, profile, dims
        self.objective, self.max_latency_us = objective, max_latency_us
        self.lat_col, self.progress = lat_col, progress
        self.cache: dict[tuple, tuple[float, float, bool]] = {}  # values -> (MOPS, latency us, valid)
        self.history: list[dict[str, Any]] = []
        self.generations = 0

    def values_at(self, x) -> tuple:
        return tuple(d.value(float(xi)) for d, xi in zip(self.dims, x))

    def energy(self, mops: float, lat: float, valid: bool) -> float:
        """Lower is better: -MOPS or the latency, penalised beyond the bound."""
        if not valid or not math.isfinite(mops) or mops <= 0:
            return INVALID_ENERGY
        bound = self.max_latency_us
        if bound is not None and not lat <= bound:
            # more the further beyond, but always below an invalid one's
            over = OVER_BOUND_ENERGY * (1.0 + lat / bound if math.isfinite(lat) else 1e3)
            return min(over, INVALID_ENERGY / 2)
        return -mops if self.objective == "throughput" else lat

    def evaluate(self, batch: list[tuple]) -> None:
        """Solve the configurations of ``batch`` not solved yet, in one batch."""
        from model.solvers import predict_many
        todo = [v for v in dict.fromkeys(batch) if v not in self.cache]
        scs, keep = [], []
        for v in todo:
            try:
                scs.append(self.base.updated(dict(zip((d.key for d in self.dims), v)),
                                             source="--vary"))
                keep.append(v)
            except InputError:              # e.g. flushnum >= maxnum: not a configuration
                self.cache[v] = (math.nan, math.nan, False)
        if scs:
            for v, pred in zip(keep, predict_many(scs, self.profile)):
                lat = latency_columns(pred)
                self.cache[v] = (pred.throughput_mops, lat[self.lat_col], True)
                self.history.append({**{d.key: x for d, x in zip(self.dims, v)},
                                     "throughput_mops": pred.throughput_mops, **lat,
                                     "bottleneck": pred.bottleneck.kind})

    def energies(self, X):
        """The energy of each column of ``X`` (scipy's vectorized call)."""
        X = np.atleast_2d(X)
        if X.shape[0] != len(self.dims):
            X = X.T
        batch = [self.values_at(X[:, j]) for j in range(X.shape[1])]
        self.evaluate(batch)
        return np.array([self.energy(*self.cache[v]) for v in batch])

    def next_generation(self, *_a, **_k) -> None:
        """scipy's callback after each generation: the progress line, with the
        best configuration's throughput or latency (never the search's
        penalty of those beyond the bound or invalid)."""
        self.generations += 1
        if self.progress:
            print(f"  generation {self.generations}: {len(self.cache)} configurations, "
                  f"{self.best_text()}", file=sys.stderr)

    def best_text(self) -> str:
        ok = [c for c in self.cache.values() if self.energy(*c) < OVER_BOUND_ENERGY]
        if not ok:
            seen = [c[1] for c in self.cache.values() if c[2] and math.isfinite(c[1])]
            return ("none within the latency bound yet"
                    + (f" (the lowest latency seen: {min(seen):,.0f} us)" if seen else ""))
        best = min(ok, key=lambda c: self.energy(*c))
        return (f"best {best[0]:.4g} MOPS" if self.objective == "throughput"
                else f"best {best[1]:,.4g} us")

    def best_seen(self, x, latency_stat: str) -> tuple:
        """The values of the best configuration solved (deferred updating can
        end one generation past it), refused when none is valid or within the bound."""
        best_v = self.values_at(x)
        for v, c in self.cache.items():
            if self.energy(*c) < self.energy(*self.cache[best_v]):
                best_v = v
        if self.energy(*self.cache[best_v]) >= INVALID_ENERGY:
            raise InputError("no configuration in these ranges is valid (flushnum must stay "
                             "below maxnum)", field="--vary")
        if self.max_latency_us is not None and \
                self.energy(*self.cache[best_v]) >= OVER_BOUND_ENERGY:
            lat = self.cache[best_v][1]
            raise InputError(f"no configuration found with client latency ({latency_stat}) at "
                             f"most {self.max_latency_us:,.0f} us (the lowest seen: {lat:,.0f} "
                             f"us)", field="--max-latency-us")
        return best_v


def _start_point(base: Scenario, dims: Sequence[Dimension]) -> list[float]:
    """The given configuration's coordinates: the search starts from it (``x0``)."""
    x0 = []
    for d in dims:
        cur = setting_of(base, d.key)
        if d.kind == "choice":
            x0.append(float(d.choices.index(cur)) if cur in d.choices else 0.0)
        else:
            c = min(max(float(cur), d.lo), d.hi)
            x0.append(math.log(c) if d.log else c)
    return x0


def _explain_tuned(best_sc: Scenario, profile: Profile) -> tuple[Any, str]:
    """The explanation of the tuned configuration, or why there is none."""
    if best_sc.switch.cache:
        from model.explain import explain
        return explain(best_sc, profile), ""
    return None, "the tuned configuration has the cache off: no gain to explain"


# ---------------------------------------------------------------- output
def format_tune(t: TuneResult) -> str:
    def iv(x):
        return (f" [{x[0]:.4f}, {x[1]:.4f}] (90 % interval)" if x else
                " (no interval: the profile has no [uncertainty])")

    w = max(len(k) for k in t.keys)
    lines = [t.objective_text, "",
             f"  {'setting':<{w}}  {'given':>10}  {'tuned':>10}  searched"]
    for k in t.keys:
        unit = scenario_field(k).metadata.get("unit") or ""
        lines.append(f"  {k:<{w}}  {show_value(t.start_values[k]):>10}  {show_value(t.best_values[k]):>10}  "
                     f"{t.ranges[k]}{' ' + unit if unit and 'to' in t.ranges[k] else ''}")
    lines += [
        "",
        f"  tuned throughput   {t.best_mops:.4f} MOPS{iv(t.best_interval)}",
        f"  given throughput   {t.start_mops:.4f} MOPS{iv(t.start_interval)}",
        f"  predicted gain     {t.gain_pct:+.1f} % (tuned vs given)",
        f"  client latency     {t.best_latency_us:,.0f} us tuned, {t.start_latency_us:,.0f} us given"
        f" ({'mean' if t.latency_stat == 'mean' else t.latency_stat})",
    ]
    if not t.feasible_start:
        lines.append(f"  (the given configuration exceeds the latency bound of "
                     f"{t.max_latency_us:,.0f} us)")
    lines.append("  set it with: " + " ".join(f"--set {k}={show_value(v)}" for k, v in t.best_values.items()))
    for k, side, v in t.edges:
        lines.append(f"  NOTE: {k} = {show_value(v)} is the {side} edge of the range searched "
                     f"({t.ranges[k]}): the optimum may lie beyond it; widen --vary {k}")
    front = t.pareto
    if len(front) > 1:
        lines += ["", "Throughput against p99 client latency: the configurations solved that "
                      "no other beats on both (" + ("x: beyond the latency bound" if
                                                    t.max_latency_us is not None else
                                                    "fastest first") + ")",
                  f"  {'p99 us':>12}  {'mean us':>10}  {'MOPS':>8}  setting"]
        shown = front if len(front) <= 10 else front[::max(1, len(front) // 10)][:9] + front[-1:]
        for h in shown:
            mark = " " if t.feasible(h) else "x"
            lines.append(f"{mark} {h[FRONT_LATENCY]:12,.0f}  {h['latency_us']:10,.0f}  "
                         f"{h['throughput_mops']:8.4f}  "
                         + " ".join(f"{k}={show_value(h[k])}" for k in t.keys))
    if t.explanation is not None:
        from .explain import format_explanation
        lines += ["", "Why the tuned configuration's gain falls short of the normalized gain:",
                  format_explanation(t.explanation, t.best_scenario, t.profile)]
    elif t.explain_note:
        lines += ["", f"({t.explain_note})"]
    return "\n".join(lines)


def write_tune(t: TuneResult, path: str | Path) -> Path:
    from runio.safe_io import output_type, write_rows_csv, write_text
    p = Path(path)
    ext = output_type(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if ext == ".json":
            write_text(p, json.dumps(t.to_dict(), indent=1) + "\n")
        elif ext == ".csv":
            write_rows_csv(p, t.history,
                           lambda v: f"{v:.6g}" if isinstance(v, float) else show_value(v))
        else:
            from reports.questions import write_tune_page
            write_tune_page(t, p)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=str(p), field="--out") from None
    return p


# ---------------------------------------------------------------- command line
def add_parser(sub) -> None:
    p = sub.add_parser("tune", help="the best configuration within given ranges (analytic model, "
                                    "differential evolution)",
                       description="Search the given ranges for the configuration with the most "
                                   "throughput (or least latency) by the analytic model.")
    p.add_argument("--scenario", metavar="FILE.toml",
                   help="scenario TOML (default: the embedded FarReach rack)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="fixed changes to the scenario (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=LO:HI|KEY=V1,V2,...",
                   help="what may change: a numeric range or a set of values (repeatable)")
    p.add_argument("--objective", choices=("throughput", "latency"), default="throughput",
                   help="maximise throughput (default) or minimise client latency")
    p.add_argument("--latency-stat", choices=LATENCY_STATS, default="mean",
                   help="the client latency --objective latency and --max-latency-us read: "
                        "the mean (default) or a percentile")
    p.add_argument("--max-latency-us", type=arg("max_latency_us"), metavar="N",
                   help="only configurations whose mean client latency is at most N us")
    p.add_argument("--generations", type=arg("generations"), default=12, metavar="N",
                   help="at most N generations of the search (default 12)")
    p.add_argument("--seed", type=arg("seed"), default=1, help="random seed of the search")
    p.add_argument("--profile", metavar="NAME|FILE.toml",
                   help="calibrated profile (default: embedded 'tofino-testbed')")
    p.add_argument("--out", metavar="FILE.html|.json|.csv",
                   help="also write the result (.csv: every configuration solved)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    p.ignored_unless("--latency-stat", lambda a: a.objective == "latency"
                     or a.max_latency_us is not None,
                     "it chooses the latency --objective latency and --max-latency-us read")


def run(args) -> int:
    from .main import check_outputs, load_inputs
    from runio.safe_io import REPORT_TYPES
    check_outputs(args, out_types=REPORT_TYPES)
    dims = parse_dimensions(args.vary)
    sc, profile = load_inputs(args)
    t = tune(sc, profile, dims, objective=args.objective, max_latency_us=args.max_latency_us,
             latency_stat=args.latency_stat,
             generations=args.generations, seed=args.seed, progress=not args.json)
    from runio.notes import note, scenario_notes
    for text in scenario_notes([t.best_scenario], profile, "the tuned configuration"):
        note(text)
    if args.json:
        print(json.dumps(t.to_dict(), indent=1))
    else:
        print(t.table())
    if args.out:
        t.write(args.out)
        print(f"written to {args.out}", file=sys.stderr)
    return 0
