"""The long checks of issue 15, run on demand (minutes to hours).

``python -m tests.robustness.soak scenarios --n 10000 --seed 1 [--jobs 2]``
    Random valid scenarios through the in-process API
    (:func:`model.solvers.predict_many`, in batches, over ``--jobs``
    processes; the same scenarios for any number), each checked against
    the laws of :mod:`tests.robustness.laws`. Prints one line per batch and
    the counts at the end: solved, law violations, exceptions, and scenarios
    slower than ``--limit`` seconds (left unsolved, listed: a speed issue,
    not a crash).

``python -m tests.robustness.soak plan --rows 300 --seed 1 --out plan.csv``
    A seeded random ``farreach_runs`` plan over the declared range of its
    columns, for ``python -m sim predict --runs plan.csv --out out.csv``;
    ``... soak check --out out.csv`` then counts non-finite predictions.

``python -m tests.robustness.soak simulator --n 500 --seed 1 --seconds 0.2``
    Random valid scenarios through the fast simulator (short runs), each
    checked against the laws a simulated window obeys (``sampled``: the
    utilisation law and the bounds to sampling error); counts as above. The
    kernel's event rings are sized from the scenario, so an overflow there
    (a sizing bug) shows up as an exception.

``--space fast`` (default) bounds the keys where the analytic solver is
still slow (:data:`tests.robustness.space.FAST`); ``--space full`` samples
every key over its whole declared range.
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import signal
import sys
import time
import traceback

import numpy as np

from runio.farreach_kinds import COLUMN_OF
from model.profile import Profile
from model.rack import compile_rack
from model.solvers import predict_many

from .laws import violations
from .space import DIMENSIONS, FAST, FULL, scenario_from_unit
from runio.inputs import load_profile


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


def _solve(scs, profile, limit: float):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(limit)))
    try:
        return predict_many(scs, profile)
    finally:
        signal.alarm(0)


def soak_scenarios(n: int, seed: int, space: dict, batch: int, limit: float,
                   jobs: int = 1) -> int:
    """``n`` random scenarios (the same ones for any ``jobs``: all are drawn
    first, in order) solved ``batch`` at a time, by ``jobs`` processes."""
    units = np.random.default_rng(seed).random((n, DIMENSIONS))
    chunks = [(units[start:start + batch], space, limit) for start in range(0, n, batch)]
    counts = {"solved": 0, "violations": 0, "exceptions": 0, "slow": 0}
    t0 = time.time()
    done = 0
    if jobs > 1:
        import multiprocessing as mp
        import os
        from concurrent.futures import ProcessPoolExecutor
        # one BLAS thread per process: OpenBLAS's own threads would wait for
        # the cores the other processes hold (docs/model.md, "Large populations")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        pool = ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"))
        results = pool.map(_chunk, chunks)
    else:
        pool, results = None, map(_chunk, chunks)
    try:
        for got, lines in results:
            for line in lines:
                print(line, flush=True)
            for k, v in got.items():
                counts[k] += v
            done += got["solved"] + got["exceptions"] + got["slow"]
            print(f"{done}/{n} in {time.time() - t0:.0f} s: {counts}", flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    print(f"DONE {n} scenarios (seed {seed}) in {time.time() - t0:.0f} s: {counts}")
    return 1 if counts["violations"] or counts["exceptions"] else 0


@functools.lru_cache(maxsize=1)
def _profile() -> Profile:
    """The profile, loaded once per process (not once per batch)."""
    return load_profile("tofino-testbed")


def _chunk(job) -> tuple[dict, list[str]]:
    """One batch of scenarios: their counts and the lines to print."""
    units, space, limit = job
    profile = _profile()
    counts = {"solved": 0, "violations": 0, "exceptions": 0, "slow": 0}
    lines: list[str] = []
    scs = [scenario_from_unit(u, space) for u in units]
    try:
        groups = [(scs, _solve(scs, profile, limit * len(scs)))]
    except Exception:                   # noqa: BLE001 -- slow or failing: find which
        groups = [g for sc in scs if (g := _one(sc, profile, limit, counts, lines))]
    for group, preds in groups:
        for sc, pred in zip(group, preds):
            bad = violations(pred, compile_rack(sc, profile))
            counts["solved"] += 1
            if bad:
                counts["violations"] += 1
                lines.append(f"VIOLATION: {_brief(sc)}: {'; '.join(bad)}")
    return counts, lines


def _one(sc, profile, limit: float, counts: dict, lines: list):
    """One scenario alone: ([sc], [prediction]), or None (counted as slow or failing)."""
    try:
        return [sc], _solve([sc], profile, limit)
    except _Slow:
        counts["slow"] += 1
        lines.append(f"SLOW (> {limit:g} s): {_brief(sc)}")
    except Exception:                       # noqa: BLE001 -- counted and shown
        counts["exceptions"] += 1
        lines.append(f"EXCEPTION: {_brief(sc)}\n{traceback.format_exc()}")
    return None


def _brief(sc) -> str:
    d = sc.to_dict()
    return " ".join(f"{sec}.{k}={v}" for sec, vals in d.items() if isinstance(vals, dict)
                    for k, v in vals.items())


# ---------------------------------------------------------------- the simulator
def soak_simulator(n: int, seed: int, space: dict, seconds: float) -> int:
    """``n`` random scenarios, each simulated for ``seconds`` by the fast engine
    (seed 1) and checked against the sampled laws."""
    from sim.run import FastSimulator
    units = np.random.default_rng(seed).random((n, DIMENSIONS))
    profile = _profile()
    counts = {"solved": 0, "violations": 0, "exceptions": 0}
    t0 = time.time()
    for k, u in enumerate(units):
        sc = scenario_from_unit(u, space)
        try:
            spec = compile_rack(sc, profile)
            bad = violations(FastSimulator(seconds, 1).solve(spec), spec, sampled=True)
            counts["solved"] += 1
            if bad:
                counts["violations"] += 1
                print(f"VIOLATION: {_brief(sc)}: {'; '.join(bad)}", flush=True)
        except Exception:                   # noqa: BLE001 -- counted and shown
            counts["exceptions"] += 1
            print(f"EXCEPTION: {_brief(sc)}\n{traceback.format_exc()}", flush=True)
        if (k + 1) % 50 == 0 or k + 1 == n:
            print(f"{k + 1}/{n} in {time.time() - t0:.0f} s: {counts}", flush=True)
    print(f"DONE {n} scenarios (seed {seed}, {seconds:g} simulated s each) in "
          f"{time.time() - t0:.0f} s: {counts}")
    return 1 if counts["violations"] or counts["exceptions"] else 0


# ---------------------------------------------------------------- a farreach_runs plan
PLAN_COLUMNS = ("id", "block", "setting", "system", "servers", "clients", "timeout_ms",
                "queries_m", "workload", "memtable_mb", "flushnum", "maxnum", "wal",
                "wal_bytes_per_sync_mb", "seq_check", "affinity", "rcvbuf", "db", "mops",
                "wait_us", "process_us", "wait_stat", "send_us", "pktloss", "false_pos",
                "runtime_x", "normalized_x", "note")


def plan_rows(rows: int, seed: int, space: dict) -> list[dict]:
    """``farreach_runs`` rows whose configuration columns come from random scenarios
    (each column over the range of the scenario key it sets, :data:`COLUMN_OF`)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(rows):
        sc = scenario_from_unit(rng.random(DIMENSIONS), space)
        cache, mode = sc.switch.cache, sc.switch.mode
        system = ("netcache" if mode == "read-only" else "farreach") if cache else \
            ("nocache" if rng.random() < 0.5 else "farreach-nocache")
        r = {
            "id": f"P{i + 1:04d}", "block": "random", "setting": f"seed {seed}",
            "system": system, "servers": sc.servers.count, "clients": sc.clients.threads,
            "timeout_ms": f"{sc.clients.timeout_ms:.6g}", "queries_m": f"{sc.workload.queries_m:.6g}",
            "workload": {"zipf": "zipf", "uniform": "uniform",
                         "sequential": "uniform-seq"}[sc.workload.distribution],
            "memtable_mb": f"{sc.storage.memtable_mb:.6g}", "flushnum": sc.storage.flushnum,
            "maxnum": sc.storage.maxnum,
            "wal": ("flush" if rng.random() < 0.5 else "on") if sc.storage.wal else "off",
            "wal_bytes_per_sync_mb": f"{sc.storage.wal_bytes_per_sync_mb:.6g}",
            "seq_check": sc.servers.seq_check, "affinity": int(sc.servers.pinned),
            "rcvbuf": "default" if rng.random() < 0.5 else "large", "db": sc.storage.db,
            "wait_stat": ["avg", "min", "max", "per-server"][int(rng.integers(4))],
        }
        assert set(r) - {"id", "block", "setting", "wait_stat"} <= set(COLUMN_OF.values())
        out.append(r)
    return out


