"""The analytic solver: mean values of the compiled rack by a damped fixed point.

The rack is a closed network (docs/model.md): N client threads circulate
through a delay (send cost, round trips, time sitting out timeouts) and one
FCFS station per worker, visited with that worker's share of all requests.
Each mechanism of :mod:`model.rack` contributes its mean-value form:

* ``service``: run-average storage cost x load factor (idle, busy peers) x
  mean CPU stretch (cores);
* ``lsm``: per write, the mean WAL-switch block, write-stop and slowdown time
  of the instance's periodic flush cycle (:func:`model.rack.lsm.flush_cycle`),
  with the machine's disk shared by its flush and compaction jobs; they enter
  the station as a long, rare part of the service (mean and second moment),
  so clients pile up behind a blocked worker;
* ``network``: the probability that an arriving packet finds the receive
  buffer full, from the network's queue-length distribution;
* ``clients``: dropped requests cost the client a timeout; late replies
  cause resends, whose duplicates are served (extra work per client);
* ``placement``: visit ratios, write mix, write-backs (an open class).

These close loops through the solution (utilisation -> process time;
queues -> loss and resends -> fewer clients in the loop and more work;
write rate -> flush cycle -> stalls), so :func:`solve` iterates the
closed-network recursion of :mod:`model.solvers.mva_core` to a damped fixed
point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..prediction import Prediction, from_outcome
from ..rack import RackSpec, clients as cl_mech, lsm as lsm_mech, network as nw_mech, \
    service as svc_mech
from ..rack.bottleneck import Outcome
from . import mva_core

MAX_ITER = 200
TOL = 1e-7
MIB = lsm_mech.MIB


@dataclass
class _Lsm:
    """Per-worker LSM mean values at the current write rates."""
    extra_us: np.ndarray        # mean extra time per write (WAL block + stop + slowdown)
    wal_event_us: np.ndarray    # one WAL-switch block
    wal_per_write: np.ndarray   # WAL-switch blocks per write
    stop_event_us: np.ndarray   # one write stop
    stop_per_write: np.ndarray  # write stops per write
    stop_frac: np.ndarray
    block_frac_per_write: np.ndarray  # (WAL + slowdown) us per write
    flush_busy: np.ndarray
    comp_busy: np.ndarray
    cycles: list


class AnalyticSolver:
    """Mean-value solution of a :class:`~model.rack.RackSpec`."""

    name = "analytic"

    def solve(self, spec: RackSpec) -> Prediction:
        return solve(spec)


def _lsm_means(spec: RackSpec, writes: np.ndarray, prev: _Lsm | None) -> _Lsm:
    """Mean LSM effects per worker at ``writes`` (writes per us per worker)."""
    ls, pl = spec.lsm, spec.placement
    n = spec.servers
    mach = np.asarray(pl.machine_of)
    mbps = np.bincount(mach, weights=writes * 1e6 * ls.entry_bytes, minlength=pl.machines) / MIB
    wal = lsm_mech.wal_block_us(ls, mbps)
    fdb = prev.flush_busy if prev is not None else np.zeros(n)
    cb = prev.comp_busy if prev is not None else np.zeros(n)
    stop_prev = prev.stop_frac if prev is not None else np.zeros(n)
    # disk jobs a flush of worker i competes with: the other instances' disk
    # phases and compactions on its machine, and its own compaction
    disk_jobs = np.bincount(mach, weights=fdb + cb, minlength=pl.machines)[mach] - fdb
    share = ls.disk_bytes_per_us / np.maximum(1.0, 1.0 + disk_jobs)
    extra, wev, wpw, sev, spw, stop, blk, fb, cbusy = (np.zeros(n) for _ in range(9))
    cycles = []
    for i in range(n):
        cyc = lsm_mech.flush_cycle(ls, float(writes[i]), float(share[i]), float(wal[mach[i]]),
                                   running_fraction=1.0 - float(stop_prev[i]))
        cycles.append(cyc)
        extra[i] = cyc.wal_us + cyc.stop_us + cyc.slow_us
        wev[i], sev[i], spw[i] = cyc.wal_event_us, cyc.stop_event_us, cyc.stops_per_write
        wpw[i] = cyc.wal_us / cyc.wal_event_us if cyc.wal_event_us > 0 else 0.0
        stop[i] = cyc.stop_fraction
        blk[i] = cyc.wal_us + cyc.slow_us
        fb[i] = cyc.flush_disk_busy
        cbusy[i] = cyc.compaction_busy
    return _Lsm(extra, wev, wpw, sev, spw, stop, blk, fb, cbusy, cycles)


def _gamma_sf(shape: np.ndarray, x: np.ndarray) -> np.ndarray:
    from scipy.special import gammaincc   # only when timeouts are within reach
    return gammaincc(shape, x)


@dataclass
class _State:
    """The inner fixed point's state (warm start for the next delay tried)."""
    X: float
    util: np.ndarray
    p_drop: np.ndarray
    dup: np.ndarray
    writes: np.ndarray
    bg: np.ndarray
    lsm: _Lsm | None
    implied: float = 0.0        # client delay per request the losses/failures imply, us
    iterations: int = 0
    # last iteration's quantities, for the outputs
    S_req: np.ndarray | None = None
    stretch: np.ndarray | None = None
    wait_extra: np.ndarray | None = None
    x_hist: np.ndarray | None = None
    demand: np.ndarray | None = None      # per station: D = v A / (1 - Uo), for queue tails
    collapsed: tuple[int, ...] = ()       # workers on the collapsed branch


