"""The fast kernel's event loop: one chunk of simulated time
(:func:`run_chunk`), dispatching each event to its rule
(:mod:`sim.fast_kernel_clients`, :mod:`sim.fast_kernel_workers`).

The loop's scalar state lives in locals while it runs: in IS / FS, a store
to any other int64 or float64 array could alias it and force reloads. It is
read from them when a chunk starts (:func:`_load`) and goes back to them
when it ends (:func:`_store`).
"""

from __future__ import annotations

from numba import njit

# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import INF, _nonneg, _unowned_all
from .fast_kernel_clients import _ask_core, _core_ends, _reply, _send, _timer_fires
from .fast_kernel_draws import log_draw
from .fast_kernel_queues import EV_ARRIVAL, EV_BG, EV_END, EV_HIT, EV_OPEN, EV_REPLY, \
    EV_SERVICE, EV_TIMER, Cores, Ring, _next_event, _ring_pop, _timer_head
from .fast_kernel_state import F_BG_LAST, F_NEXT_BG, F_NEXT_OPEN, F_NOW, S_ARR_H, S_ARR_N, \
    S_BG_JOB, S_CH_N, S_CQ_H, S_CQ_N, S_HIT_H, S_HIT_N, S_RSP_H, S_RSP_N, S_STATUS, params
from .counters import G_DONE
from .write_path import R_CHANGES
from .fast_kernel_workers import NO_PACKET, _background, _commit_starts, _commits, \
    _open_arrival, _packet_arrives, _service_ends, _slots_to_start, _start_services


@njit(cache=True, inline="always")
def _load(IS, FS, w, cl, sl, n_cl):
    """The loop's scalar state from IS / FS and the arrays: the hit, arrival
    and reply rings, the client cores, the next job event (time, job, the
time the jobs were last advanced to), the next
    open arrival, the earliest service end and the earliest client timer."""
    hit_h, hit_n = IS[S_HIT_H], IS[S_HIT_N]
    arr_h, arr_n = IS[S_ARR_H], IS[S_ARR_N]
    rsp_h, rsp_n = IS[S_RSP_H], IS[S_RSP_N]
    ch_n = IS[S_CH_N]
    # each ring's head time and the earliest core end, tree end and timer,
    # kept beside them: updated where the ring, the heap, the tree and the
    # timer lists change
    hit = Ring(hit_h, hit_n, w.hit_t[hit_h] if hit_n > 0 else INF)
    arr = Ring(arr_h, arr_n, w.arr_t[arr_h] if arr_n > 0 else INF)
    rsp = Ring(rsp_h, rsp_n, w.rsp_t[rsp_h] if rsp_n > 0 else INF)
    cores = Cores(ch_n, IS[S_CQ_H], IS[S_CQ_N], cl.ch_t[0] if ch_n > 0 else INF)
    bg = (FS[F_NEXT_BG], IS[S_BG_JOB], FS[F_BG_LAST])
    timer_nt, timer_c = _timer_head(n_cl, cl.dl, cl.tl_next)
    return hit, arr, rsp, cores, bg, FS[F_NEXT_OPEN], sl.tv[1], timer_nt, timer_c


@njit(cache=True, inline="always")
def _store(IS, FS, rs, t, ret, hit, arr, rsp, cores, bg, next_open, rng):
    """The loop's scalar state back into IS / FS and the generator's into ``rs``."""
    IS[S_HIT_H], IS[S_HIT_N] = hit.h, hit.n
    IS[S_ARR_H], IS[S_ARR_N] = arr.h, arr.n
    IS[S_RSP_H], IS[S_RSP_N] = rsp.h, rsp.n
    FS[F_NEXT_BG], IS[S_BG_JOB], FS[F_BG_LAST] = bg
    IS[S_CQ_H], IS[S_CQ_N], IS[S_CH_N] = cores.wait_h, cores.wait_n, cores.held
    FS[F_NEXT_OPEN] = next_open
    FS[F_NOW] = t
    IS[S_STATUS] = ret
    rs[0], rs[1], rs[2], rs[3] = rng


