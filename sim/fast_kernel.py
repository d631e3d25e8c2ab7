"""Compiled event loop of the fast engine (numba).

The rules of the rack are not here: they are the per-event forms of the
mechanism modules (:mod:`model.rack.lsm`, :mod:`model.rack.service`,
:mod:`model.rack.clients`, :mod:`model.rack.network`,
:mod:`model.rack.placement`), compiled into this loop with numba's
``register_jitable``; the SimPy engine calls the same functions in Python.
This module only schedules events fast. The trick: almost every delay in
the rack is a *constant* (client send cost, network one-way times, the
timeout), and events are processed in time order, so each delay line is a
FIFO whose entries come out sorted:

* ``hit`` FIFO: a cache hit returns after ``send + hit_rtt``;
* ``arr`` FIFO: a miss reaches its worker ``send + rtt/2`` after sending;
* ``rsp`` FIFO: a reply reaches its client ``rtt/2`` after the worker is done;
* timers: every client has one armed deadline, in one of three doubly
  linked lists ordered by deadline: the first sends (staggered starts), send
  deadlines (t + send + timeout) and FarReach re-arms (t + timeout). Within
  a list a new deadline is the latest, so it is inserted from the tail.

Service completions use a tournament tree over the worker slots (O(log
slots) per update, O(1) minimum). Background (flush/compaction) events are
rare; the next one is found by a scan, redone only when one changes. The
next event is the minimum of nine heads.

State lives in numpy arrays owned by :class:`sim.fast.FastEngine`; the
kernel runs one chunk (normally one simulated second) and returns, so
Python can update load-dependent service means, report progress and take
Ctrl-C between chunks. Random numbers come from an inline xoshiro256+
generator whose state is one of those arrays (:func:`seed_state`).

Compiled code is cached on disk (:func:`cache_dir`): a second run in a new
process does not compile again. The cache directory is keyed by the source
of this module and of the mechanisms it compiles in, because numba's own
cache only notices changes to this file.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numpy as np

from model.rack import clients as _cl, lsm as _lsm, network as _nw, placement as _pl, \
    service as _svc


def cache_dir() -> str:
    """Where compiled code is kept: ``$NUMBA_CACHE_DIR``, else
    ``$KVPERF_CACHE_DIR/numba-<source digest>`` (default ``~/.cache/kvperf``)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    digest = hashlib.sha1()
    for mod in (__file__, _lsm.__file__, _svc.__file__, _cl.__file__, _nw.__file__, _pl.__file__,
                Path(__file__).with_name("counters.py")):
        digest.update(Path(mod).read_bytes())
    base = os.environ.get("KVPERF_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "kvperf")
    if base == "off":
        base = os.path.join(os.path.expanduser("~"), ".cache", "kvperf")
    return os.path.join(base, f"numba-{digest.hexdigest()[:16]}")


import numba  # noqa: E402  (after cache_dir is defined, before any cached function is made)

numba.config.CACHE_DIR = cache_dir()

from llvmlite import ir as _ir  # noqa: E402
from numba import njit, types as _nbt  # noqa: E402
from numba.extending import intrinsic, register_jitable  # noqa: E402

from . import counters as K  # noqa: E402

# The mechanisms' per-event functions, compiled into the loop.
for _f in (_lsm._flush_start, _lsm._disk_progress, _lsm.write_start, _lsm.write_done,
           _lsm.bg_next, _lsm.bg_event, _svc.stretch, _svc.stretched, _svc.draw_service,
           _cl.reply_completes, _nw.admits, _pl.draw_station):
    register_jitable(_f)

INF = 1e300

# ---- float parameters (P) ----
P_SEND, P_HIT_RTT, P_HALF_RTT, P_TIMEOUT, P_LOSS, P_HIT, P_SHAPE, P_OPEN_RATE, P_CTX, \
    P_CORES, P_FIXED, P_NP = range(12)
# ---- int parameters (IP) ----
I_CLIENTS, I_ST, I_SLOTS, I_LSM, I_OPEN_WRITE, I_TREE, I_RETRY, I_NP = range(8)
# ---- scalar int state (IS) ----
S_HIT_H, S_HIT_N, S_ARR_H, S_ARR_N, S_RSP_H, S_RSP_N, \
    S_BG_ST, S_BG_KIND, S_STATUS, S_NS = range(10)
# ---- scalar float state (FS) ----
F_NOW, F_NEXT_OPEN, F_NEXT_BG, F_NF = range(4)
# ---- timer lists: the first sends (staggered starts), send deadlines, re-arms ----
T_START, T_SEND, T_REARM = range(3)

HIST_BINS = K.HIST_BINS
_CELLS = K.HIST_CELLS
_EDGES = K.HIST_EDGES_PAD
_CELL_BITS = K.CELL_BITS
_CELL_LO = (K.CELL_E0 + 1023) << K.CELL_BITS          # biased exponent and cell of the first row
_CELL_N = K.CELL_ROWS << K.CELL_BITS


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (a bit cast)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(64))
    return _nbt.int64(_nbt.float64), codegen


