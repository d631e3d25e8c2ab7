"""Closed product-form queueing networks: exact and approximate MVA.

The rack is a *closed* network: N client threads each keep one request
outstanding, so the number of requests in the system is fixed and throughput
is an output, not an input. Each request cycles through

* a think time ``Z`` (client send cost, network) -- an infinite-server delay;
* delay stations (switch pipeline, fixed per-hop latencies);
* queueing stations: one FCFS worker per partition, visited with that
  partition's share, or multi-server/load-dependent stations for core pools.

A station is described by its *service demand* ``D = visits x mean service
time`` per cycle, in any time unit (throughputs come out in cycles per that
unit). Networks of this kind (BCMP, single class, exponential FCFS service)
have a product-form stationary distribution, and Mean Value Analysis (MVA,
Reiser & Lavenberg 1980) computes their means exactly with the arrival
theorem: an arriving customer sees the network in equilibrium with one
customer fewer, so ``R_k(n) = D_k (1 + Q_k(n-1))`` at an FCFS station.

Solvers in this module (pure functions returning plain data):

``mva(stations, population, think_time, method)``
    * ``"exact"`` with only delay/FCFS stations: the MVA recursion over
      n = 1..N, vectorised over stations with numpy -- O(N M); 1024
      customers x 129 stations take a few milliseconds.
    * ``"exact"`` with multi-server (``"multi"``) or load-dependent
      (``"ld"``) stations. Textbook load-dependent MVA carries marginal
      probabilities ``p_k(j|n)`` and gets ``p_k(0|n)`` as ``1 - sum``; that
      subtraction loses all precision once a station saturates and the error
      is then multiplied by ``prod U/alpha(j)`` at every step -- in double
      precision it returns *negative* throughput for a 4-server station a
      hundred customers past saturation, and at N = 1024, c = 64 even
      400-digit decimal arithmetic fails (800 digits agree with us; see
      tests/oracles/test_queueing.py).
      We therefore compute the *same* exact quantities from normalising
      constants held in log space, which involves only sums of positive
      terms: the fixed-rate part of the network is solved by MVA, whose
      throughputs give ``log G_0(n) = -sum_{m<=n} log X_0(m)`` exactly;
      each load-dependent station is then convolved in (log-sum-exp form,
      O(N^2) per station), and the marginal queue-length distribution of
      station k is ``p_k(j) = f_k(j) G_{-k}(N-j) / G(N)`` with ``G_{-k}``
      built from prefix/suffix convolutions (no 2^L blow-up with L such
      stations). Tested to N = 1024 with c = 64.
    * ``"approx"``: Schweitzer-Bard approximate MVA, the fixed point of
      ``Q_k(N-1) ~ (N-1)/N Q_k(N)``. Multi-server and ``ld`` stations use,
      by default, the rate at the (interpolated) queue length an arrival
      sees: ``R = D (a+1)/alpha(a+1)`` with a = (N-1)/N Q ("rate"); for
      multi-server stations Seidmann's transformation is available
      (``multiserver="seidmann"``: a c-server station of demand D becomes a
      single server of demand D/c in series with a delay of D(c-1)/c).
      Accuracy, measured in tests/oracles/test_queueing.py (throughput is
      always underestimated, i.e. pessimistic):

      - 128 unequal FCFS workers (demands U(0.5, 1.5) ms) + 5 ms delay,
        N = 16..1024: throughput within 0.13 %; per-station queue within
        0.5 % of N up to N = 512 and 3.4 % of N at N = 1024 (the queue is
        split wrongly between the few most-loaded workers, up to 14 %
        relative at one of them);
      - 4 balanced FCFS stations, N = 2..40: throughput within 6 %;
      - one c-server station (c = 2..64) + FCFS, N from c/2 to 8c:
        "rate" within 3.5 % in throughput, Seidmann within 12 % (worst near
        N ~ c..2c for small c); both exact far past the knee.
    * ``"auto"``: exact when the estimated cost
      ``N x M_fixed + 3 N^2 x L_ld`` is at most :data:`EXACT_COST_LIMIT`,
      else approximate.

``mva_multiclass_exact(demands, kinds, populations, think_times)``
    Exact multi-class MVA over all population vectors (small populations).

``asymptotic_bounds(stations, population, think_time)``
    Asymptotic (ABA) and balanced-job bounds on throughput and response time.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from model.errors import InputError

__all__ = [
    "EXACT_COST_LIMIT",
    "KINDS",
    "Station",
    "MVAResult",
    "MultiClassResult",
    "Bounds",
    "mva",
    "mva_exact",
    "mva_approx",
    "mva_multiclass_exact",
    "asymptotic_bounds",
]

KINDS = ("delay", "fcfs", "multi", "ld")

#: Largest estimated cost (``N x M_fixed + 3 N^2 x L_ld`` array elements)
#: for which ``method="auto"`` solves exactly. The fixed-rate recursion costs
#: about 4 us per population step regardless of M up to a few hundred
#: stations; a log-space convolution costs about 100 ns per element (N = 1024,
#: one multi-server station: ~0.12 s). The limit keeps exact solutions below
#: about one second: at N = 1024, any number of FCFS stations up to ~10^4 and
#: up to 3 load-dependent stations.
EXACT_COST_LIMIT = 1.0e7

#: Total fixed-rate demand plus think time below which that part of the
#: network holds nobody (subnormal times would overflow the recursion).
TINY = 1e-200


# --------------------------------------------------------------------------
# model language
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Station:
    """One service centre of a closed network.

    ``demand`` is visits x mean service time per cycle. ``kind``:

    * ``"delay"``: infinite servers, residence time = demand;
    * ``"fcfs"``: one exponential server (or PS, same means);
    * ``"multi"``: ``servers`` identical servers (rate min(n, c)/demand);
    * ``"ld"``: load-dependent rate ``alpha(n)/demand`` with n present,
      ``rates = (alpha(1), alpha(2), ...)``; beyond the last given value the
      rate stays at ``rates[-1]``.
    """

    name: str
    kind: str = "fcfs"
    demand: float = 0.0
    servers: int = 1
    rates: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"station {self.name!r}: kind must be one of {KINDS}, "
                             f"got {self.kind!r}", field="kind")
        d = float(self.demand)
        if not math.isfinite(d) or d < 0:
            raise InputError(f"station {self.name!r}: demand must be finite and >= 0, "
                             f"got {self.demand!r}", field="demand")
        object.__setattr__(self, "demand", d)
        if isinstance(self.servers, bool) or int(self.servers) != self.servers \
                or self.servers < 1:
            raise InputError(f"station {self.name!r}: servers must be an integer >= 1, "
                             f"got {self.servers!r}", field="servers")
        object.__setattr__(self, "servers", int(self.servers))
        if self.kind == "ld":
            if self.rates is None or len(self.rates) == 0:
                raise InputError(f"station {self.name!r}: kind 'ld' needs rates "
                                 "(alpha(1), alpha(2), ...)", field="rates")
            r = tuple(float(a) for a in self.rates)
            if not all(math.isfinite(a) and a > 0 for a in r):
                raise InputError(f"station {self.name!r}: rates must be finite and > 0, "
                                 f"got {self.rates!r}", field="rates")
            object.__setattr__(self, "rates", r)
        elif self.rates is not None:
            raise InputError(f"station {self.name!r}: rates only apply to kind 'ld'",
                             field="rates")
        if self.kind != "multi" and self.servers != 1:
            raise InputError(f"station {self.name!r}: servers only apply to kind 'multi'",
                             field="servers")

    @property
    def load_dependent(self) -> bool:
        return self.kind in ("multi", "ld")

    def alpha(self, n: int) -> np.ndarray:
        """Rate multipliers alpha(1..n) as an array of length n."""
        j = np.arange(1, n + 1, dtype=float)
        if self.kind == "multi":
            return np.minimum(j, self.servers)
        if self.kind == "ld":
            r = np.asarray(self.rates, dtype=float)
            return r[np.minimum(np.arange(n), len(r) - 1)]
        if self.kind == "delay":
            return j
        return np.ones(n)

    @property
    def max_rate(self) -> float:
        """Largest rate multiplier: the station's capacity is max_rate/demand."""
        if self.kind == "multi":
            return float(self.servers)
        if self.kind == "ld":
            return max(self.rates)  # type: ignore[arg-type]
        if self.kind == "delay":
            return math.inf
        return 1.0