@njit(cache=True)
def run_chunk(t_end, done_cap, refresh_at, P, IP, IS, FS, rs, counts, stations, clients, wire,
              queues, slots, storage):
    """Run the events before ``t_end``, or until ``done_cap`` requests have
    completed in the chunk (the run's last query), or until the first event
    from ``refresh_at`` on once RocksDB's state has changed (a seal, a
    finished job: ``storage.rack[R_CHANGES]``, for the dynamics to follow);
    the chunk then ends at that event (``FS[F_NOW]``). Returns 0, or the ring that overflowed
    (1 hits, 2 arrivals, 3 replies: a sizing bug). The arrays' groups are
    :mod:`sim.fast_kernel_state`'s; the counters (``counts``) must be zeroed."""
    # every array the loop hands to a function, not reference-counted
    cnt, stn, cl = _unowned_all(counts), _unowned_all(stations), _unowned_all(clients)
    w, q, sl, sto = _unowned_all(wire), _unowned_all(queues), _unowned_all(slots), \
        _unowned_all(storage)
    pr = params(P, IP, cl, w, q)
    hit, arr, rsp, cores, bg, next_open, tree_nt, timer_nt, timer_c = _load(IS, FS, w, cl, sl,
                                                                          pr.n_cl)
    rng = (rs[0], rs[1], rs[2], rs[3])      # the generator's state (u01)
    ret = 0
    t = t_end
    # RocksDB's state may have changed (a seal or a job event: the jobs were
    # advanced to that event, bg[2]) since the dynamics last read it
    changed = sto.rack[R_CHANGES] > 0.0
    while True:
        t, kind = _next_event(t_end, hit.nt, arr.nt, rsp.nt, tree_nt, timer_nt, bg[0],
                              next_open, cores.nt)
        if kind == EV_END:
            break
        send_c, new_req = -1, False       # a client that sends now (a new request?)
        ask_c, ask_new = -1, False        # one that asks for a client core (cpu_on)
        pk = NO_PACKET                    # a packet reaching a worker
        start_slot = -1                   # a worker slot that starts the packet it now holds
        unstall_st = -1                   # station whose stopped writers retry
        # The draw of a service that starts in this event, begun before the
        # event's own work: waiting for its logarithm was the loop's longest
        # stall. A packet arrival or a completion draws nothing before its
        # service starts, so the generator's next uniform is that draw's.
        # A commit's or a client core's time, when one starts, is always its
        # event's first draw, so it takes this one too (and a service after
        # it in the same event draws anew).
        ahead = kind == EV_ARRIVAL or kind == EV_SERVICE
        log_ahead, rng_ahead = log_draw(rng)
        took = False                      # the event took the draw begun ahead
        if kind == EV_HIT or kind == EV_REPLY:      # a reply reaches its client
            if kind == EV_HIT:
                k, hit = _ring_pop(hit, pr.cap_hit, w.hit_t)
                c, a = _nonneg(w.hit_c[k]), w.hit_a[k]
            else:
                k, rsp = _ring_pop(rsp, pr.cap_rsp, w.rsp_t)
                c, a = _nonneg(w.rsp_c[k]), w.rsp_a[k]
            send_c, new_req, ask_c, ask_new, timer_nt, timer_c = _reply(
                pr, cl, cnt, t, c, a, kind == EV_HIT, timer_nt, timer_c)
        elif kind == EV_ARRIVAL:                    # a miss reaches its worker's socket
            k, arr = _ring_pop(arr, pr.cap_arr, w.arr_t)
            pk = (w.arr_c[k], w.arr_a[k], w.arr_s[k], w.arr_w[k])
        elif kind == EV_SERVICE and _commits(pr, sl):
            took, tree_nt = _commit_starts(pr, stn, sl, sto, t, log_ahead)
        elif kind == EV_SERVICE:                    # a worker finishes a request
            ret, took, start_slot, rsp, tree_nt = _service_ends(pr, stn, sl, sto, q, w, cnt, t,
                                                                rsp, log_ahead, tree_nt)
            if ret != 0:
                break
        elif kind == EV_TIMER:      # a client's first send, or a resend after a timeout
            send_c, new_req, ask_c, ask_new = _timer_fires(pr, cl, cnt, timer_c)
        elif kind == EV_BG:
            unstall_st, bg = _background(sto, cnt, t, bg)
        elif kind == EV_OPEN:
            pk, next_open, rng = _open_arrival(pr, stn, t, rng)
        else:                       # EV_CORE: a client core's time ends; its thread sends
            send_c, new_req, took, cores = _core_ends(pr, cl, cnt, t, cores, log_ahead)
        if ask_c >= 0:
            took, cores, timer_nt, timer_c = _ask_core(pr, cl, cnt, t, ask_c, ask_new, cores,
                                                       log_ahead)
        if took:
            rng = rng_ahead
            ahead = False
        if send_c >= 0:
            ret, rng, hit, arr, timer_nt, timer_c = _send(pr, stn, cl, w, cnt, t, send_c,
                                                          new_req, rng, hit, arr)
            if ret != 0:
                break
        if pk[0] != NO_PACKET[0]:
            start_slot = _packet_arrives(pr, stn, sl, q, cnt, t, pk)
        n_go = _slots_to_start(stn, sl, cnt, t, unstall_st, start_slot)
        rng, tree_nt, bg = _start_services(pr, stn, sl, sto, cnt, t, n_go, rng, ahead, log_ahead,
                                           rng_ahead, tree_nt, bg)
        if kind <= EV_SERVICE and cnt.G[G_DONE] >= done_cap:
            break                   # the run's last query completed (a reply, a service end)
        if bg[2] == t:
            changed = True
        if changed and t >= refresh_at:
            if sto.rack[R_CHANGES] > 0.0:
                break               # process times to follow RocksDB's state
            changed = False         # (a job's fixed part ended: nothing they follow)
    _store(IS, FS, rs, t, ret, hit, arr, rsp, cores, bg, next_open, rng)
    return ret
