"""Building blocks for the non-FarReach reference systems (docs/domain.md section 4).

Every reference system is a client population talking to a server pool over
a network. These pure functions are the pieces; the system modules in
:mod:`model.systems` wire them together and the simulator can reuse them.
Times are in one unit chosen by the caller (the system modules use
microseconds); rates are per that unit.

Client populations
    * :func:`closed_loop` -- N clients, each with one request outstanding, a
      pure delay ``think`` (client + network) per cycle and a list of queueing
      stations. Exact single-class MVA; a c-core station is folded in with
      Seidmann's approximation (:func:`seidmann`): a queue of demand D/c
      plus a pure delay D (c - 1)/c. Exact for c = 1 (machine repairman).
    * :func:`timer_driven` -- N connections, each sending one request every
      ``interval`` (open per connection: deterministic arrivals). Below
      capacity every request completes and the waiting time is the
      Allen-Cunneen G/G/c value with the arrival variability of N superposed
      periodic streams (ca^2 = 1 - 1/N: one stream is deterministic, many
      look Poisson). When the server saturates a connection can't send while
      its request is outstanding, so the population behaves as a closed loop:
      completed = min(offered, capacity) and the latency comes from
      :func:`closed_loop` with the interval as think time.

    * :func:`bottleneck` -- which station of a closed loop saturates: the largest
      demand per core sets the ceiling X_max = c/D, and the balanced-bound
      knee N* = (Z + sum D)/D_max is where clients stop adding throughput.
    * :func:`aligned_burst` -- N requests that arrive together (timers in
      phase) drain in arrival order: mean and std of the wait from the
      position in the burst and the summed service variability.
    * :func:`periodic_burst_wait` -- N periodic bursts at independent uniform
      phases (N*D/D/1, Benes formula): mean and std of the work a burst
      finds queued; finite even at load 1.

Network
    * :func:`wakeup_delay` -- a message to a node whose threads are parked
      pays a wake-up; a node that handled a message within the last ``spin``
      is awake, so the expected extra falls as exp(-rate x spin).
    * :class:`NetworkStack` -- a fixed delay plus a CPU cost per message; a
      request path of m messages costs m x delay of latency and
      m x cpu_per_msg of CPU on the node that sends/receives them.

Replicated request paths
    * :func:`quorum_wait` -- the leader forks to n followers and waits for k
      replies (k-of-n fork-join). Mean queueing part from the bracket of
      :func:`model.closed_forms.fork_join_bounds` (midpoint of lower and
      upper bound), plus the fixed follower round trip.
    * :func:`any_replica_stations` -- reads served by any of r replicas:
      r stations each visited 1/r of the time.

Core pools (open load ``lam`` on c cores)
    * :func:`pool_fcfs` -- M/G/c FCFS by Allen-Cunneen (exact M/M/c for
      cs^2 = ca^2 = 1, exact P-K for c = 1 with Poisson arrivals).
    * :func:`pool_ps` -- processor sharing; for c = 1 the M/G/1-PS mean
      E[S]/(1 - rho), for c > 1 the M/M/c mean (PS on c cores has the same
      mean number for exponential work).
    * :func:`pool_priority` -- non-preemptive (Cobham) or preemptive-resume
      priorities; c > 1 by the Bondi-Buzen scaling: the per-class waits of a
      single server c times as fast, times W_q(M/M/c) / W_q(M/M/1 fast).

Scheduling overheads and contention
    * :func:`switch_cost` -- CPU per request spent switching between the
      stages of a request. Threads (one per stage per connection) pay a
      kernel switch whose cost grows with the runnable threads per core;
      coroutines pay a constant user-space switch.
    * :func:`contention_factor` -- service-time inflation
      1 + kappa x (connections per core): per-connection bookkeeping, cache
      and poll-set pressure that makes throughput fall past a peak.
    * :func:`scaling_factor` -- per-request cost multiplier on c cores for
      shared-state runtimes (USL form: a fixed multi-thread penalty, a serial
      fraction sigma and a pairwise coherency term kappa).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from model.closed_forms import (
    fork_join_bounds, mg1_priority_nonpreemptive, mg1_priority_preemptive_resume, mmc,
)
from model.errors import InputError

__all__ = [
    "ClosedLoop", "TimerLoad", "NetworkStack", "PoolMetrics", "Bottleneck", "BurstWait",
    "seidmann", "closed_loop", "bottleneck", "superposed_ca2", "timer_driven", "aligned_burst",
    "PeriodicWait", "periodic_burst_wait",
    "wakeup_delay",
    "quorum_wait", "any_replica_stations",
    "pool_fcfs", "pool_ps", "pool_priority",
    "switch_cost", "contention_factor", "scaling_factor",
]


def _check(name: str, v: float, *, positive: bool = False) -> float:
    v = float(v)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise InputError(f"{name} must be finite and {'>' if positive else '>='} 0, got {v!r}",
                         field=name)
    return v


# --------------------------------------------------------------------------
# client populations
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ClosedLoop:
    """Closed-loop means at population N: throughput X, response R (excluding
    the think delay), per-station residence and utilisation per core."""

    population: int
    throughput: float
    response: float
    residence: tuple[float, ...]
    utilization: tuple[float, ...]

    @property
    def cycle(self) -> float:
        """N / X: think + response (Little's law over the whole loop)."""
        return self.population / self.throughput if self.throughput > 0 else math.inf


def seidmann(demand: float, cores: int) -> tuple[float, float]:
    """Seidmann et al. (1987): a c-server station of demand D behaves like a
    single server of demand D/c in series with a pure delay D (c - 1)/c.
    Returns (queueing demand, delay)."""
    d = _check("demand", demand)
    if int(cores) != cores or cores < 1:
        raise InputError(f"cores must be an integer >= 1, got {cores!r}", field="cores")
    return d / cores, d * (cores - 1) / cores


def _loop_inputs(population, think, demands, cores):
    """Checked inputs of a one-class closed loop, multi-core stations folded in
    as in :func:`seidmann`: (N, demands, cores, queueing demands, total delay)."""
    if int(population) != population or population < 0:
        raise InputError(f"population must be an integer >= 0, got {population!r}",
                         field="population")
    z = _check("think", think)
    d = np.array([_check("demand", x) for x in demands], dtype=float)
    c = np.ones(len(d), dtype=int) if cores is None else np.asarray(cores, dtype=int)
    if c.shape != d.shape or np.any(c < 1):
        raise InputError("cores must give an integer >= 1 per station", field="cores")
    return int(population), d, c, d / c, z + float((d * (c - 1) / c).sum())


def _loop_result(n_pop: int, x: float, r, d, c) -> ClosedLoop:
    """The loop's outcome from its throughput and queueing residences: each
    station's residence adds back the delay part of its cores."""
    resid = r + d * (c - 1) / c
    util = tuple(float(x * di / ci) for di, ci in zip(d, c))
    return ClosedLoop(n_pop, float(x), float(resid.sum()), tuple(float(v) for v in resid), util)


def closed_loop(population: int, think: float, demands: Sequence[float],
                cores: Sequence[int] | None = None) -> ClosedLoop:
    """Exact MVA for one class: N customers, a pure delay ``think`` and FCFS
    (or PS) stations with the given demands, each with ``cores`` servers
    folded in by :func:`seidmann`.

    R_i(n) = D_i (1 + Q_i(n-1)), X(n) = n / (Z + sum R_i(n)), Q_i(n) = X R_i.
    """
    n_pop, d, c, dq, z_total = _loop_inputs(population, think, demands, cores)
    if len(d) == 1 and n_pop > 0 and dq[0] > 0 and z_total > 0:
        return _repairman(n_pop, z_total, float(dq[0]), float(d[0]), int(c[0]))
    q = np.zeros(len(d))
    x = 0.0
    r = np.zeros(len(d))
    for n in range(1, n_pop + 1):
        r = dq * (1.0 + q)
        x = n / (z_total + r.sum()) if z_total + r.sum() > 0 else math.inf
        q = x * r
    return _loop_result(n_pop, x, r, d, c)


def _repairman(n: int, z: float, dq: float, d: float, c: int) -> ClosedLoop:
    """One queue + delay without the MVA loop: the finite-source M/M/1//N has
    P(queue empty) = ErlangB(N, a), a = Z/D (Erlang's loss formula),
    so X = (1 - B)/D -- identical to the MVA recursion, without the loop."""
    a = z / dq
    # 1/B = sum_{j=0}^{n} n!/(n-j)! / a^j, summed in log space (no underflow
    # when n >> a, i.e. deep saturation, nor when a >> n)
    j = np.arange(n, dtype=float)
    logt = np.concatenate(([0.0], np.cumsum(np.log(n - j) - math.log(a))))
    mx = float(logt.max())
    log_inv_b = mx + math.log(float(np.exp(logt - mx).sum()))
    x = -math.expm1(-log_inv_b) / dq
    r = n / x - z
    return ClosedLoop(n, float(x), float(r + d * (c - 1) / c), (float(r + d * (c - 1) / c),),
                      (float(x * d / c),))


@dataclass(frozen=True)
class Bottleneck:
    """The station that saturates first: its index, the throughput ceiling
    X_max = cores / demand, and the balanced-bound knee N* (clients)."""

    index: int
    capacity: float
    knee: float


def bottleneck(think: float, demands: Sequence[float],
               cores: Sequence[int] | None = None) -> Bottleneck:
    """Balanced-bound analysis of a closed loop: X(N) <= min(N / (Z + D), X_max),
    X_max = c_b / D_b for the station b with the largest demand per core; the
    two bounds cross at N* = (Z + sum D) X_max."""
    d = np.array([_check("demand", x) for x in demands], dtype=float)
    c = np.ones(len(d)) if cores is None else np.asarray(cores, dtype=float)
    if len(d) == 0 or c.shape != d.shape or np.any(c < 1):
        raise InputError("need one demand and a core count >= 1 per station", field="demands")
    per = d / c
    b = int(np.argmax(per))
    cap = math.inf if per[b] == 0 else 1.0 / per[b]
    return Bottleneck(b, cap, (_check("think", think) + float(d.sum())) * cap)


@dataclass(frozen=True)
class BurstWait:
    """Wait of a request in a burst: mean, standard deviation, and the time
    the whole burst takes to drain."""

    mean: float
    std: float
    drain: float


def aligned_burst(n: int, work: float, cores: int = 1, cv2: float = 0.0) -> BurstWait:
    """N requests arriving together, each ``work`` of serial work, served in
    arrival order by ``cores`` servers. The request in position k (uniform on
    0..N-1) waits for the floor(k / c) rounds ahead of it: mean (N-1) w / (2c).
    Its variance is the position's, w^2 (N^2-1) / (12 c^2), plus the sum of
    the services ahead of it with squared coefficient of variation ``cv2``:
    cv2 w^2 (N-1) / (2 c^2) (continuous approximation for c > 1)."""
    if int(n) != n or n < 1:
        raise InputError(f"burst size must be an integer >= 1, got {n!r}", field="connections")
    w = _check("work", work)
    c = int(cores)
    if c < 1:
        raise InputError(f"cores must be >= 1, got {cores!r}", field="cores")
    var = w * w * ((n * n - 1) / 12.0 + _check("cv2", cv2) * (n - 1) / 2.0) / (c * c)
    return BurstWait((n - 1) * w / (2.0 * c), math.sqrt(var), n * w / c)


@dataclass(frozen=True)
class PeriodicWait:
    """Wait of a burst among periodic bursts at independent uniform phases:
    mean and standard deviation of the work found queued when it arrives."""

    mean: float
    std: float


_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)


