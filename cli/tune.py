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
from runio.exits import at_least
from model.profile import Profile
from model.scenario import SECTIONS, Scenario, parse_value, resolve_key

from runio.columns import latency_columns

from .sweep import solve as solve_with_intervals


# ---------------------------------------------------------------- what may change
@dataclass(frozen=True)
class Dimension:
    key: str                       # canonical section.field
    kind: str                      # "float", "int" or "choice"
    lo: float = 0.0
    hi: float = 0.0
    choices: tuple = ()
    log: bool = False

    @property
    def bounds(self) -> tuple[float, float]:
        if self.kind == "choice":
            return (0.0, float(len(self.choices) - 1))
        if self.log:
            return (math.log(self.lo), math.log(self.hi))
        return (float(self.lo), float(self.hi))

    @property
    def integral(self) -> bool:
        return self.kind in ("int", "choice")

    def value(self, x: float) -> Any:
        """The setting at coordinate ``x`` of the search space."""
        if self.kind == "choice":
            return self.choices[int(round(min(max(x, 0), len(self.choices) - 1)))]
        v = math.exp(x) if self.log else x
        v = min(max(v, self.lo), self.hi)
        if self.kind == "int":
            return int(round(v))
        return float(f"{v:.4g}")        # settings people would write

    def describe(self) -> str:
        if self.kind == "choice":
            return ", ".join(_show(c) for c in self.choices)
        return f"{_show(self.lo)} to {_show(self.hi)}" + (" (log scale)" if self.log else "")


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _field(key: str):
    from dataclasses import fields
    sec, name = key.split(".")
    return {f.name: f for f in fields(SECTIONS[sec])}[name]


def parse_dimension(text: str, source: str = "--vary") -> Dimension:
    """``KEY=LO:HI`` or ``KEY=V1,V2,...`` -> a :class:`Dimension`."""
    if "=" not in text:
        raise InputError(f"expected KEY=LO:HI or KEY=V1,V2,..., got {text!r}", source=source)
    key, raw = (s.strip() for s in text.split("=", 1))
    canonical = resolve_key(key, source)
    if canonical == "name":
        raise InputError("the scenario name cannot be tuned", source=source, field=key)
    f = _field(canonical)
    typ = f.type if isinstance(f.type, str) else f.type.__name__
    if ":" in raw:
        if typ not in ("int", "float"):
            raise InputError(f"a LO:HI range needs a numeric key; {canonical} takes "
                             f"{_allowed(canonical)}: list its values as V1,V2,...",
                             source=source, field=key)
        parts = raw.split(":")
        if len(parts) != 2:
            raise InputError(f"expected LO:HI, got {raw!r}", source=source, field=key)
        try:
            lo, hi = (float(p) for p in parts)
        except ValueError:
            raise InputError(f"expected two numbers LO:HI, got {raw!r}", source=source,
                             field=key) from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise InputError(f"the range {raw!r} is empty: LO must be below HI", source=source,
                             field=key)
        # both ends must be allowed values of the key
        for v in (lo, hi):
            Scenario.default().updated({canonical: int(v) if typ == "int" and v.is_integer()
                                        else v}, source=source)
        if typ == "int":
            if not (lo.is_integer() and hi.is_integer()):
                raise InputError(f"{canonical} is an integer; give integer ends, got {raw!r}",
                                 source=source, field=key)
            return Dimension(canonical, "int", lo, hi)
        log = lo > 0 and hi / lo >= 10.0
        return Dimension(canonical, "float", lo, hi, log=log)
    vals = [p.strip() for p in raw.split(",")]
    if not raw.strip() or any(v == "" for v in vals):
        raise InputError(f"expected LO:HI or a comma-separated list of values, got {raw!r}",
                         source=source, field=key)
    choices = tuple(parse_value(v) for v in vals)
    for v in choices:
        Scenario.default().updated({canonical: v}, source=source)
    if len(set(choices)) < 2:
        raise InputError("give at least two different values to choose from", source=source,
                         field=key)
    return Dimension(canonical, "choice", choices=choices)


def _allowed(key: str) -> str:
    from model.scenario import describe
    sec, name = key.split(".")
    return describe(SECTIONS[sec], name)


