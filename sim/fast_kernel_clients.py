"""The fast kernel's rules for the client threads, one per event: a reply
reaches its client, a client's timer fires, a client core's time ends, a
thread asks for a client core, a thread sends.

Each is compiled into the loop (:func:`sim.fast_kernel_loop.run_chunk`,
``inline="always"``): the loop's scalar state (the rings' heads, the
earliest timer, the client cores, the generator) goes in as arguments and
comes back as results, so that it stays in registers as it did when this
was one function. The counters go straight into the chunk's arrays
(``cnt``, zeroed by the caller). The rules themselves are the mechanisms'
(:mod:`model.rack.clients`, :mod:`model.rack.placement`).
"""

from __future__ import annotations

from numba import njit

from model.rack import clients as _cl, placement as _pl

from . import counters as K
from .fast_kernel_draws import u01
# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import INF, _nonneg
from .fast_kernel_queues import Cores, _heap_pop, _heap_push, _ring_push, _timer_head, \
    _timer_set
from .fast_kernel_state import CS_NEW, CS_OUT, CS_RESEND, NO_ATT, T_PARK, T_REARM, T_SEND, \
    hist_bin


@njit(cache=True, inline="always")
def _reply(pr, cl, cnt, t, c, a, hit, timer_nt, timer_c):
    """Attempt ``a``'s reply reaches client ``c`` (from the switch when
    ``hit``, else from its worker). Returns (the client that sends now or
    -1, a new request?, the client that asks for a client core now or -1,
    for a new request?, the earliest timer: its deadline and client)."""
    send_c = -1
    new_req = False
    ask_c = -1
    ask_new = False
    G = cnt.G
    if a >= cl.first[c] and _cl.reply_completes(pr.retry, a, cl.att[c], cl.first[c]):
        lat = t - cl.start[c]
        G[K.G_DONE] += 1.0
        if hit:
            G[K.G_HITS] += 1.0
        if a > cl.first[c]:
            G[K.G_RETRIED] += 1.0
        G[K.G_LAT] += lat
        G[K.G_LAT2] += lat * lat
        cnt.hist[hist_bin(lat)] += 1
        if not pr.cpu_on:
            send_c = c
            new_req = True
        elif cl.cs[c] == CS_RESEND:
            # it waits for (or holds) a core to resend: that core time
            # now serves its next request, which starts here
            G[K.G_ISSUED] += 1.0
            cl.start[c] = t
            cl.first[c] = NO_ATT
            cl.cs[c] = CS_NEW
        else:
            ask_c = c
            ask_new = True
    else:
        G[K.G_STALE] += 1.0
        if pr.retry == _cl.RETRY_FARREACH and cl.cs[c] == CS_OUT:
            # the client's receive returned; its wait starts over
            _timer_set(c, t + pr.timeout, pr.n_cl + T_REARM, cl.dl, cl.tl_next, cl.tl_prev)
            timer_nt, timer_c = _timer_head(pr.n_cl, cl.dl, cl.tl_next)
    return send_c, new_req, ask_c, ask_new, timer_nt, timer_c


@njit(cache=True, inline="always")
def _timer_fires(pr, cl, cnt, c):
    """Client ``c``'s timer: its first send, or a resend after a timeout.
    Returns (the client that sends now or -1, a new request?, the client
    that asks for a client core now or -1, for a new request?)."""
    send_c = -1
    new_req = False
    ask_c = -1
    ask_new = False
    if pr.cpu_on:           # first a client core (the resend is counted when it leaves)
        ask_c = c
        if cl.started[c] == 0:
            cl.started[c] = 1
            ask_new = True
    else:
        send_c = c
        if cl.started[c] == 0:
            cl.started[c] = 1
            new_req = True
        else:
            cnt.G[K.G_RESENDS] += 1.0
    return send_c, new_req, ask_c, ask_new


@njit(cache=True, inline="always")
def _core_ends(pr, cl, cnt, t, cores, log_ahead):
    """The earliest client core's time ends: its thread sends, and the core
    goes to the longest-waiting thread, whose core time is the event's
    first draw (``log_ahead``, begun ahead). Returns (the client that sends,
    a new request?, the draw begun ahead taken?, the client cores)."""
    c = _nonneg(cl.ch_c[0])
    held = _heap_pop(cl.ch_t, cl.ch_c, cores.held)
    wait_h = cores.wait_h
    wait_n = cores.wait_n
    cnt.G[K.G_CLIENT_BUSY] += t - cl.cstart[c]
    cnt.G[K.G_CLIENT_RES] += t - cl.ask[c]
    new_req = cl.cs[c] == CS_NEW
    if not new_req:
        cnt.G[K.G_RESENDS] += 1.0
    cl.cs[c] = CS_OUT
    took = False
    if wait_n > 0:           # the core goes to the longest-waiting thread
        c2 = _nonneg(cl.cq[_nonneg(wait_h)])
        wait_h = wait_h + 1 if wait_h + 1 < pr.cap_cq else 0
        wait_n -= 1
        took = True          # the event's first draw: the one begun ahead
        cl.cstart[c2] = t
        held = _heap_push(cl.ch_t, cl.ch_c, held, t - pr.cpu * log_ahead, c2)
    return c, new_req, took, Cores(held, wait_h, wait_n, cl.ch_t[0] if held > 0 else INF)


