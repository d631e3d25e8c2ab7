"""Fit a lab's workload profile from its measured runs (docs/workload.md, section 5).

What a FarReach runs CSV tells about the workload, independent of the machines:

* ``hit``: with one server, normalized throughput is ``1 / (1 - hit ratio)``,
  so a cached 1-server row's ``normalized_x`` gives the hit ratio; a
  breakdown row's ``cache_hit`` gives it directly.
* ``split``: a row that lists every worker's wait and process time gives each
  worker's own rate ``1 / (wait + process)``; their proportions are the
  servers' shares of the requests (without the cache on a NoCache row, of
  the requests that miss the cache on a cached row). A ``load_ratio`` list
  gives the same directly.
* ``bottleneck`` (a check, never fitted): a row that reports the *minimum*
  wait and process over workers and the throughput gives the busiest
  worker's share, ``1 / (wait_min + process_min) / throughput`` (an
  estimate: the two minima may come from different workers).

The model is a rank-ordered key space (key number ``r - 1`` has rank ``r``)
with a zipf pmf of constant ``theta`` over ``items`` keys, keys in FarReach's
synthetic layout, range partitioned. ``theta`` is fixed to the workload's
stated zipf constant; ``items`` (how many keys the popularity spreads over)
is fitted by weighted least squares in ``log10(items)``. Everything is
re-runnable: ``python -m sim workload-fit`` (cli/workload.py).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError

HIT_SIGMA = 0.0055     # normalized_x printed as 2.3: x in [2.25, 2.35) -> hit within ±0.0095
SHARE_SIGMA = 0.01     # per-worker rates from rounded wait/process times
FIT_HEAD = 1 << 16     # exact ranks while fitting (hit ratio and shares need no more)


@dataclass(frozen=True)
class Obs:
    kind: str                 # hit | split | bottleneck
    servers: int
    cache: bool               # measured with the cache on
    value: tuple              # hit: (h,); split: per-server shares; bottleneck: (s_max,)
    rows: tuple               # row ids it comes from
    sigma: float
    what: str = ""


@dataclass
class FitResult:
    theta: float
    items: float
    fit_on: str
    cost: float
    used: list
    checks: list = field(default_factory=list)   # (obs, predicted) pairs


def _num(row, col, src, line):
    v = (row.get(col) or "").strip()
    if v == "":
        return None
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"expected a number, got {v!r}", source=src, line=line, field=col) from None
    if not math.isfinite(x):
        raise InputError(f"expected a finite number, got {v!r}", source=src, line=line, field=col)
    return x


def _list(row, col, src, line):
    v = (row.get(col) or "").strip()
    if v == "":
        return None
    try:
        out = [float(x) for x in v.split("|")]
    except ValueError:
        raise InputError(f"expected numbers separated by '|', got {v!r}", source=src, line=line,
                         field=col) from None
    if any(not math.isfinite(x) or x < 0 for x in out):
        raise InputError(f"expected numbers >= 0, got {v!r}", source=src, line=line, field=col)
    return out


def observations(texts, *, partition: str = "range") -> list[Obs]:
    """Workload observations from the text of FarReach runs/breakdown CSVs,
    ``(source, text)`` pairs (other kinds of rows and files are skipped;
    :func:`runio.inputs.read_observations` reads them from files)."""
    hits: dict = {}
    obs: list[Obs] = []
    for src, text in texts:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        cols = set(reader.fieldnames or ())
        if not {"id", "system", "servers"} <= cols:
            continue
        for line, row in enumerate(reader, 2):
            rid = row.get("id", f"line {line}")
            system = (row.get("system") or "").strip()
            wl = (row.get("workload") or "zipf").strip()
            if wl != "zipf":
                continue
            n = _num(row, "servers", src, line)
            if n is None or n < 1 or n != int(n):
                raise InputError(f"expected a whole number of servers, got {row.get('servers')!r}",
                                 source=src, line=line, field="servers")
            n = int(n)
            cache = system == "farreach"
            x = _num(row, "normalized_x", src, line)
            if cache and n == 1 and x is not None:
                if x <= 1:
                    raise InputError(f"normalized_x {x} <= 1 at one server", source=src,
                                     line=line, field="normalized_x")
                hits.setdefault(round(1 - 1 / x, 6), []).append(rid)
            ch = _num(row, "cache_hit", src, line)
            if cache and ch is not None:
                if not 0 <= ch <= 1:
                    raise InputError(f"cache_hit {ch} is not a fraction", source=src,
                                     line=line, field="cache_hit")
                hits.setdefault(round(ch, 6), []).append(rid)
            lr = _list(row, "load_ratio", src, line)
            if lr is not None and len(lr) == n and n > 1 and sum(lr) > 0:
                s = np.asarray(lr) / sum(lr)
                obs.append(Obs("split", n, cache, tuple(float(v) for v in s), (rid,), SHARE_SIGMA,
                               "load_ratio"))
            stat = (row.get("wait_stat") or "").strip()
            wait, proc = _list(row, "wait_us", src, line), _list(row, "process_us", src, line)
            if stat == "per-server" and wait and proc:
                if len(wait) != n or len(proc) != n:
                    raise InputError(f"per-server lists must have {n} entries", source=src,
                                     line=line, field="wait_us")
                rate = 1.0 / (np.asarray(wait) + np.asarray(proc))
                obs.append(Obs("split", n, cache, tuple(float(v) for v in rate / rate.sum()), (rid,),
                               SHARE_SIGMA, "1/(wait+process) per worker"))
            mops = _num(row, "mops", src, line)
            if stat == "min" and wait and proc and mops and n > 1:
                s_max = 1.0 / (wait[0] + proc[0]) / mops     # us -> MOPS
                obs.append(Obs("bottleneck", n, cache, (s_max,), (rid,), 2 * SHARE_SIGMA,
                               "1/(min wait + min process) / throughput"))
    for h, rows in sorted(hits.items()):
        obs.insert(0, Obs("hit", 1, True, (h,), tuple(rows), HIT_SIGMA, "1 - 1/normalized_x"))
    return obs


def predict(obs: Obs, theta: float, items: float, *, partition: str = "range",
            cache_keys: int = 10_000, layout: str = "synthetic", pmf: str = "zipf",
            head: int = FIT_HEAD) -> tuple:
    """The model's value of an observation for a profile."""
    from .workload import RankSpec, _blocks, _summarize
    spec = RankSpec(pmf=pmf, theta=theta, items=int(round(items)), layout=layout,
                    insertorder="ordered", head=max(head, 2 * cache_keys))
    n = obs.servers
    s = _summarize(_blocks(spec, n, partition, 32768), n, cache_keys, 1.0, 1)
    if obs.kind == "hit":
        return (s["hit_ratio"],)
    c = s["shares"] if obs.cache else s["shares_nocache"]
    if obs.kind == "bottleneck":
        return (float(c.max()),)              # a share of all requests
    total = float(c.sum())
    if total <= 0.0:                          # the cache holds every key: no split to compare
        return tuple(np.full(len(c), np.nan))
    return tuple(c / total)                   # a share of the requests reaching servers