@dataclass
class MVAResult:
    """Mean performance of a closed network at one population.

    Per-station arrays follow the order of ``names``. ``residence`` is per
    cycle (visits x time per visit). ``utilization`` is X*D for FCFS, X*D/c
    for multi-server, the busy probability 1 - p(0) for ``ld`` (X*D/alpha(1)
    in approximate mode) and the mean number in service X*D for delay
    stations. ``throughput_curve[n-1]`` is X(n) for n = 1..N when the solver
    produced it (exact methods), else None. ``marginals`` maps the name of
    each multi/ld station to its queue-length distribution p(0..N) (exact
    methods only).
    """

    throughput: float
    residence: np.ndarray
    queue: np.ndarray
    utilization: np.ndarray
    response_time: float
    think_time: float
    population: int
    method: str
    names: tuple[str, ...]
    throughput_curve: np.ndarray | None = None
    marginals: dict[str, np.ndarray] = field(default_factory=dict)
    iterations: int = 0

    @property
    def cycle_time(self) -> float:
        return self.response_time + self.think_time

    def station(self, name: str) -> dict[str, float]:
        """Residence, queue and utilisation of one station by name."""
        i = self.names.index(name)
        return {"residence": float(self.residence[i]), "queue": float(self.queue[i]),
                "utilization": float(self.utilization[i])}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _check_common(stations: Sequence[Station], population: int, think_time: float) -> None:
    if isinstance(population, bool) or int(population) != population or population < 0:
        raise InputError(f"population must be an integer >= 0, got {population!r}",
                         field="population")
    if not math.isfinite(think_time) or think_time < 0:
        raise InputError(f"think_time must be finite and >= 0, got {think_time!r}",
                         field="think_time")
    for s in stations:
        if not isinstance(s, Station):
            raise InputError(f"stations must be Station objects, got {type(s).__name__}",
                             field="stations")
    names = [s.name for s in stations]
    if len(set(names)) != len(names):
        raise InputError("station names must be unique", field="stations")
    if population > 0 and think_time == 0 and sum(s.demand for s in stations) == 0:
        raise InputError("all demands and the think time are zero: throughput is unbounded",
                         field="demand")


