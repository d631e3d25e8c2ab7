"""The other reference systems' rows through their event form, beside the
analytic form (:mod:`model.systems`): both read the same profile and the same
per-request costs, so a difference is the mean-value solution's, and each is
named in docs/systems.md ("Both engines").

    python -m sim.systems_rows --runs data/morphling_go.csv [--seed 1] [--out cmp.csv]

prints, for every row and measured column, the measurement, the analytic
prediction, the simulated one and their difference (simulated / analytic - 1).
:func:`simulate_row` gives one row's ``sim_<column>`` values.
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("sim.systems_rows:main")

import math
import statistics
from typing import Any, Callable, Mapping

import numpy as np

from model.errors import InputError
from model.profile import Profile
from model.rows import cell, choice, number
from model.systems import morphling, runtimes, threads
from model.systems.base import measured

from .systems_sim import Station, closed_loop, limited_bursts, priority_pool, timer_server

Row = Mapping[str, str]
LOOP_REQUESTS = 20000       # requests per closed-loop row (a fifth of them warm-up)
TIMER_REPS = 12             # runs per thread/coroutine row
PRIORITY_REPS = 40          # phase draws per priority row


# --------------------------------------------------------------------------
# Morphling
# --------------------------------------------------------------------------

def _go_legs(mode: str, machines: int, p: Profile) -> tuple[Callable, list[Station]]:
    """A Go read's path: its client machine's CPU, the hops (each paying the
    receiving node's wake-up when that node saw no message for ``spin_us``),
    the server pools of :func:`model.systems.morphling._go_path`, the mode's
    delay. Service times are constant (``loop_scv`` = 0); the hops and the
    mode's delay are exponential with their means (a network's delays vary;
    with constant delays too the clients fall into lock-step and never
    queue). Raft: the leader's pool, then one follower's pool (the other
    follower's share is left as work the read does not wait for: the quorum
    needs one ack)."""
    path = morphling._go_path(mode, machines, p)
    demands, cores = path[1][machines:], path[2][machines:]
    stations = [Station(f"client machine {i + 1}", int(path[2][i])) for i in range(machines)]
    stations += [Station(n, int(c)) for n, c in zip(path[3][machines:], cores)]
    hop, wake, spin = p["hop_us"], p["wake_us"], p["spin_us"]
    last = [-math.inf] * (machines + len(demands))      # last message at each node
    extra = {"morphling": p["morphling_extra_us"], "raft": p["quorum_us"]}.get(mode, 0.0)
    cpu = p["client_cpu_us"]
    nserv = len(demands)

    def legs(client: int, rng: np.random.Generator) -> list:
        def to(node: int) -> Callable[[float], float]:
            def leg(t: float) -> float:
                d = float(rng.exponential(hop)) + (wake if t - last[node] > spin else 0.0)
                last[node] = t + d
                return d
            return leg

        m = client % machines
        extra_d = float(rng.exponential(extra)) if extra > 0 else 0.0
        home = [("st", m, cpu)]
        if mode == "raft":
            f = machines + 1 + int(rng.integers(nserv - 1))
            g = machines + 1 + (f - machines) % (nserv - 1)   # the other follower
            return home + [to(machines), ("st", machines, demands[0]), to(f),
                           ("st", f, demands[f - machines]), ("bg", g, demands[g - machines]),
                           extra_d, to(machines), to(m)]
        k = machines + int(rng.integers(nserv))
        return home + [to(k), ("st", k, demands[k - machines] * nserv), extra_d, to(m)]

    return legs, stations


def _go_sim(mode: str, clients: int, machines: int, p: Profile, rng) -> tuple[float, float]:
    legs, stations = _go_legs(mode, machines, p)
    r = closed_loop(clients, legs, stations, LOOP_REQUESTS, rng)
    return r.throughput * 1e6, r.latency_mean


def _go_row(row: Row, p: Profile, rng) -> dict[str, float]:
    mode = choice(row, "read_mode", morphling.GO_MODES)
    m = int(number(row, "client_machines", 2, integer=True, minimum=1))
    x, lat = _go_sim(mode, int(number(row, "conns_per_client", integer=True, minimum=1)) * m,
                     m, p, rng)
    return {"sim_ops": x, "sim_latency_ns": lat * 1e3}


def _go_control_row(row: Row, p: Profile, rng) -> dict[str, float]:
    mode = choice(row, "read_mode", morphling.GO_MODES)
    n = number(row, "clients_by_littles_law", 0.0, minimum=0)
    clients = int(round(n)) if n and n >= 1 else int(round(2 * number(row, "step", minimum=1)))
    x, lat = _go_sim(mode, clients, 2, p, rng)
    return {"sim_ops": x, "sim_latency_us": lat}


def _c_row(row: Row, p: Profile, rng) -> dict[str, float]:
    """Morphling C: exponential service at the serving thread, as exact MVA has it."""
    mode = morphling.C_MODES[choice(row, "read_mode", morphling.C_MODES)]
    n = int(number(row, "client_threads", integer=True, minimum=1))
    r = 1 if mode == "unreplicated" else max(1, int(round(p["guidance_replicas"])))
    z = p["net_us"] if mode == "unreplicated" else p["guidance_net_us"]
    s = p["server_us"]

    def legs(client: int, g: np.random.Generator) -> list:
        return [z, ("st", int(g.integers(r)), float(g.exponential(s)))]

    res = closed_loop(n, legs, [Station(f"replica {i + 1}", 1) for i in range(r)],
                      LOOP_REQUESTS, rng)
    return {"sim_kops": res.throughput * 1e3}


# --------------------------------------------------------------------------
# async runtimes
# --------------------------------------------------------------------------

def _runtime_loop(rt: str, cores: int, conns: int, nb: float, p: Profile, rng):
    """Closed loop: the client + network delay, then the c-core pool with
    exponential service (the exact MVA the analytic form solves)."""
    s = runtimes.service_us(rt, cores, conns, nb, p)

    def legs(client: int, g: np.random.Generator) -> list:
        return [p["think_us"], ("st", 0, float(g.exponential(s)))]

    return closed_loop(conns, legs, [Station("server", cores)],
                       max(LOOP_REQUESTS, 10 * conns), rng)


def _curves_row(row: Row, p: Profile, rng) -> dict[str, float]:
    rt, c, nb = runtimes._common(row)
    n = number(row, "connections", 0.0, integer=True, minimum=0) or \
        number(row, "client_cores", integer=True, minimum=1) * \
        number(row, "conns_per_core", integer=True, minimum=1)
    r = _runtime_loop(rt, c, int(n), nb, p, rng)
    return {"sim_qps": r.throughput * 1e6, "sim_latency_us": r.latency_mean,
            "sim_clients_by_littles_law": r.throughput * r.latency_mean}


def _best_row(row: Row, p: Profile, rng) -> dict[str, float]:
    """The closed loop simulated at the analytic form's best connection count."""
    rt, c, nb = runtimes._common(row)
    cc = int(number(row, "client_cores", 4.0 * c, integer=True, minimum=1))
    _, k = runtimes.best(rt, c, cc, nb, p)
    r = _runtime_loop(rt, c, int(round(cc * k)), nb, p, rng)
    return {"sim_best_qps": r.throughput * 1e6}


