"""The closed client loop: threads, send cost, round trips, timeouts and retries.

What it means (the simulators follow this, event by event; docs/model.md):

* ``clients.threads`` threads, each with one request outstanding. A thread
  draws a request (placement decides hit or server) and first needs one of
  the ``cores`` of the client machines (``clients.machines`` of
  ``clients.cores`` each) for ``cpu_us`` (exponentially distributed;
  threads wait for a core in FIFO order): the client's own work per send
  (YCSB's key generation and bookkeeping, the packet, the system calls).
  The client machines are a shared resource in the loop: with many threads
  they, not the servers, hold most of the threads (the lab's own diagnosis:
  "more threads makes no sense"). Then it pays the send cost (``send_us``,
  which grows with the threads sharing the client NICs) and the packet
  leaves. Resends need a core too. A hit comes back ``hit_rtt_us`` later; a miss reaches its
  worker ``miss_rtt_us / 2`` after it left and the reply comes back
  ``miss_rtt_us / 2`` after the worker sent it.
* The wait for a reply ends ``timeout_us`` after the packet left; then the
  thread resends the same request (another send cost) and waits again. The
  timeout is the scenario's, but no shorter than the client kernel's timer
  floor (``timer_floor_ms``): FarReach's client times its ``recvfrom`` with
  ``SO_RCVTIMEO``, which Linux rounds up to whole scheduler ticks (jiffies)
  and fires on a tick, so a "1 ms" timeout waits a few ms. The lab saw no
  resend storm at 1 ms (F045, F053, F082: 1,500 false positives per 10M
  requests with a ~1 ms queue at the hot worker).
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
* A request's latency runs from the moment its thread asks for a core to
  the reply, so Little's law ``N = X R`` holds for the loop.
* The wait for a reply is timed from the moment the packet leaves: time a
  thread spends waiting for a client core never fires its timer (FarReach's
  client times ``recvfrom`` with a socket timeout, ``SO_RCVTIMEO``, armed
  after the send; ``SocketHelper.createUdpsock`` in its Java library).
* No reply comes back sooner than its round trip: ``hit_rtt_us`` for a hit,
  ``miss_rtt_us`` for a miss (a service can be arbitrarily short, the wire
  and the stacks cannot). With ``retry = "strict"`` and a timeout no longer
  than that, the latest attempt's reply is always late: a thread that draws
  such a request resends it forever, and once every thread has drawn one no
  request completes (:func:`no_completion`). Every solver predicts zero
  goodput there, with this reason, rather than the transient before it.

Mean-value form: :func:`think_us` (the delay part of one request),
:func:`client_residence` (the client machines as a multi-core station) and
:func:`late_resends` (resends while a reply is late). Per-event form:
:func:`reply_completes`; the simulators queue threads for the client cores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


from .param_decl import ParamDecl

SCENARIO_KEYS = ("clients.threads", "clients.timeout_ms", "clients.retry", "clients.machines",
                 "clients.cores")

PARAMS = (
    ParamDecl("send_base_us", "us", "client send cost with one thread", lo=0.0),
    ParamDecl("send_per_thread_us", "us/thread",
              "extra send cost per client thread sharing the client machines' NICs", lo=0.0),
    ParamDecl("hit_rtt_us", "us", "client -> switch -> client for a cache hit, besides the send cost",
              lo=0.0),
    ParamDecl("miss_rtt_us", "us",
              "client -> worker -> client wire and stack time for a miss, besides send and service",
              lo=0.0),
    ParamDecl("client_cpu_us", "us", "client CPU per send (YCSB's work per request, the packet, "
              "the system calls), on one client core", lo=0.0),
    ParamDecl("client_cores", "cores", "cores of one of the testbed's client machines "
              "(used when the scenario's clients.cores is 0)", lo=1.0),
    ParamDecl("timer_floor_ms", "ms", "shortest wait the client's receive timeout really "
              "gives (kernel timer ticks)", lo=0.0, default=0.0),
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
    cpu_us: float = 0.0      # client core time per send (mean, exponential)
    cores: int = 1 << 30     # client cores over all client machines (machines x cores each)


def send_cost_us(threads: int, base_us: float, per_thread_us: float) -> float:
    """Per-request send cost: grows with the threads sharing client cores and NICs
    (3.6 us at 32 threads, about 7 us at 1024 in the reference notes)."""
    return base_us + per_thread_us * max(threads, 1)


def compile_clients(scenario, pr) -> ClientSpec:
    c = scenario.clients
    return ClientSpec(
        threads=int(c.threads),
        timeout_us=max(float(c.timeout_ms) * 1e3, pr["timer_floor_ms"] * 1e3),
        retry=RETRY_MODES[c.retry],
        send_us=send_cost_us(c.threads, pr["send_base_us"], pr["send_per_thread_us"]),
        hit_rtt_us=pr["hit_rtt_us"], miss_rtt_us=pr["miss_rtt_us"],
        cpu_us=pr["client_cpu_us"],
        cores=int(c.machines) * (int(c.cores) if c.cores > 0
                                 else max(1, int(round(pr["client_cores"])))))


# Mechanism switches for ``python -m sim explain`` (model/explain.py). A finite
# stand-in for "no timeout" keeps every solver's arithmetic finite.
NO_TIMEOUT_US = 1e12        # 11.6 days: no reply is ever that late


def without_timeouts(c: ClientSpec) -> ClientSpec:
    """Clients that never time out, so never resend."""
    return replace(c, timeout_us=max(c.timeout_us, NO_TIMEOUT_US))


def without_client_limit(c: ClientSpec) -> ClientSpec:
    """Client machines with a core for every thread: each send still costs
    its CPU time, but no thread waits for a core."""
    return replace(c, cores=max(c.cores, 1 << 30))


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


def budget_us(timeout_us: float, miss_rtt_us: float) -> float:
    """Longest time at a worker for which a miss's reply beats the timeout."""
    return max(timeout_us - miss_rtt_us, 0.0)