@njit(cache=True, inline="always")
def _ask_core(pr, cl, cnt, t, c, new, cores, log_ahead):
    """Client ``c`` asks for a client core (for its ``new`` request, or a
    resend): it takes a free one, whose time is the event's first draw
    (``log_ahead``), or waits in the ring. Returns (the draw begun ahead
    taken?, the client cores, the earliest timer: deadline and client)."""
    c = _nonneg(c)
    if new:
        cnt.G[K.G_ISSUED] += 1.0
        cl.start[c] = t
        cl.first[c] = NO_ATT
        cl.cs[c] = CS_NEW
    else:
        cl.cs[c] = CS_RESEND
    cl.ask[c] = t
    # no timer runs while it is at the client cores
    _timer_set(c, INF, pr.n_cl + T_PARK, cl.dl, cl.tl_next, cl.tl_prev)
    timer_nt, timer_c = _timer_head(pr.n_cl, cl.dl, cl.tl_next)
    if cores.held < pr.ccores:
        # the event's first draw (a reply or a timer that asks draws
        # nothing else): the one begun ahead
        cl.cstart[c] = t
        held = _heap_push(cl.ch_t, cl.ch_c, cores.held, t - pr.cpu * log_ahead, c)
        return True, Cores(held, cores.wait_h, cores.wait_n, cl.ch_t[0]), timer_nt, timer_c
    j = cores.wait_h + cores.wait_n
    if j >= pr.cap_cq:
        j -= pr.cap_cq
    cl.cq[_nonneg(j)] = c
    return False, Cores(cores.held, cores.wait_h, cores.wait_n + 1, cores.nt), timer_nt, timer_c


@njit(cache=True, inline="always")
def _send(pr, stn, cl, w, cnt, t, c, new_req, rng, hit, arr):
    """Client ``c`` sends: its new request's first attempt (drawing its
    station and whether it writes), or a resend. Returns (0, or the ring
    that overflowed: 1 hits, 2 arrivals; the generator's state, the hit and
    arrival rings, the earliest timer: deadline and client)."""
    # (its fields in locals: each stored once, none loaded again after a
    # store to another array, which the compiler must assume may alias it)
    c = _nonneg(c)
    att = cl.att[c] + 1
    cl.att[c] = att
    if new_req:
        if not pr.cpu_on:       # (with the client cores: when it asked for one)
            cnt.G[K.G_ISSUED] += 1.0
            cl.start[c] = t
        cl.first[c] = att
        u_hit, rng = u01(rng)
        u_st, rng = u01(rng)
        cls = _pl.draw_station(u_hit, u_st, pr.hit_p, stn.acc, stn.alias)
        wr = 0
        if cls >= 0:
            u, rng = u01(rng)
            wr = 1 if u < stn.wfrac[_nonneg(cls)] else 0
        cl.cls[c] = cls
        cl.write[c] = wr
    else:
        cls = cl.cls[c]
        wr = cl.write[c]
    tp = t + pr.send
    _timer_set(c, tp + pr.timeout, pr.n_cl + T_SEND, cl.dl, cl.tl_next, cl.tl_prev)
    timer_nt, timer_c = _timer_head(pr.n_cl, cl.dl, cl.tl_next)
    lost = False
    if pr.loss > 0.0:
        u, rng = u01(rng)
        lost = u < pr.loss
    if lost:
        cnt.G[K.G_WIRE] += 1.0
    elif cls < 0:
        if hit.n >= pr.cap_hit:
            return 1, rng, hit, arr, timer_nt, timer_c
        k, hit = _ring_push(hit, pr.cap_hit, w.hit_t, tp + pr.hit_rtt)
        w.hit_c[k] = c
        w.hit_a[k] = att
    else:
        if arr.n >= pr.cap_arr:
            return 2, rng, hit, arr, timer_nt, timer_c
        k, arr = _ring_push(arr, pr.cap_arr, w.arr_t, tp + pr.half)
        w.arr_c[k] = c
        w.arr_a[k] = att
        w.arr_s[k] = cls
        w.arr_w[k] = wr
    return 0, rng, hit, arr, timer_nt, timer_c
