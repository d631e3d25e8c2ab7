"""Cross-validation: refit without some rows, predict them, report the errors.

In-sample errors say how well a profile can be made to fit; what a user
needs is how well it predicts runs it has not seen. :func:`cross_validate`
splits the rows into folds by a *grouping*, refits the profile on the other
rows of each fold with the fitter registered for their kind
(:mod:`calibrate.fitters`), predicts the held-out rows through the run
kind's ``predict_row`` and summarises the out-of-sample errors per run kind
and column: median and mean absolute percentage error, the Spearman rank
correlation, and -- when the fitted profile carries intervals
(:mod:`model.uncertainty`, ``pred_X_lo`` / ``pred_X_hi``) -- the share of
held-out measurements inside their interval (coverage).

Groupings, given as text (``python -m calibrate validate --cv GROUP``):

``first:K``
    fit on the first K points of every curve and predict the rest: the
    low-load end predicts the high-load end, as a user does when a
    measurement campaign starts small. ``first:50%`` fits on the first half
    of every curve (rounded up, at least one point), so curves of different
    lengths all keep their low-load half. A *curve* is declared by the run kind
    (``RunKind.extra["curve"] = {"by": (columns...), "order": column}``):
    rows with equal ``by`` values form a curve, ordered by ``order``
    (numerically); repeats at the same ``order`` value count as one point.
``last:K``
    the mirror: hold out the last K points of every curve.
``top:K``
    leave the top out: hold out the K largest values of each series' *top*
    axis and predict them from the rest, as a user asks about the next
    connection count or core count past a campaign. The axis is declared by
    the run kind (``RunKind.extra["top"] = {"by": (columns...), "order":
    column}``, default its ``curve``): the thread/coroutine series hold out
    their top connection count, the priority runs their top vCPU count (every
    priority class of it), the runtimes' best-QPS series their top core count.
    Series with K values or fewer only train.
``column:NAME``
    leave one value of column NAME out at a time (one fold per value).

More groupings register with :func:`register_grouping` (a function
``(rows, arg) -> [Fold]``); FarReach's ``block`` and ``era`` are meant to go
there.
"""

from __future__ import annotations

import inspect
import math
import sys
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from scipy import stats as _stats

from model.errors import InputError
from model.units import unit_of

Row = Mapping[str, str]

__all__ = ["Fold", "Held", "CVSummary", "CVResult", "cross_validate", "make_folds",
           "register_grouping", "GROUPINGS", "curve_key", "format_cv", "curve_spec"]


@dataclass(frozen=True)
class Fold:
    """One refit: train on ``train`` (row indices), predict ``test``."""

    name: str
    train: tuple[int, ...]
    test: tuple[int, ...]


@dataclass
class Held:
    """One held-out measured cell and its out-of-sample prediction."""

    fold: str
    kind: str
    id: str
    column: str
    measured: float
    predicted: float | None
    lo: float | None = None
    hi: float | None = None
    row: Mapping[str, str] = field(default_factory=dict)   # the run's own columns (no __ keys)

    @property
    def ape(self) -> float | None:
        if self.predicted is None or not math.isfinite(self.predicted) or self.measured == 0:
            return None
        return abs(self.predicted - self.measured) / abs(self.measured) * 100.0

    @property
    def inside(self) -> bool | None:
        if self.lo is None or self.hi is None:
            return None
        return self.lo <= self.measured <= self.hi


@dataclass
class CVSummary:
    kind: str
    column: str
    unit: str
    n: int
    median_ape: float
    mean_ape: float
    spearman: float | None
    coverage: float | None          # fraction of held-out cells inside their interval
    n_intervals: int


@dataclass
class CVResult:
    grouping: str
    level: float
    folds: list[Fold]
    held: list[Held]
    summary: dict[tuple[str, str], CVSummary]
    systems: dict[str, str]          # kind -> fitter label (system / profile name)
    profiles: list[Any] = field(default_factory=list)   # the refitted profile of each fold
    folds_planned: int = 0           # more than len(folds) when Ctrl-C stopped the refits

    @property
    def partial(self) -> bool:
        return self.folds_planned > len(self.folds)