def parse_dimensions(texts: Sequence[str] | Mapping[str, Any], source: str = "--vary"
                     ) -> list[Dimension]:
    """From ``--vary`` strings, or a mapping ``{key: (lo, hi)}`` / ``{key: [v1, v2, ...]}``."""
    if isinstance(texts, Mapping):
        items = []
        for k, v in texts.items():
            if isinstance(v, tuple) and len(v) == 2 and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                items.append(f"{k}={v[0]}:{v[1]}")
            elif isinstance(v, (list, tuple)):
                items.append(f"{k}=" + ",".join(_toml(x) for x in v))
            else:
                raise InputError("expected (lo, hi) or a list of values", source=source, field=str(k))
        texts = items
    dims = [parse_dimension(t, source) for t in texts]
    if not dims:
        raise InputError("nothing to tune: give at least one --vary KEY=LO:HI", field="--vary")
    seen = set()
    for d in dims:
        if d.key in seen:
            raise InputError("given twice", source=source, field=d.key)
        seen.add(d.key)
    return dims


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return str(v)


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
        from .explain import _finite
        return _finite({
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
    from model.solvers import predict_many
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
    lat_col = latency_column(latency_stat)
    dims = list(dims)
    cache: dict[tuple, tuple[float, float, bool]] = {}      # values -> (MOPS, latency us, valid)
    history: list[dict[str, Any]] = []
    gens = [0]

    def values_at(x) -> tuple:
        return tuple(d.value(float(xi)) for d, xi in zip(dims, x))

    def energy(mops: float, lat: float, valid: bool) -> float:
        if not valid or not math.isfinite(mops) or mops <= 0:
            return 1e9
        if max_latency_us is not None and not lat <= max_latency_us:
            return 1e3 * (1.0 + lat / max_latency_us if math.isfinite(lat) else 1e3)
        return -mops if objective == "throughput" else lat

    def evaluate(batch: list[tuple]) -> None:
        todo = [v for v in dict.fromkeys(batch) if v not in cache]
        scs, keep = [], []
        for v in todo:
            try:
                scs.append(base.updated(dict(zip((d.key for d in dims), v)), source="--vary"))
                keep.append(v)
            except InputError:              # e.g. flushnum >= maxnum: not a configuration
                cache[v] = (math.nan, math.nan, False)
        if scs:
            for v, pred in zip(keep, predict_many(scs, profile)):
                lat = latency_columns(pred)
                cache[v] = (pred.throughput_mops, lat[lat_col], True)
                history.append({**{d.key: x for d, x in zip(dims, v)},
                                "throughput_mops": pred.throughput_mops, **lat,
                                "bottleneck": pred.bottleneck.kind})

    def func(X):
        X = np.atleast_2d(X)
        if X.shape[0] != len(dims):
            X = X.T
        batch = [values_at(X[:, j]) for j in range(X.shape[1])]
        evaluate(batch)
        return np.array([energy(*cache[v]) for v in batch])

    def callback(*_a, **_k):
        gens[0] += 1
        if progress:
            best = min((energy(*c) for c in cache.values()), default=math.nan)
            shown = -best if objective == "throughput" and best < 0 else best
            unit = "MOPS" if objective == "throughput" else "us"
            print(f"  generation {gens[0]}: {len(cache)} configurations, best {shown:.4g} {unit}",
                  file=sys.stderr)

    bounds = [d.bounds for d in dims]
    x0 = []
    for d in dims:
        cur = _get(base, d.key)
        if d.kind == "choice":
            x0.append(float(d.choices.index(cur)) if cur in d.choices else 0.0)
        else:
            c = min(max(float(cur), d.lo), d.hi)
            x0.append(math.log(c) if d.log else c)
    res = differential_evolution(
        func, bounds, maxiter=generations, popsize=popsize, seed=seed, tol=TOL, polish=False,
        init="latinhypercube", integrality=[d.integral for d in dims], vectorized=True,
        updating="deferred", x0=np.array(x0), callback=callback)
    best_v = values_at(res.x)
    # the best configuration seen (deferred updating can end one generation past it)
    for v, c in cache.items():
        if energy(*c) < energy(*cache[best_v]):
            best_v = v
    if energy(*cache[best_v]) >= 1e9:
        raise InputError("no configuration in these ranges is valid (flushnum must stay below "
                         "maxnum)", field="--vary")
    if max_latency_us is not None and energy(*cache[best_v]) >= 1e3:
        lat = cache[best_v][1]
        raise InputError(f"no configuration found with client latency ({latency_stat}) at most "
                         f"{max_latency_us:,.0f} us (the lowest seen: {lat:,.0f} us)",
                         field="--max-latency-us")
    best_sc = base.updated(dict(zip((d.key for d in dims), best_v)), source="--vary")
    (p_start, p_best), (iv_start, iv_best) = solve_with_intervals([base, best_sc], profile)
    ex, note = None, ""
    if explain_result:
        if best_sc.switch.cache:
            from model.explain import explain
            ex = explain(best_sc, profile)
        else:
            note = "the tuned configuration has the cache off: no gain to explain"
    start_lat = latency_columns(p_start)[lat_col]
    return TuneResult(
        keys=[d.key for d in dims], ranges={d.key: d.describe() for d in dims},
        start_values={d.key: _get(base, d.key) for d in dims},
        best_values=dict(zip((d.key for d in dims), best_v)),
        start_mops=p_start.throughput_mops, best_mops=p_best.throughput_mops,
        start_latency_us=start_lat, best_latency_us=latency_columns(p_best)[lat_col],
        start_interval=iv_start, best_interval=iv_best, objective=objective,
        max_latency_us=max_latency_us, evaluations=len(cache), generations=int(res.nit),
        method=f"scipy differential evolution (popsize {popsize}, {int(res.nit)} generations, "
               f"seed {seed})",
        best_scenario=best_sc, start_scenario=base, explanation=ex, explain_note=note,
        history=history, profile=profile.name,
        feasible_start=max_latency_us is None or start_lat <= max_latency_us,
        bounds={d.key: (d.lo, d.hi) for d in dims if d.kind != "choice"},
        latency_stat=latency_stat)


def _get(sc: Scenario, key: str) -> Any:
    sec, name = key.split(".")
    return getattr(getattr(sc, sec), name)


# ---------------------------------------------------------------- output
def format_tune(t: TuneResult) -> str:
    def iv(x):
        return (f" [{x[0]:.4f}, {x[1]:.4f}] (90 % interval)" if x else
                " (no interval: the profile has no [uncertainty])")

    w = max(len(k) for k in t.keys)
    lines = [t.objective_text, "",
             f"  {'setting':<{w}}  {'given':>10}  {'tuned':>10}  searched"]
    for k in t.keys:
        unit = _field(k).metadata.get("unit") or ""
        lines.append(f"  {k:<{w}}  {_show(t.start_values[k]):>10}  {_show(t.best_values[k]):>10}  "
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
    lines.append("  set it with: " + " ".join(f"--set {k}={_show(v)}" for k, v in t.best_values.items()))
    for k, side, v in t.edges:
        lines.append(f"  NOTE: {k} = {_show(v)} is the {side} edge of the range searched "
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
                         + " ".join(f"{k}={_show(h[k])}" for k in t.keys))
    if t.explanation is not None:
        from .explain import format_explanation
        lines += ["", "Why the tuned configuration's gain falls short of the normalized gain:",
                  format_explanation(t.explanation, t.best_scenario, t.profile)]
    elif t.explain_note:
        lines += ["", f"({t.explain_note})"]
    return "\n".join(lines)


def write_tune(t: TuneResult, path: str | Path) -> Path:
    from runio.safe_io import atomic_write, output_type, write_text
    p = Path(path)
    ext = output_type(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if ext == ".json":
            write_text(p, json.dumps(t.to_dict(), indent=1) + "\n")
        elif ext == ".csv":
            import csv
            cols: list[str] = []
            for r in t.history:
                cols += [k for k in r if k not in cols]
            with atomic_write(p) as fh:
                wr = csv.writer(fh)
                wr.writerow(cols)
                for r in t.history:
                    wr.writerow([f"{v:.6g}" if isinstance(v, float) else _show(v)
                                 for v in (r.get(c) for c in cols)])
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
    p.add_argument("--max-latency-us", type=at_least(0, exclusive=True), metavar="N",
                   help="only configurations whose mean client latency is at most N us")
    p.add_argument("--generations", type=at_least(1, int), default=12, metavar="N",
                   help="at most N generations of the search (default 12)")
    p.add_argument("--seed", type=at_least(0, int), default=1, help="random seed of the search")
    p.add_argument("--profile", metavar="NAME|FILE.toml",
                   help="calibrated profile (default: embedded 'tofino-testbed')")
    p.add_argument("--out", metavar="FILE.html|.json|.csv",
                   help="also write the result (.csv: every configuration solved)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text")


def run(args) -> int:
    from .main import check_outputs, load_inputs
    from runio.safe_io import REPORT_TYPES
    check_outputs(args, out_types=REPORT_TYPES)
    dims = parse_dimensions(args.vary)
    sc, profile = load_inputs(args)
    t = tune(sc, profile, dims, objective=args.objective, max_latency_us=args.max_latency_us,
             latency_stat=args.latency_stat,
             generations=args.generations, seed=args.seed, progress=not args.json)
    if args.json:
        print(json.dumps(t.to_dict(), indent=1))
    else:
        print(t.table())
    if args.out:
        t.write(args.out)
        print(f"written to {args.out}", file=sys.stderr)
    return 0
