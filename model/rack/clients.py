"""The closed client loop: threads, send cost, round trips, timeouts and retries.

What it means (the simulators follow this, event by event; docs/model.md):

* ``clients.threads`` threads, each with one request outstanding. A thread
  draws a request (placement decides hit or server), pays the send cost
  (``send_us``, which grows with the threads sharing the client NICs), and
  the packet leaves. A hit comes back ``hit_rtt_us`` later; a miss reaches its
  worker ``miss_rtt_us / 2`` after it left and the reply comes back
  ``miss_rtt_us / 2`` after the worker sent it.
* The wait for a reply ends ``timeout_us`` after the packet left; then the
  thread resends the same request (another send cost) and waits again.
* Which reply completes a request (``clients.retry``):

  - ``"farreach"`` -- FarReach's YCSB client (``DbUdpNative.getNative`` and
    ``putNative`` in LGN520/farreach-public): a reply whose key and type
    match the outstanding request completes it, whichever attempt it
    answers, so a late reply to the first attempt still counts. A reply
    that does not match (a duplicate of an earlier request) is discarded
    and the wait restarts: the client's socket timeout applies to each
    ``recvfrom`` call.
  - ``"strict"`` -- this project's native load generator: every attempt
    has its own id and deadline; only the latest attempt's reply counts.

  Either way, the duplicates still reach their worker and are served.
* A request's latency runs from its first send to the reply, so Little's
  law ``N = X R`` holds for the loop.
* No reply comes back sooner than its round trip: ``hit_rtt_us`` for a hit,
  ``miss_rtt_us`` for a miss (a service can be arbitrarily short, the wire
  and the stacks cannot). With ``retry = "strict"`` and a timeout no longer
  than that, the latest attempt's reply is always late: a thread that draws
  such a request resends it forever, and once every thread has drawn one no
  request completes (:func:`no_completion`). Every solver predicts zero
  goodput there, with this reason, rather than the transient before it.

Mean-value form: :func:`think_us` (the delay part of one request),
:func:`resends_while_late` (retries while a reply is late) and
:func:`free_during_block` (who can still arrive while a worker is blocked).
Per-event form: :func:`reply_completes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .params import ParamDecl

SCENARIO_KEYS = ("clients.threads", "clients.timeout_ms", "clients.retry")

PARAMS = (
    ParamDecl("send_base_us", "us", "client send cost with one thread", lo=0.0),
    ParamDecl("send_per_thread_us", "us/thread",
              "extra send cost per client thread sharing the client machines' NICs", lo=0.0),
    ParamDecl("hit_rtt_us", "us", "client -> switch -> client for a cache hit, besides the send cost",
              lo=0.0),
    ParamDecl("miss_rtt_us", "us",
              "client -> worker -> client wire and stack time for a miss, besides send and service",
              lo=0.0),
)

RETRY_FARREACH = 0      # any attempt's reply completes the request; unmatched replies re-arm
RETRY_STRICT = 1        # only the latest attempt's reply completes it
RETRY_MODES = {"farreach": RETRY_FARREACH, "strict": RETRY_STRICT}


@dataclass(frozen=True)
class ClientSpec:
    threads: int
    timeout_us: float
    retry: int
    send_us: float           # per send, including resends
    hit_rtt_us: float
    miss_rtt_us: float


def send_cost_us(threads: int, base_us: float, per_thread_us: float) -> float:
    """Per-request send cost: grows with the threads sharing client cores and NICs
    (3.6 us at 32 threads, about 7 us at 1024 in the reference notes)."""
    return base_us + per_thread_us * max(threads, 1)


def compile_clients(scenario, pr) -> ClientSpec:
    c = scenario.clients
    return ClientSpec(
        threads=int(c.threads), timeout_us=float(c.timeout_ms) * 1e3,
        retry=RETRY_MODES[c.retry],
        send_us=send_cost_us(c.threads, pr["send_base_us"], pr["send_per_thread_us"]),
        hit_rtt_us=pr["hit_rtt_us"], miss_rtt_us=pr["miss_rtt_us"])


# Mechanism switches for ``python -m sim explain`` (model/explain.py). A finite
# stand-in for "no timeout" keeps every solver's arithmetic finite.
NO_TIMEOUT_US = 1e12        # 11.6 days: no reply is ever that late


def without_timeouts(c: ClientSpec) -> ClientSpec:
    """Clients that never time out, so never resend."""
    return replace(c, timeout_us=max(c.timeout_us, NO_TIMEOUT_US))


def with_threads(c: ClientSpec, threads: int) -> ClientSpec:
    """``threads`` client threads at the same per-send cost (the send cost of
    the original thread count: more threads here means "enough to saturate",
    not busier client NICs)."""
    return replace(c, threads=int(threads))


# ---------------------------------------------------------------- mean-value form
def think_us(c: ClientSpec, hit_ratio: float) -> float:
    """Time of one request outside the workers' queues: the send, and the round
    trip through the switch (a hit) or to a worker and back (a miss)."""
    return c.send_us + hit_ratio * c.hit_rtt_us + (1.0 - hit_ratio) * c.miss_rtt_us


def retry_period_us(c: ClientSpec) -> float:
    """Time from one send to the next while no reply comes: send + timeout."""
    return c.send_us + c.timeout_us


def budget_us(c: ClientSpec) -> float:
    """Longest time at a worker for which a miss's reply beats the timeout."""
    return max(c.timeout_us - c.miss_rtt_us, 0.0)


