"""Analytic predictor: closed-network MVA of the rack, with a fixed point for
the effects that depend on load.

The network (DESIGN.md section 4): N client threads circulate through a
delay (send cost, network, switch for hits, timeouts) and one FCFS station
per worker, visited with that worker's share of all requests. A worker's
demand per visit is receive floor + process + gap, where process comes from
the storage model and is then corrected for load (CPU sharing, low-load
slowdown), LSM write stalls (a worker cannot take writes faster than its
flushes drain) and duplicate work from false positives.

Three loops close through the solution, so it is solved as a damped fixed
point:

* utilizations -> process times (CPU sharing, idle slowdown);
* queue lengths -> receive-buffer overflow -> lost packets -> clients
  sitting out the timeout (a delay) -> shorter queues;
* response-time tail beyond the timeout -> false positives -> resends
  (duplicate server work) and client time.

WAL file switches block one worker at a time; with a closed loop the other
clients pile up behind it, so their blocked fraction is taken off the
whole rack's throughput.

Server wait follows the notes' definition: the time from a reply to the
next receive, ``1/x_i - process_i - gap``, which is the receive floor on a
saturated worker.
"""

from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass

from scipy import special

from . import rack, storage
from .prediction import ClientPrediction, Prediction, ServerPrediction
from .profile import Profile
from .queueing import Station, mva
from .scenario import Scenario

MAX_ITER = 60
TOL = 1e-6


def predict(scenario: Scenario, profile: Profile) -> Prediction:
    """Predict throughput and per-server breakdown for one configuration."""
    return solve(rack.derive(scenario, profile))


@dataclass
class _State:
    """Solution of the inner fixed point at a given client timeout delay."""
    X: float                 # requests per us through the MVA network
    util: np.ndarray
    queue: np.ndarray
    p_loss: np.ndarray
    fp: np.ndarray
    block: float
    delay_implied: float     # timeout delay per request these losses imply, us
    iterations: int


def _inner(inp: rack.RackInputs, delay: float) -> _State:
    """Damped fixed point over utilization, false positives and WAL blocking,
    with clients spending ``delay`` us per request sitting out timeouts."""
    sc = inp.scenario
    n, N, s, h = inp.servers, sc.clients.threads, inp.shares, inp.hit_ratio
    active = s > 0
    util, fp, block, X = np.full(n, 0.5), np.zeros(n), 0.0, 0.0
    queue = np.zeros(n)
    service_eff = np.zeros(n)
    flows = _flows(inp, X, block)
    it = 0
    for it in range(1, MAX_ITER + 1):
        service = rack.process_us(inp, util) + inp.recv_floor_us + inp.gap_us
        # A worker cannot take writes faster than its flushes drain.
        service_eff = np.maximum(service, _flush_floor_us(inp, flows))
        demand = s * service_eff * (1.0 + fp)
        think = inp.send_us + h * inp.hit_rtt_us + (1.0 - h) * inp.miss_rtt_us + delay
        res = mva([Station(f"server {i}", "fcfs", float(demand[i])) for i in range(n) if active[i]],
                  N, think_time=think)
        queue = np.zeros(n)
        queue[active] = res.queue
        new_util = np.zeros(n)
        new_util[active] = np.minimum(res.utilization, 1.0)
        # False positives: the response outlives the timeout. The time at a
        # worker is about Erlang(Q+1, service) for FCFS.
        budget = max(inp.timeout_us - inp.miss_rtt_us - inp.send_us, 0.0)
        # regularized upper incomplete gamma = survival function of Erlang(Q+1, S)
        fp_new = np.where(active, special.gammaincc(queue + 1.0, budget / np.maximum(service_eff, 1e-12)), 0.0)
        fp_new = np.minimum(fp_new, 0.95)
        # WAL switches block a worker; clients pile up behind it, so the
        # blocked time of every worker is taken off the rack.
        flows = _flows(inp, res.throughput, block)
        blocked = [f.switch_fraction for f, a in zip(flows, active) if a]
        block_new = 1.0 - float(np.prod([1.0 - b for b in blocked])) if blocked else 0.0
        delta = (abs(res.throughput - X) / res.throughput + float(np.max(np.abs(fp_new - fp)))
                 + float(np.max(np.abs(new_util - util))) + abs(block_new - block))
        X = res.throughput if it == 1 else 0.5 * (X + res.throughput)
        util = 0.5 * (util + new_util)
        fp = 0.5 * (fp + fp_new)
        block = 0.5 * (block + block_new)
        if it > 2 and delta < TOL:
            break
    # Buffer overflow: an arrival is dropped if B packets are already
    # queued. Clients are treated as independent (mean field): the other
    # N-1 each sit at worker i with probability Q_i/N. Product-form
    # (geometric-like) tails would overstate overflow badly for the
    # near-deterministic service of a KV worker.
    # P(Binomial(N-1, q) >= B) = bdtrc(B-1, N-1, q)
    b = math.ceil(inp.buffer_pkts)
    p_loss = np.where(active & (b <= N - 1),
                      special.bdtrc(min(b - 1, N - 1), N - 1, np.clip(queue / N, 0.0, 1.0)), 0.0)
    p_loss = np.minimum(p_loss + sc.network.loss_rate, 0.99)
    implied = float(np.sum(s * (p_loss / (1.0 - p_loss) + fp))) * inp.timeout_us
    return _State(X, util, queue, p_loss, fp, block, implied, it)


