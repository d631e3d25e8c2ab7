"""The analytic solver: mean values of the compiled rack by a damped fixed point.

The rack is a closed network (docs/model.md): N client threads circulate
through a delay (send cost, round trips, time sitting out timeouts) and one
FCFS station per worker, visited with that worker's share of all requests.
Each mechanism of :mod:`model.rack` contributes its mean-value form:

* ``service``: run-average storage cost x load factor (idle, busy peers) x
  mean CPU stretch (cores);
* ``lsm``: per write, the mean WAL-switch block, write-stop and slowdown time
  of the instance's periodic flush cycle (:func:`model.rack.lsm.flush_cycles`),
  with the machine's disk shared by its flush and compaction jobs. Blocks
  and stops are rare and long: clients pile up behind them
  (:func:`model.solvers.mva_core.block_delay`) and they overflow receive
  buffers (:func:`model.rack.network.block_overflow`);
* ``network``: the probability that an arriving packet finds the receive
  buffer full, from the network's queue-length distribution;
* ``clients``: dropped requests cost the client a timeout; late replies
  cause resends whose duplicates are served (extra work per client);
* ``placement``: visit ratios, write mix, write-backs (an open class).

These close loops through the solution (utilisation -> process time;
queues -> loss and resends -> clients sitting out timeouts and more work;
write rate -> flush cycle -> stalls), so the solver iterates the
closed-network recursion of :mod:`model.solvers.mva_core` to a damped fixed
point.

**Many racks at once.** :func:`solve_many` runs the fixed point for a batch
of racks together: every per-worker quantity is a (racks x workers) array
(smaller racks padded with idle workers), each rack has its own step size
and stops when it converges, and the recursion runs in C++ over the batch.
Numpy's per-call overhead is then paid once per iteration for the whole
batch, not once per rack: batch prediction, fitting and cross-validation
solve their rows this way. :func:`solve` is a batch of one.

With short timeouts a worker can collapse (its buffer full of duplicates);
that second branch is handled per rack (:func:`_collapse_mixture`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from ..prediction import Prediction, from_outcome, no_goodput
from ..rack import RackSpec, clients as cl_mech, lsm as lsm_mech, network as nw_mech, \
    service as svc_mech
from ..rack.arrays import per_worker
from ..rack.bottleneck import Outcome
from . import mva_core, rack_step

MAX_ITER = 400
STEP_BUDGET = 4 * MAX_ITER       # steps per rack over all timeout-delay rounds, when unsettled
#: ... and no more rounds for a rack after this many did not settle: near the
#: root of the delay the map can have no stable point, and every further round
#: costs MAX_ITER steps for the same flag (a full-range plan rack spent 1,600)
UNSETTLED_ROUNDS = 2
TOL = 1e-5
#: A timeout delay D is a root when |g(D)| is at most this, relative
#: (:func:`_consistency`).
ROOT_TOL = 1e-4
#: A timeout-delay root search that ends further than this from g = 0
#: (relative, :func:`_consistency`) closed on a jump of g: see _solve_states.
MIX_TOL = 1e-3
#: Workers x bins of the late-reply sums built at once (32 MiB an array).
LATE_CHUNK_CELLS = 1 << 22
#: Largest damped step of the inner fixed point (a share of the map's own
#: step). 0.6 took 22 % more steps over a 1,000-row plan for the same answers,
#: and its finite differences met jumps in some racks' paths (docs/model.md).
DAMP_MAX = 0.8
#: Probability of a late reply below which it is not computed (its
#: resends and failures are smaller than the fixed point's tolerance).
LATE_EPS = 1e-10
#: from this many timers firing while a reply is late, their sum is taken in closed form
LATE_TIMERS = 32
#: a collapsed state holds its workers if each needs at least this drop fraction
COLLAPSED_P = 0.01
#: First step of the bracket around a collapsed worker's last drop fraction
#: (it grows tenfold until the excess changes sign): about the fixed
#: point's tolerance, which bounds how far it moves near convergence.
BRACKET_STEP = 1e-5
#: states of the collapse chain (numbers of collapsed workers) solved at most
MAX_COLLAPSE_STATES = 8
#: ... and no new state once the rack's solves took this many steps in all
CHAIN_BUDGET = 2 * STEP_BUDGET
#: rounds of the timeout-delay root search at most
ROUNDS = 40
MIB = lsm_mech.MIB


class AnalyticSolver:
    """Mean-value solution of a :class:`~model.rack.RackSpec`."""

    name = "analytic"

    def solve(self, spec: RackSpec) -> Prediction:
        return solve(spec)

    def solve_many(self, specs: Sequence[RackSpec]) -> list[Prediction]:
        return solve_many(specs)


# ---------------------------------------------------------------- a batch of racks
def _pad(values: Sequence[Sequence[float]], width: int, fill: float = 0.0) -> np.ndarray:
    out = np.full((len(values), width), fill, dtype=float)
    for r, v in enumerate(values):
        out[r, :len(v)] = v
    return out


@dataclass
class _Batch:
    """The constants of R racks as arrays: (R,) per rack, (R, M) per worker."""
    specs: tuple
    s: np.ndarray            # shares (0 for idle and padding workers)
    active: np.ndarray       # busy workers (bool, R x M)
    wf: np.ndarray           # write fraction
    gmach: np.ndarray        # global machine slot of each worker (rack * MACH + machine)
    nmach: int               # machine slots in all
    ev: np.ndarray           # write-backs per us
    cost: np.ndarray         # run-average process time, us
    floor_gap: np.ndarray    # (R,) recv floor + gap
    idle: np.ndarray         # (R,) idle penalty
    sharep: np.ndarray       # (R,) share penalty
    cv2: np.ndarray          # (R,) squared CV of the service
    think: np.ndarray        # (R,) client delay per request besides timeouts, us
    period: np.ndarray       # (R,) send + timeout
    budget: np.ndarray       # (R,) time at a worker a reply can spend and beat the timeout
    finite_to: np.ndarray    # (R,) bool
    farreach: np.ndarray     # (R,) bool: retry = farreach
    N: np.ndarray            # (R,) clients
    K: np.ndarray            # (R,) packets a worker holds: buffer + the one in service
    loss: np.ndarray         # (R,) wire loss
    cores: np.ndarray        # (R,) cores per machine (0: enough)
    lsm: lsm_mech.LsmTable   # per worker (flattened R*M)
    run_memtables: np.ndarray  # memtables each worker fills over the whole run
    wal_base: np.ndarray     # (R,) WAL switch block with an idle disk
    wal_mbps: np.ndarray     # (R,) ... per MiB/s the machine writes
    wal_on: np.ndarray       # (R,) bool
    entry: np.ndarray        # (R,) bytes per memtable entry
    disk: np.ndarray         # (R,) disk bytes per us per machine

    @property
    def R(self) -> int:
        return self.s.shape[0]

    @property
    def M(self) -> int:
        return self.s.shape[1]

    @classmethod
    def of(cls, specs: Sequence[RackSpec]) -> "_Batch":
        specs = tuple(specs)
        M = max(sp.servers for sp in specs)
        mach_per = max(sp.placement.machines for sp in specs)
        R = len(specs)
        s = _pad([per_worker(sp.placement, "shares") for sp in specs], M)
        gm = np.zeros((R, M), dtype=np.int64)
        for r, sp in enumerate(specs):
            m = per_worker(sp.placement, "machine_of", np.int64)
            gm[r, :len(m)] = r * mach_per + m
            gm[r, len(m):] = r * mach_per          # padding: idle workers on machine 0
        per_row = lambda f, dtype=float: np.array([f(sp) for sp in specs], dtype=dtype)  # noqa: E731
        cost = _pad([svc_mech.run_average_cost(sp.service) for sp in specs], M)
        return cls(
            specs=specs, s=s, active=s > 0,
            wf=_pad([per_worker(sp.placement, "write_frac") for sp in specs], M),
            gmach=gm, nmach=R * mach_per,
            ev=_pad([sp.placement.evict_per_us * per_worker(sp.placement, "evict_probs")
                     for sp in specs], M),
            cost=cost,
            floor_gap=per_row(lambda sp: sp.service.recv_floor_us + sp.service.gap_us),
            idle=per_row(lambda sp: sp.service.idle_penalty),
            sharep=per_row(lambda sp: sp.service.share_penalty),
            cv2=per_row(lambda sp: sp.service.cv ** 2),
            think=per_row(lambda sp: cl_mech.think_us(sp.clients, sp.placement.hit_ratio)),
            period=per_row(lambda sp: cl_mech.retry_period_us(sp.clients)),
            budget=per_row(lambda sp: cl_mech.budget_us(sp.clients)),
            finite_to=per_row(lambda sp: math.isfinite(sp.clients.timeout_us), bool),
            farreach=per_row(lambda sp: sp.clients.retry == cl_mech.RETRY_FARREACH, bool),
            N=per_row(lambda sp: sp.clients.threads, np.int64),
            K=per_row(lambda sp: sp.network.buffer_pkts + 1),
            loss=per_row(lambda sp: sp.network.loss_rate),
            cores=per_row(lambda sp: sp.service.cores),
            lsm=lsm_mech.LsmTable.of([sp.lsm for sp in specs], repeat=M),
            run_memtables=_pad([per_worker(sp.service, "writes_per_run") / sp.lsm.entries
                                if sp.lsm.entries > 0 else np.zeros(sp.servers)
                                for sp in specs], M),
            wal_base=per_row(lambda sp: sp.lsm.wal_block_base_us),
            wal_mbps=per_row(lambda sp: sp.lsm.wal_block_us_per_mbps),
            wal_on=per_row(lambda sp: sp.lsm.wal, bool),
            entry=per_row(lambda sp: sp.lsm.entry_bytes),
            disk=per_row(lambda sp: sp.lsm.disk_bytes_per_us))

    def rows(self, keep: np.ndarray) -> "_Batch":
        """The sub-batch of the racks ``keep`` (indices)."""
        keep = np.asarray(keep, dtype=np.int64)
        mach_per = self.nmach // self.R
        gm = self.gmach[keep] - (keep[:, None] * mach_per) + np.arange(len(keep))[:, None] * mach_per
        flat = (keep[:, None] * self.M + np.arange(self.M)[None, :]).ravel()
        t = self.lsm
        lsm = lsm_mech.LsmTable(tuple(t.specs[i] for i in flat), *(getattr(t, f)[flat] for f in (
            "entries", "entry_bytes", "memtable_bytes", "flush_fixed_us", "flush_write_factor",
            "wamp", "flushnum", "maxnum", "wal", "compacts")))
        fields = {}
        for f in self.__dataclass_fields__:
            v = getattr(self, f)
            if f == "specs":
                fields[f] = tuple(self.specs[i] for i in keep)
            elif f == "gmach":
                fields[f] = gm
            elif f == "nmach":
                fields[f] = len(keep) * mach_per
            elif f == "lsm":
                fields[f] = lsm
            else:
                fields[f] = v[keep]
        return _Batch(**fields)


@dataclass
class _State:
    """The fixed point's state for a batch of racks."""
    X: np.ndarray            # (R,) requests per us
    util: np.ndarray         # (R, M)
    p_drop: np.ndarray       # (R, M)
    dup: np.ndarray          # (R, M) duplicate packets served per request
    writes: np.ndarray       # (R, M) writes per us
    bg: np.ndarray           # (nmach,) background jobs per machine
    delay: np.ndarray        # (R,) client time per request sitting out timeouts, us
    lsm_prev: tuple          # (flush disk busy, compaction busy, stop fraction) per worker
    collapsed: tuple         # per rack: the workers on the collapsed branch
    iterations: np.ndarray   # (R,)
    converged: np.ndarray    # (R,) bool
    implied: np.ndarray      # (R,) the delay the current losses imply
    # the last iteration's quantities, for the outputs
    S_req: np.ndarray | None = None
    stretch: np.ndarray | None = None
    wait_extra: np.ndarray | None = None
    x_hist: np.ndarray | None = None
    demand: np.ndarray | None = None
    q: np.ndarray | None = None
    cyc: lsm_mech.FlushCycles | None = None
    block: np.ndarray | None = None