# ---------------------------------------------------------------------------
# groupings
# ---------------------------------------------------------------------------

GROUPINGS: dict[str, Callable[[Sequence[Row], str], list[Fold]]] = {}


def register_grouping(name: str, fn: Callable[[Sequence[Row], str], list[Fold]]) -> None:
    """Add a grouping ``name:ARG``; ``fn(rows, arg)`` returns the folds."""
    GROUPINGS[name] = fn


def curve_spec(kind: str) -> dict[str, Any]:
    """The kind's curve declaration ``{"by": (...), "order": col}``."""
    from runio.kinds import KINDS
    k = KINDS.get(kind)
    spec = None if k is None else k.extra.get("curve")
    if not spec:
        raise InputError(f"run kind {kind} declares no curve (RunKind.extra['curve']), so "
                         "first:K / last:K cannot split it; use column:NAME", field="--cv")
    return spec


def _order_value(r: Row, col: str) -> float:
    v = r.get(col)
    try:
        x = float(str(v).strip())
    except (TypeError, ValueError):
        raise InputError(f"expected a number to order the curve by, got {v!r}",
                         source=r.get("__source__"), line=_line(r), field=col) from None
    return x


def curve_key(r: Row) -> tuple:
    """(kind, values of the curve's ``by`` columns) of a row."""
    spec = curve_spec(str(r.get("__kind__")))
    return (r.get("__kind__"),) + tuple(str(r.get(c, "")).strip() for c in spec["by"])


def _rank_in_curve(rows: Sequence[Row]) -> tuple[list[int], list[int]]:
    """Per row: its point's rank on its curve (0 = lowest load) and the curve's length."""
    points: dict[tuple, set[float]] = {}
    xs = []
    for r in rows:
        spec = curve_spec(str(r.get("__kind__")))
        x = _order_value(r, spec["order"])
        xs.append(x)
        points.setdefault(curve_key(r), set()).add(x)
    ranks, lengths = [], []
    for r, x in zip(rows, xs):
        pts = sorted(points[curve_key(r)])
        ranks.append(pts.index(x))
        lengths.append(len(pts))
    return ranks, lengths


def top_spec(kind: str) -> dict[str, Any]:
    """The kind's leave-the-top-out axis: ``extra["top"]``, else its curve."""
    from runio.kinds import KINDS
    k = KINDS.get(kind)
    spec = None if k is None else k.extra.get("top")
    return spec or curve_spec(kind)


def _top(rows: Sequence[Row], arg: str) -> list[Fold]:
    """Hold out the K largest values of every series' top axis (:func:`top_spec`)."""
    k = _positive_int(arg, "top")
    keys, xs = [], []
    values: dict[tuple, set[float]] = {}
    for r in rows:
        kind = str(r.get("__kind__"))
        spec = top_spec(kind)
        key = (kind,) + tuple(str(r.get(c, "")).strip() for c in spec["by"])
        x = _order_value(r, spec["order"])
        keys.append(key)
        xs.append(x)
        values.setdefault(key, set()).add(x)
    test = tuple(i for i, (key, x) in enumerate(zip(keys, xs))
                 if len(values[key]) > k and x in sorted(values[key])[-k:])
    held = set(test)
    train = tuple(i for i in range(len(rows)) if i not in held)
    return [Fold(f"top:{k}", train, test)]


def _positive_int(arg: str, what: str) -> int:
    try:
        k = int(arg)
    except ValueError:
        k = 0
    if k < 1:
        raise InputError(f"{what}:K needs a whole number K >= 1, got {arg!r}", field="--cv")
    return k