def check_output(path: str) -> int:
    """Every prediction of a batch output is a finite number (per-server lists
    element by element); an interval column may be empty (no interval for that
    value: a list, a zero, a value the profile's uncertainty does not move)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    from runio.row_prediction import NOTE
    if not rows:
        print(f"{path}: no rows predicted")
        return 1
    pred_cols = [c for c in rows[0] if c.startswith("pred_") and c != NOTE]
    jumps = sum(1 for r in rows if r.get(NOTE))
    bad, no_interval, cells = [], 0, 0
    for r in rows:
        for c in pred_cols:
            if c.endswith(("_lo", "_hi")) and r[c] == "":
                no_interval += 1
                continue
            cells += 1
            for part in r[c].split("|"):
                try:
                    ok = math.isfinite(float(part))
                except ValueError:
                    ok = False
                if not ok:
                    bad.append((r["id"], c, r[c]))
                    break
    print(f"{len(rows)} rows, {len(pred_cols)} prediction columns: {cells} predicted cells, "
          f"{len(bad)} not finite {bad[:20]}; {no_interval} interval cells empty (no interval); "
          f"{jumps} rows at a jump of the load balance ({NOTE})")
    return 1 if bad else 0


#: the scenario spaces by their --space name
SPACES = {"fast": FAST, "full": FULL}


def _positive(text: str) -> float:
    """A --seconds value: a number above 0 (argparse reports anything else, exit 2)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"{text!r}: simulated seconds must be above 0")
    return v