def _zero_result(stations: Sequence[Station], think_time: float, method: str) -> MVAResult:
    m = len(stations)
    return MVAResult(0.0, np.zeros(m), np.zeros(m), np.zeros(m), 0.0, float(think_time), 0,
                     method, tuple(s.name for s in stations), np.zeros(0))


def _log(x: np.ndarray) -> np.ndarray:
    # log(0) = -inf is the intended value for empty states; silence the warning
    with np.errstate(divide="ignore"):
        return np.log(x)


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    s = np.exp(a - m_safe[:, None]).sum(axis=1)
    return _log(s) + m_safe


def _log_conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """c[n] = log sum_{j<=n} exp(a[j] + b[n-j]) for n = 0..len-1 (log-space convolution)."""
    n1 = len(a)
    idx = np.arange(n1)[:, None] - np.arange(n1)[None, :]
    valid = idx >= 0
    terms = np.where(valid, a[None, :] + b[np.where(valid, idx, 0)], -np.inf)
    return _logsumexp_rows(terms)


def _log_f(station: Station, n: int) -> np.ndarray:
    """log f(j), j = 0..n: f(j) = D^j / prod_{i<=j} alpha(i), the product-form factor."""
    j = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ld = np.where(j > 0, j * math.log(station.demand), 0.0) if station.demand > 0 \
            else np.where(j > 0, -np.inf, 0.0)
    return ld - np.concatenate(([0.0], np.cumsum(np.log(station.alpha(n)))))


def _fixed_rate_mva(demand: np.ndarray, queueing: np.ndarray, think: float, n_max: int):
    """Exact MVA recursion for delay/FCFS stations; returns X(1..N), R(N), Q(N)."""
    dq = demand * queueing          # queueing part: residence grows with the queue seen
    m = len(demand)
    q = np.zeros(m)
    r = demand.copy()
    x_hist = np.empty(n_max)
    x = 0.0
    for n in range(1, n_max + 1):
        # arrival theorem: an arrival sees the equilibrium queue with n-1 customers
        r = demand + dq * q
        x = n / (think + r.sum())
        q = x * r
        x_hist[n - 1] = x
    return x_hist, r, q