def solve(spec: RackSpec, collapsed: tuple[int, ...] | None = None) -> Prediction:
    """Solve the rack.

    First every worker is solved healthy. With a timeout shorter than a full
    receive buffer's worth of service, a worker has a second stable state:
    collapsed, its buffer full of duplicates, every reply later than the
    timeout (from the level where replies outlive the timeout, each arrival
    adds itself and a resend, faster than the worker drains). Which workers
    end up there is random (docs/model.md, "Short timeouts"):

    * the first collapse comes when a healthy worker's queue first reaches
      that level: up-crossings at rate ``c0`` (:func:`_crossings`), so some
      worker collapses during the run with probability ``1 - exp(-c0 T)``;
    * a collapsing worker takes about one of its residence times ``R_c`` to
      draw in its clients, during which the healthy rate still applies: the
      further collapses are Poisson with mean ``c0 R_c``;
    * once formed, collapsed workers hold clients and keep the rest below the
      level (a state whose own crossings over the run exceed one is not
      kept: its weight moves to one more collapse).

    The prediction is the mixture of the states with k collapsed workers (the
    busiest first) under these weights. ``collapsed`` forces a set (tests).
    """
    n = spec.servers
    st0 = _solve_delay(spec, _initial(spec, ()))
    evaluations = st0.iterations
    if collapsed is not None:
        st = _solve_delay(spec, _initial(spec, tuple(collapsed)))
        return _outputs(spec, [(1.0, st)], evaluations + st.iterations)
    if not _collapse_possible(spec, st0):
        return _outputs(spec, [(1.0, st0)], evaluations)
    order = [int(i) for i in np.argsort(-np.asarray(spec.placement.shares), kind="stable")
             if spec.placement.shares[i] > 0]
    run_us = spec.queries / st0.X if st0.X > 0 else 0.0
    runaway = sum(1 for i in order if st0.p_drop[i] > 0.3)
    crossings = _crossings(spec, st0, [])          # over the whole run
    c0 = crossings / run_us if run_us > 0 else 0.0  # per us
    p_any = 1.0 if runaway else -math.expm1(-crossings)
    if p_any < 1e-3:
        return _outputs(spec, [(1.0, st0)], evaluations)
    states: dict[int, _State] = {}

    def state(k: int) -> _State:
        nonlocal evaluations
        if k not in states:
            states[k] = _solve_delay(spec, _initial(spec, tuple(order[:k])))
            evaluations += states[k].iterations
        return states[k]

    k_min = max(1, runaway)
    first = state(k_min)
    i0 = order[0]
    r_c = first.p_drop[i0] / max(1.0 - first.p_drop[i0], 1e-9) * \
        cl_mech.retry_period_us(spec.clients) + (spec.network.buffer_pkts + 1) * first.S_req[i0]
    m = c0 * r_c
    mixture: list[tuple[float, _State]] = []
    if p_any < 1.0:
        mixture.append((1.0 - p_any, st0))
    carry = 0.0
    j = 0
    while True:
        k = k_min + j
        w = p_any * math.exp(-m) * m ** j / math.factorial(j) + carry
        carry = 0.0
        if k >= len(order):
            mixture.append((w + p_any * (1.0 - sum(math.exp(-m) * m ** i / math.factorial(i)
                                                   for i in range(j + 1))), state(len(order))))
            break
        st = state(k)
        run_k = spec.queries / st.X if st.X > 0 else 0.0
        if _crossings(spec, st, order[:k]) * 1.0 >= 1.0 and run_k > 0:
            carry = w                      # not stable: one more worker collapses
        else:
            mixture.append((w, st))
        j += 1
        if carry == 0.0 and p_any * (1.0 - sum(math.exp(-m) * m ** i / math.factorial(i)
                                               for i in range(j))) < 1e-3:
            break
    total = sum(w for w, _ in mixture)
    return _outputs(spec, [(w / total, st) for w, st in mixture if w > 0], evaluations)