def _count(text: str) -> int:
    """A --n value: a whole number of scenarios, at least 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1 scenario")
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.robustness.soak")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scenarios")
    s.add_argument("--n", type=int, default=10_000)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--batch", type=int, default=20)
    s.add_argument("--limit", type=float, default=60.0, help="seconds per scenario")
    s.add_argument("--space", choices=tuple(SPACES), default="fast")
    s.add_argument("--jobs", type=int, default=1, help="processes (the same scenarios for any)")
    p = sub.add_parser("plan")
    p.add_argument("--rows", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--space", choices=tuple(SPACES), default="fast")
    m = sub.add_parser("simulator")
    m.add_argument("--n", type=_count, default=500)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--seconds", type=_positive, default=0.2, help="simulated seconds per scenario")
    m.add_argument("--space", choices=tuple(SPACES), default="fast")
    c = sub.add_parser("check")
    c.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "scenarios":
        return soak_scenarios(args.n, args.seed, SPACES[args.space],
                              args.batch, args.limit, args.jobs)
    if args.cmd == "simulator":
        return soak_simulator(args.n, args.seed, SPACES[args.space],
                              args.seconds)
    if args.cmd == "plan":
        rows = plan_rows(args.rows, args.seed, SPACES[args.space])
        with open(args.out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=PLAN_COLUMNS)
            w.writeheader()
            w.writerows(rows)
        print(f"{len(rows)} rows -> {args.out}")
        return 0
    return check_output(args.out)


if __name__ == "__main__":
    sys.exit(main())
