"""Echo servers on async runtimes: Tokio, Glommio, Monoio (docs/domain.md section 4).

Unlimited runs (``runtimes_curves.csv``, ``runtimes_best.csv``)
    N = client_cores x conns_per_core connections, each a closed loop with one
    request outstanding and a client + network delay ``think_us`` (the
    ~2.3 ms floor: measured latency x qps = N in every run). The server is a
    pool of c cores; one request costs

        s = (service_us[rt] + per_kb_us x KB) x scaling(c) x (1 + kappa[rt] x N/c)

    * ``scaling`` (:func:`model.blocks.scaling_factor`): Tokio shares a
      work-stealing scheduler between cores -- a fixed multi-thread penalty
      plus USL serial/coherency terms, so it scales poorly past 8 cores
      (the 16-core runs span both sockets of the Xeon Gold 5118). Glommio
      and Monoio are thread-per-core (share nothing): scaling = 1.
    * ``kappa``: per-connection contention (poll set, buffers, cache
      footprint per core). Saturated throughput c/s falls as connections grow,
      so each runtime peaks and then declines -- the "best QPS" points.
    Solved by :func:`model.blocks.closed_loop` (exact single queue + delay,
    c cores by Seidmann). ``best_qps`` = the curve's maximum over
    conns_per_core.

QPS-limited runs (``runtimes_limited.csv``; CPU fixed at 3.2 GHz)
    * qps = min(offered, capacity), capacity from the model above scaled
      by 3.2/2.3 GHz.
    * cpu_total_pct = 100 x [qps x cpu_us[rt] x (1 + cpu_multi[rt] [c > 1])
      x (1 + cpu_kappa x kconns/c) + c x idle_pct[rt]/100]: CPU per request
      at light load (each wake-up handles few requests, so it costs more than
      at saturation) and busy polling per core.
    * latency: the rate limiter releases each client core's connections in
      bursts, so a request waits for a fraction ``burst_frac`` of the burst
      of all N connections to drain through the c cores:
      latency = limited_base_us + burst_frac x N x cpu per request / c.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from model.blocks import closed_loop, contention_factor, scaling_factor
from model.errors import InputError
from model.profile import Profile
from model.uncertainty import with_intervals
from model.registry import RunKind, register
from model.rows import cell, choice, number

from .base import ParamSpec, System, register_system

RUNTIMES = ("tokio", "glommio", "monoio")
SHARED_STATE = {"tokio": True, "glommio": False, "monoio": False}
FREQ_RATIO = 3.2 / 2.3          # limited runs pin the CPU at 3.2 GHz, curves ran at 2.3
CONNS_GRID = np.arange(10, 401, 5)   # conns per client core searched for the best QPS


def _params() -> tuple[ParamSpec, ...]:
    ps = [
        ParamSpec("think_us", "us", 2300.0, 100.0, 10000.0,
                  "client + network delay per request (closed-loop floor)"),
        ParamSpec("per_kb_us", "us/KB", 0.5, 0.0, 20.0, "extra server CPU per KB of payload"),
        ParamSpec("cpu_kappa", "1/kconn", 0.1, 0.0, 5.0,
                  "light-load CPU inflation per 1000 connections per core"),
        ParamSpec("limited_base_us", "us", 1200.0, 0.0, 10000.0,
                  "latency floor of QPS-limited runs (client + network)"),
        ParamSpec("burst_frac", "1", 0.7, 0.0, 3.0,
                  "fraction of a rate-limiter burst a request waits behind"),
    ]
    for rt in RUNTIMES:
        shared = SHARED_STATE[rt]
        ps += [
            ParamSpec(f"{rt}_service_us", "us", 5.0, 0.5, 50.0,
                      f"{rt}: server CPU per 100 B request on one core at 2.3 GHz"),
            ParamSpec(f"{rt}_kappa", "1/conn", 0.001, 0.0, 0.1,
                      f"{rt}: service inflation per connection per core (contention)"),
            ParamSpec(f"{rt}_multi", "1", 0.5 if shared else 0.0, 0.0, 5.0,
                      f"{rt}: fixed per-request penalty of a multi-core work-stealing runtime"
                      if shared else f"{rt}: thread-per-core, no shared scheduler", fit=shared),
            ParamSpec(f"{rt}_sigma", "1", 0.02 if shared else 0.0, 0.0, 1.0,
                      f"{rt}: USL serial fraction across cores" if shared
                      else f"{rt}: thread-per-core, no cross-core serialisation", fit=shared),
            ParamSpec(f"{rt}_coherency", "1", 0.001 if shared else 0.0, 0.0, 0.1,
                      f"{rt}: USL pairwise coherency cost between cores" if shared
                      else f"{rt}: thread-per-core, no cross-core coherency", fit=shared),
            ParamSpec(f"{rt}_cpu_us", "us", 6.0, 0.5, 50.0,
                      f"{rt}: CPU per request at light load, one core, 3.2 GHz"),
            ParamSpec(f"{rt}_cpu_multi", "1", 0.0, -0.8, 5.0,
                      f"{rt}: relative change of light-load CPU per request on >1 core"),
            ParamSpec(f"{rt}_idle_pct", "%", 1.0, 0.0, 50.0,
                      f"{rt}: CPU per core spent polling when lightly loaded"),
        ]
    return tuple(ps)


PARAMS = _params()
RUNTIME_MAP = {r: r for r in RUNTIMES}


def payload_bytes(row) -> float:
    v = cell(row, "payload")
    if v is None:
        raise InputError("missing value; e.g. 1K or 100B", field="payload")
    t = v.upper().rstrip("B") if v.upper().endswith("B") and not v.upper().endswith("KB") else v.upper()
    try:
        if t.endswith("KB") or t.endswith("K"):
            return float(t.rstrip("B").rstrip("K")) * 1024.0
        return float(t)
    except ValueError:
        raise InputError(f"expected a size like 1K or 100B, got {v!r}", field="payload") from None


def service_us(rt: str, cores: int, conns: float, nbytes: float, p: Profile) -> float:
    """Server CPU per request (us) on c cores with N connections (2.3 GHz)."""
    base = p[f"{rt}_service_us"] + p["per_kb_us"] * (nbytes - 100.0) / 1024.0
    return (base * scaling_factor(cores, p[f"{rt}_multi"], p[f"{rt}_sigma"], p[f"{rt}_coherency"])
            * contention_factor(conns / cores, p[f"{rt}_kappa"]))


def solve(rt: str, cores: int, conns: int, nbytes: float, p: Profile) -> tuple[float, float]:
    """(qps, latency us) of the unlimited closed loop."""
    s = service_us(rt, cores, conns, nbytes, p)
    cl = closed_loop(conns, p["think_us"], [s], [cores])
    return cl.throughput * 1e6, cl.cycle


def best(rt: str, cores: int, client_cores: int, nbytes: float, p: Profile) -> tuple[float, float]:
    """(best qps, conns per client core at the best): the curve's maximum over
    the conns grid, refined by a parabola through the three points around it
    (so the location moves smoothly with the parameters). The grid is walked
    coarse-to-fine: every 4th point first, then the points around the best."""
    coarse = CONNS_GRID[::4]
    qc = [solve(rt, cores, int(client_cores * k), nbytes, p)[0] for k in coarse]
    j = int(np.argmax(qc)) * 4
    q = np.full(len(CONNS_GRID), -np.inf)
    q[::4] = qc
    for i in range(max(0, j - 4), min(len(CONNS_GRID), j + 5)):
        if not np.isfinite(q[i]):
            q[i] = solve(rt, cores, int(client_cores * CONNS_GRID[i]), nbytes, p)[0]
    i = int(np.argmax(q))
    if 0 < i < len(q) - 1:
        y0, y1, y2 = q[i - 1], q[i], q[i + 1]
        den = y0 - 2 * y1 + y2
        if den < 0:
            off = 0.5 * (y0 - y2) / den
            step = float(CONNS_GRID[1] - CONNS_GRID[0])
            return float(y1 - 0.25 * (y0 - y2) * off), float(CONNS_GRID[i] + off * step)
    return float(q[i]), float(CONNS_GRID[i])


def _common(row):
    rt = choice(row, "runtime", RUNTIME_MAP)
    c = int(number(row, "server_cores", integer=True, minimum=1))
    return rt, c, payload_bytes(row)


def _curves_row(row, p: Profile) -> dict[str, Any]:
    rt, c, nb = _common(row)
    n = number(row, "connections", 0.0, integer=True, minimum=0)
    if not n:
        n = number(row, "client_cores", integer=True, minimum=1) * \
            number(row, "conns_per_core", integer=True, minimum=1)
    qps, lat = solve(rt, c, int(n), nb, p)
    return {"pred_qps": qps, "pred_latency_us": lat, "pred_clients_by_littles_law": qps * lat * 1e-6}


def _best_row(row, p: Profile) -> dict[str, Any]:
    rt, c, nb = _common(row)
    cc = int(number(row, "client_cores", 4.0 * c, integer=True, minimum=1))
    q, k = best(rt, c, cc, nb, p)
    return {"pred_best_qps": q, "pred_conns_per_core": k}


def cpu_per_request_us(rt: str, cores: int, conns: float, p: Profile) -> float:
    """Light-load CPU per request at 3.2 GHz (us)."""
    multi = p[f"{rt}_cpu_multi"] if cores > 1 else 0.0
    return p[f"{rt}_cpu_us"] * (1.0 + multi) * (1.0 + p["cpu_kappa"] * conns / cores / 1000.0)


def limited(rt: str, cores: int, conns: int, offered: float, nbytes: float,
            p: Profile) -> dict[str, float]:
    cap = cores / service_us(rt, cores, conns, nbytes, p) * 1e6 * FREQ_RATIO
    qps = min(offered, cap)
    cpu_req = cpu_per_request_us(rt, cores, conns, p)
    cpu = 100.0 * (qps * cpu_req * 1e-6 + cores * p[f"{rt}_idle_pct"] / 100.0)
    cpu = min(cpu, 100.0 * cores)
    lat = p["limited_base_us"] + p["burst_frac"] * conns * cpu_req / cores
    if offered >= cap:
        # saturated: the closed loop's latency takes over
        lat = max(lat, solve(rt, cores, conns, nbytes, p)[1] / FREQ_RATIO)
    return {"qps": qps, "cpu_total_pct": cpu, "latency_us": lat}


def _limited_row(row, p: Profile) -> dict[str, Any]:
    rt, c, nb = _common(row)
    cc = int(number(row, "client_cores", integer=True, minimum=1))
    n = int(number(row, "conns_per_core", integer=True, minimum=1)) * cc
    off = number(row, "offered_qps", 0.0, minimum=0)
    if not off:
        off = number(row, "qps_limit_per_core", minimum=0) * cc
    r = limited(rt, c, n, off, nb, p)
    return {f"pred_{k}": v for k, v in r.items()}


CURVES_KIND = register(RunKind(
    name="runtimes_curves",
    signature=frozenset({"runtime", "server_cores", "payload", "connections", "qps", "latency_us"}),
    profile="runtimes", measured=("qps", "latency_us", "clients_by_littles_law"),
    predict_row=with_intervals(_curves_row, "runtimes_curves"),
    extra={"curve": {"by": ("runtime", "server_cores", "payload", "client_cores"),
                     "order": "connections"}},
    description="async runtime QPS/latency vs connections"))

BEST_KIND = register(RunKind(
    name="runtimes_best",
    signature=frozenset({"runtime", "server_cores", "payload", "best_qps"}),
    profile="runtimes", measured=("best_qps", "conns_per_core"),
    predict_row=with_intervals(_best_row, "runtimes_best"),
    extra={"curve": {"by": ("runtime", "payload"), "order": "server_cores"}},
    description="best QPS per core count"))

LIMITED_KIND = register(RunKind(
    name="runtimes_limited",
    signature=frozenset({"runtime", "server_cores", "qps_limit_per_core", "cpu_total_pct"}),
    profile="runtimes", measured=("qps", "latency_us", "cpu_total_pct"),
    predict_row=with_intervals(_limited_row, "runtimes_limited"),
    extra={"curve": {"by": ("runtime", "server_cores", "payload", "conns_per_core",
                            "client_cores"), "order": "qps_limit_per_core"}},
    description="QPS-limited runs with server CPU use"))


def curves(p: Profile) -> list[dict[str, Any]]:
    """Predicted QPS vs connections per runtime and core count (4 client cores
    per server core, as measured), with the peak and collapse flagged, and
    best QPS vs cores."""
    rows = []
    for rt in RUNTIMES:
        for c, nb in ((1, 1024.0), (4, 1024.0), (8, 100.0), (16, 100.0), (20, 100.0)):
            cc = 4 * c
            pts = [(int(cc * k),) + solve(rt, c, int(cc * k), nb, p) for k in CONNS_GRID]
            qs = [q for _, q, _ in pts]
            i_peak = int(np.argmax(qs))
            cap0 = c / service_us(rt, c, 1, nb, p) * 1e6
            for i, (n, q, lat) in enumerate(pts):
                flag = ""
                if i == i_peak and i < len(pts) - 1:
                    flag = "peak"
                elif i > i_peak and q < 0.9 * qs[i_peak] and \
                        not any(r["flag"] == "collapse" and r["series"] == f"{rt} {c}c" for r in rows):
                    flag = "collapse"
                elif q >= 0.9 * cap0 / (1 + p[f"{rt}_kappa"] * n / c) and \
                        not any(r["flag"] == "saturation" and r["series"] == f"{rt} {c}c" for r in rows) \
                        and i < i_peak:
                    flag = "saturation"
                rows.append({"series": f"{rt} {c}c", "x": n, "x_label": "connections",
                             "y": q, "y_label": "qps", "latency_us": lat, "kind": "predicted",
                             "flag": flag, "runtime": rt, "server_cores": c,
                             "payload_bytes": nb})
        for c in range(1, 21):
            q, k = best(rt, c, 4 * c, 100.0, p)
            rows.append({"series": f"{rt} best", "x": c, "x_label": "server cores",
                         "y": q, "y_label": "best qps", "kind": "predicted", "flag": "",
                         "runtime": rt, "conns_per_core": k})
    return rows


RUNTIMES_SYSTEM = register_system(System(
    name="runtimes", params=PARAMS, kinds=(CURVES_KIND, BEST_KIND, LIMITED_KIND),
    data_files=("runtimes_curves", "runtimes_best", "runtimes_limited"), curves=curves,
    description="Tokio, Glommio and Monoio echo servers"))