def _initial(spec: RackSpec, collapsed: tuple[int, ...]) -> _State:
    """Starting state: every worker healthy, or the given ones collapsed (buffer
    full, half the arrivals dropped, a duplicate per request and more)."""
    n = spec.servers
    st = _State(0.0, np.full(n, 0.5), np.zeros(n), np.zeros(n), np.zeros(n),
                np.zeros(spec.placement.machines), None, collapsed=tuple(collapsed))
    for i in collapsed:
        st.util[i] = 1.0
        st.p_drop[i] = 0.5
    return st


def _collapse_possible(spec: RackSpec, st: _State) -> bool:
    """Can a worker stay collapsed: does a full buffer's service outlive the timeout?"""
    c = spec.clients
    if not math.isfinite(c.timeout_us) or st.S_req is None:
        return False
    full = (spec.network.buffer_pkts + 1) * st.S_req
    return bool(np.any((np.asarray(spec.placement.shares) > 0) & (full > cl_mech.budget_us(c))))


def _crossings(spec: RackSpec, st: _State, collapsed: list[int]) -> float:
    """Expected number of times, over the rest of the run, that an arrival at a
    healthy, busy worker finds the queue at which replies outlive the timeout."""
    c = spec.clients
    budget = cl_mech.budget_us(c)
    s = np.asarray(spec.placement.shares)
    if st.X <= 0 or st.x_hist is None:
        return 0.0
    run_us = spec.queries / st.X
    total = 0.0
    for i in np.nonzero(s > 0)[0]:
        if i in collapsed or st.util[i] < 0.5:
            continue                      # below half busy a resend storm drains away
        k_c = budget / st.S_req[i] - 1.0  # clients ahead whose work outlives the timeout
        if k_c >= len(st.x_hist) - 1:
            continue
        tail = mva_core.arrival_tail(st.x_hist, float(st.demand[i]), int(k_c) + 2)
        # up-crossings of k_c: arrivals that find exactly k_c - 1 clients there
        at_level = nw_mech.overflow_probability_at(tail, k_c - 1.0) - \
            nw_mech.overflow_probability_at(tail, k_c)
        total += st.X * s[i] * run_us * at_level
    return total


