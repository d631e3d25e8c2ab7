"""Seeded event forms of the other reference systems (Morphling, async runtimes,
threads vs coroutines, coroutine priorities).

The analytic models in :mod:`model.systems` solve each system by mean values
(MVA with Reiser's residual correction, burst positions, Benes' formula,
Cobham); these engines run the same mechanisms request by request, from the
same profile and the same per-request costs, so that the two forms can be
compared on every shared row (:mod:`sim.systems_rows`). Three engines:

* :func:`closed_loop` -- N clients, each with one request outstanding, whose
  request walks a list of *legs*: a pure delay, a callable delay (a hop whose
  cost depends on the time, e.g. an idle node's wake-up), a station (a pool
  of identical servers taking requests first come first served), or work
  left at a station that the request does not wait for (a second follower's
  ack). Morphling (C and Go) and the runtimes' unlimited curves.
* :func:`timer_server` -- N connections whose timers fire together every
  interval; a connection skips the ticks that pass while its reply is out.
  The server is either per-core schedulers that run a request to completion
  (coroutines: one core awake, the others joining a burst after a wake-up)
  or a kernel run queue that puts each woken stage thread at its back
  (threads: the stages of the burst's requests interleave).
* :func:`priority_pool` -- connections in priority classes on c cores,
  non-preemptive priority, sending on spread ticks or in class bursts.

Every engine takes a :class:`numpy.random.Generator`; the same seed gives the
same result.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["LoopResult", "Station", "closed_loop", "TimerResult", "timer_server",
           "priority_pool", "limited_bursts"]


@dataclass(frozen=True)
class LoopResult:
    """Requests per unit time and mean / std of a request's cycle (its latency:
    a client sends the next request when the reply arrives)."""

    throughput: float
    latency_mean: float
    latency_std: float
    requests: int


@dataclass(frozen=True)
class Station:
    """A pool of ``cores`` identical servers, first come first served."""

    name: str
    cores: int


def closed_loop(n: int, legs: Callable[[int, np.random.Generator], list],
                stations: Sequence[Station], requests: int, rng: np.random.Generator,
                warm: float = 0.2) -> LoopResult:
    """Closed loop of ``n`` clients, ``requests`` requests in all (the first
    ``warm`` share is a warm-up and not counted).

    ``legs(client, rng)`` gives a request's path when it starts, in order:
    a number (a pure delay), a callable ``f(t) -> delay`` (called when the
    request reaches it), ``("st", i, service)`` (queue at station i for
    ``service``) or ``("bg", i, service)`` (leave that work at station i and
    go on at once)."""
    busy = [0] * len(stations)
    queue: list[deque] = [deque() for _ in stations]
    heap: list = []
    seq = 0
    path: list[list] = [[] for _ in range(n)]
    pos = [0] * n
    start = [0.0] * n
    lat: list[float] = []
    done = 0
    t0 = t = 0.0
    warm_n = int(requests * warm)

    def push(time: float, who: int, st: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (time, seq, who, st))

    def serve(time: float, who: int, st: int, service: float) -> None:
        if busy[st] < stations[st].cores:
            busy[st] += 1
            push(time + service, who, st)
        else:
            queue[st].append((who, service))

    def advance(time: float, c: int) -> None:
        """Client c goes on along its path from ``time``."""
        while pos[c] < len(path[c]):
            leg = path[c][pos[c]]
            pos[c] += 1
            if isinstance(leg, tuple):
                kind, st, service = leg
                if kind == "bg":
                    serve(time, -1, st, service)
                    continue
                serve(time, c, st, service)
                return
            d = leg(time) if callable(leg) else float(leg)
            if d > 0:
                push(time + d, c, -1)
                return
        finish(time, c)

    def finish(time: float, c: int) -> None:
        nonlocal done, t0
        done += 1
        if done == warm_n:
            t0 = time
        if done > warm_n:
            lat.append(time - start[c])
        begin(time, c)

    def begin(time: float, c: int) -> None:
        path[c] = legs(c, rng)
        pos[c] = 0
        start[c] = time
        advance(time, c)

    for c in range(n):
        begin(0.0, c)
    while done < requests and heap:
        t, _, who, st = heapq.heappop(heap)
        if st >= 0:                           # a service ends: the next in line starts
            busy[st] -= 1
            if queue[st]:
                nxt, service = queue[st].popleft()
                busy[st] += 1
                push(t + service, nxt, st)
        if who >= 0:
            advance(t, who)
    a = np.asarray(lat)
    span = max(t - t0, 1e-12)
    return LoopResult(len(a) / span, float(a.mean()), float(a.std()), len(a))


@dataclass(frozen=True)
class TimerResult:
    """Requests completed in the run and their latency mean / std."""

    requests: int
    latency_mean: float
    latency_std: float


def timer_server(n: int, interval: float, start: float, end: float, work: Callable,
                 server: str, cores: int, solo: Callable, setup: float, wake: float,
                 rng: np.random.Generator) -> TimerResult:
    """N connections whose timers fire together at ``start``, ``start`` +
    ``interval``, ... until ``end``; each sends on a tick only if its reply
    is back (a late reply skips ticks). A request takes its serial server
    work ``work(rng)`` on one of ``cores`` cores and a delay ``solo(rng)``
    off the server (client, network, the parallel compute, jitter). The
    first request of the connection set up k-th (a random order) also waits
    k x ``setup`` before it reaches the server.

    ``solo`` includes the mean of the request's own work: the latency
    recorded is the reply's time less the request's own work, plus solo.

    ``server``: ``"coroutine"`` -- per-core schedulers taking requests in
    arrival order and running each to completion; core 0 is awake, an idle
    core joins queued work after a wake-up drawn once per tick
    (exponential, mean ``wake``), and parks again when the queue is empty.
    ``"thread"`` -- three stage threads per request, each a third of the
    work, through the burst's one serial section (the analytic form's
    :func:`model.systems.threads.run_queue_burst` drains it on one
    scheduler); a finished stage's successor runs at once while no more
    requests are runnable than there are ``cores``, else it is woken at the
    back of the run queue, behind the other requests' stages (CFS), so a
    large burst's stages interleave."""
    run = _TimerRun(n, work, server, cores, solo, setup, wake, end, rng)
    tick = start
    while tick < end:
        run.push(tick, ("tick",))
        tick += interval
    while run.heap:
        ev = heapq.heappop(run.heap)
        t, kind = ev[0], ev[2]
        if kind == "tick":
            run.tick(t)
        elif kind == "arrive":
            run.arrive(ev[3], ev[4])
        elif kind == "done":
            run.done(t, *ev[3:])
        elif kind == "reply":
            run.out[ev[3]] = False
            if t <= end:
                run.lat.append(t - ev[4])
        else:                                     # a parked core's wake-up is due
            run.waking.discard(ev[3])
        run.dispatch(t)
    a = np.asarray(run.lat)
    return TimerResult(len(a), float(a.mean()) if len(a) else math.nan,
                       float(a.std()) if len(a) else math.nan)


