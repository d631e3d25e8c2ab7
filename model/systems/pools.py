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
"""

from __future__ import annotations

import heapq
import math

from scipy.special import gammaincc

from model.blocks import BurstWait
from model.errors import InputError

__all__ = ["scheduler_burst", "random_wake_burst", "tick_cycle", "saturated_latency"]

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