def _solve_delay(spec: RackSpec, st0: _State) -> _State:
    """The inner fixed point, with the timeout delay D solved as the root of
    ``implied(D) = D``.

    Dropped requests (and, with ``retry = strict``, late replies) make clients
    sit out timeouts, which empties the queues that caused them: the delay
    they imply falls as the delay grows, so ``implied(D) - D`` has one root;
    it is bracketed and bisected in log space (never an exception).
    """
    st = _inner(spec, 0.0, st0)
    evaluations = st.iterations
    period = cl_mech.retry_period_us(spec.clients)
    if st.implied > 1e-9 * period:
        lo, hi = 0.0, st.implied          # implied(lo) > lo; implied(hi) <= implied(0) = hi
        best = st
        for _ in range(48):
            mid = math.sqrt(max(lo, hi * 1e-9) * hi) if lo > 0 else hi * 1e-3 if hi > 0 else 0.0
            if lo == 0.0 and best is st and mid > 0:
                mid = hi * 0.5 if hi < 1e-6 else mid
            trial = _inner(spec, mid, _copy(best))
            evaluations += trial.iterations
            if trial.implied > mid:
                lo = mid
            else:
                hi = mid
            best = trial
            if hi - lo <= 1e-4 * hi + 1e-9:
                break
        st = _inner(spec, 0.5 * (lo + hi), _copy(best))
        evaluations += st.iterations
    st.iterations = evaluations
    return st


def _copy(st: _State) -> _State:
    return _State(st.X, st.util.copy(), st.p_drop.copy(), st.dup.copy(), st.writes.copy(),
                  st.bg.copy(), st.lsm, collapsed=st.collapsed)