def periodic_burst_wait(sources: int, work: float, period: float) -> PeriodicWait:
    """N*D/D/1: ``sources`` periodic streams, each bringing ``work`` once every
    ``period`` at its own phase, phases independent and uniform; one server
    working at rate 1 (a c-core pool: work per burst / c). The wait of a burst
    (the work queued when it arrives) seen over all phases, by the Benes
    formula in the form of Roberts & Virtamo (1991): with M = N - 1 other
    sources, D = period / work and u = (n - x) / D,

        P(W > x w) = sum_{n = floor(x)+1}^{M} C(M, n) u^n (1 - u)^(M - n)
                     (D - M + x) / (D - n + x),

    for the load rho = N work / period <= 1. At rho = 1 it stays finite
    (0.25 w for 2 sources, 4/9 w for 3, 1.009 w for 7): the workload is
    periodic and empties once a period. Mean and second moment by
    Gauss-Legendre quadrature on each unit interval of x (the tail is a
    polynomial there), so the result is deterministic and smooth in the
    inputs; exact for 1 source (no wait)."""
    n_src = int(sources)
    if n_src != sources or n_src < 1:
        raise InputError(f"sources must be an integer >= 1, got {sources!r}", field="sources")
    w = _check("work", work)
    t = _check("period", period, positive=True)
    if n_src * w > t * (1.0 + 1e-9):
        raise InputError(f"periodic load {n_src * w / t:.4g} > 1: the queue would grow "
                         "without bound", field="period")
    m = n_src - 1
    if m == 0 or w == 0.0:
        return PeriodicWait(0.0, 0.0)
    d = max(t / w, float(n_src))
    ns = np.arange(1, m + 1, dtype=float)
    logc = np.array([math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1)
                     for k in range(1, m + 1)])
    m1 = m2 = 0.0
    for j in range(m):                       # x in [j, j + 1): terms n >= j + 1
        x = j + 0.5 * (_GL_X + 1.0)
        u = (ns[None, j:] - x[:, None]) / d
        with np.errstate(divide="ignore"):
            logt = (logc[None, j:] + ns[None, j:] * np.log(u)
                    + (m - ns[None, j:]) * np.log1p(-u))
        tail = (np.exp(logt) * (d - m + x[:, None]) / (d - ns[None, j:] + x[:, None])).sum(1)
        m1 += 0.5 * float((_GL_W * tail).sum())
        m2 += float((_GL_W * x * tail).sum())        # 2 int x P dx, times 1/2 for the interval
    var = max(m2 - m1 * m1, 0.0)
    return PeriodicWait(m1 * w, math.sqrt(var) * w)