@njit(cache=True, inline="always")
def hist_bin(lat):
    """:func:`sim.counters.hist_bin`, compiled: the cell of the float's
    exponent and top mantissa bits, then one comparison with the next edge."""
    if not lat >= _EDGES[1]:
        return 0
    j = (_f64_bits(lat) >> (52 - _CELL_BITS)) - _CELL_LO
    if j >= _CELL_N:
        return HIST_BINS - 1
    k = _CELLS[j]
    return k + (1 if _EDGES[k + 1] <= lat else 0)


@njit(cache=True)
def seed(s):
    np.random.seed(s)


# ---- the kernel's own generator: xoshiro256+ (Blackman and Vigna 2018) ----
# Called inline, several times per request; numba's np.random functions are
# calls that fetch a thread-local Mersenne Twister each time (a quarter of
# the kernel's time). The state is four uint64 words in ``rs``, seeded by
# :func:`seed_state` with splitmix64. np.random (seeded by :func:`seed`)
# remains only for gamma service times (cv != 1).
_U53 = 1.0 / 9007199254740992.0          # 2^-53


def seed_state(s: int) -> np.ndarray:
    """xoshiro256+ state from an integer seed (splitmix64, as its authors advise)."""
    out = np.empty(4, dtype=np.uint64)
    x = int(s) & 0xFFFFFFFFFFFFFFFF
    for i in range(4):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        out[i] = z ^ (z >> 31)
    return out


@njit(cache=True, inline="always")
def _u01(rs):
    """A uniform double in [0, 1) (the top 53 bits of xoshiro256+)."""
    s0 = rs[0]
    s1 = rs[1]
    s2 = rs[2]
    s3 = rs[3]
    r = s0 + s3
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
    rs[0] = s0
    rs[1] = s1
    rs[2] = s2
    rs[3] = s3
    return np.float64(r >> np.uint64(11)) * _U53


@njit(cache=True, inline="always")
def _exponential(rs, mean):
    """An exponential draw of the given mean (inverse CDF; 1 - u is in (0, 1])."""
    return -mean * math.log(1.0 - _u01(rs))


@njit(cache=True, inline="always")
def _service(rs, mean, shape, fixed):
    """:func:`model.rack.service.draw_service`: the fixed part plus an
    exponential (shape 1) from the kernel's generator, or a gamma."""
    if shape == 1.0 and mean > fixed:
        return fixed + _exponential(rs, mean - fixed)
    return _svc.draw_service(mean, shape, fixed)


@njit(cache=True, inline="always")
def _tree_set(tv, ti, size, i, v):
    k = size + i
    tv[k] = v
    k >>= 1
    while k >= 1:
        a = 2 * k
        b = a + 1
        if tv[a] <= tv[b]:
            w = tv[a]
            j = ti[a]
        else:
            w = tv[b]
            j = ti[b]
        if w == tv[k] and j == ti[k]:
            break                  # the winner here is unchanged, so is every one above
        tv[k] = w
        ti[k] = j
        k >>= 1