def _inner(spec: RackSpec, delay: float, st: _State) -> _State:
    """Damped fixed point over load, LSM, loss and duplicates, with clients
    spending ``delay`` us per request sitting out timeouts."""
    pl, sv, c, nw = spec.placement, spec.service, spec.clients, spec.network
    n, N = spec.servers, c.threads
    s = np.asarray(pl.shares)
    idx = np.nonzero(s > 0)[0]
    wf = np.asarray(pl.write_frac)
    mach = np.asarray(pl.machine_of)
    ev = pl.evict_per_us * np.asarray(pl.evict_probs)
    cost = svc_mech.run_average_cost(sv)
    Z = cl_mech.think_us(c, pl.hit_ratio) + delay
    period = cl_mech.retry_period_us(c)
    budget = cl_mech.budget_us(c)
    finite_to = math.isfinite(c.timeout_us)
    X, util, p_drop, dup, writes, bg, lsm = st.X, st.util, st.p_drop, st.dup, st.writes, st.bg, st.lsm
    wait_extra = np.zeros(n)
    q_prev = None
    it = 0
    a, last_delta = 1.0, math.inf
    for it in range(1, MAX_ITER + 1):
        stretch = svc_mech.mean_stretch(sv, util, mach, bg)
        S = cost * svc_mech.load_factor(sv, util, mach) * stretch + sv.recv_floor_us + sv.gap_us
        lsm = _lsm_means(spec, writes, lsm)
        S_req = S + wf * lsm.extra_us                 # mean per client request (a visit)
        S_wr = S + lsm.extra_us                       # a write-back
        m2 = (1.0 + sv.cv ** 2) * S ** 2             # the service proper; blocks go in V
        Uo = np.minimum(ev * S_wr, 0.99)
        A = S_req * (1.0 + dup)
        C = m2 / (2.0 * S) - S
        # WAL switches and write stops: rare, long blocks that clients pile up behind
        arrivals = X * s if X > 0 else np.zeros(n)
        free = np.maximum(N - q_prev, 1.0) if q_prev is not None else np.full(n, float(N))
        V = (mva_core.block_delay(writes * lsm.wal_per_write, lsm.wal_event_us, arrivals, free)
             + mva_core.block_delay(writes * lsm.stop_per_write, lsm.stop_event_us, arrivals, free))
        # a collapsed worker is a delay: timeouts while its full buffer drops the
        # request, then a full buffer's wait; its drop probability p is what
        # makes its request rate equal its capacity (it serves 1 + r(1-p)
        # packets per request, r resends while late). X(p) falls and the
        # capacity rises with p, so p is found by bisection.
        Sm, Am, Cm, Uom, Vm = S_req.copy(), A.copy(), C.copy(), Uo.copy(), V.copy()
        late = np.zeros(n)
        full = np.zeros(n)
        for i in st.collapsed:
            full[i] = (nw.buffer_pkts + 1) * S_req[i]
            late[i] = cl_mech.resends_while_late(lambda t, w=full[i]: (t < w).astype(float),
                                                 budget, period, full[i])
            Am[i] = Cm[i] = Uom[i] = Vm[i] = 0.0

        def network(p_c: float):
            for i in st.collapsed:
                Sm[i] = p_c / (1.0 - p_c) * period + full[i]
            return mva_core.recursion(s[idx], Sm[idx], Am[idx], Cm[idx], Uom[idx], Vm[idx], Z, N)

        if st.collapsed:
            i0 = max(st.collapsed, key=lambda i: s[i])

            def excess(p_c: float) -> float:
                cap = 1.0 / (S_req[i0] * (1.0 + late[i0] * (1.0 - p_c)))
                return network(p_c)[0][-1] * s[i0] - cap

            # bracket around the previous p (the outer iteration refines it)
            p0 = float(p_drop[i0])
            lo_p, hi_p = max(0.0, p0 - 0.05), min(0.99, p0 + 0.05)
            if excess(lo_p) <= 0:
                lo_p, hi_p = 0.0, lo_p
                if excess(0.0) <= 0:
                    hi_p = 0.0                   # it drains: no drops needed
            elif excess(hi_p) > 0:
                lo_p, hi_p = hi_p, 0.99
            for _ in range(8 if hi_p - lo_p <= 0.1 else 20):
                if hi_p <= lo_p:
                    break
                mid = 0.5 * (lo_p + hi_p)
                if excess(mid) > 0:
                    lo_p = mid
                else:
                    hi_p = mid
            for i in st.collapsed:
                p_drop[i] = hi_p
        x_hist, r, q, u = network(p_drop[st.collapsed[0]] if st.collapsed else 0.0)
        q_prev = np.zeros(n)
        q_prev[idx] = q
        X_new = float(x_hist[-1])
        served = X_new * s * (1.0 + dup) + ev          # packets served per us
        util_new = np.zeros(n)
        util_new[idx] = np.minimum(u + Uo[idx], 1.0)

        # ---- loss and retries from the queue-length distribution ----
        p_new = np.zeros(n)
        dup_new = np.zeros(n)
        wait_extra = np.zeros(n)
        for i in idx:
            if i in st.collapsed:
                p_new[i] = p_drop[i]
                dup_new[i] = late[i] * (1.0 - p_drop[i])
                util_new[i] = 1.0
                continue
            D = s[i] * A[i] / max(1.0 - Uo[i], 1e-9)
            k_drop = (nw.buffer_pkts + 1) / (1.0 + dup[i])   # clients whose packets fill the buffer
            kmax = min(N - 1, int(k_drop) + 2) if N > 1 else 0
            tail = mva_core.arrival_tail(x_hist, D, kmax)
            p_i = nw_mech.overflow_probability_at(tail, k_drop)
            # blocks (WAL switches, write stops) let packets pile up past the buffer
            pkt_rate = X_new * s[i] * (1.0 + dup[i]) + ev[i]
            if pkt_rate > 0:
                for rate, length in ((writes[i] * lsm.wal_per_write[i], lsm.wal_event_us[i]),
                                     (writes[i] * lsm.stop_per_write[i], lsm.stop_event_us[i])):
                    if rate > 0 and length > 0:
                        f = max(free[i], 1.0)
                        a_blk = f * -math.expm1(-pkt_rate / f * length)
                        dropped = nw_mech.block_overflow(tail, k_drop, a_blk / (1.0 + dup[i]))
                        p_i += rate * dropped * (1.0 + dup[i]) / pkt_rate
            p_new[i] = min(p_i + nw.loss_rate, 0.99)
            if finite_to:
                surv = _WaitSurvival(tail, k_drop, S_req[i], A[i], m2[i], dup[i])
                if c.retry == cl_mech.RETRY_FARREACH:
                    # the first admitted attempt's reply completes the request;
                    # the client resends every period while it is late
                    dup_new[i] = cl_mech.resends_while_late(surv, budget, period, surv.horizon) \
                        * (1.0 - p_new[i])
                    wait_extra[i] = p_new[i] / (1.0 - p_new[i]) * period
                else:
                    tau = float(surv(np.array([budget]))[0])
                    fail = min(p_new[i] + (1.0 - p_new[i]) * tau, 0.99)
                    dup_new[i] = (1.0 - p_new[i]) * tau / (1.0 - fail)
                    wait_extra[i] = fail / (1.0 - fail) * period
        writes_new = served * wf + ev * (1.0 - wf)          # write-backs are all writes
        bg_new = np.bincount(mach, weights=_bg_jobs(lsm), minlength=pl.machines)
        delta = (abs(X_new - X) / max(X_new, 1e-12) + float(np.max(np.abs(util_new - util)))
                 + float(np.max(np.abs(p_new - p_drop))) + float(np.max(np.abs(dup_new - dup)))
                 / (1.0 + float(np.max(dup))))
        # damping: halve the step whenever the residual stops falling (the
        # stall and loss loops are decreasing maps that overshoot otherwise)
        if it > 1:
            a = max(0.05, a * 0.6) if delta >= last_delta else min(0.5, a * 1.1)
        last_delta = delta
        X = a * X_new + (1 - a) * X if X > 0 else X_new
        util = a * util_new + (1 - a) * util
        p_drop = a * p_new + (1 - a) * p_drop
        dup = a * dup_new + (1 - a) * dup
        writes = a * writes_new + (1 - a) * writes if writes.any() else writes_new
        bg = a * bg_new + (1 - a) * bg
        if it > 3 and delta < TOL:
            break
    implied = float(np.sum(s * wait_extra))
    demand = s * A / np.maximum(1.0 - Uo, 1e-9)
    return _State(X, util, p_drop, dup, writes, bg, lsm, implied, it, S_req, stretch, wait_extra,
                  x_hist, demand, st.collapsed)