class _TimerRun:
    """State of one :func:`timer_server` run and its event handlers."""

    def __init__(self, n, work, server, cores, solo, setup, wake, end, rng):
        self.n, self.work, self.server, self.cores = n, work, server, cores
        self.solo, self.setup, self.wake, self.end, self.rng = solo, setup, wake, end, rng
        self.heap: list = []
        self.seq = 0
        self.lat: list[float] = []
        self.out = [False] * n                    # a request outstanding
        self.ready: deque = deque()               # (conn, sent, stage, stage work)
        self.servers = cores if server == "coroutine" else 1
        self.idle = list(range(self.servers))     # free schedulers (threads: the serial section)
        self.runnable = 0                         # requests at the server
        self.awake_at = [0.0] + [math.inf] * (self.servers - 1)
        self.rank = np.argsort(rng.permutation(n))   # the order the connections are set up in
        self.first = [True] * n
        self.waking: set[int] = set()

    def push(self, time: float, what: tuple) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, self.seq) + what)

    def tick(self, t: float) -> None:
        if self.server == "coroutine":            # the idle cores' wake-up for this burst
            w0 = self.rng.exponential(self.wake) if self.wake > 0 else 0.0
            for c in range(1, self.servers):
                if c in self.idle:
                    self.awake_at[c] = t + w0
        for conn in range(self.n):
            if not self.out[conn]:
                self.out[conn] = True
                extra = self.setup * float(self.rank[conn]) if self.first[conn] else 0.0
                self.first[conn] = False
                self.push(t + extra, ("arrive", conn, t))

    def arrive(self, conn: int, sent: float) -> None:
        w = self.work(self.rng)
        self.ready.append((conn, sent, 0, w if self.server == "coroutine" else w / 3.0))
        self.runnable += 1

    def done(self, t: float, c: int, conn: int, sent: float, stage: int, w: float) -> None:
        self.idle.append(c)
        self.idle.sort()
        if self.server == "thread" and stage < 2:
            if self.runnable > self.cores:
                self.ready.append((conn, sent, stage + 1, w))      # back of the run queue
            else:
                self.ready.appendleft((conn, sent, stage + 1, w))  # runs at once
        else:
            self.runnable -= 1
            # the request's own work is part of solo (its mean, as the
            # analytic form's client_us carries it): only the waiting counts
            own = w if self.server == "coroutine" else 3.0 * w
            self.push(t + self.solo(self.rng) - own, ("reply", conn, sent))
        if self.server == "coroutine" and c > 0 and not self.ready:
            self.awake_at[c] = math.inf                            # parks again

    def dispatch(self, time: float) -> None:
        while self.ready and self.idle:
            ok = [c for c in self.idle if self.awake_at[c] <= time]
            if not ok:
                c = min(self.idle, key=lambda k: self.awake_at[k])
                if math.isfinite(self.awake_at[c]) and c not in self.waking:
                    self.waking.add(c)            # a parked core joins the queued work
                    self.push(self.awake_at[c], ("wake", c))
                return
            c = ok[0]
            self.idle.remove(c)
            conn, sent, stage, w = self.ready.popleft()
            self.push(time + w, ("done", c, conn, sent, stage, w))