# --------------------------------------------------------------------------
# exact
# --------------------------------------------------------------------------

def mva_exact(stations: Sequence[Station], population: int,
              think_time: float = 0.0) -> MVAResult:
    """Exact single-class MVA (load-dependent stations via log-space constants)."""
    stations = list(stations)
    _check_common(stations, population, think_time)
    n_pop = int(population)
    if n_pop == 0:
        return _zero_result(stations, think_time, "exact")
    names = tuple(s.name for s in stations)
    m = len(stations)
    fixed = [i for i, s in enumerate(stations) if not s.load_dependent]
    ldep = [i for i, s in enumerate(stations) if s.load_dependent]
    demand = np.array([s.demand for s in stations])
    queueing = np.array([s.kind != "delay" for s in stations], dtype=float)

    if not ldep:
        x_hist, r, q = _fixed_rate_mva(demand, queueing, think_time, n_pop)
        x = float(x_hist[-1])
        util = x * demand
        return MVAResult(x, r, q, util, n_pop / x - think_time, float(think_time), n_pop,
                         "exact", names, x_hist)

    # --- networks with multi / ld stations: log normalising constants -----
    d_fix = demand[fixed]
    # Times below TINY are zero in any unit; dividing by them would overflow.
    if think_time + d_fix.sum() > TINY:
        x0, _, _ = _fixed_rate_mva(d_fix, queueing[fixed], think_time, n_pop)
        lg0 = np.concatenate(([0.0], -np.cumsum(np.log(x0))))
    else:
        # the fixed-rate part holds nobody: G_0 is the unit impulse
        lg0 = np.full(n_pop + 1, -np.inf)
        lg0[0] = 0.0
    lf = [_log_f(stations[i], n_pop) for i in ldep]
    unit = np.full(n_pop + 1, -np.inf)
    unit[0] = 0.0
    # prefix[i] = G_0 * f_0 * ... * f_{i-1}; suffix[i] = f_i * ... * f_{L-1}
    n_ld = len(ldep)
    prefix = [lg0]
    for i in range(n_ld):
        prefix.append(_log_conv(prefix[-1], lf[i]))
    suffix = [unit] * (n_ld + 1)
    for i in range(n_ld - 1, 0, -1):
        suffix[i] = _log_conv(lf[i], suffix[i + 1]) if i < n_ld - 1 else lf[i]
    lg = prefix[-1]
    lgn = lg[n_pop]
    x_curve = np.exp(lg[:-1] - lg[1:])
    x = float(x_curve[-1])

    q = np.zeros(m)
    util = np.zeros(m)
    # fixed-rate queueing stations: P(n_i >= k) = D_i^k G(N-k)/G(N)
    k = np.arange(1, n_pop + 1, dtype=float)
    for i in fixed:
        if stations[i].kind == "delay":
            q[i] = x * demand[i]
        elif demand[i] > 0:
            q[i] = float(np.exp(k * math.log(demand[i]) + lg[n_pop - k.astype(int)] - lgn).sum())
        util[i] = x * demand[i]
    marginals: dict[str, np.ndarray] = {}
    j = np.arange(n_pop + 1)
    for pos, i in enumerate(ldep):
        if n_ld == 1:
            lg_minus = prefix[0]
        elif pos == n_ld - 1:
            lg_minus = prefix[pos]
        else:
            lg_minus = _log_conv(prefix[pos], suffix[pos + 1])
        p = np.exp(lf[pos] + lg_minus[n_pop - j] - lgn)
        marginals[names[i]] = p
        q[i] = float((j * p).sum())
        st = stations[i]
        util[i] = x * st.demand / st.servers if st.kind == "multi" else 1.0 - float(p[0])
    r = q / x
    return MVAResult(x, r, q, util, n_pop / x - think_time, float(think_time), n_pop,
                     "exact", names, x_curve, marginals)


# --------------------------------------------------------------------------
# approximate
# --------------------------------------------------------------------------

