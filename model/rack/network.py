"""Receive buffers and the wire: which packets are lost.

What it means (docs/model.md):

* Each worker has its own UDP socket. Packets that reach it while the
  worker is busy wait in the socket's receive buffer, which holds
  ``buffer_pkts`` packets (``servers.rcvbuf_kb`` over the kernel's per-packet
  accounting, ``rcvbuf_pkt_bytes``). A packet that finds the buffer full is
  dropped; the client only learns of it by its timeout.
* ``network.loss_rate`` drops each request packet on the wire with that
  probability, besides buffer overflow.

Mean-value form: :func:`overflow_probability_at` and :func:`block_overflow` (from the queue-length
distribution an arrival sees). Per-event form: :func:`admits`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .params import ParamDecl

SCENARIO_KEYS = ("servers.rcvbuf_kb", "network.loss_rate")

PARAMS = (
    ParamDecl("rcvbuf_pkt_bytes", "B/packet",
              "receive-buffer bytes one small datagram takes (the kernel's skb truesize)",
              lo=0.0, lo_open=True),
)


@dataclass(frozen=True)
class NetworkSpec:
    buffer_pkts: int          # packets that can wait in a worker's socket
    loss_rate: float          # random loss of a request packet on the wire


def compile_network(scenario, pr) -> NetworkSpec:
    pkts = scenario.servers.rcvbuf_kb * 1024.0 / pr["rcvbuf_pkt_bytes"]
    return NetworkSpec(buffer_pkts=int(math.floor(pkts)), loss_rate=float(scenario.network.loss_rate))


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
def block_overflow(tail, room: float, arrivals_during: float) -> float:
    """Packets dropped per block of the worker: the arrivals during the block
    that find no room.

    ``tail[j]`` = P(at least j clients there when the block starts), ``room`` =
    clients whose packets fill buffer and worker, ``a`` = arrivals during the
    block (taken as a steady stream): ``E[(q0 + a - room)+] = int_c^inf
    P(q0 > x) dx`` with ``c = room - a``.
    """
    if arrivals_during <= 0:
        return 0.0
    c = room - arrivals_during
    total = max(0.0, -c)                   # overflow even from an empty queue
    c0 = max(c, 0.0)
    m0 = int(math.floor(c0))
    if m0 + 1 < len(tail):
        total += float(tail[m0 + 1]) * (m0 + 1 - c0) + float(np.sum(tail[m0 + 2:]))
    return total


def overflow_probability_at(tail, k: float) -> float:
    """Probability that an arriving packet is dropped: ``tail[j]`` = P(an arrival
    finds at least j clients at the worker), and ``k`` clients (with the
    duplicates they left) fill the buffer and the worker (``buffer_pkts + 1``
    packets). A fractional k is interpolated in log space."""
    if k <= 0:
        return 1.0
    lo = int(math.floor(k))
    if lo >= len(tail):
        return 0.0                  # beyond the population: never seen
    a = float(tail[lo])
    b = float(tail[lo + 1]) if lo + 1 < len(tail) else 0.0
    if a <= 0 or b <= 0:
        return a + (b - a) * (k - lo)
    return math.exp(math.log(a) + (math.log(b) - math.log(a)) * (k - lo))
