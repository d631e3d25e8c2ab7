"""What limits the rack: one structured answer from any solver's outcome.

Every solver (analytic, fast simulator, SimPy simulator) reduces its result
to the same :class:`Outcome` (per-worker means plus a few rack-level
shares of time); :func:`classify` turns that into a :class:`Bottleneck` --
kind, the workers concerned, the share of time the limiting resource is
busy or blocked, and the evidence. Text is made only for display
(:meth:`Bottleneck.text`); nothing parses it back.

Kinds, in the order they are checked:

``no-replies``    no request can complete: the timeout is shorter than any
                  reply (:func:`model.rack.clients.no_completion`); set by
                  :func:`model.prediction.no_goodput`, not by :func:`classify`
``timeouts``      clients spend over 30 % of their time waiting out lost
                  requests and no worker is saturated (evidence: that share,
                  lost packets per request). With a worker saturated
                  (``SATURATED``) the timeouts only park the clients that
                  worker cannot serve: throughput does not depend on them
                  (NoCache at 100 ms or 5 s: the same MOPS), so that worker
                  is named (``server``) and the timeouts are its evidence
``write-stall``   a worker's writes are stopped over 10 % of the time
                  (immutable memtables at maxnum, waiting for a flush)
``wal-switch``    a worker is blocked by WAL switches or write slowdown
                  over 10 % of the time; clients pile up behind it
``cores``         threads outnumber cores: services run over 20 % longer
``clients``       the busiest worker is under 80 % busy: too few client
                  threads to saturate the servers
``server``        the busiest worker(s) -- all workers within 2 points of
                  the top utilisation are named, so a balanced rack names
                  every worker rather than an arbitrary one
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: A worker this busy is the rack's limit whatever the clients do: timeouts
#: then take only clients it could not have served.
SATURATED = 0.95


@dataclass
class Outcome:
    """A solver's result in the rack's terms (means over the run)."""
    throughput_mops: float
    util: np.ndarray            # per worker: busy fraction (service, blocks and stops)
    wait_us: np.ndarray         # per worker: notes-style wait (inf when idle)
    process_us: np.ndarray      # per worker: receive -> reply, stops and blocks included
    stall_frac: np.ndarray      # per worker: fraction of time writes are stopped
    block_frac: np.ndarray      # per worker: fraction of time in WAL switches / slowdown
    stretch: np.ndarray         # per worker: mean CPU oversubscription factor
    latency_us: float           # client response time
    timeout_share: float        # fraction of client time spent waiting out lost requests
    lost_per_request: float     # dropped packets per completed request
    pktloss: float              # per run (the notes' counter)
    false_pos: float            # resends per run (the notes' counter)
    client_util: float = 0.0    # busy fraction of the client machines' cores


@dataclass
class Bottleneck:
    kind: str
    servers: list[int]
    share: float                                  # fraction of time busy / blocked / waiting
    evidence: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        who = _who(self.servers)
        pct = f"{100 * self.share:.0f}%"
        e = self.evidence
        if self.kind == "no-replies":
            return (f"no replies: the timeout ({e.get('timeout_ms', 0):g} ms) is not longer than "
                    f"the shortest round trip ({e.get('shortest_reply_us', 0):.3g} us) and only "
                    "the latest attempt's reply counts (retry = strict): zero goodput")
        if self.kind == "timeouts":
            return (f"timeouts: clients spend {pct} of their time waiting out lost requests "
                    f"({e.get('lost_per_request', 0):.3g} lost packets per request, "
                    f"timeout {e.get('timeout_ms', 0):g} ms)")
        if self.kind == "write-stall":
            return f"write stall: {who} stopped {pct} of the time waiting for flushes"
        if self.kind == "wal-switch":
            return (f"WAL switches and slowdown: {who} blocked {pct} of the time; "
                    "clients pile up behind the blocked worker")
        if self.kind == "cores":
            return (f"cores: threads outnumber cores, services run "
                    f"{e.get('stretch', 1):.2f}x longer on {who}")
        if self.kind == "clients":
            return (f"clients: too few threads to saturate the servers "
                    f"(busiest worker at {pct})")
        per = " each" if len(self.servers) > 1 else ""
        text = f"{who} ({pct} busy{per}, {100 * e.get('share_of_requests', 0):.1f}% of requests{per})"
        if e.get("timeout_share", 0.0) > 0.3:
            text += (f"; the clients {'they' if per else 'it'} cannot serve wait out lost requests "
                     f"({100 * e['timeout_share']:.0f}% of client time, timeout "
                     f"{e.get('timeout_ms', 0):g} ms), which does not limit throughput")
        return text


def _who(servers: list[int]) -> str:
    if not servers:
        return "no worker"
    if len(servers) == 1:
        return f"server {servers[0]}"
    if servers == list(range(servers[0], servers[-1] + 1)):
        return f"servers {servers[0]}-{servers[-1]}"
    return "servers " + ", ".join(map(str, servers))


def classify(outcome: Outcome, shares, cores: int, timeout_ms: float) -> Bottleneck:
    o = outcome
    shares = np.asarray(shares, dtype=float)
    active = shares > 0
    util = np.where(active, np.asarray(o.util, dtype=float), 0.0)
    top = float(util.max()) if util.size else 0.0
    if o.timeout_share > 0.3 and top < SATURATED:
        return Bottleneck("timeouts", [], float(min(o.timeout_share, 1.0)),
                          {"timeout_share": float(o.timeout_share),
                           "lost_per_request": float(o.lost_per_request),
                           "timeout_ms": float(timeout_ms)})
    stall = np.asarray(o.stall_frac, dtype=float)
    if stall.size and stall.max() > 0.1:
        i = int(np.argmax(stall))
        return Bottleneck("write-stall", [i], float(stall[i]), {"stall_fraction": float(stall[i])})
    block = np.asarray(o.block_frac, dtype=float)
    if block.size and block.max() > 0.1:
        i = int(np.argmax(block))
        return Bottleneck("wal-switch", [i], float(block[i]), {"blocked_fraction": float(block[i])})
    busiest = [int(i) for i in np.nonzero(active & (util >= top - 0.02))[0]]
    stretch = np.asarray(o.stretch, dtype=float)
    if cores > 0 and stretch.size and stretch.max() > 1.2:
        return Bottleneck("cores", busiest, top, {"stretch": float(stretch.max()),
                                                   "cores_per_machine": float(cores)})
    if top < 0.8:
        return Bottleneck("clients", busiest, top, {"busiest_utilization": top})
    evidence = {"utilization": top,
                "share_of_requests": float(shares[busiest[0]]) if busiest else 0.0}
    if o.timeout_share > 0.3:
        evidence.update(timeout_share=float(min(o.timeout_share, 1.0)),
                        lost_per_request=float(o.lost_per_request), timeout_ms=float(timeout_ms))
    return Bottleneck("server", busiest, top, evidence)