def _limited_row(row: Row, p: Profile, rng) -> dict[str, float]:
    """Each client core's rate limiter releases its connections' requests in
    one burst a period, at a phase of its own; the server's c cores take them
    first come first served, each for the light-load CPU per request."""
    rt, c, nb = runtimes._common(row)
    cc = int(number(row, "client_cores", integer=True, minimum=1))
    per = int(number(row, "conns_per_core", integer=True, minimum=1))
    limit = number(row, "qps_limit_per_core", minimum=1e-9)
    a = runtimes.limited(rt, c, per * cc, limit * cc, nb, p)
    cpu = runtimes.cpu_per_request_us(rt, c, per * cc, p)
    period = per / limit * 1e6
    if cc * per * cpu >= c * period:
        return {"sim_qps": a["qps"], "sim_latency_us": math.nan}
    w, _ = limited_bursts(cc, per, period, cpu, c, 6, 20, rng)
    return {"sim_qps": a["qps"], "sim_latency_us": p["limited_base_us"] + w}


# --------------------------------------------------------------------------
# threads vs coroutines, priorities
# --------------------------------------------------------------------------

def _tc_row(row: Row, p: Profile, rng) -> dict[str, float]:
    model = choice(row, "model", threads.MODELS)
    n = int(number(row, "connections", integer=True, minimum=1))
    m = number(row, "matrix_size", minimum=0)
    interval_ms = number(row, "send_interval_ms", minimum=1e-3)
    run_ms = number(row, "run_ms", 5000.0, minimum=0)
    prios = cell(row, "prio_recv_server_send")
    interval = interval_ms * 1e3
    thread = model == "thread"
    n_run = threads.runnable_requests(n, interval, p) if thread else n
    w = threads.burst_work_us(model, n_run, p)
    solo = p["client_us"] + p["matrix_ns"] * m ** 3 / 1000.0
    solo += p["solo_delta_us"] if thread else p["level_switch_us"] * threads.level_changes(prios)
    jitter = threads.unloaded_jitter(interval_ms, p)
    lat: list[tuple[int, float, float]] = []
    for _ in range(TIMER_REPS):
        r = timer_server(n, interval, p["warmup_ms"] * 1e3, run_ms * 1e3,
                         lambda g: float(g.exponential(w)), model, int(round(p["server_cores"])),
                         lambda g: solo + float(g.normal(0.0, jitter)), p["conn_setup_us"],
                         p["coroutine_wake_us"], rng)
        lat.append((r.requests, r.latency_mean, r.latency_std))
    k = sum(x[0] for x in lat)
    mean = sum(x[0] * x[1] for x in lat) / k
    var = sum(x[0] * (x[2] ** 2 + (x[1] - mean) ** 2) for x in lat) / k
    return {"sim_requests": k / TIMER_REPS, "sim_latency_mean_us": mean,
            "sim_latency_std_us": math.sqrt(var)}