#: the per-worker fields of a state that the last iteration leaves for the outputs
_OUTPUTS = ("S_req", "stretch", "wait_extra", "demand", "q", "block")


def _compiled_params() -> dict:
    """The constants of _solve_states, _iterate and _step that the compiled
    solve takes (rack_step), read when it runs (tests change them)."""
    return dict(tol=TOL, max_iter=MAX_ITER, damp_max=DAMP_MAX, late_eps=LATE_EPS,
                tail_cut=TAIL_CUT, late_timers=LATE_TIMERS, root_tol=ROOT_TOL, mix_tol=MIX_TOL,
                step_budget=STEP_BUDGET, unsettled_rounds=UNSETTLED_ROUNDS, rounds=ROUNDS,
                n_exact=mva_core.N_EXACT, work_exact=mva_core.WORK_EXACT,
                lump_tol=rack_step.LUMP_TOL, lump_min=rack_step.LUMP_MIN)


def _initial(b: _Batch, collapsed: Sequence[tuple] | None = None) -> _State:
    """The first guess: every worker of a rack half busy. The padding of a
    batch (workers past a rack's own, share 0) starts idle, as its first step
    leaves it: at half load it sat on machine 0 as busy peers and moved the
    first steps of a rack in a batch away from the same rack solved alone."""
    R, M = b.R, b.M
    collapsed = tuple(tuple(c) for c in (collapsed or [()] * R))
    own = np.arange(M)[None, :] < np.array([sp.servers for sp in b.specs])[:, None]
    st = _State(np.zeros(R), np.where(own, 0.5, 0.0), np.zeros((R, M)), np.zeros((R, M)),
                np.zeros((R, M)), np.zeros(b.nmach), np.zeros(R),
                (np.zeros((R, M)), np.zeros((R, M)), np.zeros((R, M))), collapsed,
                np.zeros(R, dtype=np.int64), np.zeros(R, dtype=bool), np.zeros(R))
    for r, cs in enumerate(collapsed):
        for i in cs:
            st.util[r, i] = 1.0
            st.p_drop[r, i] = 0.5
    return st


# ---------------------------------------------------------------- queue-length tails
def _cum_logx(x_hist: np.ndarray, N: np.ndarray, kmax: int) -> np.ndarray:
    """cum[r, k] = sum_{j=1..k} log X_r(N_r - j), k = 0..kmax (-inf past N_r - 1)."""
    R = x_hist.shape[0]
    k = np.arange(1, kmax + 1)
    col = N[:, None] - k[None, :] - 1                 # index of X(N - k) in x_hist
    ok = col >= 0
    vals = np.where(ok, x_hist[np.arange(R)[:, None], np.maximum(col, 0)], 1.0)
    with np.errstate(divide="ignore"):
        logs = np.where(ok, np.log(np.maximum(vals, 1e-300)), -np.inf)
    return np.concatenate((np.zeros((R, 1)), np.cumsum(logs, axis=1)), axis=1)


def _tail_at(cum: np.ndarray, logd: np.ndarray, k: np.ndarray) -> np.ndarray:
    """P(an arrival finds at least k clients) for fractional k (R x M), from
    the product-form tail ``exp(k log D + cum[k])`` (log-linear between k)."""
    R, width = cum.shape
    kk = np.clip(k, 0.0, width - 1.0)
    lo = np.floor(kk).astype(np.int64)
    hi = np.minimum(lo + 1, width - 1)
    rows = np.arange(R)[:, None]
    f = kk - lo
    with np.errstate(invalid="ignore"):
        c = cum[rows, lo] * (1.0 - f) + np.where(f > 0, cum[rows, hi] * f, 0.0)
        out = np.exp(np.minimum(kk * logd + c, 0.0))
    out = np.where(k <= 0, 1.0, out)
    return np.where(k > width - 1, 0.0, np.nan_to_num(out, nan=0.0))


def _significant(cum: np.ndarray, logd: np.ndarray, floor: float = 1e-18) -> np.ndarray:
    """``cum`` cut after the last k at which some worker of some rack still has
    ``P(at least k there) > floor``: beyond it the tail sums gain less than
    ``floor`` a term. A rack of 30,000 clients over 296 workers keeps about
    100 columns of 30,000, and the per-worker tail arrays shrink with it.
    The tail ``exp(k log D + cum[k])`` of worker i of rack r is at most
    ``exp(k max_i log D_ri + cum[r, k])``."""
    width = cum.shape[1]
    if width <= 64:
        return cum
    top = np.max(np.where(np.isfinite(logd), logd, -np.inf), axis=1, initial=-np.inf)
    with np.errstate(invalid="ignore"):
        live = (np.arange(width)[None, :] * top[:, None] + cum) > math.log(floor)
    live &= np.isfinite(top)[:, None]
    cols = np.nonzero(live.any(axis=0))[0]
    cut = int(cols[-1]) + 2 if len(cols) else 2
    return cum[:, :min(max(cut, 2), width)]


def _overflow_pairs(cum: np.ndarray, logd: np.ndarray, c: np.ndarray,
                    rows: np.ndarray) -> np.ndarray:
    """:func:`_overflow_pairs_numpy`, compiled (native/mva/tails.cpp) when the
    extension is built: one loop per station over its own tail columns, with no
    stations x columns temporaries. It was a third of a small sweep's time
    (211 calls of about 2 ms, eight numpy passes over arrays of 50,000). The
    sums are added in the reference's order, so the two agree to the bit."""
    compiled = mva_core._compiled
    if compiled is None:
        return _overflow_pairs_numpy(cum, logd, c, rows)
    return compiled.overflow_pairs(np.ascontiguousarray(cum, dtype=float),
                                   np.ascontiguousarray(logd, dtype=float),
                                   np.ascontiguousarray(c, dtype=float),
                                   np.ascontiguousarray(rows, dtype=np.int64), TAIL_CUT)


#: log of the tail probability below which the top columns of a queue's tail
#: count as 0 in the block-overflow sums (1e-30 each; the product-form log
#: tail is concave in k, so the run of such columns is at the top and sums to
#: under width x 1e-30). Over the 1,000-row plan 64 % of the terms were below
#: 1e-18; skipping their exps took a third off the overflow sums.
TAIL_CUT = math.log(1e-30)


def _overflow_pairs_numpy(cum: np.ndarray, logd: np.ndarray, c: np.ndarray,
                          rows: np.ndarray) -> np.ndarray:
    """:func:`model.rack.network.block_overflow` for many stations at once: with
    T[k] = P(at least k there), ``E[(q0 + a - room)+] = max(0, -c) + T[m0+1]
    (m0 + 1 - c0) + sum_{k >= m0+2} T[k]``, ``c = room - a``, ``c0 = max(c, 0)``,
    ``m0 = floor(c0)``. Station p is in rack ``rows[p]`` (a row of ``cum``).

    Only the columns from the smallest ``m0 + 1`` on are evaluated: the room
    left during a block is most of the buffer, and the tail below it is not
    needed (a fifth of a sweep's time went to it)."""
    width = cum.shape[1]
    c0 = np.maximum(c, 0.0)
    m0 = np.minimum(np.floor(c0).astype(np.int64), width)
    start = int(min(int(m0.min()) + 1, width))
    part = cum[:, start:][rows]
    P, w = part.shape
    with np.errstate(invalid="ignore", over="ignore"):
        t = (start + np.arange(w))[None, :] * logd[:, None] + part
        T = np.exp(np.minimum(t, 0.0))
    # the top run of columns below TAIL_CUT counts as 0 (the compiled form
    # does not evaluate them)
    cut = np.logical_and.accumulate((t < TAIL_CUT)[:, ::-1], axis=1)[:, ::-1]
    T = np.where(np.isfinite(part) & ~cut, np.nan_to_num(T), 0.0)
    suffix = np.concatenate((np.cumsum(T[:, ::-1], axis=1)[:, ::-1], np.zeros((P, 2))), axis=1)
    idx = np.arange(P)
    j = m0 + 1 - start                                # column of m0 + 1 in T
    first = np.where(m0 + 1 < width, T[idx, np.clip(j, 0, max(w - 1, 0))] if w else 0.0, 0.0)
    return np.maximum(0.0, -c) + first * (m0 + 1 - c0) + suffix[idx, np.minimum(j + 1, w + 1)]


def _gamma_sf(shape, x):
    from scipy.special import gammaincc   # only when replies can outlive the timeout
    return gammaincc(shape, x)


