"""Receive buffers and the wire: which packets are lost.

What it means (docs/model.md):

* Each worker has its own UDP socket. Packets that reach it while the
  worker is busy wait in the socket's receive buffer, which holds
  ``buffer_pkts`` packets (``servers.rcvbuf_kb`` over the kernel's per-packet
  accounting, ``rcvbuf_pkt_bytes``). A packet that finds the buffer full is
  dropped; the client only learns of it by its timeout.
* ``network.loss_rate`` drops each request packet on the wire with that
  probability, besides buffer overflow.

Mean-value form: :func:`tail_overflow` (a steady queue reaching the buffer)
and :func:`block_gather` (the closed loop piling clients onto a blocked
worker, and what its buffer cannot hold). Per-event form: :func:`admits`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .param_decl import ParamDecl

SCENARIO_KEYS = ("servers.rcvbuf_kb", "network.loss_rate")

PARAMS = (
    ParamDecl("rcvbuf_pkt_bytes", "B/packet",
              "receive-buffer bytes one small datagram takes (the kernel's skb truesize)",
              lo=0.0, lo_open=True),
)


@dataclass(frozen=True)
class NetworkSpec:
    buffer_pkts: float        # packets that can wait in a worker's socket (the simulators
    #                           admit whole packets: its floor)
    loss_rate: float          # random loss of a request packet on the wire


def compile_network(scenario, pr) -> NetworkSpec:
    pkts = scenario.servers.rcvbuf_kb * 1024.0 / pr["rcvbuf_pkt_bytes"]
    return NetworkSpec(buffer_pkts=float(pkts), loss_rate=float(scenario.network.loss_rate))


# Mechanism switch for ``python -m sim explain`` (model/explain.py).
def without_loss(n: NetworkSpec, threads: int) -> NetworkSpec:
    """No lost packets: a loss-free wire and a receive buffer that never fills
    (pair it with :func:`model.rack.clients.without_timeouts`). Twice the
    clients: the queue an arrival finds plus the arrivals during a block can
    never reach it, so the mean-value overflow terms are exactly zero too."""
    return replace(n, buffer_pkts=max(n.buffer_pkts, 2 * int(threads) + 2), loss_rate=0.0)


# ---------------------------------------------------------------- per-event form
def admits(idle_slot: bool, waiting: int, buffer_pkts: int) -> bool:
    """A packet reaching a worker is taken at once by an idle worker thread, else
    queued if fewer than ``buffer_pkts`` packets wait, else dropped."""
    return idle_slot or waiting < buffer_pkts


# ---------------------------------------------------------------- mean-value form
def wire_lost_per_request(w: float) -> float:
    """Attempts lost on the wire per request when each is lost with
    probability ``w`` and a lost one is sent again (geometric: ``w / (1 - w)``;
    the simulators drop every request packet, first attempt or resend, hit or
    miss, with that probability)."""
    return w / (1.0 - w) if w < 1.0 else math.inf


def tail_overflow(util: float, buffer_pkts: float, most: float) -> float:
    """Probability that an arriving packet finds the buffer full, for a worker
    busy ``util`` of the time with ``buffer_pkts`` places, when at most
    ``most`` other threads can be there (a closed loop): zero when the buffer
    holds them all, else the M/M/1/K loss probability at the offered load
    whose carried load is ``util``. It rises to 1 as the worker saturates,
    so a worker past its capacity drops what it cannot carry (and its
    threads wait out timeouts) instead of holding an unbounded queue."""
    if util <= 0.0 or buffer_pkts >= most:
        return 0.0
    if util >= 1.0:
        return 1.0
    k = buffer_pkts + 1.0                 # places: the buffer and the one in service
    if k * math.log(util) < -40.0:
        return 0.0                        # below 4e-18: the offered load is the carried one

    def carried(rho):
        if abs(rho - 1.0) < 1e-9:
            return k / (k + 1.0)
        # rho (1 - B), B = rho^k (1 - rho) / (1 - rho^(k + 1))
        lr = math.log(rho)
        if lr * (k + 1.0) > 700.0:
            return 1.0 - 1.0 / rho
        rk = math.exp(k * lr)
        return rho * (1.0 - rk * (1.0 - rho) / (1.0 - rk * rho))

    lo, hi = 0.0, 2.0                     # in rho
    while carried(hi) < util and hi < 1e12:
        lo = hi
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if carried(mid) < util:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    rho = 0.5 * (lo + hi)
    return 1.0 - util / rho


def block_gather(free: float, rate: float, length_us: float, room: float):
    """A worker blocked for ``length_us`` (a WAL switch, a sync, a write stop)
    in the closed loop: each of ``free`` threads that are not already there
    arrives at rate ``rate`` per us (its share of the requests over its cycle
    time) and, once there, stays until the block ends. Arrivals fill the
    ``room`` the buffer has left; later ones are dropped and their threads
    wait out a timeout.

    Returns (threads that arrived, packets dropped, thread-us held at the
    worker during the block), in the fluid limit: ``n(t) = free (1 -
    e^{-rate t})`` have arrived by time t, ``min(n(t), room)`` wait. A long
    block gathers every free thread: the whole rack stops with it, which is
    why rare long blocks cost far more than their mean length."""
    if length_us <= 0.0 or free <= 0.0 or rate <= 0.0:
        return 0.0, 0.0, 0.0
    arrived = free * -math.expm1(-rate * length_us)
    if arrived <= room:
        held = free * (length_us + math.expm1(-rate * length_us) / rate)
        return arrived, 0.0, held
    # the buffer is full from t_full on
    t_full = -math.log1p(-room / free) / rate if room < free else length_us
    held = free * (t_full + math.expm1(-rate * t_full) / rate) + room * (length_us - t_full)
    return arrived, arrived - room, held
