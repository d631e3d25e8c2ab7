"""The fast kernel's rules for the workers and the rack's other sources,
one per event: a write's service ends and it goes to its machine's commit
path, a service (or a commit) ends, a background (flush or compaction)
event, an open (Poisson) arrival, a packet reaches a worker's receive
buffer, stopped writers retry, worker slots start their packets.

Compiled into the loop as :mod:`sim.fast_kernel_clients`' rules are (its
docstring says how the loop's state goes in and out). The rules themselves
are the mechanisms' (RocksDB's write path: :mod:`sim.write_path` over
:mod:`model.rack.lsm_rules`; :mod:`model.rack.service`,
:mod:`model.rack.network`, :mod:`model.rack.placement`).
"""

from __future__ import annotations

from numba import njit

from model.rack import lsm_rules as _rules, network as _nw, placement as _pl, service as _svc

from . import counters as K, write_path as _wp
from .fast_kernel_draws import exponential, log_draw, service_draw, u01
# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import INF, _nonneg, write_start
from .fast_kernel_queues import _ring_push, _tree_set
from .fast_kernel_state import L_HEAD, L_HELD, L_TAIL, SL_COMMIT, SL_FREE, SL_SERVING, \
    SL_STOPPED, hist_bin

#: no packet reaches a worker in this event (its client field; -1 is an open
#: network's request, -3 a write-back)
NO_PACKET = (-2, 0, 0, 0)


@njit(cache=True, inline="always")
def _commits(pr, sl):
    """Is the service that ends first a write's, which now commits?"""
    return pr.txn_on and sl.w[_nonneg(sl.ti[1])] != 0 and \
        sl.busy[_nonneg(sl.ti[1])] == SL_SERVING


@njit(cache=True, inline="always")
def _commit_starts(pr, stn, sl, sto, t, log_ahead):
    """A write's service ended: it commits through its machine's commit
    path, one commit at a time, first come first served; the worker waits
    (its slot stays busy). A commit that starts now is the event's first
    draw (``log_ahead``, begun ahead). Returns (that draw taken?, the
    earliest service end)."""
    i = _nonneg(sl.ti[1])
    m = _nonneg(stn.machine[_nonneg(sl.st[i])])
    lock = sto.m_lock
    sl.busy[i] = SL_COMMIT
    sl.cst[i] = t
    if lock[m, L_HELD] == 0:
        lock[m, L_HELD] = 1
        return True, _tree_set(sl.tv, sl.ti, pr.tsize, i, t - pr.txn * log_ahead)
    sl.next[i] = -1
    if lock[m, L_HEAD] < 0:
        lock[m, L_HEAD] = i
    else:
        sl.next[_nonneg(lock[m, L_TAIL])] = i
    lock[m, L_TAIL] = i
    return False, _tree_set(sl.tv, sl.ti, pr.tsize, i, INF)