def mva_approx(stations: Sequence[Station], population: int, think_time: float = 0.0,
               multiserver: str = "rate", tol: float = 1e-10,
               max_iter: int = 100_000) -> MVAResult:
    """Schweitzer-Bard approximate MVA with a multi-server correction.

    Fixed point of ``R_k = D_k (1 + (N-1)/N Q_k)``, ``X = N/(Z + sum R)``,
    ``Q = X R``. An ``ld`` station -- and a multi-server station with
    ``multiserver="rate"`` (alpha(n) = min(n, c)) -- contributes
    ``D (a+1)/alpha(a+1)`` with a = (N-1)/N Q and alpha linearly
    interpolated. With ``multiserver="seidmann"`` a c-server station
    contributes ``D/c (1 + (N-1)/N Q') + D (c-1)/c``, where Q' is the queue
    of its single-server part. See the module docstring for measured errors.
    """
    if multiserver not in ("rate", "seidmann"):
        raise InputError(f"multiserver must be 'rate' or 'seidmann', got {multiserver!r}",
                         field="multiserver")
    stations = list(stations)
    _check_common(stations, population, think_time)
    n_pop = int(population)
    if n_pop == 0:
        return _zero_result(stations, think_time, "approx")
    names = tuple(s.name for s in stations)
    demand = np.array([s.demand for s in stations])
    kind = [s.kind for s in stations]
    servers = np.array([s.servers for s in stations], dtype=float)
    is_delay = np.array([k == "delay" for k in kind])
    is_multi = np.array([k == "multi" for k in kind])
    is_ld = np.array([k == "ld" for k in kind])
    if multiserver == "rate":
        # treat c-server stations as ld with alpha(n) = min(n, c)
        is_ld = is_ld | is_multi
        is_multi = np.zeros_like(is_multi)
    multi_util = np.array([s.kind == "multi" for s in stations])
    # Seidmann: queueing part D/c, pure delay part D(c-1)/c
    dq = np.where(is_delay, 0.0, np.where(is_multi, demand / servers, demand))
    dd = np.where(is_delay, demand, np.where(is_multi, demand * (servers - 1) / servers, 0.0))
    ld_idx = np.flatnonzero(is_ld)
    ld_rates = [np.asarray(stations[i].rates, dtype=float) if stations[i].kind == "ld"
                else np.minimum(np.arange(1.0, servers[i] + 1.0), servers[i]) for i in ld_idx]

    def alpha_interp(rates: np.ndarray, a: float) -> float:
        grid = np.arange(1, len(rates) + 1, dtype=float)
        return float(np.interp(a, grid, rates))   # constant beyond both ends

    frac = (n_pop - 1) / n_pop
    # start from the customers spread in proportion to demand
    tot = demand.sum()
    qq = (n_pop * demand / tot) if tot > 0 else np.zeros(len(stations))
    qq = np.where(is_delay, 0.0, qq)
    x = 0.0
    r = demand.copy()
    it = 0
    for it in range(1, max_iter + 1):
        r = dd + dq * (1.0 + frac * qq)
        for pos, i in enumerate(ld_idx):
            a = frac * qq[i]
            r[i] = demand[i] * (a + 1.0) / alpha_interp(ld_rates[pos], a + 1.0)
        x = n_pop / (think_time + r.sum())
        # only the queueing part of a Seidmann station queues
        q_new = np.where(is_multi, x * dq * (1.0 + frac * qq), x * r)
        q_new = np.where(is_delay, 0.0, q_new)
        if np.max(np.abs(q_new - qq)) <= tol * max(1.0, n_pop):
            qq = q_new
            break
        qq = q_new
    else:  # pragma: no cover - the Schweitzer iteration is a contraction in practice
        raise RuntimeError(f"approximate MVA did not converge in {max_iter} iterations")
    q = x * r
    util = np.where(multi_util, x * demand / servers, x * demand)
    for pos, i in enumerate(ld_idx):
        if stations[i].kind == "ld":
            util[i] = min(1.0, x * demand[i] / ld_rates[pos][0])
    return MVAResult(float(x), r, q, util, n_pop / x - think_time, float(think_time), n_pop,
                     "approx", names, None, {}, it)


# --------------------------------------------------------------------------
# dispatcher
# --------------------------------------------------------------------------