def wakeup_delay(wake: float, rate: float, spin: float) -> float:
    """Expected wake-up cost of one message: ``wake`` times the probability that
    the receiving node saw no message in the last ``spin`` (Poisson arrivals at
    ``rate``): wake x exp(-rate x spin)."""
    return _check("wake", wake) * math.exp(-_check("rate", rate) * _check("spin", spin))


@dataclass(frozen=True)
class TimerLoad:
    """Timer-driven connections on a core pool.

    offered / throughput: request rates; latency: mean response (queueing +
    service, no network); saturated: the pool can't keep up and the
    connections fall back to a closed loop; utilization: per core."""

    offered: float
    throughput: float
    latency: float
    utilization: float
    saturated: bool


def superposed_ca2(n_streams: int) -> float:
    """Squared coefficient of variation of inter-arrivals for n superposed
    periodic streams with independent phases: 0 for one stream, -> 1 (Poisson)
    as n grows. 1 - 1/n is the stationary-interval value for equal rates."""
    if n_streams < 1:
        raise InputError(f"streams must be >= 1, got {n_streams!r}", field="connections")
    return 1.0 - 1.0 / n_streams


def timer_driven(connections: int, interval: float, service: float, cores: int = 1,
                 cs2: float = 1.0, rho_max: float = 0.98, aligned: bool = False) -> TimerLoad:
    """N connections each sending every ``interval`` to a c-core FCFS pool.

    Open regime (rho < rho_max): throughput = N / interval, latency from
    :func:`pool_fcfs` with ca^2 = :func:`superposed_ca2` (N). Past rho_max the
    open formula is meaningless (the queue would grow without bound) but a
    connection can't send while it waits, so we solve the closed loop with
    the interval as think time and take the larger of the two latencies at
    the boundary -- completed = min(offered, capacity).

    ``aligned``: the connections start together, so their timers fire in
    phase and every interval brings a burst of N requests. A burst drains
    through c cores in N s / c; the mean request waits for half of the
    others: Wq = (N - 1) s / (2 c). The burst must drain within the interval
    (N s / c < interval), else the pool is saturated as above.
    """
    n = int(connections)
    t = _check("interval", interval, positive=True)
    s = _check("service", service, positive=True)
    if n < 1:
        raise InputError(f"connections must be >= 1, got {connections!r}", field="connections")
    lam = n / t
    rho = lam * s / cores
    if rho < rho_max:
        if aligned:
            wq = (n - 1) * s / (2.0 * cores)
            return TimerLoad(lam, lam, wq + s, rho, False)
        m = pool_fcfs(lam, s, cores, cs2=cs2, ca2=superposed_ca2(n))
        return TimerLoad(lam, lam, m.response, rho, False)
    cl = closed_loop(n, t, [s], [cores])
    # at the boundary the open queue is already long; never report less
    lam_b = rho_max * cores / s
    open_b = pool_fcfs(lam_b, s, cores, cs2=cs2, ca2=superposed_ca2(n)).response
    lat = max(cl.response, open_b)
    x = min(lam, n / (t + lat) if lat > cl.response else cl.throughput, cores / s)
    return TimerLoad(lam, x, lat, x * s / cores, True)