def client_residence(x: float, cpu_us: float, cores: float, visits: float, n: float) -> float:
    """Mean time per request at the client machines: ``visits`` sends (the
    first and the resends), each needing one of ``cores`` cores for
    ``cpu_us``, at a throughput of ``x`` requests per us from ``n`` threads.

    The multi-core station is Seidmann's: a single queue with a core's
    share of the work, ``cpu / cores``, plus the rest of the work as a pure
    delay; the queue part is Schweitzer's for ``n`` threads (an arrival sees
    ``(n - 1) / n`` of the queue). Infinite (no root there) at or past the
    cores' capacity."""
    if cpu_us <= 0.0 or visits <= 0.0:
        return 0.0
    d = cpu_us * visits / cores
    f = (n - 1.0) / n if n > 1.0 else 0.0
    u = x * d
    if f * u >= 1.0 or u >= 1.0:
        return math.inf
    return d / (1.0 - f * u) + cpu_us * visits * (cores - 1.0) / cores


def client_core_wait(x: float, cpu_us: float, cores: float, visits: float, n: float) -> float:
    """Mean time a thread waits for a client core before a send (the queue
    part of :func:`client_residence`, per send). A thread whose timer fired
    waits this long too before it can resend; a reply that arrives meanwhile
    is still taken (the socket returns it), so this wait adds to the time a
    late reply has before it causes a resend."""
    if cpu_us <= 0.0 or visits <= 0.0:
        return 0.0
    d = cpu_us * visits / cores
    f = (n - 1.0) / n if n > 1.0 else 0.0
    u = x * d
    if f * u >= 1.0:
        return math.inf
    return cpu_us / cores * f * u / (1.0 - f * u)


def client_utilization(x: float, cpu_us: float, cores: float, visits: float) -> float:
    """Busy fraction of the client cores."""
    return x * cpu_us * visits / cores


def gamma_sf(shape: float, x: float) -> float:
    """P(G > x) for a gamma variable of the given shape and scale 1 (the
    regularized upper incomplete gamma function): the series below
    ``shape + 1``, the continued fraction above it (Numerical Recipes'
    gser / gcf), and the Wilson-Hilferty normal form past a shape of 50
    (within 1e-3 of the exact tail there, and a thousand times cheaper)."""
    if x <= 0.0:
        return 1.0
    if shape > 50.0:
        z = ((x / shape) ** (1.0 / 3.0) - (1.0 - 1.0 / (9.0 * shape))) / math.sqrt(1.0 / (9.0 * shape))
        return 0.5 * math.erfc(z / math.sqrt(2.0))
    lg = math.lgamma(shape)
    if x < shape + 1.0:
        term = 1.0 / shape
        total = term
        a = shape
        for _ in range(500):
            a += 1.0
            term *= x / a
            total += term
            if term < total * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + shape * math.log(x) - lg))
    b = x + 1.0 - shape
    c = 1e300
    d = 1.0 / b
    h = d
    for k in range(1, 500):
        an = -k * (k - shape)
        b += 2.0
        d = an * d + b
        if abs(d) < 1e-300:
            d = 1e-300
        c = b + an / c
        if abs(c) < 1e-300:
            c = 1e-300
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(-x + shape * math.log(x) - lg) * h)


#: Timers summed one by one at most; the rest of the sum is taken as its integral.
LATE_TERMS = 64


def late_resends(residence_us: float, residence_scv: float, budget_us: float,
                 period_us: float) -> float:
    """Resends per visit while the reply is late (``retry = farreach``): the
    k-th timer fires if the time at the worker exceeds ``budget + (k - 1)
    period``. The time at the worker is taken as gamma distributed with mean
    ``residence_us`` and squared coefficient of variation ``residence_scv``
    (exponential for a queue that is open-like, nearly fixed at a station
    that holds almost every thread: :func:`residence_scv`)."""
    if residence_us <= 0.0:
        return 0.0
    scv = max(residence_scv, 1e-6)
    shape = 1.0 / scv
    scale = residence_us * scv
    total = 0.0
    t = max(budget_us, 0.0)
    if t > residence_us * (1.0 + 20.0 * math.sqrt(scv)) + 20.0 * scale:
        return 0.0                        # past 20 sd: below 1e-9
    for k in range(LATE_TERMS):
        p = gamma_sf(shape, t / scale)
        total += p
        if p < 1e-12:
            return total
        t += period_us
    # the rest: integral of the survival past t, over the period
    mean_excess = residence_us * gamma_sf(shape + 1.0, t / scale) - t * gamma_sf(shape, t / scale)
    return total + max(mean_excess, 0.0) / period_us


def residence_scv(service_us: float, service_scv: float, ahead: float, most_ahead: float) -> float:
    """Squared coefficient of variation of the time a request spends at a
    worker: ``k + 1`` services with ``k`` requests ahead. ``k`` varies like a
    geometric count (an open queue) when the station holds few of the threads
    it could, and hardly at all when it holds nearly all of them (a saturated
    station in a closed loop: ``most_ahead`` is the most there can be, the
    other threads or the buffer)."""
    if service_us <= 0.0:
        return 1.0
    var_k = ahead * (1.0 + ahead) * max(0.0, 1.0 - ahead / max(most_ahead, 1.0))
    mean = (ahead + 1.0) * service_us
    var = (ahead + 1.0) * service_us * service_us * service_scv + service_us * service_us * var_k
    return var / (mean * mean)


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