def priority_pool(classes: int, n: int, service: float, cores: int, period: float,
                  bursts: bool, ticks: int, reps: int, rng: np.random.Generator
                  ) -> list[tuple[float, float, int]]:
    """Per class (class 0 highest): (mean, std, count) of the wait before
    service on ``cores`` cores under non-preemptive priority (first come
    first served within a class), every request taking ``service``.

    Every ``period`` each of the ``classes`` x ``n`` connections sends one
    request: at a phase of its own (``bursts`` False: spread ticks), or a
    class's n together at the class's phase (``bursts`` True). Phases are
    uniform and independent, drawn anew for each of ``reps`` runs of
    ``ticks`` periods (the first period is a warm-up)."""
    waits: list[list[float]] = [[] for _ in range(classes)]
    for _ in range(reps):
        if bursts:
            ph = np.repeat(rng.uniform(0.0, period, classes), n)
        else:
            ph = rng.uniform(0.0, period, classes * n)
        cls = np.repeat(np.arange(classes), n)
        arr = (ph[None, :] + period * np.arange(ticks)[:, None]).ravel()
        c_of = np.tile(cls, ticks)
        idx = np.lexsort((c_of, arr))
        _serve_priority(arr[idx], c_of[idx], service, cores, period, waits)
    return [(float(np.mean(w)), float(np.std(w)), len(w)) for w in waits]


def _serve_priority(arr: np.ndarray, cls: np.ndarray, s: float, cores: int,
                    warm: float, waits: list[list[float]]) -> None:
    """Non-preemptive priority over ``cores`` servers of constant time ``s``;
    arrivals sorted by time; waits after ``warm`` appended per class."""
    free = [0.0] * cores                      # when each core is next free
    pending: list = []                        # (class, arrival, seq)
    i, m = 0, len(arr)
    while i < m or pending:
        t_core = min(free)
        if not pending or (i < m and arr[i] <= t_core):
            heapq.heappush(pending, (int(cls[i]), float(arr[i]), i))
            i += 1
            continue
        # a core is free at t_core and requests wait: take every arrival
        # up to the moment it starts, then the highest class
        t_start = max(t_core, pending[0][1]) if pending else t_core
        while i < m and arr[i] <= t_start:
            heapq.heappush(pending, (int(cls[i]), float(arr[i]), i))
            i += 1
        k, a, _ = heapq.heappop(pending)
        t_start = max(t_core, a)
        j = free.index(t_core)
        free[j] = t_start + s
        if a >= warm:
            waits[k].append(t_start - a)


def limited_bursts(groups: int, size: int, period: float, service: float, cores: int,
                   ticks: int, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Mean and std of the wait of requests released by ``groups`` rate
    limiters, each sending ``size`` requests at once every ``period`` at a
    phase of its own, onto ``cores`` servers of constant time ``service``,
    first come first served: the QPS-limited runtime runs, whose client
    cores each release their connections' requests in bursts."""
    waits: list[float] = []
    for _ in range(reps):
        ph = np.repeat(rng.uniform(0.0, period, groups), size)
        arr = np.sort((ph[None, :] + period * np.arange(ticks)[:, None]).ravel())
        w: list[list[float]] = [[]]
        _serve_priority(arr, np.zeros(len(arr), dtype=int), service, cores, period, w)
        waits += w[0]
    return float(np.mean(waits)), float(np.std(waits))