def _prio_row(row: Row, p: Profile, rng) -> dict[str, float]:
    v = int(number(row, "server_vcpus", integer=True, minimum=1))
    k = int(number(row, "connection_priority", integer=True, minimum=1))
    if k > threads.N_CLASSES:
        raise InputError(f"priority must be 1..{threads.N_CLASSES}, got {k}",
                         field="connection_priority")
    interval = number(row, "send_interval_ms", minimum=1e-3) * 1e3
    run = number(row, "run_ms", 5000.0, minimum=0) * 1e3
    n = int(round(p["conns_per_class"]))
    kk = threads.N_CLASSES
    s = threads.request_cpu_us("coroutine", n * kk, number(row, "matrix_size", minimum=0), p, v)
    saturated = kk * n * s / (v * interval) >= threads.SATURATION_LOAD
    period = max(interval, kk * n * s / v) if saturated else interval
    ticks = max(3, int((run - p["warmup_ms"] * 1e3) / period))
    waits = priority_pool(kk, n, s, v, period, saturated, ticks, PRIORITY_REPS, rng)
    mean, std, _ = waits[k - 1]
    return {"sim_requests": n / period * max(run - p["warmup_ms"] * 1e3, 0.0),
            "sim_latency_mean_us": p["priority_client_us"] + s + mean,
            "sim_latency_std_us": math.hypot(p["priority_jitter_us"], std)}


SIMULATORS: dict[str, Callable[[Row, Profile, Any], dict[str, float]]] = {
    "morphling_c": _c_row, "morphling_go": _go_row, "morphling_go_control": _go_control_row,
    "runtimes_curves": _curves_row, "runtimes_best": _best_row,
    "runtimes_limited": _limited_row, "thread_coroutine": _tc_row,
    "coroutine_priority": _prio_row}