@njit(cache=True)
def tree_init(tv, ti, size):
    for i in range(size):
        tv[size + i] = INF
        ti[size + i] = i
    for k in range(size - 1, 0, -1):
        a = 2 * k
        b = a + 1
        if tv[a] <= tv[b]:
            tv[k] = tv[a]
            ti[k] = ti[a]
        else:
            tv[k] = tv[b]
            ti[k] = ti[b]


@njit(cache=True, inline="always")
def _timer_set(c, dl, lst, cl_dl, tl_next, tl_prev, cl_list, tl):
    """Give client c the deadline dl in timer list ``lst`` (T_START, T_SEND or
    T_REARM), out of the list it was in. ``tl`` holds each list's head and tail.
    Every list is ordered by deadline, inserting from its tail: a send's
    deadline (t + send + timeout) and a re-arm's (t + timeout) come in time
    order within their own list, so the walk back stops at once. (With one
    list for both, a re-arm walked back past every client that had sent
    within the last send time: with 371,005 clients and a 1.3 ms send, a
    20 ms simulation did not end in 15 minutes.)"""
    # unlink from its list
    old = cl_list[c]
    p = tl_prev[c]
    nx = tl_next[c]
    if p >= 0:
        tl_next[p] = nx
    else:
        tl[2 * old] = nx
    if nx >= 0:
        tl_prev[nx] = p
    else:
        tl[2 * old + 1] = p
    cl_dl[c] = dl
    cl_list[c] = lst
    # walk back from the tail to the last deadline <= dl
    q = tl[2 * lst + 1]
    while q >= 0 and cl_dl[q] > dl:
        q = tl_prev[q]
    if q < 0:                      # new head
        h = tl[2 * lst]
        tl_prev[c] = -1
        tl_next[c] = h
        if h >= 0:
            tl_prev[h] = c
        else:
            tl[2 * lst + 1] = c
        tl[2 * lst] = c
    else:
        nq = tl_next[q]
        tl_next[q] = c
        tl_prev[c] = q
        tl_next[c] = nq
        if nq >= 0:
            tl_prev[nq] = c
        else:
            tl[2 * lst + 1] = c


