"""Compiled event loop of the fast engine (numba, ``cache=True``).

The semantics are those of :mod:`sim.engine_simpy` (see :mod:`sim.run` for
the model); this module only makes them fast. The trick that makes the loop
cheap: almost every delay in the rack is a *constant* (client send cost,
network one-way times, the timeout), and events are processed in time
order, so each delay line is a FIFO whose entries come out sorted:

* ``hit`` FIFO: a cache hit returns after ``send + hit_rtt``;
* ``arr`` FIFO: a miss reaches its worker ``send + rtt/2`` after sending;
* ``rsp`` FIFO: a reply reaches its client ``rtt/2`` after the worker is done;
* timers: every client has one armed deadline ``send + timeout`` after its
  last packet left, so a doubly linked list with move-to-tail keeps them
  ordered in O(1) (the first request of every client is started through
  the same list, at staggered times).

Only service completions need a priority structure: a tournament tree over
the worker slots (O(log slots) per update, O(1) minimum). LSM flush events
are rare and found by a linear scan of the per-worker flush deadlines,
redone only when one changes. The next event is the minimum of six heads.

State lives in numpy arrays owned by :class:`sim.fast.FastState`; the
kernel runs one chunk (normally one simulated second) and returns, so
Python can update load-dependent service means, report progress and take
Ctrl-C between chunks. Random numbers come from numba's per-thread
Mersenne Twister, seeded by :func:`seed`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

INF = 1e300

# ---- float parameters (P) ----
P_SEND, P_HIT_RTT, P_HALF_RTT, P_TIMEOUT, P_LOSS, P_HIT, P_WRITE, P_SHAPE, \
    P_OPEN_RATE, P_ENTRY, P_MEM, P_FLUSH_FIXED, P_DISK, P_SLOW, P_CTX, P_CORES, \
    P_BG_CAP, P_NP = range(18)
# ---- int parameters (IP) ----
I_CLIENTS, I_ST, I_SLOTS, I_FLUSHNUM, I_MAXNUM, I_LSM, I_WAL, I_MACH, I_OPEN_WRITE, \
    I_TREE, I_NP = range(11)
# ---- scalar int state (IS) ----
S_HIT_H, S_HIT_N, S_ARR_H, S_ARR_N, S_RSP_H, S_RSP_N, S_TL_HEAD, S_TL_TAIL, \
    S_NEXT_FLUSH_ST, S_STATUS, S_NS = range(11)
# ---- scalar float state (FS) ----
F_NOW, F_NEXT_OPEN, F_NEXT_FLUSH, F_NF = range(4)
# ---- global counters (G), reset per chunk by the caller ----
G_DONE, G_LAT_SUM, G_LAT_SQ, G_HITS, G_FP, G_RESENDS, G_WIRE_LOSS, G_SWITCHES, \
    G_FLUSHES, G_OPEN_DONE, G_OPEN_RESP, G_ISSUED, G_NG = range(13)
# ---- per-station counters (C[:, k]), reset per chunk ----
C_ARR, C_DROP, C_DONE, C_BUSY, C_BLOCK, C_STALL, C_WRITES, C_NC = range(8)

HIST_PER_DECADE = 20
HIST_LO = -1          # 10^-1 us
HIST_BINS = 9 * HIST_PER_DECADE + 1  # up to 10^8 us


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True, inline="always")
def _tree_set(tv, ti, size, i, v):
    k = size + i
    tv[k] = v
    k >>= 1
    while k >= 1:
        a = 2 * k
        b = a + 1
        if tv[a] <= tv[b]:
            tv[k] = tv[a]
            ti[k] = ti[a]
        else:
            tv[k] = tv[b]
            ti[k] = ti[b]
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
def _deliver(G, hist, cl_att, cl_start, c, a, t, hit):
    """A response reaches client c: completes its request if it answers the
    current attempt (True), else it is late or a duplicate (a false positive)."""
    if a != cl_att[c]:
        G[G_FP] += 1.0
        return False
    lat = t - cl_start[c]
    G[G_DONE] += 1.0
    if hit:
        G[G_HITS] += 1.0
    G[G_LAT_SUM] += lat
    G[G_LAT_SQ] += lat * lat
    _hist_add(hist, lat)
    return True


@njit(cache=True, inline="always")
def _hist_add(hist, lat):
    if lat <= 0.0:
        b = 0
    else:
        b = int(math.floor(math.log10(lat) * HIST_PER_DECADE)) - HIST_LO * HIST_PER_DECADE
        if b < 0:
            b = 0
        elif b >= HIST_BINS:
            b = HIST_BINS - 1
    hist[b] += 1


@njit(cache=True, inline="always")
def _pick(cum, u):
    # first index with cum[i] > u (cum ends above 1): binary search
    n = cum.shape[0]
    lo = 0
    hi = n - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def run_chunk(t_end, P, IP, IS, FS, G, C, hist,
              st_cum, open_cum, svc_mean, st_c, st_slot0, st_buf, st_mach, wamp, wal_block,
              cl_att, cl_cls, cl_write, cl_start, cl_dl, cl_started, tl_next, tl_prev,
              hit_t, hit_c, hit_a,
              arr_t, arr_c, arr_a, arr_s, arr_w,
              rsp_t, rsp_c, rsp_a,
              q_c, q_a, q_w, q_t, q_h, q_n,
              sl_st, sl_busy, sl_c, sl_a, sl_w, sl_arr, sl_start, sl_since, tv, ti,
              ls_active, ls_imm, ls_taken, ls_phase, ls_end, ls_rem, ls_slow,
              m_busy, m_flush, m_disk_n, m_last, m_wbytes):
    send = P[P_SEND]
    hit_rtt = P[P_HIT_RTT]
    half = P[P_HALF_RTT]
    timeout = P[P_TIMEOUT]
    loss = P[P_LOSS]
    hit_p = P[P_HIT]
    wfrac = P[P_WRITE]
    shape = P[P_SHAPE]
    open_rate = P[P_OPEN_RATE]
    entry = P[P_ENTRY]
    mem = P[P_MEM]
    fixed = P[P_FLUSH_FIXED]
    disk = P[P_DISK]
    slow = P[P_SLOW]
    ctx = P[P_CTX]
    cores = P[P_CORES]
    bg_cap = P[P_BG_CAP]
    n_cl = IP[I_CLIENTS]
    n_st = IP[I_ST]
    flushnum = IP[I_FLUSHNUM]
    maxnum = IP[I_MAXNUM]
    lsm = IP[I_LSM] != 0
    wal = IP[I_WAL] != 0
    open_write = IP[I_OPEN_WRITE]
    tsize = IP[I_TREE]
    cap_hit = hit_t.shape[0]
    cap_arr = arr_t.shape[0]
    cap_rsp = rsp_t.shape[0]
    qcap = q_c.shape[1]
    inv_shape = 1.0 / shape
    go_sl = np.empty(IP[I_SLOTS] + 1, dtype=np.int64)   # slots to start this event
    go_t = np.empty(IP[I_SLOTS] + 1)

    while True:
        # ---- pick the earliest event source ----
        t = t_end
        kind = 0
        if IS[S_HIT_N] > 0 and hit_t[IS[S_HIT_H]] < t:
            t = hit_t[IS[S_HIT_H]]
            kind = 1
        if IS[S_ARR_N] > 0 and arr_t[IS[S_ARR_H]] < t:
            t = arr_t[IS[S_ARR_H]]
            kind = 2
        if IS[S_RSP_N] > 0 and rsp_t[IS[S_RSP_H]] < t:
            t = rsp_t[IS[S_RSP_H]]
            kind = 3
        if tv[1] < t:
            t = tv[1]
            kind = 4
        h = IS[S_TL_HEAD]
        if h >= 0 and cl_dl[h] < t:
            t = cl_dl[h]
            kind = 5
        if FS[F_NEXT_FLUSH] < t:
            t = FS[F_NEXT_FLUSH]
            kind = 6
        if FS[F_NEXT_OPEN] < t:
            t = FS[F_NEXT_OPEN]
            kind = 7
        if kind == 0:
            FS[F_NOW] = t_end
            return 0
        FS[F_NOW] = t

        # pending "send" actions and "arrival" actions are expressed with
        # small local state machines to avoid helper-function call overhead
        send_c = -1          # client that sends a (re)attempt now
        new_req = False      # ... with a freshly drawn request
        arr_c_ = -2          # an arrival to process: client (-1 open), att, station, write
        arr_a_ = 0
        arr_s_ = 0
        arr_w_ = 0
        start_slot = -1      # a worker slot that should start its head packet
        flush_st = -1        # station whose flush may need starting
        unstall_st = -1      # station whose stalled slots should retry

        if kind == 1:        # cache hit answered by the switch
            k = IS[S_HIT_H]
            c = hit_c[k]
            a = hit_a[k]
            IS[S_HIT_H] = k + 1 if k + 1 < cap_hit else 0
            IS[S_HIT_N] -= 1
            if _deliver(G, hist, cl_att, cl_start, c, a, t, True):
                send_c = c
                new_req = True
        elif kind == 2:      # a miss reaches its worker's socket
            k = IS[S_ARR_H]
            arr_c_ = arr_c[k]
            arr_a_ = arr_a[k]
            arr_s_ = arr_s[k]
            arr_w_ = arr_w[k]
            IS[S_ARR_H] = k + 1 if k + 1 < cap_arr else 0
            IS[S_ARR_N] -= 1
        elif kind == 3:      # a reply reaches its client
            k = IS[S_RSP_H]
            c = rsp_c[k]
            a = rsp_a[k]
            IS[S_RSP_H] = k + 1 if k + 1 < cap_rsp else 0
            IS[S_RSP_N] -= 1
            if _deliver(G, hist, cl_att, cl_start, c, a, t, False):
                send_c = c
                new_req = True
        elif kind == 4:      # a worker finishes a request
            sl = ti[1]
            s = sl_st[sl]
            m = st_mach[s]
            C[s, C_DONE] += 1.0
            C[s, C_BUSY] += t - sl_start[sl]
            m_busy[m] -= 1
            if sl_w[sl] != 0:
                C[s, C_WRITES] += 1.0
                m_wbytes[m] += entry
                if lsm:
                    ls_active[s] += entry
            c = sl_c[sl]
            if c >= 0:
                # reply travels back: constant offset from departures -> FIFO
                if IS[S_RSP_N] >= cap_rsp:
                    IS[S_STATUS] = 3
                    return 3
                k = IS[S_RSP_H] + IS[S_RSP_N]
                if k >= cap_rsp:
                    k -= cap_rsp
                rsp_t[k] = t + half
                rsp_c[k] = c
                rsp_a[k] = sl_a[sl]
                IS[S_RSP_N] += 1
            else:                    # open packet: eviction write-back, or open-queue mode
                r = t - sl_arr[sl]
                G[G_OPEN_DONE] += 1.0
                G[G_OPEN_RESP] += r
                if n_cl == 0:        # open network: its packets are the requests
                    G[G_DONE] += 1.0
                    G[G_LAT_SUM] += r
                    G[G_LAT_SQ] += r * r
                    _hist_add(hist, r)
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
        elif kind == 5:      # a client's timer: first send, or resend after a timeout
            c = h
            send_c = c
            if cl_started[c] == 0:
                cl_started[c] = 1
                new_req = True
            else:
                G[G_RESENDS] += 1.0
        elif kind == 6:      # LSM flush phase ends
            s = IS[S_NEXT_FLUSH_ST]
            m = st_mach[s]
            # advance the machine's processor-shared disk
            if m_disk_n[m] > 0:
                done = (t - m_last[m]) * disk / m_disk_n[m]
                for s2 in range(n_st):
                    if st_mach[s2] == m and ls_phase[s2] == 2:
                        ls_rem[s2] -= done
            m_last[m] = t
            if ls_phase[s] == 1:
                # fixed part done: the flush now writes its bytes (x compaction)
                ls_phase[s] = 2
                ls_rem[s] = ls_taken[s] * mem * wamp[s]
                m_disk_n[m] += 1
            else:
                ls_phase[s] = 0
                ls_imm[s] -= ls_taken[s]
                ls_taken[s] = 0
                m_disk_n[m] -= 1
                m_flush[m] -= 1
                G[G_FLUSHES] += 1.0
                flush_st = s
                unstall_st = s
            # reschedule the machine's disk-phase completions
            for s2 in range(n_st):
                if st_mach[s2] == m and ls_phase[s2] == 2:
                    rem = ls_rem[s2]
                    if rem < 0.0:
                        rem = 0.0
                    ls_end[s2] = t + rem * m_disk_n[m] / disk
            ls_end[s] = ls_end[s] if ls_phase[s] != 0 else INF
            best = INF
            bi = -1
            for s2 in range(n_st):
                if ls_end[s2] < best:
                    best = ls_end[s2]
                    bi = s2
            FS[F_NEXT_FLUSH] = best
            IS[S_NEXT_FLUSH_ST] = bi
        else:                # kind == 7: open (Poisson) arrival: write-backs, or open-queue mode
            u = np.random.random()
            arr_c_ = -1 if n_cl == 0 else -3
            arr_a_ = 0
            arr_s_ = _pick(open_cum, u)
            arr_w_ = open_write
            FS[F_NEXT_OPEN] = t + np.random.exponential(1.0 / open_rate)

        # ---- a client sends (first attempt of a new request, or a resend) ----
        if send_c >= 0:
            c = send_c
            if new_req:
                G[G_ISSUED] += 1.0
                cl_start[c] = t
                if np.random.random() < hit_p:
                    cl_cls[c] = -1
                else:
                    cl_cls[c] = _pick(st_cum, np.random.random())
                cl_write[c] = 1 if np.random.random() < wfrac else 0
            cl_att[c] += 1
            tp = t + send
            cl_dl[c] = tp + timeout
            # move to the tail of the timer list (its deadline is the latest)
            if IS[S_TL_TAIL] != c:
                p = tl_prev[c]
                nx = tl_next[c]
                if p >= 0:
                    tl_next[p] = nx
                else:
                    IS[S_TL_HEAD] = nx
                tl_prev[nx] = p
                tail = IS[S_TL_TAIL]
                tl_next[tail] = c
                tl_prev[c] = tail
                tl_next[c] = -1
                IS[S_TL_TAIL] = c
            if loss > 0.0 and np.random.random() < loss:
                G[G_WIRE_LOSS] += 1.0
            elif cl_cls[c] < 0:
                if IS[S_HIT_N] >= cap_hit:
                    IS[S_STATUS] = 1
                    return 1
                k = IS[S_HIT_H] + IS[S_HIT_N]
                if k >= cap_hit:
                    k -= cap_hit
                hit_t[k] = tp + hit_rtt
                hit_c[k] = c
                hit_a[k] = cl_att[c]
                IS[S_HIT_N] += 1
            else:
                if IS[S_ARR_N] >= cap_arr:
                    IS[S_STATUS] = 2
                    return 2
                k = IS[S_ARR_H] + IS[S_ARR_N]
                if k >= cap_arr:
                    k -= cap_arr
                arr_t[k] = tp + half
                arr_c[k] = c
                arr_a[k] = cl_att[c]
                arr_s[k] = cl_cls[c]
                arr_w[k] = cl_write[c]
                IS[S_ARR_N] += 1

        # ---- a packet reaches a worker's receive buffer ----
        if arr_c_ != -2:
            s = arr_s_
            C[s, C_ARR] += 1.0
            free = -1
            s0 = st_slot0[s]
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[sl] == 0:
                    free = sl
                    break
            if free >= 0:
                sl_c[free] = arr_c_
                sl_a[free] = arr_a_
                sl_w[free] = arr_w_
                sl_arr[free] = t
                start_slot = free
            elif q_n[s] >= st_buf[s]:
                C[s, C_DROP] += 1.0      # buffer overflow: the client finds out by timeout
            else:
                j = q_h[s] + q_n[s]
                if j >= qcap:
                    j -= qcap
                q_c[s, j] = arr_c_
                q_a[s, j] = arr_a_
                q_w[s, j] = arr_w_
                q_t[s, j] = t
                q_n[s] += 1

        # ---- after a flush: the next one may start, then stalled writers retry ----
        if flush_st >= 0 and ls_phase[flush_st] == 0 and ls_imm[flush_st] >= flushnum:
            _flush_start(flush_st, t, IS, FS, ls_imm, ls_taken, ls_phase, ls_end, st_mach,
                         m_flush, fixed)
        n_go = 0
        if unstall_st >= 0:
            s = unstall_st
            s0 = st_slot0[s]
            for sl in range(s0, s0 + st_c[s]):
                if sl_busy[sl] == 2 and ls_imm[s] < maxnum:
                    C[s, C_STALL] += t - sl_since[sl]
                    sl_busy[sl] = 0
                    go_sl[n_go] = sl
                    # the stall counts as process time: keep the original start
                    go_t[n_go] = sl_start[sl]
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
            if lsm and sl_w[sl] != 0:
                if ls_imm[s] >= maxnum:
                    # write stop: maxnum immutables wait for flush; the worker blocks
                    sl_busy[sl] = 2
                    sl_since[sl] = t
                    _tree_set(tv, ti, tsize, sl, INF)
                    continue
                if ls_active[s] + entry > mem:
                    # memtable full: switch to a new one (a new WAL file blocks the worker)
                    ls_imm[s] += 1
                    ls_active[s] = 0.0
                    G[G_SWITCHES] += 1.0
                    if wal:
                        extra += wal_block[m]
                    if ls_phase[s] == 0 and ls_imm[s] >= flushnum:
                        _flush_start(s, t, IS, FS, ls_imm, ls_taken, ls_phase, ls_end, st_mach,
                                     m_flush, fixed)
                if maxnum > 3 and ls_imm[s] >= maxnum - 1 and ls_imm[s] - 1 >= flushnum:
                    # write slowdown: writes delayed to the delayed-write rate
                    st = t + extra
                    if ls_slow[s] > st:
                        st = ls_slow[s]
                    extra = st - t
                    ls_slow[s] = st + entry / slow
            work = svc_mean[s]
            if work > 0.0:
                if shape != 1.0:
                    work = np.random.gamma(shape, work * inv_shape)
                else:
                    work = np.random.exponential(work)
            m_busy[m] += 1
            if cores > 0.0:
                bg = m_flush[m] if m_flush[m] < bg_cap else bg_cap
                run = m_busy[m] + bg
                if run > cores:
                    # more runnable threads than cores: time-sliced, plus switching cost
                    work *= run / cores * (1.0 + ctx)
            C[s, C_BLOCK] += extra
            sl_busy[sl] = 1
            _tree_set(tv, ti, tsize, sl, t + extra + work)


@njit(cache=True)
def _flush_start(s, t, IS, FS, ls_imm, ls_taken, ls_phase, ls_end, st_mach, m_flush, fixed):
    # a flush job takes every immutable memtable present (at least flushnum)
    ls_taken[s] = ls_imm[s]
    ls_phase[s] = 1
    ls_end[s] = t + fixed
    m_flush[st_mach[s]] += 1
    if ls_end[s] < FS[F_NEXT_FLUSH]:
        FS[F_NEXT_FLUSH] = ls_end[s]
        IS[S_NEXT_FLUSH_ST] = s