def _exact_cost(stations: Sequence[Station], population: int) -> float:
    n_ld = sum(1 for s in stations if s.load_dependent)
    return population * (len(stations) - n_ld + 1) + 3.0 * population ** 2 * n_ld


def mva(stations: Sequence[Station], population: int, think_time: float = 0.0,
        method: str = "auto", multiserver: str = "rate") -> MVAResult:
    """Solve a single-class closed network; ``method`` in {"auto", "exact", "approx"}.

    ``"auto"`` is exact when ``N x M_fixed + 3 N^2 x L_ld`` <= EXACT_COST_LIMIT.
    ``multiserver`` selects the approximate multi-server treatment
    (:func:`mva_approx`).
    """
    stations = list(stations)
    if method == "exact":
        return mva_exact(stations, population, think_time)
    if method == "approx":
        return mva_approx(stations, population, think_time, multiserver)
    if method != "auto":
        raise InputError(f"method must be 'auto', 'exact' or 'approx', got {method!r}",
                         field="method")
    _check_common(stations, population, think_time)
    if _exact_cost(stations, int(population)) <= EXACT_COST_LIMIT:
        return mva_exact(stations, population, think_time)
    return mva_approx(stations, population, think_time, multiserver)


# --------------------------------------------------------------------------
# multi-class exact
# --------------------------------------------------------------------------

@dataclass
class MultiClassResult:
    """Per-class means; arrays are [class] or [class, station]."""

    throughput: np.ndarray
    residence: np.ndarray
    queue: np.ndarray
    utilization: np.ndarray
    response_time: np.ndarray
    populations: tuple[int, ...]


def mva_multiclass_exact(demands: Sequence[Sequence[float]], kinds: Sequence[str],
                         populations: Sequence[int],
                         think_times: Sequence[float] | None = None,
                         max_states: int = 2_000_000) -> MultiClassResult:
    """Exact multi-class MVA by recursion over all population vectors.

    ``R_ck(n) = D_ck (1 + Q_k(n - e_c))`` at queueing stations (FCFS with
    class-dependent demands is read as PS, which has the same product form),
    ``D_ck`` at delay stations; ``X_c = n_c / (Z_c + sum_k R_ck)``,
    ``Q_k(n) = sum_c X_c R_ck``. Cost prod(N_c + 1) x K x M, so only for
    small populations (``max_states`` guards against runaway cost).
    """
    d = np.asarray(demands, dtype=float)
    if d.ndim != 2:
        raise InputError("demands must be a [classes][stations] matrix", field="demands")
    n_cls, n_st = d.shape
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InputError("demands must be finite and >= 0", field="demands")
    if len(kinds) != n_st or any(k not in ("delay", "fcfs") for k in kinds):
        raise InputError("kinds must give 'delay' or 'fcfs' for every station", field="kinds")
    pops = tuple(int(p) for p in populations)
    if len(pops) != n_cls or any(p < 0 for p in pops) or \
            any(int(p) != p for p in populations):
        raise InputError("populations must be one integer >= 0 per class", field="populations")
    z = np.zeros(n_cls) if think_times is None else np.asarray(think_times, dtype=float)
    if z.shape != (n_cls,) or np.any(z < 0) or not np.all(np.isfinite(z)):
        raise InputError("think_times must be one finite value >= 0 per class",
                         field="think_times")
    n_states = int(np.prod([p + 1 for p in pops]))
    if n_states > max_states:
        raise InputError(f"{n_states} population vectors exceed max_states={max_states}",
                         field="populations")
    for c in range(n_cls):
        if pops[c] > 0 and z[c] + d[c].sum() == 0:
            raise InputError(f"class {c} has zero demand and think time", field="demands")
    queueing = np.array([k == "fcfs" for k in kinds], dtype=float)
    q_tab = np.zeros(tuple(p + 1 for p in pops) + (n_st,))
    x = np.zeros(n_cls)
    r = np.zeros((n_cls, n_st))
    # lexicographic order visits n - e_c before n
    for vec in itertools.product(*(range(p + 1) for p in pops)):
        if sum(vec) == 0:
            continue
        x = np.zeros(n_cls)
        r = np.zeros((n_cls, n_st))
        for c in range(n_cls):
            if vec[c] == 0:
                continue
            prev = list(vec)
            prev[c] -= 1
            r[c] = d[c] * (1.0 + queueing * q_tab[tuple(prev)])
            x[c] = vec[c] / (z[c] + r[c].sum())
        q_tab[vec] = (x[:, None] * r).sum(axis=0)
    q = x[:, None] * r
    with np.errstate(divide="ignore", invalid="ignore"):
        resp = np.where(x > 0, np.array(pops) / np.where(x > 0, x, 1.0) - z, 0.0)
    return MultiClassResult(x, r, q, x[:, None] * d, resp, pops)