# --------------------------------------------------------------------------
# network
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class NetworkStack:
    """Per-message network cost: ``delay`` of latency (wire + kernel + NIC,
    not using the modelled CPU) and ``cpu_per_msg`` of CPU on the node."""

    delay: float
    cpu_per_msg: float = 0.0

    def latency(self, messages: int) -> float:
        return messages * self.delay

    def cpu(self, messages: int) -> float:
        return messages * self.cpu_per_msg


# --------------------------------------------------------------------------
# replicated request paths
# --------------------------------------------------------------------------

def quorum_wait(followers: int, k: int, lam: float, service: float,
                round_trip: float = 0.0) -> float:
    """Mean time for the leader to collect k of n follower replies.

    Each follower is an M/M/1 queue (rate 1/service) fed with every forked
    request (rate lam). The order statistic of the n correlated responses is
    bracketed by :func:`fork_join_bounds`; we take the midpoint and add the
    fixed round trip to the followers.
    """
    if followers == 0 or k == 0:
        return 0.0
    b = fork_join_bounds(followers, k, lam, 1.0 / _check("service", service, positive=True))
    return round_trip + 0.5 * (b.lower + b.upper)


def any_replica_stations(demand: float, replicas: int) -> list[float]:
    """Reads served by any of r replicas, spread evenly: r stations of demand D/r."""
    if int(replicas) != replicas or replicas < 1:
        raise InputError(f"replicas must be an integer >= 1, got {replicas!r}", field="replicas")
    return [demand / replicas] * int(replicas)