def simulate_row(kind: str, row: Row, profile: Profile, seed: int = 1) -> dict[str, float]:
    """``sim_<column>`` of one row of a system kind, from a seeded event run."""
    if kind not in SIMULATORS:
        raise InputError(f"no event form for kind {kind!r}; kinds: {', '.join(SIMULATORS)}",
                         field="kind")
    return SIMULATORS[kind](row, profile, np.random.default_rng(seed))


def compare(kind, rows: list[dict], profile: Profile, seed: int = 1,
            progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Per row and measured column: measured, analytic, simulated, and the
    difference simulated / analytic - 1 (percent)."""
    point = getattr(kind.predict_row, "__wrapped__", kind.predict_row)
    out = []
    for i, r in enumerate(rows):
        try:
            a = point(r, profile)
            s = simulate_row(kind.name, r, profile, seed + i)
        except InputError as exc:
            raise exc.located(source=r.get("__source__"), line=_line(r)) from None
        for col in kind.measured:
            av, sv = a.get(f"pred_{col}"), s.get(f"sim_{col}")
            if av is None or sv is None or not math.isfinite(sv):
                continue
            out.append({"kind": kind.name, "id": r.get("id", ""), "column": col,
                        "measured": measured(r, col), "analytic": av, "simulated": sv,
                        "diff_pct": (sv / av - 1.0) * 100.0 if av else math.nan})
        if progress:
            progress(1)
    return out


def summary(table: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, float, float]]:
    """Per (kind, column): cells, median and largest |simulated / analytic - 1| (%)."""
    by: dict[tuple[str, str], list[float]] = {}
    for t in table:
        by.setdefault((t["kind"], t["column"]), []).append(abs(t["diff_pct"]))
    return {k: (len(v), statistics.median(v), max(v)) for k, v in by.items()}


def _line(r: Row) -> int | None:
    v = r.get("__line__")
    return int(v) if v and str(v).isdigit() else None


def main(argv: list[str] | None = None) -> int:
    from runio.exits import ArgumentParser, run_command
    ap = ArgumentParser(prog="python -m sim.systems_rows",
                        description="Every row of a reference system's file through its "
                                    "analytic and its event form.")
    ap.add_argument("--runs", action="append", required=True, help="a reference CSV")
    ap.add_argument("--profile", default=None, help="profile (default: the kind's embedded one)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the event runs (default 1)")
    ap.add_argument("--out", default=None, help="write the comparison table to this CSV")
    args = ap.parse_args(argv)
    return run_command(lambda: _command(args))


def _command(args) -> None:
    from runio.batch import read_runs
    from runio.inputs import load_profile
    from runio.kinds import detect
    from runio.progress import bar
    from runio.safe_io import output_path, write_rows_csv
    if args.out:                   # checked before any work
        output_path(args.out, "--out", args.runs, types=(".csv",))
    table = []
    for path in args.runs:
        header, rows = read_runs(path)
        kind = detect(header, source=path)
        for r in rows:
            r["__source__"] = path
        prof = load_profile(args.profile or kind.profile)
        with bar(len(rows), "rows", f"simulate {kind.name}", True) as b:
            table += compare(kind, rows, prof, args.seed, b.update)
    print(f"  {'kind':<22} {'run':<6} {'column':<24} {'measured':>12} {'analytic':>12} "
          f"{'simulated':>12} {'sim/an-1':>9}")
    for t in table:
        m = "-" if t["measured"] is None else f"{t['measured']:.5g}"
        print(f"  {t['kind']:<22} {t['id']:<6} {t['column']:<24} {m:>12} {t['analytic']:12.5g} "
              f"{t['simulated']:12.5g} {t['diff_pct']:8.1f}%")
    print()
    for (k, c), (n, med, mx) in summary(table).items():
        print(f"  {k:<22} {c:<24} {n:3d} cells: median |sim/analytic - 1| {med:5.1f} %, "
              f"largest {mx:5.1f} %")
    if args.out:
        write_rows_csv(args.out, table, lambda v: "" if v is None else
                       (f"{v:.6g}" if isinstance(v, float) else str(v)))
        print(f"wrote {args.out}")