@njit(cache=True, inline="always")
def _service_ends(pr, stn, sl, sto, q, w, cnt, t, rsp, log_ahead, tree_nt):
    """A worker finishes a request (its service, or its write's commit): the
    reply leaves, and the slot takes the next packet of its station's
    receive queue. The machine's next waiting commit, if one starts, is the
    event's first draw (``log_ahead``). Returns (0, or 3: the reply ring
    overflowed; the draw begun ahead taken?, the slot that starts a packet
    or -1, the reply ring, the earliest service end)."""
    i = _nonneg(sl.ti[1])
    s = _nonneg(sl.st[i])
    m = _nonneg(stn.machine[s])
    C = cnt.C
    lock = sto.m_lock
    took = False
    if pr.txn_on and sl.busy[i] == SL_COMMIT:
        # its commit ended: the machine's next waiting commit starts
        C[s, K.C_COMMIT] += t - sl.cst[i]
        nx = lock[m, L_HEAD]
        if nx >= 0:
            nx = _nonneg(nx)
            lock[m, L_HEAD] = sl.next[nx]
            if sl.next[nx] < 0:
                lock[m, L_TAIL] = -1
            took = True          # the event's first draw: the one begun ahead
            tree_nt = _tree_set(sl.tv, sl.ti, pr.tsize, nx, t - pr.txn * log_ahead)
        else:
            lock[m, L_HELD] = 0
    C[s, K.C_COMPL] += 1.0
    C[s, K.C_BUSY] += t - sl.start[i]
    if sl.w[i] != 0:
        C[s, K.C_WRITES] += 1.0
    c = sl.c[i]
    if c >= 0:
        # the reply travels back: constant offset from departures -> FIFO
        if rsp.n >= pr.cap_rsp:
            return 3, took, -1, rsp, tree_nt
        k, rsp = _ring_push(rsp, pr.cap_rsp, w.rsp_t, t + pr.half)
        w.rsp_c[k] = c
        w.rsp_a[k] = sl.a[i]
    else:                    # open packet: a write-back, or an open network's request
        r = t - sl.arr[i]
        cnt.G[K.G_OPEN_DONE] += 1.0
        cnt.G[K.G_OPEN_RESP] += r
        if pr.n_cl == 0:
            cnt.G[K.G_DONE] += 1.0
            cnt.G[K.G_LAT] += r
            cnt.G[K.G_LAT2] += r * r
            cnt.hist[hist_bin(r)] += 1
    sto.m_busy[m] -= 1
    # next packet from the socket, if any
    if q.n[s] > 0:
        j = _nonneg(q.h[s])
        sl.c[i] = q.c[s, j]
        sl.a[i] = q.a[s, j]
        sl.w[i] = q.w[s, j]
        sl.arr[i] = q.t[s, j]
        q.h[s] = j + 1 if j + 1 < pr.qcap else 0
        q.n[s] -= 1
        return 0, took, i, rsp, tree_nt
    sl.busy[i] = SL_FREE
    return 0, took, -1, rsp, _tree_set(sl.tv, sl.ti, pr.tsize, i, INF)


@njit(cache=True, inline="always")
def _background(sto, cnt, t, bg):
    """The job event ``bg`` (time, job, the time the jobs were last advanced
    to) at t: a job's fixed part ends, or a flush or compaction finishes.
    Returns (the station whose stopped writers go on, or -1; the next job
    event)."""
    p = sto.lp[0]
    kind, finished, release = _wp.job_fires(sto.st, p, sto.jobs, sto.mach, bg[1], t, bg[2],
                                            sto.rack)
    if finished:
        if kind == _rules.FLUSH:
            cnt.G[K.G_FLUSHES] += 1.0
        else:
            cnt.G[K.G_COMPACTIONS] += 1.0
    nt, nj = _wp.next_job(sto.st, p, sto.jobs, sto.mach, t)
    return release, (nt, nj, t)


@njit(cache=True, inline="always")
def _open_arrival(pr, stn, t, rng):
    """An open (Poisson) arrival: (its packet (client, attempt, station,
    write), the next arrival's time, the generator's state)."""
    u, rng = u01(rng)
    s = _pl.draw_station(1.0, u, 0.0, stn.open_acc, stn.open_alias)
    gap, rng = exponential(rng, 1.0 / pr.open_rate)
    return (-1 if pr.n_cl == 0 else -3, 0, s, pr.open_write), t + gap, rng


@njit(cache=True, inline="always")
def _packet_arrives(pr, stn, sl, q, cnt, t, pk):
    """Packet ``pk`` (client, attempt, station, write) reaches its worker's
    receive buffer: a free slot takes it (returned, to start it), else it
    waits in the station's queue, or is dropped when the buffer is full
    (-1 returned for both)."""
    c, a, s, wr = pk
    s = _nonneg(s)
    cnt.C[s, K.C_ARR] += 1.0
    free = -1
    s0 = _nonneg(stn.slot0[s])
    for i in range(s0, s0 + stn.servers[s]):
        if sl.busy[_nonneg(i)] == SL_FREE:
            free = i
            break
    if not _nw.admits(free >= 0, q.n[s], stn.buf[s]):
        cnt.C[s, K.C_DROP] += 1.0      # buffer overflow: the client finds out by timeout
        return -1
    if free >= 0:
        sl.c[free] = c
        sl.a[free] = a
        sl.w[free] = wr
        sl.arr[free] = t
        return free
    j = q.h[s] + q.n[s]
    if j >= pr.qcap:
        j -= pr.qcap
    j = _nonneg(j)
    q.c[s, j] = c
    q.a[s, j] = a
    q.w[s, j] = wr
    q.t[s, j] = t
    q.n[s] += 1
    return -1