def _outputs(spec: RackSpec, mixture: list[tuple[float, _State]], evaluations: int) -> Prediction:
    """The prediction of one state, or the weighted mixture of several (short
    timeouts: how many workers collapse is random)."""
    parts = [(w, _state_outcome(spec, st)) for w, st in mixture]
    outcome = parts[0][1] if len(parts) == 1 else _mix(parts)
    st = max(mixture, key=lambda t: t[0])[1]         # the likeliest state, for the details
    s = np.asarray(spec.placement.shares)
    lsm = st.lsm
    details = {
        "p_mem": list(spec.service.p_mem),
        "loss_probability": st.p_drop.tolist(),
        "duplicates_per_request": st.dup.tolist(),
        "timeout_delay_us_per_request": float(np.sum(s * st.wait_extra)),
        "collapsed_workers": [{"workers": list(x.collapsed), "probability": w} for w, x in mixture],
        "memtable_fill_s": [cy.cycle_us / max(cy.memtables_per_flush, 1e-9) / 1e6
                            if math.isfinite(cy.cycle_us) else math.inf for cy in lsm.cycles],
        "flush_busy_fraction": lsm.flush_busy.tolist(),
        "write_stop_fraction": lsm.stop_frac.tolist(),
        "buffer_pkts": float(spec.network.buffer_pkts),
        "iterations": evaluations,
    }
    return from_outcome(spec, outcome, "analytic", details)


def _mix(parts: list[tuple[float, Outcome]]) -> Outcome:
    """Expected outcome over states: rates and fractions average with the
    weights; latency follows from the mixed throughput (Little's law)."""
    def avg(get):
        return sum(w * np.asarray(get(o), dtype=float) for w, o in parts)
    X = float(avg(lambda o: o.throughput_mops))
    latency = sum(w * o.throughput_mops * o.latency_us for w, o in parts) / X if X > 0 else math.inf
    return Outcome(
        throughput_mops=X, util=avg(lambda o: o.util),
        wait_us=avg(lambda o: np.where(np.isfinite(o.wait_us), o.wait_us, 0.0)),
        process_us=avg(lambda o: o.process_us), stall_frac=avg(lambda o: o.stall_frac),
        block_frac=avg(lambda o: o.block_frac), stretch=avg(lambda o: o.stretch),
        latency_us=float(latency), timeout_share=float(avg(lambda o: o.timeout_share)),
        lost_per_request=float(avg(lambda o: o.lost_per_request)),
        pktloss=float(avg(lambda o: o.pktloss)), false_pos=float(avg(lambda o: o.false_pos)))


