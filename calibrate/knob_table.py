"""The knob table: each pair's measured and predicted ratios, and its output
as CSV rows (``--out``), the text table and the summary printed on stdout.
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Any

from .knob_pairs import Pair, Run
from .knob_scoring import FLAT, direction, positive_log, ratio_error, scored

#: engine name -> its label in tables
ENGINES = {"analytic": "analytic", "sim": "simulator"}


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
        if positive_log(a) is None or positive_log(b) is None:
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