# --------------------------------------------------------------------------
# core pools
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class PoolMetrics:
    utilization: float     # per core
    waiting: float         # mean time before / beyond service
    response: float        # waiting + mean service


def pool_fcfs(lam: float, service: float, cores: int = 1, cs2: float = 1.0,
              ca2: float = 1.0) -> PoolMetrics:
    """G/G/c FCFS, Allen-Cunneen: Wq = (ca^2 + cs^2)/2 x Wq(M/M/c)."""
    s = _check("service", service, positive=True)
    lam = _check("lam", lam)
    m = mmc(lam, 1.0 / s, int(cores))
    wq = 0.5 * (ca2 + cs2) * m.waiting_time
    return PoolMetrics(m.utilization, wq, wq + s)


def pool_ps(lam: float, service: float, cores: int = 1) -> PoolMetrics:
    """Processor sharing on c cores (c = 1: M/G/1-PS, E[S]/(1-rho), insensitive)."""
    s = _check("service", service, positive=True)
    lam = _check("lam", lam)
    m = mmc(lam, 1.0 / s, int(cores))
    return PoolMetrics(m.utilization, m.response_time - s, m.response_time)


def pool_priority(lams: Sequence[float], service: Sequence[float], service2: Sequence[float],
                  cores: int = 1, preemptive: bool = False) -> list[PoolMetrics]:
    """Per-class means (class 0 highest) of a priority core pool.

    c = 1: Cobham (non-preemptive) or preemptive-resume, exact for M/G/1.
    c > 1: Bondi & Buzen (1984): solve one server c times as fast, scale its
    waits by Wq(M/M/c)/Wq(M/M/1 at c mu) for the pooled load.
    """
    lam = np.asarray(lams, dtype=float)
    s1 = np.asarray(service, dtype=float)
    s2 = np.asarray(service2, dtype=float)
    c = int(cores)
    if c < 1:
        raise InputError(f"cores must be >= 1, got {cores!r}", field="cores")
    fast1, fast2 = s1 / c, s2 / (c * c)
    f = mg1_priority_preemptive_resume if preemptive else mg1_priority_nonpreemptive
    pm = f(lam, fast1, fast2)
    scale = 1.0
    if c > 1:
        lt = float(lam.sum())
        es = float((lam * s1).sum() / lt) if lt > 0 else float(s1.mean())
        wq_c = mmc(lt, 1.0 / es, c).waiting_time
        wq_1 = mmc(lt, c / es, 1).waiting_time
        scale = wq_c / wq_1 if wq_1 > 0 else 1.0
    # waiting beyond the fast server's service, then the real service time
    wait = (pm.response_time - fast1) * scale
    return [PoolMetrics(float(pm.utilization.sum()), float(w), float(w + si))
            for w, si in zip(wait, s1)]