def _fraction(arg: str, what: str) -> float | None:
    if not arg.endswith("%"):
        return None
    try:
        f = float(arg[:-1]) / 100.0
    except ValueError:
        f = 0.0
    if not 0 < f < 1:
        raise InputError(f"{what}:P% needs 0 < P < 100, got {arg!r}", field="--cv")
    return f


def _first(rows: Sequence[Row], arg: str) -> list[Fold]:
    frac = _fraction(arg, "first")
    ranks, lengths = _rank_in_curve(rows)
    if frac is not None:
        keep = [max(1, math.ceil(frac * n - 1e-9)) for n in lengths]
    else:
        keep = [_positive_int(arg, "first")] * len(rows)
    train = tuple(i for i, (rk, k) in enumerate(zip(ranks, keep)) if rk < k)
    test = tuple(i for i, (rk, k) in enumerate(zip(ranks, keep)) if rk >= k)
    return [Fold(f"first:{arg}", train, test)]


def _last(rows: Sequence[Row], arg: str) -> list[Fold]:
    k = _positive_int(arg, "last")
    ranks, lengths = _rank_in_curve(rows)
    test = tuple(i for i, (rk, n) in enumerate(zip(ranks, lengths)) if n > k and rk >= n - k)
    train = tuple(i for i in range(len(rows)) if i not in set(test))
    return [Fold(f"last:{k}", train, test)]


def _column(rows: Sequence[Row], name: str) -> list[Fold]:
    if not name:
        raise InputError("column:NAME needs a column name", field="--cv")
    values = [str(r.get(name, "")).strip() for r in rows]
    if not any(values):
        raise InputError(f"no row has a value in column '{name}'", field="--cv")
    folds = []
    for v in dict.fromkeys(x for x in values if x):
        test = tuple(i for i, x in enumerate(values) if x == v)
        train = tuple(i for i, x in enumerate(values) if x != v)
        folds.append(Fold(f"{name}={v}", train, test))
    return folds


register_grouping("first", _first)
register_grouping("last", _last)
register_grouping("top", _top)
register_grouping("column", _column)


def make_folds(rows: Sequence[Row], grouping: str) -> list[Fold]:
    """Folds of a grouping given as text, e.g. ``first:2`` or ``column:servers``."""
    name, sep, arg = str(grouping).partition(":")
    if name not in GROUPINGS or not sep:
        raise InputError(f"unknown grouping {grouping!r}; use one of "
                         + ", ".join(f"{g}:..." for g in GROUPINGS), field="--cv")
    folds = GROUPINGS[name](rows, arg)
    folds = [f for f in folds if f.test]
    if not folds:
        raise InputError(f"grouping {grouping!r} holds out no row (every curve is too short)",
                         field="--cv")
    for f in folds:
        if not f.train:
            raise InputError(f"fold {f.name} leaves no row to fit on", field="--cv")
    return folds


# ---------------------------------------------------------------------------
# refit and predict
# ---------------------------------------------------------------------------

def _line(r: Row) -> int | None:
    v = r.get("__line__")
    return int(v) if v and str(v).isdigit() else None


def _fitter_for_rows(rows: Sequence[Row], fitter: Any, fitter_kwargs: Mapping[str, Any]):
    from .fitters import fitter_spec
    if fitter is not None:
        return (lambda: fitter(**dict(fitter_kwargs))), getattr(fitter, "__name__", str(fitter))
    specs = {}
    for r in rows:
        kind = str(r.get("__kind__"))
        if kind not in specs:
            specs[kind] = fitter_spec(kind)
    distinct = {(cls, tuple(sorted(fixed.items()))) for cls, fixed in specs.values()}
    if len(distinct) != 1:
        raise InputError("these rows are calibrated by different fitters ("
                         + "; ".join(f"{k}: {c.__name__} {f}" for k, (c, f) in specs.items())
                         + "); cross-validate one system at a time", field="--runs")
    cls, fixed = next(iter(specs.values()))
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {**fixed, **{k: v for k, v in fitter_kwargs.items()
                          if v is not None and k in accepted}}
    label = fixed.get("system") or fixed.get("name") or cls.__name__
    return (lambda: cls(**kwargs)), str(label)