def _state_outcome(spec: RackSpec, st: _State) -> Outcome:
    pl, sv, c = spec.placement, spec.service, spec.clients
    N = c.threads
    s = np.asarray(pl.shares)
    wf = np.asarray(pl.write_frac)
    ev = pl.evict_per_us * np.asarray(pl.evict_probs)
    X, p_drop, dup, lsm = st.X, st.p_drop, st.dup, st.lsm
    served = X * s * (1.0 + dup) + ev
    process = st.S_req - sv.recv_floor_us - sv.gap_us
    with np.errstate(divide="ignore"):
        wait = np.where(served > 0, 1.0 / np.where(served > 0, served, 1.0) - process - sv.gap_us,
                        math.inf)
    wait = np.where(served > 0, np.maximum(wait, sv.recv_floor_us), math.inf)
    latency = N / X if X > 0 else math.inf
    lost_per_req = float(np.sum(s * (1.0 + dup) * p_drop / (1.0 - p_drop)))
    resend_per_req = float(np.sum(s * (p_drop / (1.0 - p_drop) + dup / (1.0 - p_drop))))
    expected = lambda v: 0.0 if v < 0.5 else v  # noqa: E731 -- below one packet a run sees none
    period = cl_mech.retry_period_us(c)
    drop_wait = float(np.sum(s * p_drop / (1.0 - p_drop))) * period
    timeout_share = drop_wait / latency if math.isfinite(latency) and latency > 0 else 0.0
    return Outcome(
        throughput_mops=X, util=st.util, wait_us=wait, process_us=process,
        stall_frac=lsm.stop_frac, block_frac=np.minimum(1.0, served * wf * lsm.block_frac_per_write),
        stretch=st.stretch, latency_us=latency, timeout_share=timeout_share,
        lost_per_request=lost_per_req,
        pktloss=expected(spec.queries * lost_per_req),
        false_pos=expected(spec.queries * resend_per_req))


def _bg_jobs(lsm: _Lsm) -> np.ndarray:
    """Mean running background jobs per worker (flush jobs and compactions)."""
    return np.array([cy.flush_busy for cy in lsm.cycles]) + lsm.comp_busy


class _WaitSurvival:
    """t -> P(an admitted packet's time at the worker exceeds t), for arrays of t.

    An arrival that finds k clients (and their duplicates) waits for their work
    and its own service: gamma distributed with mean S + k A and the squared
    coefficient of variation of one service divided by the number of services.
    """

    def __init__(self, tail: np.ndarray, k_drop: float, S: float, A: float, m2: float,
                 dup: float):
        pk = tail[:-1] - tail[1:] if len(tail) > 1 else np.ones(1)
        k = np.arange(len(pk), dtype=float)
        keep = (k < k_drop) & (pk > 1e-15)
        pk, k = pk[keep], k[keep]
        total = pk.sum()
        self.pk = pk / total if total > 0 else pk
        cv2 = max(m2 / (S * S) - 1.0, 1e-6)
        mean = S + k * A
        self.shape = (k * (1.0 + dup) + 1.0) / cv2
        self.scale = mean / self.shape
        self.horizon = float(np.max(mean + 10.0 * np.sqrt(self.shape) * self.scale)) \
            if total > 0 else 0.0

    def __call__(self, t) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        out = np.zeros(len(t))
        live = (t < self.horizon) & (t > 0)
        out[t <= 0] = 1.0
        if live.any() and len(self.pk):
            out[live] = _gamma_sf(self.shape[:, None], t[live][None, :] / self.scale[:, None]).T \
                @ self.pk
        return out