def solve(inp: rack.RackInputs) -> Prediction:
    """Solve the rack: the inner fixed point, then the timeout delay as a root.

    Losses and false positives make clients sit out timeouts, which empties
    the queues that caused them: the delay they imply falls as the delay
    grows, so ``implied(D) = D`` has one root, found by Brent's method.
    """
    sc = inp.scenario
    n, N, s, h = inp.servers, sc.clients.threads, inp.shares, inp.hit_ratio
    st = _inner(inp, 0.0)
    evaluations = st.iterations
    if st.delay_implied > 1e-3 * inp.timeout_us * 1e-6 + 1e-9:
        cache: dict[float, _State] = {}

        def gap(d: float) -> float:
            cache[d] = _inner(inp, d)
            return cache[d].delay_implied - d

        from scipy.optimize import brentq   # only needed when requests are lost
        root = brentq(gap, 0.0, st.delay_implied, xtol=1e-3, rtol=1e-5, maxiter=60)
        st = cache.get(root) or _inner(inp, root)
        evaluations += sum(c.iterations for c in cache.values())
    X, util, p_loss, fp, block_frac = st.X, st.util, st.p_loss, st.fp, st.block
    it = evaluations - 1
    proc = rack.process_us(inp, util)
    service = proc + inp.recv_floor_us + inp.gap_us
    flows = _flows(inp, X, block_frac)
    flush_floor = _flush_floor_us(inp, flows)
    X_rack = X * (1.0 - block_frac)        # requests per us == M ops per second
    servers = []
    for i in range(n):
        f = flows[i]
        # Time a worker spends blocked in writes shows up in its process time.
        stall_us = 0.0
        rate_i = X_rack * s[i] * (1.0 + fp[i])          # requests per us at worker i
        if rate_i > 0:
            reqs_per_fill = f.fill_s * 1e6 * rate_i if math.isfinite(f.fill_s) else math.inf
            if math.isfinite(reqs_per_fill) and reqs_per_fill > 0:
                stall_us += f.switch_block_s * 1e6 / reqs_per_fill
            stall_us += max(0.0, flush_floor[i] - service[i])
        process = float(proc[i] + stall_us)
        if rate_i > 0:
            wait = max(inp.recv_floor_us, 1.0 / rate_i - process - inp.gap_us)
            u = min(1.0, rate_i * (process + inp.gap_us + inp.recv_floor_us))
        else:
            wait, u = math.inf, 0.0
        servers.append(ServerPrediction(share=float(s[i]), utilization=float(u),
                                        wait_us=float(wait), process_us=process,
                                        share_nocache=float(inp.shares_nocache[i])))
    latency = N / X_rack if X_rack > 0 else math.inf
    queries = inp.queries
    # Expected counts per run; below one packet they round to none.
    lost = queries * float(np.sum(s * p_loss / (1.0 - p_loss)))
    false_pos = queries * float(np.sum(s * fp))
    lost, false_pos = (0.0 if v < 0.5 else v for v in (lost, false_pos))
    stall_frac = max([f.stall_fraction for f in flows] + [block_frac])
    bottleneck = _bottleneck(servers, s, p_loss, fp, inp, latency, block_frac)
    return Prediction(
        engine="analytic", throughput_mops=float(X_rack), cache_hit_ratio=h,
        normalized_x=inp.normalized_x, bottleneck=bottleneck, servers=servers,
        client=ClientPrediction(send_us=inp.send_us, latency_us=float(latency)),
        pktloss=lost, false_pos=false_pos, stall_fraction=float(stall_frac),
        details={
            "p_mem": [c.p_mem for c in inp.costs],
            "loss_probability": p_loss.tolist(),
            "false_positive_probability": fp.tolist(),
            "wal_switch_blocked_fraction": block_frac,
            "memtable_fill_s": [f.fill_s for f in flows],
            "flush_capacity_mbps": [f.capacity_mbps for f in flows],
            "buffer_pkts": inp.buffer_pkts,
            "iterations": it + 1,
        })