@njit(cache=True)
def run_chunk(t_end, P, IP, IS, FS, G, C, hist,
              st_acc, st_alias, open_acc, open_alias, svc_mean, wfrac, st_c, st_slot0, st_buf, st_mach, wal_block,
              cl_att, cl_first, cl_cls, cl_write, cl_start, cl_dl, cl_started, tl_next, tl_prev, cl_list, tl,
              hit_t, hit_c, hit_a,
              arr_t, arr_c, arr_a, arr_s, arr_w,
              rsp_t, rsp_c, rsp_a,
              q_c, q_a, q_w, q_t, q_h, q_n,
              sl_st, sl_busy, sl_c, sl_a, sl_w, sl_arr, sl_start, sl_since, tv, ti,
              lp, ls, li, mach, m_busy, rs):
    send = P[P_SEND]
    hit_rtt = P[P_HIT_RTT]
    half = P[P_HALF_RTT]
    timeout = P[P_TIMEOUT]
    loss = P[P_LOSS]
    hit_p = P[P_HIT]
    shape = P[P_SHAPE]
    open_rate = P[P_OPEN_RATE]
    ctx = P[P_CTX]
    cores = P[P_CORES]
    fixed = P[P_FIXED]
    n_cl = IP[I_CLIENTS]
    lsm_on = IP[I_LSM] != 0
    open_write = IP[I_OPEN_WRITE]
    tsize = IP[I_TREE]
    retry = IP[I_RETRY]
    cap_hit = hit_t.shape[0]
    cap_arr = arr_t.shape[0]
    cap_rsp = rsp_t.shape[0]
    qcap = q_c.shape[1]
    go_sl = np.empty(IP[I_SLOTS] + 1, dtype=np.int64)   # slots that start (or retry) now
    go_t = np.empty(IP[I_SLOTS] + 1)
    # The scalar state lives in locals while the loop runs (in IS / FS, a store
    # to any other int64 or float64 array could alias it and force reloads);
    # it goes back to IS / FS when the loop ends.
    hit_h = IS[S_HIT_H]
    hit_n = IS[S_HIT_N]
    arr_h = IS[S_ARR_H]
    arr_n = IS[S_ARR_N]
    rsp_h = IS[S_RSP_H]
    rsp_n = IS[S_RSP_N]
    bg_st = IS[S_BG_ST]
    bg_kind = IS[S_BG_KIND]
    next_open = FS[F_NEXT_OPEN]
    next_bg = FS[F_NEXT_BG]
    # each FIFO's head time (INF when empty), kept beside it so that picking
    # the next event is a chain of compares and selects, not of branches
    hit_nt = hit_t[hit_h] if hit_n > 0 else INF
    arr_nt = arr_t[arr_h] if arr_n > 0 else INF
    rsp_nt = rsp_t[rsp_h] if rsp_n > 0 else INF
    ret = 0
    t = t_end
    # the chunk's global counters (G, zeroed by the caller), also as locals
    g_done = 0.0
    g_hits = 0.0
    g_retried = 0.0
    g_lat = 0.0
    g_lat2 = 0.0
    g_stale = 0.0
    g_open_done = 0.0
    g_open_resp = 0.0
    g_resends = 0.0
    g_flushes = 0.0
    g_compactions = 0.0
    g_issued = 0.0
    g_wire = 0.0
    g_switches = 0.0

    while True:
        # ---- pick the earliest event source ----
        t = t_end
        kind = 0
        if hit_nt < t:
            t = hit_nt
            kind = 1
        if arr_nt < t:
            t = arr_nt
            kind = 2
        if rsp_nt < t:
            t = rsp_nt
            kind = 3
        if tv[1] < t:
            t = tv[1]
            kind = 4
        h = -1
        for lst in range(3):               # the earliest of the three lists' heads
            hl = tl[2 * lst]
            if hl >= 0 and cl_dl[hl] < t:
                t = cl_dl[hl]
                kind = 5
                h = hl
        if next_bg < t:
            t = next_bg
            kind = 6
        if next_open < t:
            t = next_open
            kind = 7
        if kind == 0:
            break

        send_c = -1          # client that sends now (a new request or a resend)
        new_req = False
        arr_c_ = -2          # a packet reaching a worker: client (-1 open request, -3 write-back)
        arr_a_ = 0
        arr_s_ = 0
        arr_w_ = 0
        start_slot = -1      # a worker slot that starts the packet it now holds
        unstall_st = -1      # station whose stopped writers retry

        if kind == 1 or kind == 3:       # a reply reaches its client (switch hit or worker)
            if kind == 1:
                k = hit_h
                c = hit_c[k]
                a = hit_a[k]
                hit_h = k + 1 if k + 1 < cap_hit else 0
                hit_n -= 1
                hit_nt = hit_t[hit_h] if hit_n > 0 else INF
            else:
                k = rsp_h
                c = rsp_c[k]
                a = rsp_a[k]
                rsp_h = k + 1 if k + 1 < cap_rsp else 0
                rsp_n -= 1
                rsp_nt = rsp_t[rsp_h] if rsp_n > 0 else INF
            if _cl.reply_completes(retry, a, cl_att[c], cl_first[c]):
                lat = t - cl_start[c]
                g_done += 1.0
                if kind == 1:
                    g_hits += 1.0
                if a > cl_first[c]:
                    g_retried += 1.0
                g_lat += lat
                g_lat2 += lat * lat
                hist[hist_bin(lat)] += 1
                send_c = c
                new_req = True
            else:
                g_stale += 1.0
                if retry == _cl.RETRY_FARREACH:
                    # the client's receive returned; its wait starts over
                    _timer_set(c, t + timeout, T_REARM, cl_dl, tl_next, tl_prev, cl_list, tl)
        elif kind == 2:      # a miss reaches its worker's socket
            k = arr_h
            arr_c_ = arr_c[k]
            arr_a_ = arr_a[k]
            arr_s_ = arr_s[k]
            arr_w_ = arr_w[k]
            arr_h = k + 1 if k + 1 < cap_arr else 0
            arr_n -= 1
            arr_nt = arr_t[arr_h] if arr_n > 0 else INF
        elif kind == 4:      # a worker finishes a request
            sl = ti[1]
            s = sl_st[sl]
            m = st_mach[s]
            C[s, K.C_COMPL] += 1.0
            C[s, K.C_BUSY] += t - sl_start[sl]
            if sl_w[sl] != 0:
                C[s, K.C_WRITES] += 1.0
                if lsm_on:
                    _lsm.write_done(s, lp, ls)
            c = sl_c[sl]
            if c >= 0:
                # the reply travels back: constant offset from departures -> FIFO
                if rsp_n >= cap_rsp:
                    ret = 3
                    break
                k = rsp_h + rsp_n
                if k >= cap_rsp:
                    k -= cap_rsp
                rsp_t[k] = t + half
                if rsp_n == 0:
                    rsp_nt = t + half
                rsp_c[k] = c
                rsp_a[k] = sl_a[sl]
                rsp_n += 1
            else:                    # open packet: a write-back, or an open network's request
                r = t - sl_arr[sl]
                g_open_done += 1.0
                g_open_resp += r
                if n_cl == 0:
                    g_done += 1.0
                    g_lat += r
                    g_lat2 += r * r
                    hist[hist_bin(r)] += 1
            m_busy[m] -= 1
            # next packet from the socket, if any
            if q_n[s] > 0:
                j = q_h[s]
                sl_c[sl] = q_c[s, j]
                sl_a[sl] = q_a[s, j]
                sl_w[sl] = q_w[s, j]
                sl_arr[sl] = q_t[s, j]
                q_h[s] = j + 1 if j + 1 < qcap else 0
                q_n[s] -= 1
                start_slot = sl
            else:
                sl_busy[sl] = 0
                _tree_set(tv, ti, tsize, sl, INF)
        elif kind == 5:      # a client's timer: its first send, or a resend after a timeout
            c = h
            send_c = c
            if cl_started[c] == 0:
                cl_started[c] = 1
                new_req = True
            else:
                g_resends += 1.0
        elif kind == 6:      # a background (flush / compaction) event
            s = bg_st
            bk = bg_kind
            if _lsm.bg_event(s, bk, t, lp, st_mach, ls, li, mach):
                g_flushes += 1.0
                unstall_st = s
            elif bk == _lsm.EV_COMPACTION:
                g_compactions += 1.0
            next_bg, bg_st, bg_kind = _lsm.bg_next(lp, st_mach, ls, li, mach)
        else:                # kind == 7: an open (Poisson) arrival
            arr_c_ = -1 if n_cl == 0 else -3
            arr_a_ = 0
            arr_s_ = _pl.draw_station(1.0, _u01(rs), 0.0, open_acc, open_alias)
            arr_w_ = open_write
            next_open = t + _exponential(rs, 1.0 / open_rate)

        # ---- a client sends (its new request's first attempt, or a resend) ----
        if send_c >= 0:
            c = send_c
            cl_att[c] += 1
            if new_req:
                g_issued += 1.0
                cl_start[c] = t
                cl_first[c] = cl_att[c]
                cl_cls[c] = _pl.draw_station(_u01(rs), _u01(rs), hit_p, st_acc, st_alias)
                cl_write[c] = 0
                if cl_cls[c] >= 0 and _u01(rs) < wfrac[cl_cls[c]]:
                    cl_write[c] = 1
            tp = t + send
            _timer_set(c, tp + timeout, T_SEND, cl_dl, tl_next, tl_prev, cl_list, tl)
            if loss > 0.0 and _u01(rs) < loss:
                g_wire += 1.0
            elif cl_cls[c] < 0:
                if hit_n >= cap_hit:
                    ret = 1
                    break
                k = hit_h + hit_n
                if k >= cap_hit:
                    k -= cap_hit
                hit_t[k] = tp + hit_rtt
                if hit_n == 0:
                    hit_nt = tp + hit_rtt
                hit_c[k] = c
                hit_a[k] = cl_att[c]
                hit_n += 1
            else:
                if arr_n >= cap_arr:
                    ret = 2
                    break
                k = arr_h + arr_n
                if k >= cap_arr:
                    k -= cap_arr
                arr_t[k] = tp + half
                if arr_n == 0:
                    arr_nt = tp + half
                arr_c[k] = c
                arr_a[k] = cl_att[c]
                arr_s[k] = cl_cls[c]
                arr_w[k] = cl_write[c]
                arr_n += 1

        # ---- a packet reaches a worker's receive buffer ----
        if arr_c_ != -2:
            s = arr_s_
            C[s, K.C_ARR] += 1.0
            free = -1
            s0 = st_slot0[s]
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[sl] == 0:
                    free = sl
                    break
            if not _nw.admits(free >= 0, q_n[s], st_buf[s]):
                C[s, K.C_DROP] += 1.0      # buffer overflow: the client finds out by timeout
            elif free >= 0:
                sl_c[free] = arr_c_
                sl_a[free] = arr_a_
                sl_w[free] = arr_w_
                sl_arr[free] = t
                start_slot = free
            else:
                j = q_h[s] + q_n[s]
                if j >= qcap:
                    j -= qcap
                q_c[s, j] = arr_c_
                q_a[s, j] = arr_a_
                q_w[s, j] = arr_w_
                q_t[s, j] = t
                q_n[s] += 1

        # ---- stopped writers of a station whose flush just ended retry ----
        n_go = 0
        if unstall_st >= 0:
            s = unstall_st
            s0 = st_slot0[s]
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[sl] == 2:
                    C[s, K.C_STALL] += t - sl_since[sl]
                    sl_busy[sl] = 0
                    go_sl[n_go] = sl
                    go_t[n_go] = sl_start[sl]    # the stop counts as process time
                    n_go += 1
        if start_slot >= 0:
            go_sl[n_go] = start_slot
            go_t[n_go] = t
            n_go += 1

        # ---- worker slots start (or retry) the packet they hold ----
        for g in range(n_go):
            sl = go_sl[g]
            s = sl_st[sl]
            m = st_mach[s]
            sl_start[sl] = go_t[g]
            extra = 0.0
            if lsm_on and sl_w[sl] != 0:
                status, extra, switched, started = _lsm.write_start(s, m, t, lp, ls, li, mach,
                                                                     wal_block)
                if switched:
                    g_switches += 1.0
                if started:
                    next_bg, bg_st, bg_kind = _lsm.bg_next(lp, st_mach, ls, li, mach)
                if status == _lsm.STOP:
                    # the worker blocks until a flush of this instance completes
                    sl_busy[sl] = 2
                    sl_since[sl] = t
                    _tree_set(tv, ti, tsize, sl, INF)
                    continue
            work = _service(rs, svc_mean[s], shape, fixed)
            m_busy[m] += 1
            if cores > 0.0:
                # busy workers (this one included) and running background jobs
                work = _svc.stretched(work, fixed,
                                      _svc.stretch(m_busy[m] + mach[m, _lsm.M_BG], cores, ctx))
            C[s, K.C_BLOCK] += extra
            sl_busy[sl] = 1
            _tree_set(tv, ti, tsize, sl, t + extra + work)

    IS[S_HIT_H] = hit_h
    IS[S_HIT_N] = hit_n
    IS[S_ARR_H] = arr_h
    IS[S_ARR_N] = arr_n
    IS[S_RSP_H] = rsp_h
    IS[S_RSP_N] = rsp_n
    IS[S_BG_ST] = bg_st
    IS[S_BG_KIND] = bg_kind
    FS[F_NEXT_OPEN] = next_open
    FS[F_NEXT_BG] = next_bg
    FS[F_NOW] = t
    G[K.G_DONE] += g_done
    G[K.G_HITS] += g_hits
    G[K.G_RETRIED] += g_retried
    G[K.G_LAT] += g_lat
    G[K.G_LAT2] += g_lat2
    G[K.G_STALE] += g_stale
    G[K.G_OPEN_DONE] += g_open_done
    G[K.G_OPEN_RESP] += g_open_resp
    G[K.G_RESENDS] += g_resends
    G[K.G_FLUSHES] += g_flushes
    G[K.G_COMPACTIONS] += g_compactions
    G[K.G_ISSUED] += g_issued
    G[K.G_WIRE] += g_wire
    G[K.G_SWITCHES] += g_switches
    IS[S_STATUS] = ret
    return ret
