"""Compiled event loop of the fast engine (numba): the kernel's public names.

The rules of the rack are not here: they are the per-event forms of the
mechanism modules (RocksDB's rules of :mod:`model.rack.lsm_rules` through the
write path of :mod:`sim.write_path`, :mod:`model.rack.service`,
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
  a list a new deadline is the latest, so it is inserted from the tail. A
  thread at the client cores has no armed timer: it waits in a fourth list
  that is never scanned.

Service completions use a tournament tree over the worker slots (O(log
slots) per update, O(1) minimum). Background (flush/compaction) events are
rare; the next one is found by a scan of the job table, redone only when
the jobs change (a seal, a job event). The
next event is the earliest of eight: the three FIFO heads, the tree's root,
the earliest timer, the next background, the next open arrival and the
earliest end of a client core's time.

Two shared resources with exponential holding times, both FIFO:

* the client cores (``P_CPU`` > 0, :mod:`model.rack.clients`): before each
  send (a new request's first attempt, a resend) a thread holds one of
  ``I_CCORES`` cores. Waiting threads are a FIFO ring of client ids, the
  cores' ends a binary heap (at most ``I_CCORES`` entries). When a core's
  time ends the thread sends exactly as it did at once before (the attempt,
  the draws of a new request, the timer, the FIFO pushes): core ends come
  in time order and the delays after the send are constants, so the FIFOs
  stay sorted. A request starts (its latency, ``issued``) when its thread
  asks for a core; its first attempt's reply can only come after it left
  (``NO_ATT``). Should a request complete while its thread waits for (or
  holds) a core to resend it, that core time serves the thread's next
  request instead: what a thread sends is settled when its core time ends.
* each machine's commit path (``P_TXN`` > 0, :mod:`model.rack.service`):
  a write whose drawn service ended holds its slot and waits for the
  machine's commit lock (``m_lock``, waiting slots linked through
  ``sl_next``); the write completes when its commit ends, and the lock
  passes to the next. Its slot's tree entry is the commit's end.

With ``P_CPU`` = 0 and ``P_TXN`` = 0 the loop takes its earlier path: the
same events, draws and counters, to the bit (tests/sim/test_kernel_pinned.py).

State lives in numpy arrays owned by :class:`sim.fast.FastEngine`; the
kernel runs one chunk (normally one simulated second) and returns, so
Python can update load-dependent service means, report progress and take
Ctrl-C between chunks. Time is counted when its interval ends (a worker's
busy time, a write stop, a client core's time), a block when its service
starts; :meth:`sim.fast.FastEngine.carry_over` splits what spans a chunk
boundary (each slot's block ends at ``sl_bend``). Random numbers come from
an inline xoshiro256+ generator whose state is one of those arrays between
chunks (:func:`seed_state`) and four local words during one.

The loop waits on each event's choice before the next, so what it costs is
mostly latency. What made it faster (each checked to leave every counter of
the reference racks equal to the bit): arrays that numba does not
reference-count (:func:`_unowned`), indices it need not wrap
(:func:`_nonneg`), state in locals rather than arrays (the generator, the
heads, a sending client's fields), glibc's logarithm inline (:func:`fast_log`)
and a service's draw begun before the event's own work (in
:func:`run_chunk`).

Compiled code is cached on disk (:func:`cache_dir`): a second run in a new
process does not compile again. The cache directory is keyed by the source
of every kernel module and of the mechanisms it compiles in, because numba's
own cache only notices changes to the file of the function it compiled.

The kernel is split by what each part holds; this module gathers the names
the engine and the tests use:

* :mod:`sim.fast_kernel_jit`: the cache directory, the mechanisms compiled
  in, the LLVM intrinsics (:func:`_unowned`, :func:`_nonneg`);
* :mod:`sim.fast_kernel_state`: the indices of the parameter and scalar
  state arrays, the named groups of state arrays :func:`run_chunk` takes,
  the latency histogram's binning;
* :mod:`sim.fast_kernel_draws`: the generator, the logarithm, the draws;
* :mod:`sim.fast_kernel_queues`: the FIFO rings, the tournament tree, the
  timer lists, the client cores' heap, the choice of the next event;
* :mod:`sim.fast_kernel_clients`, :mod:`sim.fast_kernel_workers`: the rule
  of each kind of event, compiled into the loop (``inline="always"``);
* :mod:`sim.fast_kernel_loop`: :func:`run_chunk`, the loop that dispatches.
"""

from __future__ import annotations

# (first of the kernel's modules: it sets numba's cache directory)
from .fast_kernel_jit import INF, cache_dir, kernel_sources, _nonneg, _unowned  # noqa: F401
from .fast_kernel_draws import exponential, fast_log, log_draw, service_draw, u01, seed, \
    seed_state  # noqa: F401
from .fast_kernel_loop import run_chunk  # noqa: F401
from .fast_kernel_queues import Cores, Ring, timer_lists, tree_init, _heap_pop, _heap_push, \
    _timer_head, _timer_set, _tree_set  # noqa: F401
from .fast_kernel_state import (  # noqa: F401  (the indices, the groups of arrays)
    CS_NEW, CS_OUT, CS_RESEND, F_BG_LAST, F_NEXT_BG, F_NEXT_OPEN, F_NF, F_NOW, HIST_BINS,
    I_CCORES, I_CLIENTS, I_LSM, I_NP, I_OPEN_WRITE, I_RETRY, I_SLOTS, I_ST, I_TREE, L_HEAD,
    L_HELD, L_N, L_TAIL, NO_ATT, P_CORES, P_CPU, P_CTX, P_FIXED, P_HALF_RTT, P_HIT, P_HIT_RTT,
    P_BG_CORES, P_LOSS, P_NP, P_OPEN_RATE, P_SEND, P_SHAPE, P_SYNC_BYTES, P_SYNC_US, P_TIMEOUT,
    P_TXN,
    S_ARR_H, S_ARR_N, S_BG_JOB, S_CH_N, S_CQ_H, S_CQ_N, S_HIT_H, S_HIT_N, S_NS, S_RSP_H,
    S_RSP_N, S_STATUS,
    SL_COMMIT, SL_FREE, SL_SERVING, SL_STOPPED, T_LISTS, T_PARK, T_REARM, T_SEND, T_START,
    Clients, Counts, Params, Queues, Slots, Stations, Storage, Wire, hist_bin)