# --------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------

@dataclass
class Bounds:
    """Bounds on throughput X(N) and response time R(N) = N/X - Z.

    ``aba_*`` are asymptotic bounds (valid for every station kind);
    ``bjb_*`` are balanced-job bounds, tighter but only defined when all
    queueing stations are fixed-rate FCFS (NaN otherwise). ``throughput_lower``
    / ``throughput_upper`` are the tightest available.
    """

    aba_throughput_lower: float
    aba_throughput_upper: float
    bjb_throughput_lower: float
    bjb_throughput_upper: float
    throughput_lower: float
    throughput_upper: float
    response_lower: float
    response_upper: float
    n_star: float           # knee: N* = (D + Z) / D_max


def asymptotic_bounds(stations: Sequence[Station], population: int,
                      think_time: float = 0.0) -> Bounds:
    """ABA and balanced job bounds (Lazowska et al., Quantitative System Performance, ch. 5).

    With D the total queueing demand, Z' = Z + delay demands and D_max the
    largest queueing demand per unit capacity (D/c for c servers):

    * ABA: N / (N D + Z') <= X <= min(N / (D + Z'), 1 / D_max)
    * BJB (fixed-rate only), D_avg = D / M:
      N / (D + Z' + (N-1) D_max / (1 + Z'/(N D)))
        <= X <= min(1/D_max, N / (D + Z' + (N-1) D_avg / (1 + Z'/D)))

    For load-dependent stations the uncontended residence generalises to
    r_min = D min_{n<=N} n/alpha(n) (a customer is never served faster than
    that) and the worst case to r_max = N D / min_{n<=N} alpha(n) (all N
    customers present at the slowest rate): N/(sum r_max + Z') <= X <=
    min(N/(sum r_min + Z'), 1/D_max).
    """
    stations = list(stations)
    _check_common(stations, population, think_time)
    n = int(population)
    if n == 0:
        return Bounds(0, 0, 0, 0, 0, 0, 0, 0, math.nan)
    zp = think_time + sum(s.demand for s in stations if s.kind == "delay")
    qst = [s for s in stations if s.kind != "delay"]
    jj = np.arange(1, n + 1, dtype=float)
    r_min = sum(s.demand * float(np.min(jj / s.alpha(n))) for s in qst)
    r_max = sum(s.demand * n / float(np.min(s.alpha(n))) for s in qst)
    dmax = max((s.demand / float(np.max(s.alpha(n))) for s in qst), default=0.0)
    aba_up = n / (r_min + zp) if dmax == 0 else min(n / (r_min + zp), 1.0 / dmax)
    aba_lo = n / (r_max + zp)
    d1 = sum(s.demand for s in qst)
    fixed_only = all(s.kind == "fcfs" for s in qst) and len(qst) > 0 and d1 > 0
    if fixed_only:
        davg = d1 / len(qst)
        dmx = max(s.demand for s in qst)
        bjb_up = min(1.0 / dmx, n / (d1 + zp + (n - 1) * davg / (1.0 + zp / d1)))
        bjb_lo = n / (d1 + zp + (n - 1) * dmx / (1.0 + zp / (n * d1)))
    else:
        bjb_up = bjb_lo = math.nan
    x_lo = max(aba_lo, bjb_lo) if fixed_only else aba_lo
    x_up = min(aba_up, bjb_up) if fixed_only else aba_up
    n_star = (r_min + zp) / dmax if dmax > 0 else math.inf
    return Bounds(aba_lo, aba_up, bjb_lo, bjb_up, x_lo, x_up,
                  n / x_up - think_time, n / x_lo - think_time, n_star)