def _measured(r: Row, col: str) -> float | None:
    v = r.get(col)
    if v is None or str(v).strip() == "" or "|" in str(v):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def cross_validate(rows: Sequence[Row], grouping: str, *, fitter: Any = None,
                   fitter_kwargs: Mapping[str, Any] | None = None,
                   level: float = 0.9, progress: bool = False) -> CVResult:
    """Refit per fold and predict the held-out rows; errors per kind and column.

    ``rows`` carry ``__kind__`` (and ``__source__``/``__line__`` for messages),
    as :func:`calibrate.runs_io.load_runs` and
    :func:`calibrate.systems_fit.load_rows` return them. ``fitter`` is a
    fitter class (default: the one registered for the rows' kinds, which must
    all share it); ``fitter_kwargs`` are passed where its constructor takes
    them (e.g. ``priors``). ``level`` labels the intervals the profile's
    ``predict_row`` returns (coverage is counted on ``pred_X_lo``/``_hi``).
    ``progress`` shows a bar of refits on stderr; Ctrl-C returns the folds
    finished so far (``partial`` is then true).
    """
    from runio.kinds import KINDS
    rows = list(rows)
    if not rows:
        raise InputError("no rows to cross-validate", field="--runs")
    for r in rows:
        if r.get("__kind__") not in KINDS:
            raise InputError(f"row of unknown kind {r.get('__kind__')!r}",
                             source=r.get("__source__"), line=_line(r), field="__kind__")
    make, label = _fitter_for_rows(rows, fitter, fitter_kwargs or {})
    folds = make_folds(rows, grouping)
    held: list[Held] = []
    profiles = []
    done: list[Fold] = []
    from runio.progress import bar
    with bar(len(folds), "refits", "fit", progress) as b:
        try:
            for f in folds:
                fold_held = _refit_and_predict(f, rows, make)
                profiles.append(fold_held[0])
                held += fold_held[1]
                done.append(f)
                b.update(1)
        except KeyboardInterrupt:
            pass                     # report the folds finished; the caller marks it partial
    return CVResult(grouping, level, done, held, summarise(held),
                    {str(r["__kind__"]): label for r in rows}, profiles, len(folds))


def _refit_and_predict(f: Fold, rows: Sequence[Row], make) -> tuple[Any, list[Held]]:
    """One fold: the profile refitted without its test rows, and their held-out cells."""
    from runio.kinds import KINDS
    prof = make().fit([rows[i] for i in f.train]).profile_
    from runio.row_prediction import predict_kind_rows
    # the fold's rows of each kind in one batch (rack kinds solve them together)
    by_kind: dict[str, list[int]] = {}
    for i in f.test:
        by_kind.setdefault(str(rows[i]["__kind__"]), []).append(i)
    preds: dict[int, dict] = {}
    for kname, idx in by_kind.items():
        for i, p in zip(idx, predict_kind_rows(KINDS[kname], [rows[i] for i in idx], prof)):
            preds[i] = p
    held = []
    for i in f.test:
        r = rows[i]
        k = KINDS[str(r["__kind__"])]
        pred = preds[i]
        for c in k.measured:
            m = _measured(r, c)
            if m is None:
                continue
            p = pred.get(f"pred_{c}")
            held.append(Held(f.name, k.name, str(r.get("id") or f"line {_line(r)}"), c, m,
                             float(p) if isinstance(p, (int, float)) else None,
                             pred.get(f"pred_{c}_lo"), pred.get(f"pred_{c}_hi"),
                             {kk: v for kk, v in r.items() if not kk.startswith("__")}))
    return prof, held