@njit(cache=True, inline="always")
def _slots_to_start(stn, sl, cnt, t, unstall_st, start_slot):
    """The worker slots that start (or retry) their packet now, into
    ``sl.go`` (with their start times, ``sl.go_t``): the stopped writers of
    station ``unstall_st`` (-1: none), whose stop a job event just cleared, then
    ``start_slot`` (-1: none). Returns how many."""
    n_go = 0
    if unstall_st >= 0:
        s = unstall_st
        s0 = stn.slot0[s]
        for i in range(s0, s0 + stn.servers[s]):
            if sl.busy[i] == SL_STOPPED:
                cnt.C[s, K.C_STALL] += t - sl.since[i]
                sl.busy[i] = SL_FREE
                sl.go[n_go] = i
                sl.go_t[n_go] = sl.start[i]    # the stop counts as process time
                n_go += 1
    if start_slot >= 0:
        sl.go[n_go] = start_slot
        sl.go_t[n_go] = t
        n_go += 1
    return n_go


@njit(cache=True, inline="always")
def _start_services(pr, stn, sl, sto, cnt, t, n_go, rng, ahead, log_ahead, rng_ahead,
                    tree_nt, bg):
    """The first ``n_go`` slots of ``sl.go`` start (or retry) the packet
    they hold: a write may first stop (its instance STOPPED), or be
    blocked (paced while DELAYED, a WAL switch after its seal, a WAL sync:
    :func:`sim.write_path.write_start`); the service is drawn, stretched by
    the machine's load. The first exponential draw is the one begun ahead
    (``log_ahead``, ``rng_ahead``) when ``ahead``. Returns (the generator's
    state, the earliest service end, the next job event)."""
    for g in range(n_go):
        i = _nonneg(sl.go[g])
        s = _nonneg(sl.st[i])
        m = _nonneg(stn.machine[s])
        sl.start[i] = sl.go_t[g]
        extra = 0.0
        if pr.lsm_on and sl.w[i] != 0:
            p = sto.lp[0]
            status, extra, sealed = write_start(sto.st, s, p, sto.jobs, sto.mach, t, bg[2],
                                                stn.wal_block[m], pr.sync_bytes, pr.sync_us,
                                                sto.synced, sto.rack)
            if sealed:
                cnt.G[K.G_SWITCHES] += 1.0
                nt, nj = _wp.next_job(sto.st, p, sto.jobs, sto.mach, t)
                bg = (nt, nj, t)
            if status == _wp.STOP:
                # the worker blocks until a job event of this instance clears the stop
                sl.busy[i] = SL_STOPPED
                sl.since[i] = t
                tree_nt = _tree_set(sl.tv, sl.ti, pr.tsize, i, INF)
                continue
        if not ahead:            # the draw begun above is not the generator's next
            log_ahead, rng_ahead = log_draw(rng)
        work, took = service_draw(log_ahead, stn.svc_mean[s], pr.shape, pr.fixed)
        if took:
            rng = rng_ahead
            ahead = False
        sto.m_busy[m] += 1
        if pr.cores > 0.0:
            # busy workers (this one included) and the background jobs
            # running on their cores
            work = _svc.stretched(work, pr.fixed,
                                  _svc.stretch(sto.m_busy[m]
                                               + pr.bg_cores * _rules.bg_running(sto.mach, m),
                                               pr.cores, pr.ctx))
        cnt.C[s, K.C_BLOCK] += extra
        sl.bend[i] = t + extra      # (sim.fast.FastEngine.carry_over)
        sl.busy[i] = SL_SERVING
        tree_nt = _tree_set(sl.tv, sl.ti, pr.tsize, i, t + extra + work)
    return rng, tree_nt, bg
