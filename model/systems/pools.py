"""Core-pool and client blocks shared by the systems' models (threads, coroutines).

Pure functions of plain numbers (times in one unit chosen by the caller), in
the style of :mod:`model.blocks`; each has its per-event form in
``tests/systems/test_pools.py``, where a small simulation holds the mean-value
form to it.

* :func:`scheduler_burst` -- a burst of N requests (timers in phase) drained
  by c per-core schedulers, one awake and the other c - 1 joining after a
  wake-up delay: the coroutine runtime's one scheduler per core. Below the
  wake-up the burst drains on one core, in arrival order; a burst that lasts
  longer is shared by every core, so the wait per request ahead falls from
  w to w / c and latency grows slowly with connections.
* :func:`tick_cycle` -- a connection that sends on a timer and has at most
  one request outstanding skips the ticks that pass while its reply is out:
  its cycle is the interval times E[ceil(R / interval)] (at least one).
  This is what keeps a timer-driven population from collapsing: a slow
  server sees fewer sends, not more queued ones.
* :func:`saturated_latency` -- a server that drains at most X requests a
  unit: the latency at which the skipped ticks bring the N connections'
  sends down to X (Little's law on the cycle, N = X E[cycle]).
* :func:`first_tick_setup` -- a run whose N connections open together and
  send at once: the first tick's requests also wait for the server's
  one-off set-up of the connections ahead of them (serial, ``setup`` each).
  Paid once in T ticks, it adds little to the mean (a (N-1) / 2T) and much
  to the std (a N / sqrt(3T)): a rare long wait, larger where a run has
  fewer ticks (100 ms sends) and growing with N.
* :func:`mmc_priority` -- classes of Poisson arrivals sharing one
  exponential service time on c cores, non-preemptive (Cobham with Erlang's
  C, via :func:`model.blocks.pool_priority`) or preemptive-resume (each top
  group an M/M/c queue of its own): exact means, checked against the closed
  forms and a SimPy simulation in ``tests/systems/test_priority_pool.py``.
* :func:`burst_priority` -- non-preemptive priority over c cores fed by
  periodic class bursts at independent phases: the means by work
  conservation over the top classes (Benes' N*D/D/1 wait for each group),
  the std from the position in the own burst and a wait behind higher
  classes that is zero unless the bursts meet; checked against a SimPy
  simulation of the bursts (means within 12 %, std within 20 %).
* :func:`read_path_stations` -- the stations a replicated read visits, as
  core pools and serial sections for a closed loop: one node's core pool
  (unreplicated), any of r replicas' pools (a read that skips the log), or a
  leader's log (Raft): the leader's core pool for the read and the
  replication messages (the entry out and the ack back for each follower),
  each follower's pool for its side of them, and optionally each node's
  *serial* log append. The quorum round trip is the caller's delay.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

from scipy.special import gammaincc

from model.blocks import BurstWait, periodic_burst_wait, pool_priority
from model.closed_forms import erlang_c
from model.errors import InputError

__all__ = ["scheduler_burst", "random_wake_burst", "tick_cycle", "saturated_latency",
           "first_tick_setup",
           "ClassWait", "mmc_priority", "burst_rounds", "burst_priority",
           "PathStations", "read_path_stations"]

WAKE_NODES = 16   # quadrature points over the wake-up's distribution


def scheduler_burst(n: int, work: float, cores: int, wake: float, cv2: float = 0.0) -> BurstWait:
    """Wait of a request in a burst of ``n`` requests of serial work ``work``
    taken in arrival order by ``cores`` schedulers, one running at 0 and the
    others free from ``wake`` on (an idle core's wake-up: it joins when work
    queues for it). Request k starts when the earliest scheduler is free.

    Mean and variance of the start time over the burst's positions, plus the
    variability of the services ahead of it on its scheduler (squared
    coefficient of variation ``cv2``): cv2 w^2 x (services ahead on its core).
    ``drain`` is when the last request finishes. With one core, or a wake-up
    longer than the burst, this is :func:`model.blocks.aligned_burst`."""
    if int(n) != n or n < 1:
        raise InputError(f"burst size must be an integer >= 1, got {n!r}", field="connections")
    c = int(cores)
    if c < 1:
        raise InputError(f"cores must be >= 1, got {cores!r}", field="cores")
    if not (work >= 0 and wake >= 0 and cv2 >= 0):
        raise InputError("work, wake and cv2 must be >= 0", field="work")
    free = [(0.0, 0, 0)] + [(float(wake), i, 0) for i in range(1, c)]   # (free at, core, served)
    heapq.heapify(free)
    starts, ahead = [], []
    drain = 0.0
    for _ in range(int(n)):
        t, i, k = heapq.heappop(free)
        starts.append(t)
        ahead.append(k)
        drain = max(drain, t + work)
        heapq.heappush(free, (t + work, i, k + 1))
    m = sum(starts) / n
    var = sum((s - m) ** 2 for s in starts) / n + cv2 * work * work * sum(ahead) / n
    return BurstWait(m, math.sqrt(var), drain)


def random_wake_burst(n: int, work: float, cores: int, mean_wake: float,
                      cv2: float = 0.0) -> BurstWait:
    """:func:`scheduler_burst` with a wake-up that varies from burst to burst:
    exponential with mean ``mean_wake`` (an idle core's exit from its sleep
    state and the wake-up call), common to the burst's idle cores. Mean and
    variance over the wake-up's distribution (midpoint quadrature of its
    quantiles, ``WAKE_NODES`` points): a burst whose helpers wake late
    spreads its latencies further, so the std grows faster than the mean."""
    if mean_wake <= 0 or cores <= 1:
        return scheduler_burst(n, work, cores, max(mean_wake, 0.0), cv2)
    m1 = m2 = drain = 0.0
    for i in range(WAKE_NODES):
        wake = -mean_wake * math.log(1.0 - (i + 0.5) / WAKE_NODES)
        b = scheduler_burst(n, work, cores, wake, cv2)
        m1 += b.mean / WAKE_NODES
        m2 += (b.std ** 2 + b.mean ** 2) / WAKE_NODES
        drain += b.drain / WAKE_NODES
    return BurstWait(m1, math.sqrt(max(m2 - m1 * m1, 0.0)), drain)


def _ceil_mean(mean: float, std: float, interval: float) -> float:
    """E[max(1, ceil(R / interval))] for R gamma-distributed with this mean and std."""
    if mean <= 0:
        return 1.0
    if std <= 0:
        return max(1.0, math.ceil(mean / interval - 1e-12))
    shape = (mean / std) ** 2
    scale = std * std / mean
    total, k = 1.0, 1
    while True:
        p = float(gammaincc(shape, k * interval / scale))
        total += p
        if p < 1e-9 or k > 100000:
            return total
        k += 1


def tick_cycle(interval: float, mean: float, std: float) -> float:
    """Mean time between a timer-driven connection's sends: the interval times
    E[ceil(R / interval)] (at least one tick), R its latency (gamma with this
    mean and std): a tick that passes while the reply is out is skipped."""
    if interval <= 0:
        raise InputError(f"interval must be > 0, got {interval!r}", field="send_interval_ms")
    return interval * _ceil_mean(mean, std, interval)


def saturated_latency(n: int, interval: float, capacity: float, cv: float,
                      floor: float) -> float:
    """Mean latency R at which N timer-driven connections that skip late ticks
    offer exactly ``capacity`` requests a unit: N / capacity = tick_cycle(R),
    R's std ``cv`` x R. ``floor`` bounds R from below (the latency had the
    server kept up). Little's law on the cycle: past capacity each added
    connection adds 1/capacity to the cycle, so latency grows linearly."""
    target = n / capacity
    if tick_cycle(interval, floor, cv * floor) >= target:
        return floor

    def f(r: float) -> float:
        return tick_cycle(interval, r, cv * r) - target

    hi = max(floor, interval)
    while f(hi) < 0:
        hi *= 2.0
    # scipy.optimize is imported here: every '--runs' command imports the
    # kinds, and with them this module (tests/cli: 0.3 s of import)
    from scipy.optimize import brentq
    return float(brentq(f, floor, hi, xtol=1e-6 * hi))


def first_tick_setup(n: int, setup: float, ticks: float) -> tuple[float, float]:
    """What a run's start adds to the mean and the variance of its latencies.

    The N connections open together and send their first request at once;
    the server sets the connections up one at a time (``setup`` each: the
    accept, the connection's thread or coroutine and its buffers), so the
    first request of the connection set up k-th (k uniform on 0..N-1) waits
    an extra E = k ``setup``; every later tick is unaffected. Each connection
    sends ``ticks`` requests in the run (at least one), so a share 1 / ticks
    of all latencies carry E, independent of their other waits (the set-up
    order is taken as unrelated to the order in a later burst):

    * mean added: E[E] / T = setup (N - 1) / (2 T);
    * variance added: E[E^2] / T - (E[E] / T)^2, with
      E[E^2] = setup^2 (N - 1)(2N - 1) / 6.

    Returns (mean added, variance added)."""
    if int(n) != n or n < 1:
        raise InputError(f"connections must be an integer >= 1, got {n!r}", field="connections")
    if not (setup >= 0 and ticks > 0):
        raise InputError("setup must be >= 0 and ticks > 0", field="setup")
    t = max(float(ticks), 1.0)
    e1 = setup * (n - 1) / 2.0
    e2 = setup * setup * (n - 1) * (2 * n - 1) / 6.0
    return e1 / t, max(e2 / t - (e1 / t) ** 2, 0.0)


# --------------------------------------------------------------------------
# priority disciplines over a pool of cores
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ClassWait:
    """Wait of one priority class before its service starts: mean, standard
    deviation, and the probability that it waits at all."""

    mean: float
    std: float
    p_wait: float


def mmc_priority(lams: Sequence[float], service: float, cores: int,
                 preemptive: bool = False) -> list[ClassWait]:
    """Per class (class 0 highest) of an M/M/c pool whose classes share one
    exponential service time ``service``: exact means.

    * non-preemptive (Cobham, with the M/M/c waiting probability):
      W_k = C(c, a) (E[S] / c) / ((1 - sigma_{k-1}) (1 - sigma_k)),
      sigma_k the load of classes 0..k, C Erlang's C;
    * preemptive-resume: classes 0..k never see the lower ones, so they form
      an M/M/c FCFS queue of their own (equal service: the order within them
      does not change their number in system); class k's time in system is
      what adding it to classes 0..k-1 adds, T_k = (L_k - L_{k-1}) / lam_k.
      ``mean`` is then the time in system minus E[S] (the delay a preemption
      adds, spread over the whole stay).

    The std is that of a wait which is 0 with probability 1 - P(wait) and
    exponential otherwise (exact for FCFS M/M/c; a stated approximation for
    the classes)."""
    c = int(cores)
    s = float(service)
    if c < 1 or not s > 0:
        raise InputError("cores must be >= 1 and service > 0", field="cores")
    lam = [float(x) for x in lams]
    if any(x < 0 for x in lam):
        raise InputError("arrival rates must be >= 0", field="lams")
    out: list[ClassWait] = []
    cum = 0.0
    n_prev = 0.0
    # the non-preemptive means are model.blocks.pool_priority's (Bondi-Buzen
    # scaling of Cobham, exact for equal exponential classes): one place
    nonpre = [] if preemptive else pool_priority(lam, [s] * len(lam), [2.0 * s * s] * len(lam), c)
    for lk in lam:
        cum += lk
        rho = cum * s / c
        if rho >= 1.0:
            raise InputError(f"load {rho:.4g} of the classes up to this one is >= 1: the "
                             "queue would grow without bound", field="lams")
        p_all = erlang_c(cum * s, c)
        if preemptive:
            n_k = cum * (s + p_all * s / (c * (1.0 - rho)))     # Little: L = lam T(M/M/c)
            t_k = (n_k - n_prev) / lk if lk > 0 else s + p_all * s / (c * (1.0 - rho))
            n_prev = n_k
            w = max(t_k - s, 0.0)
            pw = p_all
        else:
            w = nonpre[len(out)].waiting
            pw = erlang_c(sum(lam) * s, c)
        pw = min(max(pw, 1e-12), 1.0)
        out.append(ClassWait(w, w * math.sqrt(max(2.0 / pw - 1.0, 0.0)), pw))
    return out


def burst_rounds(n: int, cores: int) -> tuple[float, float]:
    """Mean and variance of the rounds floor(j / c) ahead of position j of a
    burst of n requests on c cores, j uniform on 0..n-1."""
    r = [j // cores for j in range(n)]
    m = sum(r) / n
    return m, sum((x - m) ** 2 for x in r) / n


def burst_priority(classes: int, n: int, service: float, cores: int,
                   period: float) -> list[ClassWait]:
    """Non-preemptive priority over ``cores`` cores fed by periodic bursts: every
    ``period`` each of ``classes`` classes (class 0 highest) sends ``n``
    requests of CPU ``service`` at once, at a phase of its own (independent,
    uniform). The load K n s / (c T) must be <= 1.

    Mean, per class k, by work conservation over the top classes: classes
    0..k never wait for lower ones (but for a request in service), so among
    themselves they form K' = k + 1 periodic bursts whose mean wait is that of
    first-come-first-served -- the work a burst finds from the others
    (:func:`model.blocks.periodic_burst_wait`, Benes; the pool as one server
    c times as fast) plus the rounds ahead in its own burst, G(K'). Class k's
    mean is what it adds to the group: (k+1) G(k+1) - k G(k). Plus the
    non-preemptive part: a burst that finds lower classes in service waits
    for the first of c to finish (s / (c + 1)), with the probability that
    the pool is busy with lower classes (their load).

    Std: the position in its own burst (variance s^2 Var(rounds)) plus the
    wait behind higher classes, taken as 0 with probability 1 - p and
    exponential otherwise, p the chance that the class's burst meets
    another burst in the period (each of the k higher ones with probability
    2 B / T, B = n s / c; 1 at load 1)."""
    k_all = int(classes)
    c = int(cores)
    s = float(service)
    t = float(period)
    if k_all < 1 or int(n) < 1 or c < 1 or not s > 0 or not t > 0:
        raise InputError("classes, n, cores >= 1 and service, period > 0", field="classes")
    b = n * s / c
    if k_all * b > t * (1.0 + 1e-9):
        raise InputError(f"burst load {k_all * b / t:.4g} > 1", field="period")
    r_mean, r_var = burst_rounds(int(n), c)
    own = s * r_mean

    def group(k: int) -> float:           # FCFS mean wait of the top k classes' bursts
        return periodic_burst_wait(k, b, t).mean + own if k > 0 else 0.0

    out = []
    g_prev = 0.0
    overlap = min(1.0, 2.0 * b / t)
    for k in range(1, k_all + 1):
        g = group(k)
        mean_k = k * g - (k - 1) * g_prev
        g_prev = g
        lower = min(1.0, (k_all - k) * b / t)
        mean_k += lower * s / (c + 1)
        behind = max(mean_k - own, 0.0)
        p = 1.0 - (1.0 - overlap) ** (k - 1) if k > 1 else 0.0
        p = max(p, lower)
        v_behind = behind * behind * (2.0 / p - 1.0) if p > 0 else 0.0
        var = s * s * r_var + v_behind
        out.append(ClassWait(mean_k, math.sqrt(var), max(p, 1.0 if own > 0 else 0.0)))
    return out


@dataclass(frozen=True)
class PathStations:
    """Stations of one read for a closed loop (:func:`model.blocks.closed_loop_scv`):
    demand per read, cores of each station and a name (for the bottleneck)."""

    demands: tuple[float, ...]
    cores: tuple[int, ...]
    names: tuple[str, ...]


def read_path_stations(path: str, read: float, cores: int, *, replicas: int = 3,
                       serving: int = 1, msg: float = 0.0,
                       append: float = 0.0) -> PathStations:
    """Who does the work of one read on a replicated store, per read.

    ``path``:

    * ``"single"`` -- one node serves it (unreplicated): its core pool of
      ``cores`` cores, ``read`` of CPU.
    * ``"any"`` -- a read that skips the log, served by one of ``serving``
      replicas (spread evenly): ``serving`` pools of demand read / serving.
    * ``"log"`` -- a read ordered through a leader's log (Raft): the leader's
      core pool does the read itself (``read``) and handles the replication
      messages, the entry sent to and the ack taken from each of the
      ``replicas`` - 1 followers (2 (r - 1) ``msg``), in parallel on its
      ``cores`` like any other network work of the node; each follower's pool
      takes the entry and sends the ack (2 ``msg``). With ``append`` > 0 each
      node also has a *serial* log loop that appends the entry (``append``
      per read, one core whatever the node's cores).

    Times in one unit chosen by the caller."""
    c = int(cores)
    if c < 1:
        raise InputError(f"cores must be an integer >= 1, got {cores!r}", field="cores")
    if not (read >= 0 and msg >= 0 and append >= 0):
        raise InputError("read, msg and append must be >= 0", field="read")
    if path == "single":
        return PathStations((float(read),), (c,), ("server pool",))
    if path == "any":
        r = int(serving)
        if r < 1:
            raise InputError(f"serving replicas must be >= 1, got {serving!r}", field="replicas")
        return PathStations((read / r,) * r, (c,) * r,
                            tuple(f"replica {i + 1} pool" for i in range(r)))
    if path != "log":
        raise InputError(f"unknown read path {path!r} (single, any, log)", field="path")
    f = int(replicas) - 1
    if f < 0:
        raise InputError(f"replicas must be >= 1, got {replicas!r}", field="replicas")
    d = [float(read) + 2 * f * msg] + [2 * msg] * f
    k = [c] * (f + 1)
    n = ["leader pool"] + [f"follower {i + 1} pool" for i in range(f)]
    if append > 0:
        d += [float(append)] * (f + 1)
        k += [1] * (f + 1)
        n += ["leader log loop"] + [f"follower {i + 1} log loop" for i in range(f)]
    return PathStations(tuple(d), tuple(k), tuple(n))
