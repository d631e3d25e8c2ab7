"""Do the analytic solver and the simulator tell one story? (issue 43)

``python -m sim.agreement --n 500 --seed 1 [--seconds S] [--jobs N]
[--space full|fast] [--csv out.csv] [--limit 10]``

Draws ``--n`` random valid scenarios over the declared scenario space
(:func:`model.scenario_space.random_scenarios`, the same ones for the same
seed), and for each:

* solves it analytically (:func:`model.solvers.analytic.solve`) to plan
  the simulation, simulates it on the fast engine (:func:`simulate_for_check`)
  and solves analytically the run the simulation covered (the same rack over
  the queries it completed: :func:`same_run`), each engine timed;
* checks both answers: finite numbers, and Little's law for the closed loop,
  ``X R = N`` (relative 1e-6, as tests/robustness/laws.py states it: both
  solvers give the latency of the loop by Little's law, the simulator over
  its statistics window);
* compares throughputs: they *agree* when ``max / min <= 1.10``; where they
  do not, the disagreement is *named* when the analytic prediction carries
  a caveat (:mod:`model.regimes`, ``details["caveats"]``: a regime where the
  mean-value form is known to be off, pointing to ``--engine sim``), else
  *unnamed*.

It prints one line per scenario with the counts so far, and a summary.
Exit 0 only when no answer is non-finite, none breaks Little's law, none
takes longer than ``--limit`` seconds (either engine), and at most 5 % of
the scenarios disagree unnamed; else 1.

How long each simulation runs and how it is bounded in time is
:mod:`sim.agreement_simulation`'s; the checks on the two answers are
:mod:`sim.agreement_checks`'s. This module runs one scenario
(:func:`check_one`), the sample (:func:`run`) and the command.
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("sim.agreement:main")

import contextlib
import csv
import functools
import math
import os
import time
from typing import Any

import numpy as np

from model.errors import InputError
from model.prediction import Prediction
from model.profile import Profile
from model.rack import RackSpec, compile_rack
from model.scenario_space import DIMENSIONS, FAST, FULL, scenario_from_unit
from runio.inputs import load_profile

from .agreement_checks import AGREE, agree, caveat_names, inconclusive, little, nonfinite
from .agreement_simulation import (LIMIT_S, SIM_WALL_S, SimInfo, plan_seconds, same_run,
                                   simulate_bounded, simulate_for_check)

__all__ = ["run", "check_one", "passed", "summary", "main", "SimInfo", "plan_seconds",
           "same_run", "simulate_for_check", "simulate_bounded", "inconclusive", "nonfinite", "little",
           "agree", "caveat_names"]

#: the share of scenarios that may disagree without a named caveat
UNNAMED_SHARE = 0.05
#: seconds kept back from the limit for the fork and the answer's way back
HARD_MARGIN_S = 0.3

SPACES = {"fast": FAST, "full": FULL}


# ---------------------------------------------------------------- one scenario
@functools.lru_cache(maxsize=1)
def _profile() -> Profile:
    return load_profile("tofino-testbed")


def _flat(sc) -> dict[str, Any]:
    return {f"{sec}.{k}": v for sec, vals in sc.to_dict().items() if isinstance(vals, dict)
            for k, v in vals.items()}


def _warm() -> None:
    """Compile (or load) both engines before anything is timed."""
    from model.scenario import Scenario
    from model.solvers.analytic import solve
    spec = compile_rack(Scenario.default().updated({"clients.threads": 4}), _profile())
    a = solve(spec)
    simulate_for_check(spec, a, seconds=0.01)


def check_one(job) -> dict[str, Any]:
    """One scenario (``(index, unit vector, bounds, seconds, seed)``): both
    engines, the checks, and a row of figures."""
    idx, u, bounds, seconds, seed, limit, wall_s = job
    from model.solvers.analytic import solve
    _warm_once()
    sc = scenario_from_unit(u, bounds)
    spec = compile_rack(sc, _profile())
    N = spec.clients.threads
    t = time.perf_counter()
    a = solve(spec)                 # the scenario's run: what the simulation plans from
    ta = time.perf_counter() - t
    t = time.perf_counter()
    row: dict[str, Any] = {"index": idx}
    base = {"caveats": ";".join(caveat_names(a)), "x_analytic": a.throughput_mops,
            "x_sim": math.nan, "ratio": math.nan, "t_analytic_s": ta,
            "slow": ta > limit, "nonfinite": "; ".join(nonfinite(a)),
            "law": "; ".join(little(a, N)), "sim_s": 0.0, "sim_rel_se": math.nan,
            "inconclusive": "", "servers": spec.servers, "threads": N}
    try:
        got = simulate_bounded(spec, a, seed=seed, seconds=seconds, wall_s=wall_s,
                               hard_s=max(limit - ta - HARD_MARGIN_S, 0.5))
    except InputError as exc:
        # the simulator refuses a rack too big for this machine's memory
        # (sim.fast.check_memory): nothing to compare with
        row.update(base)
        row.update({"outcome": "refused", "t_sim_s": time.perf_counter() - t,
                    "refused": str(exc)})
        row.update(_flat(sc))
        return row
    if got is None:
        # killed at the wall limit: one chunk of this rack takes longer than
        # the budget, so no meaningful horizon can be simulated here
        row.update(base)
        row.update({"outcome": "too-slow", "t_sim_s": time.perf_counter() - t,
                    "too_slow": f"{spec.servers:,} workers on {spec.placement.machines:,} "
                                f"machines, {N:,} client threads: the simulation did not "
                                f"finish within {limit:g} s"})
        row.update(_flat(sc))
        return row
    s, info = got
    ts = time.perf_counter() - t
    if "no_goodput" not in s.details:
        # the analytic answer for the run the simulation covered
        t = time.perf_counter()
        a = solve(same_run(spec, info))
        ta = time.perf_counter() - t
    xa, xs = a.throughput_mops, s.throughput_mops
    bad_a, bad_s = nonfinite(a), nonfinite(s)
    law_a, law_s = little(a, N), little(s, N)
    caveats = caveat_names(a)
    if not agree(xa, xs):
        outcome = "named" if caveats else "unnamed"
    else:
        outcome = "agree"
    why = inconclusive(spec, a, s, info)
    if why:
        outcome = "inconclusive"
    ad, sd = a.details, s.details
    row.update({
        "outcome": outcome, "caveats": ";".join(caveats),
        "x_analytic": xa, "x_sim": xs,
        "ratio": xa / xs if xs > 0 else (1.0 if xa == 0 else math.inf),
        "t_analytic_s": ta, "t_sim_s": ts, "slow": ta > limit or ts > limit,
        "nonfinite": "; ".join([f"analytic {m}" for m in bad_a] + [f"sim {m}" for m in bad_s]),
        "law": "; ".join([f"analytic {m}" for m in law_a] + [f"sim {m}" for m in law_s]),
        "sim_planned_s": info.planned_s, "sim_s": info.seconds, "sim_window_s": info.window_s,
        "sim_rel_se": info.rel_se, "sim_capped": info.capped, "sim_extended": info.extended,
        "inconclusive": why, "servers": spec.servers, "threads": N,
        "sim_requests": sd.get("requests", 0),
        "a_latency_us": a.client.latency_us, "s_latency_us": s.client.latency_us,
        "s_latency_completed_us": sd.get("latency_completed_us", math.nan),
        "a_lost_per_req": _per_req(a, spec), "s_lost_per_req": _per_req(s, spec),
        "a_resends_per_req": _per_req(a, spec, "false_pos"),
        "s_resends_per_req": _per_req(s, spec, "false_pos"),
        "a_timeout_share": ad.get("timeout_delay_us_per_request", 0.0) * xa / N if N else 0.0,
        "a_util_max": max((x.utilization for x in a.servers), default=0.0),
        "s_util_max": max((x.utilization for x in s.servers), default=0.0),
        "a_client_util": ad.get("client_cores_utilization", 0.0),
        "s_client_util": sd.get("client_cores_utilization", 0.0),
        "a_stall": a.stall_fraction, "s_stall": s.stall_fraction,
        "a_bottleneck": a.bottleneck.kind, "s_bottleneck": s.bottleneck.kind,
        "a_running_fraction": ad.get("running_fraction", 1.0),
        "a_jump": ad.get("jump", False), "a_saturated": ad.get("saturated", False),
        "hit_ratio": spec.placement.hit_ratio, "buffer_pkts": spec.network.buffer_pkts,
        "timeout_us": spec.clients.timeout_us, "client_cores": spec.clients.cores,
        "service_cores": spec.service.cores,
    })
    row.update(_flat(sc))
    return row


def _per_req(p: Prediction, spec: RackSpec, what: str = "pktloss") -> float:
    """Lost (``pktloss``) or resent (``false_pos``) packets per completed request."""
    if p.engine == "sim":
        q = p.details.get("requests")
        raw = p.details.get("pktloss_sim" if what == "pktloss" else "false_pos_sim", 0.0)
        return raw / q if q else math.nan
    return getattr(p, what) / spec.queries if spec.queries else math.nan


_WARMED = False


def _warm_once() -> None:
    global _WARMED
    if not _WARMED:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _warm()
        _WARMED = True


# ---------------------------------------------------------------- the command
COUNTS = ("nonfinite", "law", "slow", "agree", "named", "unnamed", "inconclusive",
          "too-slow", "refused")


def _tally(counts: dict, named_by: dict, row: dict) -> None:
    counts["nonfinite"] += bool(row["nonfinite"])
    counts["law"] += bool(row["law"])
    counts["slow"] += bool(row["slow"])
    counts[row["outcome"]] += 1
    if row["outcome"] == "named":
        for c in row["caveats"].split(";"):
            named_by[c] = named_by.get(c, 0) + 1


def _line(k: int, n: int, row: dict, counts: dict) -> str:
    xa, xs = row["x_analytic"], row["x_sim"]
    r = row["ratio"]
    diff = f"{100 * (r - 1):+.1f}%" if math.isfinite(r) else ("n/a" if math.isnan(r) else "inf")
    flag = "".join([" NONFINITE" if row["nonfinite"] else "", " LAW" if row["law"] else "",
                    " SLOW" if row["slow"] else ""])
    cav = f" [{row['caveats']}]" if row["caveats"] else ""
    so_far = " ".join(f"{c}={counts[c]}" for c in COUNTS)
    if row.get("inconclusive"):
        flag += f" ({row['inconclusive'].split(':')[0]})"
    return (f"{k:4d}/{n} #{row['index']:<4d} {row['outcome']:7s} analytic {xa:.4g} sim {xs:.4g} "
            f"MOPS ({diff}; sim {row['sim_s']:.3g} s, se {100 * row['sim_rel_se']:.1f}%) "
            f"t {row['t_analytic_s']:.2f}/{row['t_sim_s']:.2f} s{flag}{cav} | {so_far}")


def run(n: int, seed: int, space: str = "full", seconds: float | None = None, jobs: int = 1,
        csv_path: str | None = None, limit: float = LIMIT_S, sim_seed: int = 1,
        wall_s: float = SIM_WALL_S, quiet: bool = False) -> tuple[dict, dict, list[dict]]:
    """Check ``n`` random scenarios; (counts, disagreements named by caveat, rows)."""
    units = np.random.default_rng(seed).random((n, DIMENSIONS))
    bounds = SPACES[space]
    jobs_in = [(i, units[i], bounds, seconds, sim_seed, limit, wall_s) for i in range(n)]
    counts = {c: 0 for c in COUNTS}
    named_by: dict[str, int] = {}
    rows: list[dict] = []
    t0 = time.time()
    with contextlib.ExitStack() as stack:
        if jobs > 1:
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            os.environ.setdefault("NUMBA_NUM_THREADS", "1")
            from runio import install
            from runio.workers import worker_pool
            pool = stack.enter_context(worker_pool(jobs, method="spawn", initializer=install))
            results = pool.map(check_one, jobs_in)
        else:
            results = map(check_one, jobs_in)
        for k, row in enumerate(results, 1):
            rows.append(row)
            _tally(counts, named_by, row)
            if not quiet:
                print(_line(k, n, row, counts), flush=True)
    if csv_path:
        cols: list[str] = []
        for r in rows:
            cols += [c for c in r if c not in cols]
        from runio.safe_io import atomic_write
        with atomic_write(csv_path) as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    if not quiet:
        print(summary(n, seed, space, counts, named_by, time.time() - t0, rows))
        for r in rows:
            if r["outcome"] in ("inconclusive", "too-slow"):
                print(f"  {r['outcome'].upper()} #{r['index']}: analytic {r['x_analytic']:.4g} "
                      f"sim {r['x_sim']:.4g} MOPS; {r.get('inconclusive') or r.get('too_slow')}")
        for r in rows:
            if r["outcome"] == "unnamed":
                print(f"  UNNAMED #{r['index']}: analytic {r['x_analytic']:.4g} sim "
                      f"{r['x_sim']:.4g} MOPS; " + " ".join(
                          f"{k}={v}" for k, v in r.items() if "." in k))
    return counts, named_by, rows


def passed(counts: dict, n: int) -> bool:
    return (counts["nonfinite"] == 0 and counts["law"] == 0 and counts["slow"] == 0
            and counts["unnamed"] <= UNNAMED_SHARE * n)


def rule_table(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per caveat: the disagreements it names, and the agreeing scenarios it
    flags anyway (false flags)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        for c in filter(None, (r.get("caveats") or "").split(";")):
            e = out.setdefault(c, {"named": 0, "false_flags": 0, "other": 0})
            key = {"named": "named", "agree": "false_flags"}.get(r["outcome"], "other")
            e[key] += 1
    return out


def reasons(rows: list[dict]) -> dict[str, int]:
    """Inconclusive scenarios per reason (the word before the colon)."""
    out: dict[str, int] = {}
    for r in rows:
        if r["outcome"] == "inconclusive":
            k = str(r.get("inconclusive", "")).split(":")[0]
            out[k] = out.get(k, 0) + 1
    return out


def summary(n: int, seed: int, space: str, counts: dict, named_by: dict, wall: float,
            rows: list[dict] | None = None) -> str:
    pct = lambda c: f"{counts[c]} ({100 * counts[c] / max(n, 1):.1f} %)"  # noqa: E731
    named = ", ".join(f"{k} {v}" for k, v in sorted(named_by.items(), key=lambda kv: -kv[1]))
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons(rows or []).items(),
                                                  key=lambda kv: -kv[1]))
    table = rule_table(rows or [])
    lines = [
        f"DONE {n} scenarios (seed {seed}, space {space}) in {wall:.0f} s",
        f"  non-finite answers        {counts['nonfinite']}",
        f"  Little's law violations   {counts['law']}",
        f"  over {LIMIT_S:g} s (either engine) {counts['slow']}",
        f"  agree within {100 * (AGREE - 1):.0f} %          {pct('agree')}",
        f"  disagree, named           {pct('named')}" + (f": {named}" if named else ""),
        f"  disagree, unnamed         {pct('unnamed')} (at most {100 * UNNAMED_SHARE:.0f} % allowed)",
        f"  inconclusive (simulation cannot measure it) {pct('inconclusive')}"
        + (f": {why}" if why else ""),
        f"  too slow to simulate (killed at {LIMIT_S:g} s) {counts['too-slow']}",
        f"  simulator refused (memory) {counts['refused']} (analytic answer checked only)",
    ]
    agreeing = counts["agree"]
    for name, e in sorted(table.items()):
        lines.append(f"  rule {name:15s} names {e['named']}, flags {e['false_flags']} of "
                     f"{agreeing} agreeing ({100 * e['false_flags'] / max(agreeing, 1):.1f} %), "
                     f"on {e['other']} inconclusive/too slow/refused")
    lines.append("PASS" if passed(counts, n) else "FAIL")
    return "\n".join(lines)


def main(argv=None) -> int:
    from runio.exits import ArgumentParser, at_least, run_command
    from runio.safe_io import output_path
    ap = ArgumentParser(prog="python -m sim.agreement", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=at_least(1, int), default=500, help="random scenarios")
    ap.add_argument("--seed", type=at_least(0, int), default=1, help="seed of the scenario sample")
    ap.add_argument("--seconds", type=at_least(0, exclusive=True), default=None,
                    help="simulated seconds per scenario (default: planned per scenario)")
    ap.add_argument("--jobs", type=at_least(1, int), default=1, help="processes")
    ap.add_argument("--space", choices=tuple(SPACES), default="full")
    ap.add_argument("--csv", default=None, help="write one row per scenario")
    ap.add_argument("--limit", type=at_least(0, exclusive=True), default=LIMIT_S,
                    help="seconds per engine")
    ap.add_argument("--sim-wall", type=at_least(0, exclusive=True), default=SIM_WALL_S,
                    help="wall seconds a simulation plans for")
    args = ap.parse_args(argv)

    def action() -> int:
        if args.csv is not None:          # checked before the first scenario
            output_path(args.csv, "--csv", types=(".csv",))
        counts, _named, _rows = run(args.n, args.seed, args.space, args.seconds, args.jobs,
                                    args.csv, args.limit, wall_s=args.sim_wall)
        return 0 if passed(counts, args.n) else 1

    return run_command(action)