def resends_while_late(wait_survival, budget: float, period: float, horizon: float) -> float:
    """Resends per request while the reply to its first admitted attempt is late
    (``retry = farreach``): the k-th timer fires if the time at the worker
    exceeds ``budget + (k - 1) period``. ``wait_survival(t)`` = P(time at the
    worker > t) for an array of t; ``horizon`` bounds the time at the worker."""
    if budget >= horizon:
        return 0.0
    k = np.arange(int((horizon - budget) // period) + 1)
    return float(np.sum(wait_survival(budget + k * period)))


def resends_before(budget: float, period: float, held: float) -> float:
    """:func:`resends_while_late` for a time at the worker of exactly ``held``
    (a collapsed worker's full buffer): the timers that fire before it, the
    same count without the array of one timer each (millions of them for a
    large buffer under a microsecond timeout, three quarters of a soak
    scenario's time)."""
    if budget >= held:
        return 0.0
    n = int((held - budget) // period) + 1            # candidates k = 0 .. n - 1
    if budget + (n - 1) * period >= held:              # the last one, as the array version rounds it
        n -= 1
    return float(n)


# ---------------------------------------------------------------- per-event form
def free_during_block(threads, at_worker, asleep, length_us, period_us):
    """Client threads that can reach a worker during one of its blocks of
    ``length_us`` (a WAL switch, a write stop): all but the ``at_worker``
    already queued there and those asleep through the whole block.

    ``asleep`` threads are waiting out a lost request (``X x delay`` by
    Little's law). Timeouts are fixed, so one asleep when the block starts
    wakes within it with probability ``length / period`` and may then come
    back; the rest sleep through it. The simulators need no such term: their
    sleeping threads simply send nothing. Arrays broadcast; at least one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        stays = np.clip(1.0 - np.asarray(length_us, dtype=float) / period_us, 0.0, 1.0)
    return np.maximum(threads - at_worker - asleep * stays, 1.0)


def reply_completes(retry: int, reply_att: int, current_att: int, first_att: int) -> bool:
    """Does a reply to attempt ``reply_att`` complete the client's outstanding
    request, whose attempts are numbered ``first_att .. current_att``?"""
    if retry == RETRY_STRICT:
        return reply_att == current_att
    return reply_att >= first_att


def shortest_reply_us(c: ClientSpec, hit_ratio: float) -> float:
    """The soonest the reply to a request that is not a certain hit can come back
    after its packet left (a hit's when every request is one)."""
    return c.hit_rtt_us if hit_ratio >= 1.0 - 1e-12 else c.miss_rtt_us


def no_completion(c: ClientSpec, hit_ratio: float) -> str | None:
    """Why no request can ever complete, or None when some can.

    Only ``retry = "strict"`` can starve: FarReach's client accepts the reply
    to any attempt, so the first attempt's reply completes the request however
    short the timeout (at the price of resends)."""
    if c.retry != RETRY_STRICT or not math.isfinite(c.timeout_us):
        return None
    shortest = shortest_reply_us(c, hit_ratio)
    if c.timeout_us > shortest:
        return None
    what = "a hit's round trip to the switch" if hit_ratio >= 1.0 - 1e-12 else \
        "a miss's round trip to its worker"
    return (f"timeout {c.timeout_us / 1e3:g} ms is not longer than {what} ({shortest:.3g} us "
            "before any service): with retry = strict only the latest attempt's reply "
            "counts and it always comes too late, so every thread ends up resending one "
            "request forever (zero goodput)")


def storm_packets_per_us(c: ClientSpec) -> float:
    """Packets one thread sends per us while it resends a request that never
    completes: one per send + timeout."""
    return 1.0 / retry_period_us(c)


def is_finite_timeout(timeout_us: float) -> bool:
    return math.isfinite(timeout_us)