# --------------------------------------------------------------------------
# overheads and contention
# --------------------------------------------------------------------------

def switch_cost(model: str, connections: int, stages: int, cores: int,
                thread_switch: float, coroutine_switch: float,
                thread_fixed: float = 0.0) -> float:
    """CPU per request spent handing a request between its stages.

    thread model: one kernel thread per stage per connection, so each handoff
    is a kernel context switch: a fixed part (``thread_fixed``: wake-up, run
    queue, register and stack switch) plus a part that grows with the runnable
    threads sharing a core (cache/TLB refill, run-queue work):
    stages x (thread_fixed + thread_switch x max(1, stages x connections / cores)).
    coroutine model: a user-space switch of constant cost per stage.
    """
    if model == "thread":
        threads_per_core = stages * connections / cores
        return stages * (thread_fixed + thread_switch * max(1.0, threads_per_core))
    if model == "coroutine":
        return stages * coroutine_switch
    raise InputError(f"{model!r} is not allowed; allowed: thread, coroutine", field="model")


def contention_factor(conns_per_core: float, kappa: float) -> float:
    """Service-time inflation 1 + kappa x connections per core."""
    return 1.0 + kappa * conns_per_core


def scaling_factor(cores: int, multi: float, sigma: float, kappa: float) -> float:
    """Per-request cost multiplier on c cores for a runtime that shares state
    between cores (work stealing): 1 on one core; otherwise
    (1 + multi) (1 + sigma (c-1) + kappa c (c-1)) -- a fixed multi-thread
    penalty (atomics, wake-ups) and the USL serial and coherency terms."""
    if cores <= 1:
        return 1.0
    return (1.0 + multi) * (1.0 + sigma * (cores - 1) + kappa * cores * (cores - 1))


# --------------------------------------------------------------------------
# closed loop with low-variance service
# --------------------------------------------------------------------------

def closed_loop_scv(population: int, think: float, demands: Sequence[float],
                    cores: Sequence[int] | None = None, scv: float = 1.0) -> ClosedLoop:
    """Approximate MVA for one class whose FCFS stations have service times
    with squared coefficient of variation ``scv`` (1: exponential, exactly
    :func:`closed_loop`; 0: a constant code path).

    An arriving customer finds Q(n-1) customers at a station, one of them in
    service with probability U(n-1); that one has a mean residual service of
    (1 + scv)/2 x D rather than D (Reiser's residual-life correction):
    R_i(n) = D_i (1 + Q_i(n-1) - U_i(n-1)) + U_i(n-1) D_i (1 + scv)/2.
    X(n) = n / (Z + sum R_i(n)), so Little's law holds over the loop; X never
    exceeds the smallest cores/D_i (where the correction would overshoot, the
    busiest station is held at that ceiling). Multi-core stations are folded in as in
    :func:`seidmann`.
    """
    n_pop, d, c, dq, z_total = _loop_inputs(population, think, demands, cores)
    s = _check("scv", scv)
    q = np.zeros(len(d))
    u = np.zeros(len(d))
    r = np.zeros(len(d))
    x = 0.0
    x_max = float(np.min(1.0 / dq)) if len(d) and np.all(dq > 0) else math.inf
    b = int(np.argmax(dq)) if len(d) else 0
    for n in range(1, n_pop + 1):
        r = dq * (1.0 + q - u) + u * dq * (1.0 + s) / 2.0
        x = n / (z_total + r.sum()) if z_total + r.sum() > 0 else math.inf
        if x > x_max:
            # the correction overshoots near saturation: the busiest station
            # cannot serve more than cores/D; its residence takes the rest of
            # the cycle (Little's law: n = X (Z + sum R))
            x = x_max
            r[b] = n / x - z_total - (r.sum() - r[b])
        q = x * r
        u = np.minimum(x * dq, 1.0)
    return _loop_result(n_pop, x, r, d, c)


__all__ += ["closed_loop_scv"]