def summarise(held: Sequence[Held]) -> dict[tuple[str, str], CVSummary]:
    """Per (kind, column): median/mean APE, Spearman, interval coverage."""
    by: dict[tuple[str, str], list[Held]] = {}
    for h in held:
        if h.ape is not None:
            by.setdefault((h.kind, h.column), []).append(h)
    out = {}
    for key, hs in by.items():
        apes = [h.ape for h in hs]
        rho = None
        ms, ps = [h.measured for h in hs], [h.predicted for h in hs]
        if len(hs) >= 3 and len(set(ms)) > 1 and len(set(ps)) > 1:
            rho = float(_stats.spearmanr(ms, ps).statistic)
        ins = [h.inside for h in hs if h.inside is not None]
        out[key] = CVSummary(key[0], key[1], unit_of(key[1]), len(hs), statistics.median(apes),
                             statistics.fmean(apes), rho,
                             (sum(ins) / len(ins)) if ins else None, len(ins))
    return out


def held_rows(res: CVResult) -> tuple[list[str], list[dict[str, Any]]]:
    """``validate --cv --out``: one row per held-out cell, with its unit, its
    out-of-sample prediction, interval and error, and the run's own columns."""
    lead = ["fold", "kind", "id", "column", "unit", "measured", "predicted", "lo", "hi",
            "ape_pct", "inside"]
    own: list[str] = []
    table = []
    for h in res.held:
        own += [k for k in h.row if k not in own and k not in lead]
        table.append({**h.row, "fold": h.fold, "kind": h.kind, "id": h.id, "column": h.column,
                      "unit": unit_of(h.column), "measured": h.measured,
                      "predicted": h.predicted, "lo": h.lo, "hi": h.hi,
                      "ape_pct": None if h.ape is None else round(h.ape, 3),
                      "inside": None if h.inside is None else int(h.inside)})
    return lead + own, table


def format_cv(res: CVResult, per_row: bool = False) -> str:
    """The table printed by ``python -m calibrate validate --cv``."""
    n_test = len({(h.kind, h.id) for h in res.held})
    lines = [f"cross-validation {res.grouping}: {len(res.folds)} refit(s), {n_test} held-out runs, "
             f"{len(res.held)} held-out cells; intervals at {res.level * 100:.0f} %", ""]
    if res.partial:
        from runio.progress import partial_text
        lines.insert(0, partial_text(len(res.folds), res.folds_planned, "refits")
                     + " (the figures below cover only those)")
    if per_row:
        lines.append(f"  {'fold':<14} {'kind':<22} {'run':<8} {'column':<16} {'measured':>14} "
                     f"{'predicted':>14} {'interval':>27} {'error':>8}")
        for h in res.held:
            u = unit_of(h.column)
            iv = (f"{h.lo:.4g}-{h.hi:.4g} {u}" if h.lo is not None and h.hi is not None else "-")
            e = f"{h.ape:7.1f}%" if h.ape is not None else "      -"
            pred = f"{h.predicted:.4g} {u}" if h.predicted is not None else "-"
            lines.append(f"  {h.fold:<14} {h.kind:<22} {h.id:<8} {h.column:<16} "
                         f"{h.measured:.4g} {u:<6} {pred:>14} {iv:>27} {e}")
        lines.append("")
    lines.append(f"  {'system':<17} {'kind':<22} {'column':<22} {'unit':<8} {'cells':>5} "
                 f"{'median APE':>11} {'mean APE':>10} {'Spearman':>9} {'coverage':>9}")
    for (kind, col), s in sorted(res.summary.items(), key=lambda kv: (res.systems.get(kv[0][0], ""),
                                                                       kv[0])):
        rho = f"{s.spearman:9.3f}" if s.spearman is not None else f"{'-':>9}"
        cov = f"{s.coverage * 100:8.0f}%" if s.coverage is not None else f"{'-':>9}"
        lines.append(f"  {res.systems.get(kind, ''):<17} {kind:<22} {col:<22} {s.unit or '-':<8} "
                     f"{s.n:>5} {s.median_ape:10.1f}% {s.mean_ape:9.1f}% {rho} {cov}")
    return "\n".join(lines)
