"""The fast kernel's event queues: the FIFO rings of packets on the wire,
the tournament tree of service ends, the client timers' lists, the binary
heap of the client cores' ends, and the choice of the next event among them.

Every delay after a send is a constant and events come in time order, so
each delay line is a FIFO whose entries come out sorted (:data:`Ring`); see
:mod:`sim.fast_kernel` for the whole design.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import INF, _nonneg
from .fast_kernel_state import T_LISTS, T_START

# ---- what the next event is: each source of events has a kind ----
EV_END, EV_HIT, EV_ARRIVAL, EV_REPLY, EV_SERVICE, EV_TIMER, EV_BG, EV_OPEN, EV_CORE = range(9)

#: a FIFO ring's head, its length and its head's time (INF when empty), kept
#: in locals beside its arrays so that picking the next event is a chain of
#: compares and selects, not of branches
Ring = namedtuple("Ring", "h n nt")
#: the client cores: how many are held (the heap of their ends), the head and
#: length of the ring of threads waiting for one, the earliest end (INF if none)
Cores = namedtuple("Cores", "held wait_h wait_n nt")


@njit(cache=True, inline="always")
def _ring_pop(ring, cap, times):
    """Take the head of a ring of capacity ``cap`` whose entries' times are
    ``times``: (the head's index, the ring after it)."""
    k = _nonneg(ring.h)
    h = k + 1 if k + 1 < cap else 0
    n = ring.n - 1
    return k, Ring(h, n, times[_nonneg(h)] if n > 0 else INF)


@njit(cache=True, inline="always")
def _ring_push(ring, cap, times, t):
    """Add an entry of time ``t`` (the latest) to a ring that is not full:
    (its index, the ring after it); the caller fills the entry's other fields."""
    k = ring.h + ring.n
    if k >= cap:
        k -= cap
    k = _nonneg(k)
    times[k] = t
    return k, Ring(ring.h, ring.n + 1, t if ring.n == 0 else ring.nt)


@njit(cache=True, inline="always")
def _earlier(ta, ka, tb, kb):
    """(time, kind) of the earlier of two sources, the first on a tie."""
    if tb < ta:
        return tb, kb
    return ta, ka


@njit(cache=True, inline="always")
def _next_event(t_end, hit_nt, arr_nt, rsp_nt, tree_nt, timer_nt, next_bg, next_open, core_nt):
    """(time, kind) of the earliest event source; (t_end, EV_END) at the chunk's end.
    A tournament of the heads kept in locals (ties to the earlier source),
    not a chain of compares: the loop waits on this choice."""
    t12, k12 = _earlier(hit_nt, EV_HIT, arr_nt, EV_ARRIVAL)
    t34, k34 = _earlier(rsp_nt, EV_REPLY, tree_nt, EV_SERVICE)
    t78, k78 = _earlier(next_open, EV_OPEN, core_nt, EV_CORE)
    t67, k67 = _earlier(next_bg, EV_BG, t78, k78)
    ta, ka = _earlier(t12, k12, t34, k34)
    tb, kb = _earlier(timer_nt, EV_TIMER, t67, k67)
    t, kind = _earlier(ta, ka, tb, kb)
    if not t < t_end:
        return t_end, EV_END
    return t, kind


@njit(cache=True, inline="always")
def _tree_set(tv, ti, size, i, v):
    """Slot i's service ends at v; returns the earliest end (the root)."""
    k = _nonneg(size + i)
    tv[k] = v
    k >>= 1
    while k >= 1:
        a = _nonneg(2 * k)
        b = _nonneg(a + 1)
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
    return tv[1]


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


def timer_lists(start: np.ndarray):
    """The client timers' four lists (first sends, send deadlines, FarReach
    re-arms, and the parked threads at the client cores) as ``(next, prev,
    deadline)`` over nodes 0..N+3: node c < N is
    client c (its deadline ``deadline[c]``), node N + T_START etc. is a list's
    sentinel, whose next is the list's head and prev its tail (itself when the
    list is empty) and whose deadline is -inf. Every client starts in the
    first list, in the order of its start time ``start`` (sorted)."""
    n = len(start)
    nodes = n + T_LISTS
    tl_next = np.arange(nodes, dtype=np.int64)
    tl_prev = np.arange(nodes, dtype=np.int64)
    s0 = n + T_START
    order = np.concatenate(([s0], np.arange(n), [s0]))     # s0 -> 0 -> ... -> n-1 -> s0
    tl_next[order[:-1]] = order[1:]
    tl_prev[order[1:]] = order[:-1]
    cl_dl = np.full(nodes, -np.inf)
    cl_dl[:n] = start
    return tl_next, tl_prev, cl_dl


@njit(cache=True, inline="always")
def _timer_set(c, dl, sentinel, cl_dl, tl_next, tl_prev):
    """Give client c the deadline dl in the timer list of node ``sentinel``
    (:func:`timer_lists`), out of the list it was in. Every list is ordered
    by deadline, inserting from its tail: a send's deadline (t + send +
    timeout) and a re-arm's (t + timeout) come in time order within their own
    list, so the walk back stops at once. (With one list for both, a re-arm
    walked back past every client that had sent within the last send time:
    with 371,005 clients and a 1.3 ms send, a 20 ms simulation did not end in
    15 minutes.) The sentinels make both ends ordinary nodes: no branch on
    a list's ends, and no head and tail array beside the links."""
    c = _nonneg(c)
    p = _nonneg(tl_prev[c])
    nx = _nonneg(tl_next[c])
    tl_next[p] = nx
    tl_prev[nx] = p
    cl_dl[c] = dl
    # walk back from the tail to the last deadline <= dl (a sentinel's is -inf)
    q = _nonneg(tl_prev[sentinel])
    while cl_dl[q] > dl:
        q = _nonneg(tl_prev[q])
    nq = _nonneg(tl_next[q])
    tl_next[q] = c
    tl_prev[c] = q
    tl_next[c] = nq
    tl_prev[nq] = c


@njit(cache=True, inline="always")
def _timer_head(n_cl, cl_dl, tl_next):
    """The earliest client timer: (deadline, client) of the first of the
    three lists' heads with the smallest deadline; (INF, -1) if none."""
    t = INF
    c = -1
    for lst in range(3):
        h = _nonneg(tl_next[n_cl + lst])
        if h < n_cl and cl_dl[h] < t:
            t = cl_dl[h]
            c = h
    return t, c


@njit(cache=True, inline="always")
def _heap_push(ht, hc, n, t, c):
    """Add (t, c) to the binary min-heap of n entries (ht times, hc ids); returns n + 1."""
    i = _nonneg(n)
    while i > 0:
        p = _nonneg((i - 1) >> 1)
        if ht[p] <= t:
            break
        ht[i] = ht[p]
        hc[i] = hc[p]
        i = p
    ht[i] = t
    hc[i] = c
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(ht, hc, n):
    """Remove the root of the binary min-heap of n > 0 entries; returns n - 1."""
    n -= 1
    if n == 0:
        return 0
    t = ht[_nonneg(n)]
    c = hc[_nonneg(n)]
    i = 0
    while True:
        a = _nonneg(2 * i + 1)
        if a >= n:
            break
        b = a + 1
        if b < n and ht[b] < ht[a]:
            a = b
        if ht[a] >= t:
            break
        ht[i] = ht[a]
        hc[i] = hc[a]
        i = a
    ht[i] = t
    hc[i] = c
    return n