def _flush_floor_us(inp: rack.RackInputs, flows) -> np.ndarray:
    """Least time per request (us) at which a worker's flushes keep up with its
    writes: the write bytes of a request over its flush capacity."""
    entry = storage.entry_bytes(inp.scenario, inp.profile)
    return np.array([inp.write_frac * entry / (f.capacity_mbps * storage.MIB) * 1e6 for f in flows])


def _flows(inp: rack.RackInputs, X: float, block_frac: float):
    sc = inp.scenario
    run_s = inp.queries / (X * 1e6) if X > 0 else 0.0
    writes = X * (1.0 - block_frac) * 1e6 * inp.shares * inp.write_frac
    entry = storage.entry_bytes(sc, inp.profile)
    # Worker i runs on machine i // workers_per_machine (contiguous blocks).
    machine = np.arange(len(writes)) // inp.workers_per_machine
    machine_mbps = np.bincount(machine, weights=writes) * entry / storage.MIB
    return [storage.lsm_flow(sc, inp.profile, writes_per_s=float(w),
                             workers_per_machine=inp.workers_per_machine,
                             machine_write_mbps=float(machine_mbps[m]), run_s=run_s)
            for w, m in zip(writes, machine)]


def _bottleneck(servers, s, p_loss, fp, inp, latency, block_frac) -> str:
    timeout_share = float(np.sum(s * (p_loss / (1.0 - p_loss) + fp))) * inp.timeout_us / latency \
        if math.isfinite(latency) and latency > 0 else 0.0
    busiest = max(range(len(servers)), key=lambda i: servers[i].utilization)
    u = servers[busiest].utilization
    if timeout_share > 0.3:
        return f"timeouts: clients spend {100 * timeout_share:.0f}% of their time waiting out lost requests"
    if block_frac > 0.1:
        return (f"WAL file switches: workers blocked {100 * block_frac:.0f}% of the time, "
                "and clients pile up behind the blocked worker")
    if u < 0.8:
        return f"clients: too few threads to saturate the servers (busiest worker {busiest} at {100 * u:.0f}%)"
    return f"server {busiest} ({100 * u:.0f}% busy, {100 * servers[busiest].share:.1f}% of requests)"