def _residuals(obs: list[Obs], theta, items, **kw) -> np.ndarray:
    out = []
    for o in obs:
        p = predict(o, theta, items, **kw)
        out.extend((np.asarray(p) - np.asarray(o.value)) / o.sigma)
    return np.asarray(out)


def fit(obs: list[Obs], *, theta: float = 0.99, fit_on: str = "all",
        lo: float = 4.0, hi: float = 10.0, **kw) -> FitResult:
    """Least squares in log10(items) over the chosen observations; the rest
    (and every ``bottleneck`` estimate) become out-of-sample checks."""
    kinds = {"all": ("hit", "split"), "hit": ("hit",), "split": ("split",)}
    if fit_on not in kinds:
        raise InputError(f"unknown --fit-on {fit_on!r}; one of all, hit, split", field="--fit-on")
    used = [o for o in obs if o.kind in kinds[fit_on]]
    if not used:
        raise InputError(f"no observations of kind {', '.join(kinds[fit_on])} in the runs given",
                         field="--runs")

    def cost(logn):
        # a key space the cache holds whole explains no split: never the best point
        c = float(np.sum(_residuals(used, theta, 10 ** logn, **kw) ** 2))
        return c if math.isfinite(c) else math.inf

    # coarse grid, then golden section around the best point
    grid = np.linspace(lo, hi, 25)
    costs = [cost(g) for g in grid]
    i = int(np.argmin(costs))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = cost(c), cost(d)
    while b - a > 1e-4:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = cost(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = cost(d)
    logn = (a + b) / 2
    items = float(10 ** logn)
    checks = [(o, predict(o, theta, items, **kw)) for o in obs]
    return FitResult(theta, items, fit_on, cost(logn), used, checks)


def profile_toml(res: FitResult, *, command: str, runs: list[str], cross: dict) -> str:
    """The fitted profile as TOML, each parameter with unit and source."""
    from .toml_text import toml_value
    rows = sorted({r for o in res.used for r in o.rows})
    lines = [
        "# The lab's workload, calibrated from the reference runs: which keys were popular",
        "# and where they lived. Separate from the machine profile. docs/workload.md section 5.",
        'kind = "workload-profile"',
        'name = "lab"',
        "description = " + toml_value(
            "Rank-ordered keys (key number = popularity rank - 1) with a zipf popularity over "
            f"{res.items:.3g} keys, in FarReach's synthetic key layout (the key number's low 16 "
            "bits are the range field), so the hottest keys fill the first range partition."),
        "fitted_by = " + toml_value(command),
        "",
        "[popularity]",
        'order = "rank"        # key number r - 1 has popularity rank r (1 = hottest)',
        'pmf = "zipf"          # p(r) = r^-theta / sum_{k<=items} k^-theta',
        "",
        "[popularity.theta]",
        f"value = {toml_value(res.theta)}",
        'unit = "1"',
        'source = "fixed: the zipf constant the runs state (data/README.md: zipf 0.99)"',
        "",
        "[popularity.items]",
        f"value = {toml_value(float(f'{res.items:.4g}'))}",
        'unit = "keys"',
        "source = " + toml_value(f"fitted ({res.fit_on} observations: rows {', '.join(rows)}) "
                                 f"by {command}"),
        "",
        "[layout]",
        'keys = "synthetic"    # FarReach synthetic keys: range field = key number mod 2^16',
        'insertorder = "ordered"',
        "",
        "[fit]",
        f"runs = {toml_value(runs)}",
        f"rows = {toml_value(rows)}",
        f"cost = {toml_value(round(res.cost, 4))}",
        f"hit_sigma = {toml_value(HIT_SIGMA)}",
        f"share_sigma = {toml_value(SHARE_SIGMA)}",
    ]
    for name, other in cross.items():
        lines += ["", f"[checks.{name}]",
                  f"items = {toml_value(float(f'{other.items:.4g}'))}",
                  "# observations NOT used by this fit, measured -> predicted"]
        for o, p in other.checks:
            if o in other.used:
                continue
            lines.append(f"{o.kind}_{o.servers}srv_{'cache' if o.cache else 'nocache'}_"
                         f"{'_'.join(o.rows[:1])} = {toml_value([round(v, 4) for v in o.value])}"
                         f"  # predicted {toml_value([round(float(v), 4) for v in p])}")
    return "\n".join(lines) + "\n"