@functools.lru_cache(maxsize=64)
def _k_bins(width: int) -> np.ndarray:
    """Edges 0 = e_0 < e_1 < ... = width of the queue-length bins that
    :func:`_late_sums` sums over: one k each up to 16, then floor(sqrt(k) / 4)
    wide. A wait after k clients is gamma with sd ~ sqrt(k) A, so a bin moves
    the mixture by far less than its own spread (against k by k: within 1e-3),
    and a 21,000-deep queue takes 1,200 terms instead of 21,000."""
    edges, k = [0], 0
    while k < width:
        k = min(width, k + max(1, int(math.isqrt(k) // 4)))
        edges.append(k)
    return np.asarray(edges, dtype=np.int64)


def _late_sums(cum: np.ndarray, logd: np.ndarray, k_drop: np.ndarray, S: np.ndarray,
               A: np.ndarray, cv2: np.ndarray, dup: np.ndarray, budget: np.ndarray,
               period: np.ndarray, every: np.ndarray,
               rows: np.ndarray | None = None) -> np.ndarray:
    """For P workers at once: ``sum_j P(time at the worker > budget + j period)``
    over the timers that can fire (``every``: all of them, the FarReach client
    resending while late, :func:`model.rack.clients.resends_while_late`), or
    just ``P(time at the worker > budget)`` (the first timer only).

    An admitted packet that finds k clients (and their duplicates) waits for
    their work and its own service: gamma distributed with mean ``S + k A`` and
    the squared coefficient of variation of one service divided by the number
    of services; k follows the product-form queue length (``cum[rows[p]]`` and
    ``logd`` per worker, as in :func:`_tail_at`; ``rows`` defaults to one row
    of ``cum`` per worker) below the drop level ``k_drop``, in the bins of
    :func:`_k_bins` (a bin's probability is a difference of two tails). The
    gamma terms of every worker go to one vectorised call."""
    P = len(logd)
    width = cum.shape[1]
    out = np.zeros(P)
    if P == 0:
        return out
    rows = np.arange(P) if rows is None else np.asarray(rows)
    # A worker whose first timer fires after every term's horizon has no late
    # reply. A term with k clients ahead (k < K = k_drop) has horizon
    # mean + 10 sd, mean = S + k A <= S + K A, and sd = sqrt(cv2) g(k) (cv2 at
    # least 1e-6, as below) with
    # g(k) = (S + k A) / sqrt(k (1 + dup) + 1), whose derivative changes sign
    # once (from - to +): g is largest at k = 0 or k = K. Workers whose first
    # timer comes after that bound are left out before any P x bins array is
    # built (a 1,000 ms timeout on a 4,096-worker rack: 37 ms a step, all of
    # it spent finding zeros).
    kd_top = np.minimum(np.ceil(k_drop), width - 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        mean_top = S + kd_top * A
        g_top = np.maximum(S, mean_top / np.sqrt(kd_top * (1.0 + dup) + 1.0))
        quiet = (budget > 0) & (budget >= mean_top
                                 + 10.0 * np.sqrt(np.maximum(cv2, 1e-6)) * g_top)
    if quiet.all():
        return out
    if quiet.any():
        live = ~quiet
        out[live] = _late_sums(cum, logd[live], k_drop[live], S[live], A[live], cv2[live],
                               dup[live], budget[live], period[live], every[live], rows[live])
        return out
    edges = _k_bins(width - 1)
    if P > 1 and P * len(edges) > LATE_CHUNK_CELLS:
        # Each worker's sum is its own: the P x bins arrays below are built a
        # slice of workers at a time (809,880 workers x 636 bins, the sigma
        # points of a full-space plan's racks, asked for 3.8 GiB an array and
        # exhausted the memory).
        step = max(1, LATE_CHUNK_CELLS // len(edges))
        for a in range(0, P, step):
            c = slice(a, a + step)
            out[c] = _late_sums(cum, logd[c], k_drop[c], S[c], A[c], cv2[c], dup[c], budget[c],
                                period[c], every[c], rows[c])
        return out
    kd = kd_top.astype(np.int64)                                           # k < k_drop
    # only bins that start below some worker's drop level hold any term
    used = max(1, int(np.searchsorted(edges[:-1], int(kd.max()), side="left")))
    edges = edges[:used + 1]
    lo = edges[:-1][None, :]
    hi = np.minimum(edges[1:][None, :], kd[:, None])
    with np.errstate(invalid="ignore", over="ignore"):
        def tail(c, k):
            # in place: this is a P x edges array (a quarter of a 3,911-worker
            # storm row's time went to its temporaries). c is finite or -inf
            # (cum sums logs of finite X), so exp gives 0 at -inf by itself,
            # and NaN (0 x -inf, no tail) becomes 0
            t = np.multiply(k, logd[:, None])
            t += c
            np.minimum(t, 0.0, out=t)
            np.exp(t, out=t)
            t[np.isnan(t)] = 0.0
            return t
        # the tail at every edge, once (columns of the racks' cum first, then
        # one row per worker), and at each worker's drop level
        at_edges = tail(cum[:, edges][rows], edges[None, :].astype(float))
        at_kd = tail(cum[rows, kd][:, None], kd[:, None].astype(float))
        t_hi = np.where(edges[1:][None, :] <= kd[:, None], at_edges[:, 1:], at_kd)
        pk = np.where(hi > lo, at_edges[:, :-1] - t_hi, 0.0)
    keep = pk > 1e-15
    pk = np.where(keep, pk, 0.0)
    total = pk.sum(axis=1)
    pk = pk / np.where(total > 0, total, 1.0)[:, None]
    rr, kk = np.nonzero(keep)                      # the terms that matter, flat
    kf = 0.5 * (lo[0, kk] + hi[rr, kk] - 1.0)        # the middle of the bin
    weight = pk[rr, kk]
    mean = S[rr] + kf * A[rr]
    shape = (kf * (1.0 + dup[rr]) + 1.0) / np.maximum(cv2[rr], 1e-6)
    scale = mean / shape
    horizon = np.full(P, -np.inf)
    np.maximum.at(horizon, rr, mean + 10.0 * np.sqrt(shape) * scale)
    horizon = np.where(total > 0, horizon, 0.0)
    # timers j = 0 .. last that fire before the horizon (one only without ``every``)
    last = np.where(budget < horizon,
                    np.where(every, np.floor((horizon - budget) / period), 0.0), -1.0)
    # Timers that fire before the packet can even reach the worker's queue (a
    # timeout shorter than the round trip: budget <= 0) are certainly late, one
    # each; the sum goes on from the first timer with a positive budget. Without
    # this a 12 us timeout under a 5 ms queue summed ~400 timers one by one.
    with np.errstate(divide="ignore", invalid="ignore"):
        sure = np.where(budget <= 0, np.where(every, np.floor(-budget / period) + 1.0, 1.0), 0.0)
    out += np.clip(np.minimum(sure, last + 1.0), 0.0, None)
    budget = budget + np.where(sure > 0, sure * period, 0.0)
    last = last - sure
    many = (last >= LATE_TIMERS) & (budget > 0)
    if many.any():
        # Many timers: sum_j P(T > b + j p) by Euler-Maclaurin, E[(T - b)+] / p
        # + P(T > b) / 2 + p f(b) / 12, with E[(T - b)+] = mean Q(shape + 1,
        # b / scale) - b Q(shape, b / scale) and f the density, for a gamma T
        # (three special functions instead of one per timer)
        from scipy.special import gammaln
        sel = many[rr]
        b_ = budget[rr[sel]]
        p_ = period[rr[sel]]
        sh, sc = shape[sel], scale[sel]
        x = b_ / sc
        q0 = _gamma_sf(sh, x)
        q1 = _gamma_sf(sh + 1.0, x)
        excess = np.maximum(mean[sel] * q1 - b_ * q0, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            dens = np.nan_to_num(np.exp((sh - 1.0) * np.log(x) - x - gammaln(sh)) / sc)
        out += np.bincount(rr[sel], weights=weight[sel] * (excess / p_ + 0.5 * q0 + p_ * dens / 12.0),
                           minlength=P)
        last = np.where(many, -1.0, last)
    for j in range(int(last.max()) + 1 if P else 0):
        t = budget + j * period
        live_pair = (j <= last) & (t < horizon)
        out += np.where(live_pair & (t <= 0), 1.0, 0.0)
        on = live_pair & (t > 0)
        sel = on[rr]
        if sel.any():
            sf = _gamma_sf(shape[sel], t[rr[sel]] / scale[sel])
            out += np.bincount(rr[sel], weights=sf * weight[sel], minlength=P)
    return out


# ---------------------------------------------------------------- one iteration
def _step(b: _Batch, st: _State, D: np.ndarray):
    """One evaluation of the fixed-point map for every rack of ``b``. Returns the
    new values (X, util, p, dup, writes, bg, implied) and the iteration's
    quantities for the outputs."""
    R, M = b.R, b.M
    rows = np.arange(R)[:, None]
    X, util, dup, writes = st.X, st.util, st.dup, st.writes
    # ---- service: cost x load factor x CPU stretch ----
    per_machine = np.bincount(b.gmach.ravel(), weights=util.ravel(), minlength=b.nmach)
    peers = per_machine[b.gmach] - util
    stretch = np.ones((R, M))
    mach_per = b.nmach // R
    for r in np.nonzero(b.cores > 0)[0]:             # threads outnumber cores: rare, per rack
        sp = b.specs[r]
        m = sp.servers
        bg_r = st.bg[r * mach_per: r * mach_per + sp.placement.machines]
        stretch[r, :m] = svc_mech.mean_stretch(sp.service, util[r, :m],
                                               per_worker(sp.placement, "machine_of", np.int64),
                                               bg_r)
    S = b.cost * svc_mech.load_factor(util, peers, b.idle[:, None], b.sharep[:, None]) * stretch \
        + b.floor_gap[:, None]
    # ---- LSM: the flush cycle at the current write rates ----
    fdb, cb, stop_prev = st.lsm_prev
    mbps = np.bincount(b.gmach.ravel(), weights=(writes * 1e6 * b.entry[:, None]).ravel(),
                       minlength=b.nmach) / MIB
    wal = lsm_mech.wal_block_us(b.wal_on[:, None], b.wal_base[:, None], b.wal_mbps[:, None],
                                mbps[b.gmach])
    # disk jobs a flush of worker i competes with: the other instances' disk
    # phases and compactions on its machine, and its own compaction
    jobs = np.bincount(b.gmach.ravel(), weights=(fdb + cb).ravel(), minlength=b.nmach)[b.gmach] - fdb
    share = b.disk[:, None] / np.maximum(1.0, 1.0 + jobs)
    cyc = lsm_mech.flush_cycles(b.lsm, writes.ravel(), share.ravel(), wal.ravel(),
                                (1.0 - stop_prev).ravel(), b.run_memtables.ravel())
    shape2 = (R, M)
    stalled = (cyc.stop_fraction.reshape(shape2) > 0) | (cyc.slow_us.reshape(shape2) > 0)
    for r in np.nonzero(stalled.any(axis=1))[0]:     # equal loads, equal stalls (lsm.pool_stalls)
        lsm_mech.pool_stalls({f: getattr(cyc, f).reshape(shape2)[r] for f in lsm_mech.STALL_FIELDS},
                             writes[r])                 # row views: pooled in place
    c_wal_us, c_wal_ev = cyc.wal_us.reshape(shape2), cyc.wal_event_us.reshape(shape2)
    c_stop_us, c_stop_ev = cyc.stop_us.reshape(shape2), cyc.stop_event_us.reshape(shape2)
    c_spw, c_slow = cyc.stops_per_write.reshape(shape2), cyc.slow_us.reshape(shape2)
    extra = c_wal_us + c_stop_us + c_slow
    with np.errstate(divide="ignore", invalid="ignore"):
        wal_per_write = np.where(c_wal_ev > 0, c_wal_us / c_wal_ev, 0.0)
    S_req = S + b.wf * extra                          # mean per client request (a visit)
    Uo = np.minimum(b.ev * (S + extra), 0.99)         # write-backs: an open class
    A = S_req * (1.0 + dup)
    # residual of the service proper (receive floor and gap fixed, the rest gamma)
    cv2w = svc_mech.service_scv(S, b.floor_gap[:, None], b.cv2[:, None])   # per worker
    C = svc_mech.residual_excess(S, cv2w)
    # WAL switches and write stops: rare, long blocks that clients pile up behind
    arrivals = X[:, None] * b.s
    # who can still arrive while a worker is blocked (clients.free_during_block)
    asleep = (X * D)[:, None]
    here = st.q if st.q is not None else 0.0
    period = np.where(b.finite_to, b.period, np.inf)[:, None]
    free_wal = cl_mech.free_during_block(b.N[:, None], here, asleep, c_wal_ev, period)
    free_stop = cl_mech.free_during_block(b.N[:, None], here, asleep, c_stop_ev, period)
    wal_rate = writes * wal_per_write
    stop_rate = writes * c_spw
    V = (mva_core.block_delay(wal_rate, c_wal_ev, arrivals, free_wal)
         + mva_core.block_delay(stop_rate, c_stop_ev, arrivals, free_stop))
    Z = b.think + D
    # ---- the closed network ----
    Sm, Am, Cm, Uom, Vm = S_req, A, C, Uo, V
    late = np.zeros((R, M))
    pc = {}
    if any(st.collapsed):
        Sm, Am, Cm, Uom, Vm = S_req.copy(), A.copy(), C.copy(), Uo.copy(), V.copy()
        for r, cs in enumerate(st.collapsed):
            if cs:
                pc[r], late[r] = _collapsed(b, st, r, cs, S_req[r], Sm[r], Am[r], Cm[r], Uom[r],
                                            Vm[r], float(Z[r]))
    x_hist, r_, q, u = mva_core.recursion_batch(b.s, Sm, Am, Cm, Uom, Vm, Z, b.N)
    # Never above the busiest worker's capacity: Reiser's residual term (C < 0
    # for a service less variable than exponential) overshoots it where one
    # worker holds nearly every client (X s S = 1.044, the analytic soak of
    # seed 32). The tails keep the recursion's X(n); only X(N) is bounded.
    dmax = np.max(b.s * Am / np.maximum(1.0 - Uom, 1e-9), axis=1)
    with np.errstate(divide="ignore"):
        cap = np.where(dmax > 0, 1.0 / dmax, np.inf)
    X_new = np.minimum(x_hist[np.arange(R), b.N - 1], cap)
    u = X_new[:, None] * b.s * Am
    util_new = np.where(b.active, np.minimum(u + Uo, 1.0), 0.0)
    # ---- loss and retries from the queue-length distribution ----
    Dm = b.s * A / np.maximum(1.0 - Uo, 1e-9)
    with np.errstate(divide="ignore"):
        logd = np.where(b.active, np.log(np.maximum(Dm, 1e-300)), -np.inf)
    k_drop = b.K[:, None] / (1.0 + dup)               # clients whose packets fill the worker
    kmax = int(min(int(b.N.max()) - 1, math.ceil(float(np.max(np.where(b.active, k_drop, 0.0)))) + 2))
    kmax = max(kmax, 1)
    cum = _significant(_cum_logx(x_hist, b.N, kmax), logd)
    p_new = np.where(b.active, _tail_at(cum, logd, k_drop), 0.0)
    pkt = X_new[:, None] * b.s * (1.0 + dup) + b.ev
    for rate, length, f in ((wal_rate, c_wal_ev, free_wal), (stop_rate, c_stop_ev, free_stop)):
        hit = b.active & (rate > 0) & (length > 0) & (pkt > 0)
        if not hit.any():
            continue
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            a_blk = np.where(hit, f * -np.expm1(-pkt / f * length), 0.0) / (1.0 + dup)
        c = k_drop - a_blk
        # overflow per block: the arrivals that find no room (network.block_overflow)
        dropped = np.maximum(0.0, -c)
        near = hit & (_tail_at(cum, logd, np.maximum(c, 0.0)) > 1e-14)
        if near.any():
            rr, ii = np.nonzero(near)
            dropped[rr, ii] = _overflow_pairs(cum, logd[rr, ii], c[rr, ii], rr)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_new += np.where(hit, rate * dropped * (1.0 + dup) / pkt, 0.0)
    p_new = np.minimum(p_new + b.loss[:, None] * b.active, 0.99)
    dup_new = np.zeros((R, M))
    fail = p_new.copy()                               # attempts that end in a timeout
    # Could a reply outlive the timeout? An arrival that finds k clients waits
    # a gamma time of mean S + kA whose sd is at most sqrt(cv2) of the mean, so
    # below k_late = budget / (A (1 + 10 sqrt(cv2))) - 1 it is on time for
    # certain; only workers where finding k_late or more has a probability
    # that matters need the survival function (:func:`_late_sums`).
    spread = A * (1.0 + 10.0 * np.sqrt(cv2w))
    with np.errstate(divide="ignore", invalid="ignore"):
        k_late = np.where(spread > 0, b.budget[:, None] / spread - 1.0, np.inf)
    check = b.active & b.finite_to[:, None] & (k_late < k_drop)
    if check.any():
        check &= _tail_at(cum, logd, np.minimum(np.maximum(k_late, 0.0), kmax + 1.0)) > LATE_EPS
    for r, cs in enumerate(st.collapsed):
        for i in cs:
            check[r, i] = False                   # its timeouts are in its residence
    rr, ii = np.nonzero(check)
    if len(rr):
        fr = b.farreach[rr]
        late_sum = _late_sums(cum, logd[rr, ii], k_drop[rr, ii], S_req[rr, ii], A[rr, ii],
                              cv2w[rr, ii], dup[rr, ii], b.budget[rr], b.period[rr], fr, rows=rr)
        p0 = p_new[rr, ii]
        # FarReach: the first admitted attempt's reply completes the request;
        # the client resends every period while it is late. Otherwise a late
        # reply is ignored: the attempt fails like a drop.
        f_other = np.minimum(p0 + (1.0 - p0) * late_sum, 0.99)
        fail[rr, ii] = np.where(fr, fail[rr, ii], f_other)
        dup_new[rr, ii] = np.where(fr, late_sum * (1.0 - p0),
                                   (1.0 - p0) * late_sum / (1.0 - f_other))
    wait_extra = np.where(b.finite_to[:, None], fail / (1.0 - fail) * b.period[:, None], 0.0)
    for r, p in pc.items():
        for i in st.collapsed[r]:
            p_new[r, i] = p
            dup_new[r, i] = late[r, i] * (1.0 - p)
            util_new[r, i] = 1.0
            wait_extra[r, i] = 0.0                   # its timeouts are in its residence
    implied = np.sum(b.s * wait_extra, axis=1)
    writes_new = (X_new[:, None] * b.s * (1.0 + dup) + b.ev) * b.wf + b.ev * (1.0 - b.wf)
    fb = cyc.flush_busy.reshape(shape2) + cyc.compaction_busy.reshape(shape2)
    bg_new = np.bincount(b.gmach.ravel(), weights=fb.ravel(), minlength=b.nmach)
    lsm_new = (cyc.flush_disk_busy.reshape(shape2), cyc.compaction_busy.reshape(shape2),
               cyc.stop_fraction.reshape(shape2))
    extras = dict(S_req=S_req, stretch=stretch, wait_extra=wait_extra, x_hist=x_hist, demand=Dm,
                  q=q, cyc=cyc, block=c_wal_us + c_slow)
    return X_new, util_new, p_new, dup_new, writes_new, bg_new, implied, lsm_new, extras


def _collapsed_residence(p, period, full):
    """A client's time at a collapsed worker: ``p / (1 - p)`` dropped attempts,
    a timeout period each, then a full buffer's service ``full``."""
    return p / (1.0 - p) * period + full


def _collapsed(b: _Batch, st: _State, r: int, cs: tuple, S_req, Sm, Am, Cm, Uom, Vm, Z):
    """Residence of rack r's collapsed workers: a delay whose drop probability p
    makes the worker's request rate equal its capacity (it serves ``1 + l(1-p)``
    packets per request, ``l`` resends while late); X(p) falls and the capacity
    rises with p, so p is bracketed around its last value and found by
    Brent's method."""
    period, budget, K = float(b.period[r]), float(b.budget[r]), float(b.K[r])
    late = np.zeros(len(S_req))
    full = np.zeros(len(S_req))
    for i in cs:
        full[i] = K * S_req[i]
        late[i] = cl_mech.resends_before(budget, period, full[i])
        Am[i] = Cm[i] = Uom[i] = Vm[i] = 0.0
    s, N = b.s[r], int(b.N[r])
    i0 = max(cs, key=lambda i: s[i])

    seen: dict[float, float] = {}

    def excess(p_c: float) -> float:
        # each value is a full recursion over the population; brentq asks
        # again for the ends the sign tests below have evaluated
        if p_c not in seen:
            for i in cs:
                Sm[i] = _collapsed_residence(p_c, period, full[i])
            x = mva_core.throughput_at(s, Sm, Am, Cm, Uom, Vm, Z, N)
            seen[p_c] = x * s[i0] - 1.0 / (S_req[i0] * (1.0 + late[i0] * (1.0 - p_c)))
        return seen[p_c]

    # Bracket the root from the last step's drop fraction outwards: near the
    # fixed point it moves by about the tolerance, so a first step of
    # BRACKET_STEP usually brackets it at once; a step then costs about 6
    # recursions where a fixed +-0.05 window took 10 (docs/model.md).
    p_last = float(st.p_drop[r, i0])
    lo, hi = _bracket(excess, min(max(p_last, 0.0), 0.99), 0.0, 0.99, BRACKET_STEP)
    f, xtol, steep = excess, 1e-10, False
    if lo == hi == 0.99:
        # even 99 % drops leave it over capacity (a worker that nearly every
        # request visits): look up to 1 - 1e-12, in the log-odds, again from
        # the last step's value
        steep = True
        f, xtol = (lambda z: excess(_sigmoid(z))), 1e-9
        bottom, top = _logit(0.99), _logit(1.0 - 1e-12)
        lo, hi = _bracket(f, _logit(min(max(p_last, 0.99), 1.0 - 1e-12)), bottom, top, 1e-3)
        if lo == hi == top:
            lo = hi = 1.0 - 1e-12                    # over capacity at any drop fraction
        elif lo == hi:
            # not positive even at the bottom: the round trip through the
            # log-odds moved 0.99; the whole range, bisected if need be
            lo, hi = bottom, top
    if hi > lo:
        # the root by Brent's method (each evaluation a full recursion;
        # bisection to the same precision took 40)
        from scipy.optimize import brentq
        try:
            x = brentq(f, lo, hi, xtol=xtol, maxiter=60)
        except (ValueError, RuntimeError):
            # Brent needs the ends' signs to differ; near p = 1 the log-odds
            # round trip moves the top end (1 - 1e-12 comes back as
            # 0.9999999999989999), where the excess can change sign. Bisect
            # on the side the sign tests chose instead.
            x = _bisect(f, lo, hi, xtol)
        hi = _sigmoid(x) if steep else x
    for i in cs:
        Sm[i] = _collapsed_residence(hi, period, full[i])
    return hi, late


def _logit(q: float) -> float:
    return math.log(q / (1.0 - q))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _bracket(f, x0: float, bottom: float, top: float, step: float) -> tuple[float, float]:
    """``(lo, hi)`` with ``f(lo) > 0 >= f(hi)`` around the sign change of a
    falling ``f``, searched outwards from ``x0`` within ``[bottom, top]`` by
    steps that grow tenfold; ``(top, top)`` when f is positive up to the top,
    ``(bottom, bottom)`` when it is not positive down to the bottom."""
    lo = hi = x0
    if f(x0) > 0:
        while hi < top:
            hi = min(lo + step, top)
            if f(hi) <= 0:
                return lo, hi
            lo, step = hi, step * 10.0
        return top, top
    while lo > bottom:
        lo = max(hi - step, bottom)
        if f(lo) > 0:
            return lo, hi
        hi, step = lo, step * 10.0
    return bottom, bottom


def _bisect(f, lo: float, hi: float, xtol: float) -> float:
    """The end ``hi`` side of a sign change of a falling ``f`` (``f(lo) > 0``),
    halving until narrower than ``xtol``; never raises."""
    for _ in range(200):
        if hi - lo <= xtol:
            break
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def _iterate(b: _Batch, st: _State, D: np.ndarray, tol: np.ndarray | float = TOL,
             min_steps: int = 4) -> _State:
    """Damped fixed point over load, LSM, loss and duplicates at timeout delays
    ``D`` (one per rack), for every rack of ``b`` until each converges.

    Each rack has its own step: shrunk whenever its residual stops falling (the
    stall and loss loops are decreasing maps that overshoot otherwise), grown
    while it falls."""
    R = b.R
    a = np.ones(R)
    last = np.full(R, np.inf)
    done = np.zeros(R, dtype=bool)
    st.iterations = np.zeros(R, dtype=np.int64)
    mach_per = b.nmach // R
    out = {}
    map_X, map_util = st.X.copy(), st.util.copy()
    for it in range(1, MAX_ITER + 1):
        todo = np.nonzero(~done)[0]
        if len(todo) == 0:
            break
        sub = b if len(todo) == R else b.rows(todo)
        view = st if len(todo) == R else _subset(st, todo, b)
        X_n, u_n, p_n, d_n, w_n, bg_n, implied, lsm_n, extras = _step(sub, view, D[todo])
        X0, u0, p0, d0 = view.X, view.util, view.p_drop, view.dup
        map_X[todo], map_util[todo] = X_n, u_n
        fresh = X0 <= 0
        delta = (np.abs(X_n - X0) / np.maximum(X_n, 1e-12) + np.max(np.abs(u_n - u0), axis=1)
                 + np.max(np.abs(p_n - p0), axis=1)
                 + np.max(np.abs(d_n - d0), axis=1) / (1.0 + np.max(d0, axis=1)))
        at = a[todo]
        if it > 1:
            at = np.where(delta >= last[todo], np.maximum(0.05, at * 0.6), np.minimum(DAMP_MAX, at * 1.2))
        a[todo] = at
        last[todo] = delta
        ac = at[:, None]
        st.X[todo] = np.where(fresh, X_n, at * X_n + (1 - at) * X0)
        st.util[todo] = ac * u_n + (1 - ac) * u0
        st.p_drop[todo] = ac * p_n + (1 - ac) * p0
        st.dup[todo] = ac * d_n + (1 - ac) * d0
        w0 = view.writes
        st.writes[todo] = np.where(w0.any(axis=1)[:, None], ac * w_n + (1 - ac) * w0, w_n)
        mslots = (todo[:, None] * mach_per + np.arange(mach_per)[None, :]).ravel()
        acm = np.repeat(at, mach_per)
        st.bg[mslots] = acm * bg_n + (1 - acm) * st.bg[mslots]
        for j, arr in enumerate(lsm_n):           # damped too: see rack.cpp's iterate_rack
            st.lsm_prev[j][todo] = ac * arr + (1 - ac) * st.lsm_prev[j][todo]
        st.implied[todo] = implied
        st.iterations[todo] += 1
        conv = (it >= min_steps) & (delta < (tol if np.isscalar(tol) else tol[todo])) & ~fresh
        done[todo[conv]] = True
        _keep_extras(out, todo, extras, b)
    st.converged = done
    # Every rack keeps the map's own last output, whose throughput,
    # utilisations and service times come from one recursion and so obey the
    # operational laws; the damped blend need not (a rack that did not settle,
    # at a write-stop cliff: see docs/model.md; or one whose utilisations are
    # so small that the absolute test passed while they still moved).
    # An unsettled rack is reported as such.
    st.X, st.util = map_X, map_util
    st.delay = D.copy()
    for k, v in out.items():
        setattr(st, k, v)
    return st


def _solve_states(b: _Batch, st: _State, D0: np.ndarray | None = None) -> _State:
    """Every rack's fixed point, with its timeout delay D solved as the root of
    ``g(D) = implied(D) - D`` (:func:`_solve_states_numpy`). With the
    extension built every rack is solved compiled (:mod:`model.solvers.rack_step`:
    the same equations and search per rack, collapsed workers included);
    the numpy reference solves them where it is not, or when the tests ask."""
    if not rack_step.enabled():
        return _solve_states_numpy(b, st, D0)
    rack_step.solve(b, st, D0, np.arange(b.R), _compiled_params())
    return st


def _solve_states_numpy(b: _Batch, st: _State, D0: np.ndarray | None = None) -> _State:
    """Every rack's fixed point, with its timeout delay D solved as the root of
    ``g(D) = implied(D) - D``.

    Dropped requests (and, with ``retry = strict``, late replies) make clients
    sit out timeouts, which empties the queues that caused them: the delay
    they imply falls as D grows, so g falls from ``g(0) >= 0`` and has one
    root in ``[0, implied(0)]``. Each round solves every unfinished rack at
    its current D (one batch, warm-started) and moves its bracket by the
    Illinois rule (regula falsi that halves the stale end's weight)."""
    R = b.R
    D = np.zeros(R) if D0 is None else np.asarray(D0, dtype=float).copy()
    # a warm start (from a neighbour's root) is near the fixed point: two steps
    # tell whether it has settled; a cold one needs the damping to adapt first
    st = _iterate(b, st, D, min_steps=4 if D0 is None else 2)
    total = st.iterations.copy()
    g0 = st.implied - D
    # racks whose losses imply no delay worth the name are done
    need = g0 > 1e-6 * (b.period + 1.0)
    # The first top: implied(0), or, when lower, N / X -- the delay at which
    # all N clients would sit out timeouts (Little's law at the current
    # throughput), past which hardly any queue is left to lose packets. A top
    # below the root moves up (below), so it need not be a bound.
    with np.errstate(divide="ignore"):
        all_asleep = np.where(st.X > 0, b.N / st.X, np.inf)
    lo = D.copy()
    hi = np.where(need, np.where(all_asleep > lo, np.minimum(st.implied, all_asleep), st.implied), D)
    g_lo, g_hi = g0.copy(), np.full(R, np.nan)
    if D0 is not None:
        # Started at a neighbour's root: a negative g puts the root in [0, D].
        # g(0) = implied(0) >= implied(D) (the implied delay falls with D),
        # so implied(D) stands in for g(0): the first trial is then implied(D),
        # the plain fixed-point step, and the bracket stays valid.
        below = (g0 < 0) & ~(_consistency(g0, D, b.period) <= ROOT_TOL)
        lo = np.where(below, 0.0, lo)
        hi = np.where(below, D, hi)
        g_lo = np.where(below, st.implied, g_lo)
        g_hi = np.where(below, g0, g_hi)
        need = need | below
        need &= ~(_consistency(g0, D, b.period) <= ROOT_TOL)
    side = np.zeros(R, dtype=np.int64)
    done = ~need
    # the states at the bracket's ends (g > 0 at lo, g < 0 at hi), kept for
    # a bracket that closes on a jump of g (see the end)
    # (one-rack copies cut to the rack's own workers and population: copies
    # of every trial's whole batch state exhausted the memory on a 400-rack
    # plan of up to 3,955 workers a rack)
    mach_per = b.nmach // R
    ends: dict[tuple[int, int], _State] = {}
    for r in np.nonzero(need)[0]:
        ends[(int(r), 1 if g0[r] > 0 else -1)] = _take(st, int(r), mach_per, int(b.N[r]),
                                                        b.specs[r].servers)
    g_last = g0.copy()
    failed = np.zeros(R, dtype=np.int64)            # rounds whose fixed point did not settle
    for rnd in range(ROUNDS):
        todo = np.nonzero(~done)[0]
        if len(todo) == 0:
            break
        # next trial: the top of the bracket first, then regula falsi
        Dn = np.where(np.isnan(g_hi[todo]), hi[todo],
                      np.where(np.isfinite(g_hi[todo]) & (g_lo[todo] - g_hi[todo] > 0),
                               lo[todo] + g_lo[todo] * (hi[todo] - lo[todo])
                               / np.maximum(g_lo[todo] - g_hi[todo], 1e-300),
                               0.5 * (lo[todo] + hi[todo])))
        sub = b if len(todo) == R else b.rows(todo)
        view = st if len(todo) == R else _subset(st, todo, b)
        view.converged = np.zeros(len(todo), dtype=bool)
        # Inexact rounds: far from the root the inner fixed point need only be
        # good enough to tell which side g is on (a tenth of the last |g|,
        # relative); near it, the full tolerance. Cuts the rounds' cost by half.
        rel = np.abs(g_last[todo]) / (Dn + b.period[todo])
        res = _iterate(sub, view, Dn, np.clip(0.1 * rel, TOL, 1e-3), min_steps=2)
        _scatter(st, todo, res, b)
        total[todo] += res.iterations
        g = res.implied - Dn
        g_last[todo] = g
        pos = g > 0
        # Illinois: when the same end survives twice, halve its g
        keep_hi = pos
        new_lo = np.where(pos, Dn, lo[todo])
        new_hi = np.where(pos, hi[todo], Dn)
        # The first top (implied(0) or N / X) is above the root when the implied
        # delay falls with D. From a state on the loss-heavy side it can rise
        # instead (g(top) > 0): the top then moves up to what that trial implies.
        up = pos & np.isnan(g_hi[todo]) & (Dn >= hi[todo])
        new_hi = np.where(up, np.maximum(res.implied, 2.0 * Dn), new_hi)
        glo = np.where(pos, g, g_lo[todo] * np.where(side[todo] == -1, 0.5, 1.0))
        ghi = np.where(pos, np.where(side[todo] == 1, 0.5, 1.0) * np.nan_to_num(g_hi[todo], nan=0.0), g)
        ghi = np.where(np.isnan(g_hi[todo]) & pos, np.nan, ghi)
        side[todo] = np.where(keep_hi, 1, -1)
        lo[todo], hi[todo], g_lo[todo], g_hi[todo] = new_lo, new_hi, glo, ghi
        width = hi[todo] - lo[todo]
        for j, r in enumerate(todo):
            ends[(int(r), 1 if pos[j] else -1)] = _take(res, j, mach_per, int(sub.N[j]),
                                                         b.specs[r].servers)
        # A rack whose inner fixed point keeps failing to settle stops after
        # STEP_BUDGET steps in all, reported as unsettled: 40 rounds of MAX_ITER
        # would take minutes for the same flag (the soak met 4,133 steps; a
        # resend storm of 296 workers at a 12 us timeout costs 0.1 s a step)
        failed[todo] += ~res.converged
        fin = (_consistency(g, Dn, b.period[todo]) <= ROOT_TOL) | (width <= 1e-5 * (hi[todo] + 1.0)) \
            | (~res.converged & ((total[todo] >= STEP_BUDGET) | (failed[todo] >= UNSETTLED_ROUNDS)))
        done[todo[fin]] = True
    # A bracket can close on a jump of g instead of a root. Near the jump the
    # inner fixed point has two equilibria, one losing many packets and one
    # few, and which one a trial lands on depends on the state it starts from
    # (the loss-heavy one empties the queues through timeouts, the loss-light
    # one lets them fill again). The last trial can then sit where its losses
    # imply another delay than the one it was solved at (122 of the 1,000-row
    # plan's racks, up to 2,000 times off). Such a rack alternates between the
    # two; it is reported as the mixture of the two end states whose delays
    # agree on average: weights w and 1 - w with w g_lo + (1 - w) g_hi = 0
    # (the time fractions of a relaxation between the two regimes).
    for r in np.nonzero(need)[0]:
        r = int(r)
        if _consistency(st.implied[r] - st.delay[r], st.delay[r], b.period[r]) <= MIX_TOL:
            continue
        if (r, 1) not in ends or (r, -1) not in ends:
            continue
        a, z = ends[(r, 1)], ends[(r, -1)]
        ga, gz = float(a.implied[0] - a.delay[0]), float(z.implied[0] - z.delay[0])
        if not ga > 0 > gz:
            continue
        w = -gz / (ga - gz)
        _put(st, r, _blend(a, w, z), mach_per)
    st.iterations = total
    return st


def _consistency(g, D, period):
    """How far a state is from a root of g(D) = implied(D) - D: |g| relative to
    the delay (plus a thousandth of a retry period, for D near 0)."""
    return np.abs(g) / (np.asarray(D, dtype=float) + 1e-3 * np.asarray(period, dtype=float))


def _take(res: _State, j: int, mach_per: int, n: int, m: int) -> _State:
    """Rack ``j`` of a batch state, with the iteration's output quantities, as
    a one-rack state: a copy of its first ``m`` workers, ``n`` populations and
    machines (:func:`_put` writes it back). :func:`_row` cut to the rack's own
    size, so that every trial's ends can be kept and blended: the full-width
    row is as wide as the batch's largest rack and population."""
    def row(a, width):
        return a[j:j + 1, :width].copy()
    t = _State(res.X[j:j + 1].copy(), row(res.util, m), row(res.p_drop, m), row(res.dup, m),
               row(res.writes, m), res.bg[j * mach_per:(j + 1) * mach_per].copy(),
               res.delay[j:j + 1].copy(), tuple(row(x, m) for x in res.lsm_prev),
               (res.collapsed[j],), res.iterations[j:j + 1].copy(),
               res.converged[j:j + 1].copy(), res.implied[j:j + 1].copy())
    for k in _OUTPUTS:
        setattr(t, k, row(getattr(res, k), m))
    t.x_hist = row(res.x_hist, n)
    t.cyc = {f: row(a, m) for f, a in res.cyc.items()}
    return t


def _put(st: _State, r: int, t: _State, mach_per: int) -> None:
    """Write a one-rack state from :func:`_take` back as rack ``r`` of ``st``."""
    m, n = t.util.shape[1], t.x_hist.shape[1]
    st.X[r], st.delay[r], st.implied[r] = t.X[0], t.delay[0], t.implied[0]
    st.converged[r] = t.converged[0]
    for k in ("util", "p_drop", "dup", "writes", *_OUTPUTS):
        getattr(st, k)[r, :m] = getattr(t, k)[0]
    for a, v in zip(st.lsm_prev, t.lsm_prev):
        a[r, :m] = v[0]
    st.bg[r * mach_per:(r + 1) * mach_per] = t.bg
    st.x_hist[r, :n] = t.x_hist[0]
    for f, v in t.cyc.items():
        st.cyc[f][r, :m] = v[0]


def _blend(a: _State, w: float, z: _State) -> _State:
    """The one-rack state ``w a + (1 - w) z``, field by field."""
    f = lambda x, y: w * x + (1.0 - w) * y  # noqa: E731
    t = _State(f(a.X, z.X), f(a.util, z.util), f(a.p_drop, z.p_drop), f(a.dup, z.dup),
               f(a.writes, z.writes), f(a.bg, z.bg), f(a.delay, z.delay),
               tuple(f(x, y) for x, y in zip(a.lsm_prev, z.lsm_prev)), a.collapsed,
               np.maximum(a.iterations, z.iterations), a.converged & z.converged,
               f(a.implied, z.implied))
    for k in _OUTPUTS:
        setattr(t, k, f(getattr(a, k), getattr(z, k)))
    t.x_hist = f(a.x_hist, z.x_hist)
    t.cyc = {k: f(a.cyc[k], z.cyc[k]) for k in a.cyc}
    return t


def _scatter(st: _State, rows: np.ndarray, res: _State, b: _Batch) -> None:
    """Write the state of a sub-batch (racks ``rows``) back into ``st``."""
    mach_per = b.nmach // b.R
    mslots = (rows[:, None] * mach_per + np.arange(mach_per)[None, :]).ravel()
    st.X[rows], st.util[rows], st.p_drop[rows], st.dup[rows] = res.X, res.util, res.p_drop, res.dup
    st.writes[rows], st.delay[rows], st.implied[rows] = res.writes, res.delay, res.implied
    st.bg[mslots] = res.bg
    st.converged[rows] = res.converged
    for j in range(3):
        st.lsm_prev[j][rows] = res.lsm_prev[j]
    for k in _OUTPUTS:
        if getattr(st, k) is None:
            setattr(st, k, np.zeros((b.R,) + getattr(res, k).shape[1:]))
        getattr(st, k)[rows] = getattr(res, k)
    if st.x_hist is None or st.x_hist.shape[1] < res.x_hist.shape[1]:
        grown = np.zeros((b.R, res.x_hist.shape[1]))
        if st.x_hist is not None:
            grown[:, :st.x_hist.shape[1]] = st.x_hist
        st.x_hist = grown
    st.x_hist[rows, :res.x_hist.shape[1]] = res.x_hist
    if st.cyc is None:
        st.cyc = {f: np.zeros((b.R, b.M)) for f in res.cyc}
    for f in res.cyc:
        st.cyc[f][rows] = res.cyc[f]


def _subset(st: _State, rows: np.ndarray, b: _Batch) -> _State:
    mach_per = b.nmach // b.R
    mslots = (rows[:, None] * mach_per + np.arange(mach_per)[None, :]).ravel()
    return _State(st.X[rows], st.util[rows], st.p_drop[rows], st.dup[rows], st.writes[rows],
                  st.bg[mslots], st.delay[rows], tuple(x[rows] for x in st.lsm_prev),
                  tuple(st.collapsed[i] for i in rows), st.iterations[rows],
                  st.converged[rows], st.implied[rows],
                  q=None if st.q is None else st.q[rows])


def _keep_extras(out: dict, rows: np.ndarray, extras: dict, b: _Batch) -> None:
    """Store the last iteration's output quantities of the racks ``rows``."""
    R, M = b.R, b.M
    for k, v in extras.items():
        if k == "cyc":
            arrs = {f: getattr(v, f).reshape(len(rows), M) for f in v.__dataclass_fields__}
            prev = out.get(k)
            if prev is None:
                prev = {f: np.zeros((R, M)) for f in arrs}
            for f, a in arrs.items():
                prev[f][rows] = a
            out[k] = prev
        elif k == "x_hist":
            prev = out.get(k)
            if prev is None or prev.shape[1] < v.shape[1]:
                grown = np.zeros((R, max(v.shape[1], 0 if prev is None else prev.shape[1])))
                if prev is not None:
                    grown[:, :prev.shape[1]] = prev
                prev = grown
            prev[rows, :v.shape[1]] = v
            out[k] = prev
        else:
            prev = out.get(k)
            if prev is None:
                prev = np.zeros((R,) + v.shape[1:])
            prev[rows] = v
            out[k] = prev


# ---------------------------------------------------------------- entry points
def solve(spec: RackSpec, collapsed: tuple[int, ...] | None = None) -> Prediction:
    """The analytic prediction of one rack (``collapsed`` forces a set of
    collapsed workers, for tests)."""
    return solve_many([spec], None if collapsed is None else [tuple(collapsed)])[0]


def solve_many(specs: Sequence[RackSpec], collapsed=None,
               warm_from: Sequence[int | None] | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[Prediction]:
    """The analytic predictions of many racks, solved as one batch.

    First every worker of every rack is solved healthy; racks whose timeout is
    shorter than a full receive buffer's worth of service get their collapse
    branch (:func:`_collapse_mixture`).

    ``warm_from[r] = j`` starts rack r from rack j's solution (j itself
    starting cold, ``warm_from[j] = None``): for racks that differ a little,
    such as one scenario under the sigma-point profiles of an interval
    (:mod:`model.intervals`). The fixed point is the same; only the path to it
    is shorter. A rack whose leader did not settle is not solved: its entry
    is ``None``. A leader with a collapse chain passes its chain on
    (:func:`_solve_warm`).

    ``progress(done, total)`` hears of racks finished (a rack whose workers
    can collapse takes one chain of states, seconds to a minute on a wide
    rack with a short timeout)."""
    specs = list(specs)
    if warm_from is not None and len(warm_from) != len(specs):
        raise ValueError("warm_from: one entry per rack")
    # Racks where no request can complete get zero goodput and the reason.
    stuck = {r: why for r, sp in enumerate(specs)
             if (why := cl_mech.no_completion(sp.clients, sp.placement.hit_ratio))}
    if stuck:
        live = [r for r in range(len(specs)) if r not in stuck]
        where = {r: k for k, r in enumerate(live)}
        warm_live = None if warm_from is None else \
            [where.get(warm_from[r]) if warm_from[r] is not None else None for r in live]
        moved = None if progress is None else \
            (lambda done, total: progress(done + len(stuck), len(specs)))
        solved = dict(zip(live, solve_many([specs[r] for r in live],
                                           None if collapsed is None else
                                           [collapsed[r] for r in live], warm_live, moved)))
        return [solved[r] if r in solved else no_goodput(specs[r], "analytic", stuck[r])
                for r in range(len(specs))]
    if not specs:
        return []
    b = _Batch.of(specs)
    tell = progress or (lambda done, total: None)
    if warm_from is None or all(w is None for w in warm_from):
        st = _solve_states(b, _initial(b, collapsed))
        mixtures = []
        for r in range(b.R):
            mixtures.append(_mixture(b, st, r, collapsed))
            tell(r + 1, b.R)
    else:
        mixtures = _solve_warm(b, collapsed, list(warm_from), tell)
    return [None if m is None else _outputs(spec, *m) for spec, m in zip(specs, mixtures)]


def _mixture(b: _Batch, st: _State, r: int, collapsed,
             states: dict | None = None) -> tuple[list[tuple[float, _State]], int]:
    """Rack r's states and their weights, and the steps they took: its fixed
    point, or the collapse chain's mixture where a worker can collapse (whose
    states ``states`` receives, :func:`_collapse_mixture`)."""
    one = _row(st, r, b)
    # Also for a rack whose healthy solve did not settle: a worker over
    # capacity healthy is collapsed in every state of the chain, and that
    # state often settles (the 'loss + timeouts' parity rack does).
    if collapsed is None and _collapse_possible(b, st, r):
        return _collapse_mixture(b.rows(np.array([r])), one, states)
    return [(1.0, one)], int(one.iterations[0])


def _solve_warm(b: _Batch, collapsed, warm_from: list,
                tell: Callable[[int, int], None] = lambda done, total: None) -> list:
    """The mixtures (:func:`_mixture`) of a batch whose racks ``warm_from[r] = j``
    start from rack j's solution: the leaders (``None``) are solved first,
    cold, then the others from their leader's load, losses, flush state and
    timeout delay.

    A leader whose workers can collapse has a mixture of states from its
    collapse chain. Its followers run their own chain (their weights follow
    their profile), but each state the leader solved (the same collapsed
    workers) starts from the leader's. They used to start cold, a healthy
    solve and a chain from scratch per sigma point: up to two rounds of
    MAX_ITER steps each where the healthy state does not settle (a full-range
    plan row took 18 x 800 steps, 260 s)."""
    R = b.R
    lead = np.array([r for r in range(R) if warm_from[r] is None], dtype=np.int64)
    rest = [r for r in range(R) if warm_from[r] is not None]
    if any(warm_from[warm_from[r]] is not None for r in rest):
        raise ValueError("warm_from: a rack can only start from a rack that starts cold")
    cs = collapsed or [()] * R
    b1 = b.rows(lead)
    lead_cs = None if collapsed is None else [cs[r] for r in lead]
    st1 = _solve_states(b1, _initial(b1, lead_cs))
    out: list = [None] * R
    chains: dict[int, dict[int, _State]] = {}      # leader -> its chain's states
    done = 0
    for j, r in enumerate(lead):
        states: dict[int, _State] = {}
        out[r] = _mixture(b1, st1, j, lead_cs, states)
        if states:                                  # its chain ran (state 0 at least)
            chains[int(r)] = states
        done += 1
        tell(done, R)
    row_of = {int(r): j for j, r in enumerate(lead)}
    # A leader that did not settle has no followers (None): a sigma point
    # around a point that is not a fixed point means nothing, and each would
    # cost the full step budget again.
    unsettled = {int(r) for r in lead if not all(bool(x.converged[0]) for _, x in out[r][0])}
    rest = [r for r in rest if warm_from[r] not in unsettled]
    # Followers of a leader with a collapse chain run their own chain, from
    # states warm-started from the leader's: each state k >= 1 (the same
    # collapsed workers) is one rack of a batch (4 steps where cold takes 13).
    # The healthy state is solved cold, as the leader's was, if the leader's
    # settled: a rack whose workers can collapse sits near a cliff where the
    # healthy state has more than one fixed point, and from the leader's a
    # sigma point can land on another one or on none (the default rack at a
    # 1 ms timeout: 1,279 steps without settling against 222 cold, and
    # throughputs 2 % from the cold answers). If the leader's did not settle,
    # it is not a fixed point, and the follower's chain reads its floor and
    # run length from the leader's (the healthy state then has no weight:
    # the leader settled).
    jobs = [(r, k, x) for r in rest if warm_from[r] in chains
            for k, x in sorted(chains[warm_from[r]].items())
            if k and x.collapsed[0] == tuple(_chain_order(b.s[r])[:k])]
    warm: dict[int, dict[int, _State]] = {r: {} for r in rest if warm_from[r] in chains}
    healthy = np.array([r for r in warm if bool(chains[warm_from[r]][0].converged[0])],
                       dtype=np.int64)
    if len(healthy):
        b0 = b.rows(healthy)
        st0 = _solve_states(b0, _initial(b0))       # chains run only where none is forced
        for n, r in enumerate(healthy):
            warm[int(r)][0] = _row(st0, n, b0)
    if jobs:
        bj = b.rows(np.array([r for r, _, _ in jobs], dtype=np.int64))
        stj = _initial(bj, [x.collapsed[0] for _, _, x in jobs])
        for n, (_, _, x) in enumerate(jobs):
            _scatter(stj, np.array([n]), x, bj)
        stj = _solve_states(bj, stj, np.array([float(x.delay[0]) for _, _, x in jobs]))
        for n, (r, k, _) in enumerate(jobs):
            warm[r][k] = _row(stj, n, bj)
    for r, have in warm.items():
        st0 = have.pop(0) if 0 in have else chains[warm_from[r]][0]
        out[r] = _collapse_mixture(b.rows(np.array([r])), st0, have)
        done += 1
        tell(done, R)
    plain = np.array([r for r in rest if out[r] is None], dtype=np.int64)
    if len(plain):
        b2 = b.rows(plain)
        src = np.array([row_of[warm_from[r]] for r in plain], dtype=np.int64)   # rows of st1
        st2 = _subset(st1, src, b1)                 # the leaders' state, one copy per follower
        st2.collapsed = tuple(cs[r] for r in plain)
        st2 = _solve_states(b2, st2, st1.delay[src])
        for n, r in enumerate(plain):
            out[r] = _mixture(b2, st2, n, None if collapsed is None else [cs[r] for r in plain])
            done += 1
            tell(done, R)
    tell(R, R)                  # the followers of an unsettled leader are not solved
    return out


def _row(st: _State, r: int, b: _Batch) -> _State:
    one = _subset(st, np.array([r]), b)
    for k in (*_OUTPUTS, "x_hist"):
        setattr(one, k, getattr(st, k)[[r]])
    one.cyc = {f: v[[r]] for f, v in st.cyc.items()}
    one.delay = st.delay[[r]]
    return one


def _collapse_possible(b: _Batch, st: _State, r: int) -> bool:
    """Can a worker stay collapsed: does a full buffer's service outlive the timeout?"""
    if not b.finite_to[r]:
        return False
    return bool(np.any(b.active[r] & (b.K[r] * st.S_req[r] > b.budget[r])))


def _collapse_mixture(b1: _Batch, st0: _State, states: dict | None = None):
    """The states of one rack with k collapsed workers and their weights.

    With a timeout shorter than a full receive buffer's worth of service, a
    worker has a second stable state: collapsed, its buffer full of
    duplicates, every reply later than the timeout (from the level where
    replies outlive the timeout, each arrival adds itself and a resend,
    faster than the worker drains). How many workers are collapsed changes
    during a run (docs/model.md, "Short timeouts"), as a Markov chain on k:

    * a healthy worker collapses when its queue reaches that level: by a
      queue fluctuation (up-crossings, :func:`_crossings`), or behind one of
      its WAL-switch blocks, when the clients that arrive during the block
      pass the level (:func:`_handovers`);
    * such a block also takes clients from the workers already collapsed:
      the clients that escape them meanwhile are caught by the blocked
      worker, so an old collapsed worker survives the block only if it keeps
      enough clients to keep its buffer full (:func:`_survival`);
    * the run starts healthy; the first collapse comes at the rate out of
      state 0, and after it the weights are the chain's stationary
      distribution over k.

    The prediction is the mixture of the states with k collapsed workers (the
    busiest first) under these weights. Workers that are over capacity even
    healthy (drop fraction over 0.3) are collapsed in every state.

    ``states`` (k -> state) holds states already solved and receives the
    ones solved here: a sigma point's chain starts from states warm-started
    from its centre's (:func:`_solve_warm`); their steps are counted here.
    """
    spec = b1.specs[0]
    evaluations = int(st0.iterations[0])
    s = b1.s[0]
    order = _chain_order(s)
    run_us = spec.queries / st0.X[0] if st0.X[0] > 0 else 0.0
    if run_us <= 0:
        return [(1.0, st0)], evaluations
    runaway = sum(1 for i in order if st0.p_drop[0, i] > 0.3)
    states = {} if states is None else states
    evaluations += sum(int(x.iterations[0]) for k, x in states.items() if k)
    states[0] = st0

    def state(k: int) -> _State:
        nonlocal evaluations
        if k not in states:
            states[k] = _solve_states(b1, _initial(b1, [tuple(order[:k])]))
            evaluations += int(states[k].iterations[0])
        return states[k]

    def sustained(k: int) -> bool:
        """Does state k hold k collapsed workers (each needs drops to stay
        within its capacity)?"""
        st = state(k)
        return all(float(st.p_drop[0, i]) > COLLAPSED_P for i in order[:k])

    k_min = runaway
    if k_min and not sustained(k_min):
        k_min = 0
    # transitions out of state k: {k': rate per us}
    def moves(k: int) -> dict[int, float]:
        st = state(k)
        out: dict[int, float] = {}
        up = _crossings(b1, st, tuple(order[:k])) / run_us
        if up > 0 and k < len(order):
            out[k + 1] = up
        for rate, keep in _handovers(b1, st, tuple(order[:k]), runaway):
            # the blocked worker collapses; the old ones that keep their
            # clients stay collapsed (a Poisson-binomial count)
            dist = np.array([1.0])
            for q in keep:
                dist = np.convolve(dist, [1.0 - q, q])
            for extra, pr in enumerate(dist):
                k2 = min(1 + extra, len(order))
                if k2 != k and pr * rate > 0:
                    out[k2] = out.get(k2, 0.0) + pr * rate
        return out

    r0 = sum(moves(k_min).values()) if k_min == 0 else 0.0
    if k_min == 0 and r0 * run_us < 1e-3:
        return [(1.0, st0)], evaluations
    # the chain over k >= 1 (or the runaway floor): states reachable with a
    # weight that matters, each one that holds its collapsed workers
    lo = max(1, k_min)
    ks, rates = [], {}
    frontier = [lo]
    while frontier and len(ks) < MAX_COLLAPSE_STATES:
        k = frontier.pop(0)
        if k in ks or k > len(order):
            continue
        if k > lo and (evaluations > CHAIN_BUDGET
                       or not all(states[j].converged[0] for j in ks)):
            # states that do not settle: keep what was solved. One that did
            # not settle cost MAX_ITER steps, and so would each further state
            # (a soak scenario of 37 workers spent 2,000 steps on five more).
            break
        if k > lo and not sustained(k):
            continue
        ks.append(k)
        rates[k] = {k2: r for k2, r in moves(k).items() if k2 >= lo}
        frontier.extend(k2 for k2 in sorted(rates[k]) if k2 not in ks)
    idx = {k: n for n, k in enumerate(ks)}
    Q = np.zeros((len(ks), len(ks)))
    for k in ks:
        for k2, r in rates[k].items():
            j = idx.get(k2)
            if j is None:                         # not sustained: the nearest state below
                below = [x for x in ks if x < k2]
                j = idx[max(below)] if below else idx[k]
            if j != idx[k]:
                Q[idx[k], j] += r
                Q[idx[k], idx[k]] -= r
    pi = _stationary(Q)
    w0 = 0.0
    if k_min == 0:
        x = r0 * run_us
        w0 = -math.expm1(-x) / x                  # healthy until the first collapse
    mixture = [(w0, st0)] if w0 > 0 else []
    mixture += [((1.0 - w0) * float(p), state(k)) for k, p in zip(ks, pi) if p > 1e-6]
    total = sum(w for w, _ in mixture)
    return [(w / total, st) for w, st in mixture if w > 0], evaluations


def _chain_order(s: np.ndarray) -> list[int]:
    """The workers in the order they collapse along the chain: the busiest first."""
    return [int(i) for i in np.argsort(-s, kind="stable") if s[i] > 0]


def _stationary(Q: np.ndarray) -> np.ndarray:
    """Stationary distribution of the generator ``Q`` (rows sum to 0)."""
    n = Q.shape[0]
    if n == 1:
        return np.ones(1)
    A = np.vstack([Q.T, np.ones(n)])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    pi = np.linalg.lstsq(A, rhs, rcond=None)[0]
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def _handovers(b1: _Batch, st: _State, collapsed: tuple, runaway: int):
    """The WAL-switch blocks at healthy workers that collapse them: for each
    healthy worker, (rate of such blocks per us, probability that each
    collapsed worker keeps its collapse through one).

    A block of length B at worker j stops its service; the ``X s_j B``
    arrivals meanwhile pile up there (a Poisson count), and when they reach
    the collapse level ``k_c = budget / S - 1`` the worker is collapsed when
    the block ends. The old collapsed workers' survival is :func:`_survival`.
    """
    cyc = st.cyc
    X = float(st.X[0])
    out = []
    if not b1.wal_on[0] or X <= 0:
        return out
    from scipy.special import gammainc
    wal_us, ev_us = cyc["wal_us"][0], cyc["wal_event_us"][0]
    for j in np.nonzero(b1.active[0])[0]:
        if j in collapsed or ev_us[j] <= 0:
            continue
        rate = float(st.writes[0, j]) * float(wal_us[j]) / float(ev_us[j])
        B = float(ev_us[j])
        k_c = float(b1.budget[0]) / float(st.S_req[0, j]) - 1.0
        pile = X * float(b1.s[0, j]) * B
        p_c = 1.0 if k_c <= 0 else float(gammainc(math.ceil(k_c), pile))   # P(Poisson >= k_c)
        if rate * p_c <= 0:
            continue
        keep = _survival(b1, st, collapsed, int(j), B)
        out.append((rate * p_c, [1.0 if n < runaway else q for n, q in enumerate(keep)]))
    return out


def _survival(b1: _Batch, st: _State, collapsed: tuple, j: int, B: float) -> list[float]:
    """P(each collapsed worker is still collapsed after a block of length B at j).

    During the block the clients that escape a collapsed worker i (one
    residence ``r_i`` each) circulate and are caught again within a few
    requests: by j (every request there waits out the block) or by a
    collapsed worker (a request there is dropped with its ``p_l``), in
    proportion to ``s_j`` and ``s_l p_l``. The clients at the collapsed
    workers follow ``n' = (-1/r + (w / D) (1/r)^T) n``; a worker stays
    collapsed if it keeps at least ``period / S_i`` clients (their resends
    alone fill it), with a Poisson spread around the mean.
    """
    if not collapsed:
        return []
    cs = list(collapsed)
    s = b1.s[0]
    p = np.array([float(st.p_drop[0, i]) for i in cs])
    S = np.array([float(st.S_req[0, i]) for i in cs])
    period, K, N = float(b1.period[0]), float(b1.K[0]), float(b1.N[0])
    r = np.maximum(_collapsed_residence(np.minimum(p, 1.0 - 1e-9), period, K * S), 1e-9)
    n0 = np.array([float(st.q[0, i]) for i in cs])
    w = s[cs] * p
    D = float(s[j]) + float(w.sum())
    free = max(0.0, N - float(n0.sum()) - float(st.q[0, j]))
    n0 = n0 + free * w / D                    # the circulating clients are caught at once
    nB = _drain(1.0 / r, w / D, B, n0)
    need = period / S
    z = (nB - need) / np.sqrt(np.maximum(nB, 1.0))
    return [0.5 * math.erfc(-float(x) / math.sqrt(2.0)) for x in z]


def _drain(a: np.ndarray, u: np.ndarray, t: float, n0: np.ndarray) -> np.ndarray:
    """``expm(M t) @ n0`` for ``M = -diag(a) + u a^T`` (a > 0, u >= 0): clients
    leave each collapsed worker at rate ``a`` and a share ``u`` of them is
    caught again by each.

    With ``T = diag(sqrt(u / a))``, ``T^-1 M T = -diag(a) + z z^T`` with
    ``z = sqrt(u a)``, which is symmetric, so its eigen-decomposition is
    well conditioned. scipy's ``expm`` gave the same numbers but cost 8 ms a
    call for a 2 x 2 matrix when OpenBLAS's threads had to wait for a busy
    core (24 % of a 32,000-client plan row's time)."""
    if np.any(u <= 0.0):                       # not symmetrisable: the general form
        from scipy.linalg import expm
        return expm((np.outer(u, a) - np.diag(a)) * t) @ n0
    tt = np.sqrt(u / a)
    z = np.sqrt(u * a)
    lam, vec = np.linalg.eigh(np.outer(z, z) - np.diag(a))
    return tt * (vec @ (np.exp(lam * t) * (vec.T @ (n0 / tt))))


def _crossings(b1: _Batch, st: _State, collapsed: tuple) -> float:
    """Expected up-crossings, over the rest of the run, of the queue at which
    replies outlive the timeout, at the healthy busy workers: arrivals that
    find exactly ``k_c - 1`` clients there (``k_c = budget / S - 1``)."""
    X = float(st.X[0])
    if X <= 0:
        return 0.0
    spec = b1.specs[0]
    run_us = spec.queries / X
    N = int(b1.N[0])
    total = 0.0
    for i in np.nonzero(b1.active[0])[0]:
        if i in collapsed or st.util[0, i] < 0.5:
            continue                      # below half busy a resend storm drains away
        k_c = float(b1.budget[0]) / float(st.S_req[0, i]) - 1.0
        if k_c >= N - 1:
            continue
        cum = _cum_logx(st.x_hist[:, :N], b1.N, int(k_c) + 2)
        logd = np.log(max(float(st.demand[0, i]), 1e-300))
        lvl = _tail_at(cum, np.array([[logd]]), np.array([[k_c - 1.0]]))[0, 0] - \
            _tail_at(cum, np.array([[logd]]), np.array([[k_c]]))[0, 0]
        total += X * b1.s[0, i] * run_us * float(lvl)
    return total


# ---------------------------------------------------------------- outputs
def _outputs(spec: RackSpec, mixture: list[tuple[float, _State]], evaluations: int) -> Prediction:
    """The prediction of one state, or the weighted mixture of several (short
    timeouts: how many workers collapse is random)."""
    parts = [(w, _state_outcome(spec, st)) for w, st in mixture]
    outcome = parts[0][1] if len(parts) == 1 else _mix(parts)
    st = max(mixture, key=lambda t: t[0])[1]         # the likeliest state, for the details
    m = spec.servers
    s = per_worker(spec.placement, "shares")
    cyc = st.cyc
    cycle = cyc["cycle_us"][0, :m]
    with np.errstate(invalid="ignore"):
        fill = np.where(np.isfinite(cycle),
                        cycle / np.maximum(cyc["memtables_per_flush"][0, :m], 1e-9) / 1e6,
                        math.inf).tolist()
    details = {
        "p_mem": list(spec.service.p_mem),
        "loss_probability": st.p_drop[0, :m].tolist(),
        "duplicates_per_request": st.dup[0, :m].tolist(),
        "timeout_delay_us_per_request": float(np.sum(s * st.wait_extra[0, :m])),
        "collapsed_workers": [{"workers": list(x.collapsed[0]), "probability": float(w)}
                              for w, x in mixture],
        "memtable_fill_s": fill,
        "flush_busy_fraction": cyc["flush_busy"][0, :m].tolist(),
        "write_stop_fraction": cyc["stop_fraction"][0, :m].tolist(),
        "buffer_pkts": float(spec.network.buffer_pkts),
        "iterations": evaluations,
        "converged": bool(all(bool(x.converged[0]) for _, x in mixture)),
    }
    return from_outcome(spec, outcome, "analytic", details)


def _mix(parts: list[tuple[float, Outcome]]) -> Outcome:
    """Expected outcome over states: rates and fractions average with the
    weights; latency follows from the mixed throughput (Little's law)."""
    def avg(get):
        return sum(w * np.asarray(get(o), dtype=float) for w, o in parts)
    X = float(avg(lambda o: o.throughput_mops))

    def per_request(get):
        # a time per request averages over requests, not over states: each
        # state weighs by the requests it serves (so X s S stays the utilisation)
        if X <= 0:
            return avg(get)
        return sum(w * o.throughput_mops * np.asarray(get(o), dtype=float) for w, o in parts) / X
    latency = sum(w * o.throughput_mops * o.latency_us for w, o in parts) / X if X > 0 else math.inf
    return Outcome(
        throughput_mops=X, util=avg(lambda o: o.util),
        wait_us=per_request(lambda o: np.where(np.isfinite(o.wait_us), o.wait_us, 0.0)),
        process_us=per_request(lambda o: o.process_us), stall_frac=avg(lambda o: o.stall_frac),
        block_frac=avg(lambda o: o.block_frac), stretch=avg(lambda o: o.stretch),
        latency_us=float(latency), timeout_share=float(avg(lambda o: o.timeout_share)),
        lost_per_request=float(avg(lambda o: o.lost_per_request)),
        pktloss=float(avg(lambda o: o.pktloss)), false_pos=float(avg(lambda o: o.false_pos)))


def _state_outcome(spec: RackSpec, st: _State) -> Outcome:
    pl, sv, c = spec.placement, spec.service, spec.clients
    m, N = spec.servers, c.threads
    s = per_worker(pl, "shares")
    wf = per_worker(pl, "write_frac")
    ev = pl.evict_per_us * per_worker(pl, "evict_probs")
    X = float(st.X[0])
    p_drop, dup = st.p_drop[0, :m], st.dup[0, :m]
    served = X * s * (1.0 + dup) + ev
    process = st.S_req[0, :m] - sv.recv_floor_us - sv.gap_us
    with np.errstate(divide="ignore"):
        wait = np.where(served > 0, 1.0 / np.where(served > 0, served, 1.0) - process - sv.gap_us,
                        math.inf)
    wait = np.where(served > 0, np.maximum(wait, sv.recv_floor_us), math.inf)
    latency = N / X if X > 0 else math.inf
    lost_per_req = float(np.sum(s * (1.0 + dup) * p_drop / (1.0 - p_drop)))
    resend_per_req = float(np.sum(s * (p_drop / (1.0 - p_drop) + dup / (1.0 - p_drop))))
    expected = lambda v: 0.0 if v < 0.5 else v  # noqa: E731 -- below one packet a run sees none
    period = cl_mech.retry_period_us(c)
    # Time a request spends sitting out timers: the delay station D the state
    # was solved at (the clients' time outside the workers), plus the timers of
    # collapsed workers, which are in their residence instead. Not the drops'
    # p / (1 - p) x period: near a saturated worker the implied delay falls so
    # steeply with D that the root is bracketed to 1e-5 while implied(D) is
    # still 2x off (NoCache at a 5 s timeout: 2,842 us against D = 1,502 us and
    # N / X = 2,301 us, a "123 %" share of the client's time).
    collapsed = list(st.collapsed[0]) if st.collapsed else []
    drop_wait = float(st.delay[0]) + float(np.sum(
        (s * p_drop / (1.0 - p_drop))[collapsed])) * period
    timeout_share = drop_wait / latency if math.isfinite(latency) and latency > 0 else 0.0
    return Outcome(
        throughput_mops=X, util=st.util[0, :m], wait_us=wait, process_us=process,
        stall_frac=st.cyc["stop_fraction"][0, :m],
        block_frac=np.minimum(1.0, served * wf * st.block[0, :m]),
        stretch=st.stretch[0, :m], latency_us=latency, timeout_share=timeout_share,
        lost_per_request=lost_per_req,
        pktloss=expected(spec.queries * lost_per_req),
        false_pos=expected(spec.queries * resend_per_req))
