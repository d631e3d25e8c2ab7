"""The closed-network recursion the analytic solver runs on every iteration.

One class of N clients cycles through a delay (think time Z) and single-server
FCFS stations, visiting station i ``v[i]`` times per cycle. Per visit a
client's residence at station i is

    r_i(n) = (S_i + A_i Q_i(n-1) + C_i U_i(n-1)) / (1 - Uo_i) + V_i

* ``S_i``: the client's own mean service;
* ``A_i``: the work each client already there brings with it -- its own
  service plus any duplicate packets it left behind (resends that are still
  served);
* ``C_i``: the residual correction for service that is not exponential
  (Reiser): the customer in service has ``E[S^2] / 2E[S]`` left rather than
  ``E[S]``, so ``C = E[S^2] / 2E[S] - S``; it is 0 for exponential service;
* ``Uo_i``: utilisation by an open class (write-backs no client waits for),
  which slows the station for the clients;
* ``V_i``: a delay per visit from rare, long blocks of the worker (WAL
  switches, write stops), computed by the caller for a finite population
  (:func:`block_delay`).

With ``A = S`` and ``C = Uo = 0`` this is exact MVA for a product-form
network (the arrival theorem); the other terms are the standard mean-value
extensions. ``U_i(n) = X(n) v_i A_i``. The recursion also returns
``X(1..N)``, from which the product-form queue-length tails follow:
``P(an arrival sees >= k) = D^k prod_{j=1..k} X(N - j)`` with ``D = v A / (1-Uo)``.
"""

from __future__ import annotations

import numpy as np

try:  # the compiled recursion (native/mva), when built
    from native import _mva as _compiled
except ImportError:  # pragma: no cover - a source checkout without the build
    _compiled = None
#: the compiled Schweitzer root (absent from a build older than the binding)
_compiled_roots = getattr(_compiled, "throughput_roots", None)


#: Networks with more clients than N_EXACT and more than WORK_EXACT
#: client-stations are solved by the Schweitzer approximation
#: (:func:`approximate_batch`) instead of the exact recursion, whose cost grows
#: as N x stations per step (seconds per step at 200k clients and 700
#: workers). Past 16,384 clients its error against the exact recursion is
#: about 1e-6 on throughput and 1e-3 on queue lengths
#: (tests/model/test_mva_core.py; docs/model.md, "Large populations").
N_EXACT = 16_384
WORK_EXACT = 4_000_000


def _approximate(N, m) -> np.ndarray:
    """Which networks take the approximation: N clients over m visited stations
    (the work of the exact recursion; a batch's padding and idle workers are
    not visited, so a rack's method does not depend on its batch)."""
    N = np.asarray(N)
    return (N > N_EXACT) & (N * np.asarray(m) > WORK_EXACT)


def recursion(v, S, A, C, Uo, V, Z: float, N: int):
    """Run n = 1..N. Returns (X history, residence per visit, queue, utilisation).

    Uses the compiled recursion (native/mva) when it is built, else
    :func:`recursion_numpy`; both compute the same numbers. Past
    :data:`N_EXACT` clients (and :data:`WORK_EXACT` client-stations), the
    Schweitzer approximation."""
    if _approximate(N, np.count_nonzero(v)):
        x_hist, r, q, u = approximate_batch(*(np.atleast_2d(np.asarray(a, dtype=float))
                                              for a in (v, S, A, C, Uo, V)),
                                            np.array([Z], dtype=float), np.array([N]))
        return x_hist[0], r[0], q[0], u[0]
    if _compiled is not None:
        return _compiled.recursion(v, S, A, C, Uo, V, float(Z), int(N))
    return recursion_numpy(v, S, A, C, Uo, V, Z, N)


def throughput_at(v, S, A, C, Uo, V, Z: float, N: int) -> float:
    """X(N) alone, for a root search that asks it many times (a collapsed
    worker's drop fraction, ``analytic._collapsed``): the exact recursion's
    last value up to :data:`N_EXACT` clients, and past them the Schweitzer
    root at N whatever the station count (:data:`WORK_EXACT` is for the
    queue lengths the tails need, which X(N) alone does not). Its error
    there: 1e-6 to 2e-5 on balanced racks, up to 2.5e-4 on random racks
    with a collapsed worker (tests/model/test_mva_core.py). A 16-worker rack
    of 178,203 clients spent three quarters of its two minutes on exact
    recursions asked only for X(N)."""
    if N <= N_EXACT:
        return float(recursion(v, S, A, C, Uo, V, Z, N)[0][-1])
    v, S, A, C, Uo, V = (np.asarray(a, dtype=float)[None, None, :] for a in (v, S, A, C, Uo, V))
    slow = 1.0 / np.maximum(1.0 - Uo, 1e-9)
    f = (N - 1.0) / N
    b = f * v * A * slow
    a0 = v * (S * slow + V)
    a1 = v * C * f * v * A * slow
    return float(_throughput(a0, a1, b, np.array([[float(Z)]]), np.array([[float(N)]]))[0, 0])


def recursion_batch(v, S, A, C, Uo, V, Z, N):
    """:func:`recursion` for R networks at once (station arrays R x m, Z and N per
    network). Returns (X history R x max N, residence, queue, utilisation R x m)."""
    v = np.ascontiguousarray(v, dtype=float)
    R, m = v.shape
    N = np.asarray(N, dtype=np.int64)
    Z = np.asarray(Z, dtype=float)
    x_hist = np.zeros((R, int(N.max())))
    r, q, u = np.zeros((R, m)), np.zeros((R, m)), np.zeros((R, m))
    big = _approximate(N, np.count_nonzero(v, axis=1))
    if big.any():
        rows = np.nonzero(big)[0]
        xa, r[rows], q[rows], u[rows] = approximate_batch(
            v[rows], *(np.asarray(a, dtype=float)[rows] for a in (S, A, C, Uo, V)),
            Z[rows], N[rows])
        x_hist[rows, :xa.shape[1]] = xa
        if big.all():
            return x_hist, r, q, u
    exact = np.nonzero(~big)[0]
    if _compiled is not None:
        # the compiled batch fills only the rows marked active
        _compiled.recursion_batch(v, S, A, C, Uo, V, Z, N, (~big).astype(np.uint8),
                                  x_hist, r, q, u)
        return x_hist, r, q, u
    for k in exact:
        xh, r[k], q[k], u[k] = recursion_numpy(v[k], S[k], A[k], C[k], Uo[k], V[k], Z[k], N[k])
        x_hist[k, :N[k]] = xh
    return x_hist, r, q, u


def approximate_batch(v, S, A, C, Uo, V, Z, N):
    """The Schweitzer (Bard-Schweitzer) approximation of :func:`recursion_batch`.

    At population n the clients already at station i are taken as
    ``(n - 1) / n`` of its queue at n (and likewise its utilisation), which
    closes the mean-value equations at one population. For a given X each
    station's queue is then explicit,
    ``q_i = X v_i a_i / (1 - f X v_i A_i / (1 - Uo_i))`` with ``f = (n-1)/n``
    and ``a_i = (S_i + C_i f X v_i A_i) / (1 - Uo_i) + V_i``, and
    ``g(X) = X Z + sum q_i - n = 0`` (Little's law over the cycle) has one
    root below the saturation bound ``1 / max b_i``; :func:`_throughput`
    finds it for every network and population at once. It is solved at n = N
    and at N - 1, N - 2, N - 4, ..., and X(n) is interpolated between those
    populations (the queue-length tails read X only near N, where it is
    nearly flat). Its error against the exact recursion is in
    tests/model/test_mva_core.py."""
    v = np.asarray(v, dtype=float)
    R, m = v.shape
    N = np.asarray(N, dtype=np.int64)
    Z = np.asarray(Z, dtype=float)
    slow = 1.0 / np.maximum(1.0 - np.asarray(Uo, dtype=float), 1e-9)
    steps = np.concatenate([[0], 2 ** np.arange(0, int(np.log2(max(int(N.max()), 2))) + 1)])
    pops = np.maximum(N[:, None] - steps[None, :], 1).astype(float)          # R x G
    f = ((pops - 1.0) / pops)[:, :, None]                                    # R x G x 1
    v3, S3, A3, C3, s3, V3 = (np.asarray(a, dtype=float)[:, None, :] for a in (v, S, A, C, slow, V))
    b = f * v3 * A3 * s3                                                     # X b < 1 at each station
    # q_i = X v_i a_i / (1 - X b_i) = p_i(X) / (1 - X b_i), p_i = X (a0_i + a1_i X)
    a0 = v3 * (S3 * s3 + V3)
    a1 = v3 * C3 * f * v3 * A3 * s3
    x = _throughput(a0, a1, b, Z[:, None], pops)
    # the stations' residence, queue and utilisation at n = N only
    xN, f0 = x[:, :1, None], f[:, :1]
    a_ = (S3 + C3 * f0 * xN * v3 * A3) * s3 + V3
    with np.errstate(divide="ignore", invalid="ignore"):
        q = xN * v3 * a_ / (1.0 - xN * b[:, :1])
        r = np.where(v3 > 0, q / (xN * v3), S3 * s3 + V3)
    u = xN * v3 * A3
    x_hist = np.zeros((R, int(N.max())))
    for k in range(R):
        n = np.arange(1, int(N[k]) + 1, dtype=float)
        pk, xk = pops[k][::-1], x[k][::-1]
        keep = np.concatenate([[True], np.diff(pk) > 0])
        x_hist[k, :N[k]] = np.interp(n, pk[keep], xk[keep])
    return x_hist, r[:, 0, :], q[:, 0, :], u[:, 0, :]


def recursion_numpy(v: np.ndarray, S: np.ndarray, A: np.ndarray, C: np.ndarray, Uo: np.ndarray,
                    V: np.ndarray, Z: float, N: int):
    """The reference implementation of :func:`recursion` (a loop over n in numpy)."""
    m = len(v)
    q = np.zeros(m)
    u = np.zeros(m)
    x_hist = np.empty(N)
    slow = 1.0 / np.maximum(1.0 - Uo, 1e-9)
    vA = v * A
    r = S * slow
    for n in range(1, N + 1):
        r = (S + A * q + C * u) * slow + V
        x = n / (Z + float(np.dot(v, r)))
        q = x * v * r
        u = x * vA
        x_hist[n - 1] = x
    return x_hist, r, q, u


def block_delay(rate: np.ndarray, length: np.ndarray, arrivals: np.ndarray,
                free: np.ndarray) -> np.ndarray:
    """Mean delay per visit that blocks of a worker cause to the clients arriving
    while it is blocked.

    Blocks of ``length`` us occur ``rate`` times per us; clients arrive at
    ``arrivals`` per us from ``free`` clients elsewhere, each coming back at
    ``nu = arrivals / free``. During a block the clients stuck behind it grow
    as ``free (1 - exp(-nu t))``, so one block holds them for
    ``W = free (L - (1 - exp(-nu L)) / nu)`` client-us in all: ``arrivals L^2 / 2``
    when few clients arrive during it (the M/G/1 residual), ``free L`` when
    every free client ends up behind it. Per visit: ``rate W / arrivals``.
    """
    out = np.zeros_like(np.asarray(rate, dtype=float))
    ok = (rate > 0) & (length > 0) & (arrivals > 0) & (free > 0)
    nu = np.where(ok, arrivals / np.where(free > 0, free, 1.0), 1.0)
    L = np.where(ok, length, 0.0)
    x = nu * L
    # free (L - (1 - e^-x)/nu) = free L (1 - (1 - e^-x)/x), stable for small x
    frac = np.where(x > 1e-6, 1.0 - (-np.expm1(-x)) / np.where(x > 1e-6, x, 1.0), x / 2.0)
    W = free * L * frac
    out[ok] = (rate * W / np.where(arrivals > 0, arrivals, 1.0))[ok]
    return out


def arrival_tail(x_hist: np.ndarray, D: float, kmax: int) -> np.ndarray:
    """P(an arrival at a station of demand D sees at least k clients), k = 0..kmax,
    in the product-form network whose throughputs are ``x_hist`` (population N)."""
    N = len(x_hist)
    kmax = min(kmax, N - 1)
    out = np.zeros(kmax + 1)
    out[0] = 1.0
    if kmax <= 0 or D <= 0:
        return out
    # X(N-1), X(N-2), ..., X(N-kmax)
    xs = x_hist[N - 2::-1][:kmax] if N >= 2 else np.zeros(0)
    with np.errstate(divide="ignore"):
        logp = np.cumsum(np.log(D) + np.log(np.maximum(xs, 1e-300)))
    out[1:len(logp) + 1] = np.exp(np.minimum(logp, 0.0))
    return out


def _throughput(a0, a1, b, Z, n, max_steps: int = 100) -> np.ndarray:
    """:func:`_throughput_numpy`, compiled (native/mva/throughput.cpp) when it is
    built: the same Newton steps, one network and population at a time (a
    4,096-worker rack's 41 fixed-point steps spent 0.25 s in numpy here).
    ``Z`` is R x 1 as :func:`approximate_batch` passes it."""
    if _compiled_roots is not None:
        a0, a1, b = (np.ascontiguousarray(a, dtype=float) for a in np.broadcast_arrays(a0, a1, b))
        n = np.ascontiguousarray(np.broadcast_to(n, a0.shape[:2]), dtype=float)
        z = np.ascontiguousarray(np.broadcast_to(Z, (a0.shape[0], 1))[:, 0], dtype=float)
        return _compiled_roots(a0, a1, b, z, n, max_steps)
    return _throughput_numpy(a0, a1, b, Z, n, max_steps)


def _throughput_numpy(a0, a1, b, Z, n, max_steps: int = 100) -> np.ndarray:
    """The root of ``g(X) = X Z + sum_i p_i(X) / (1 - X b_i) - n`` on
    [0, 1 / max b_i), ``p_i = X (a0_i + a1_i X)``, per network and population
    (arrays R x G x m for the stations, R x G for the rest).

    g is increasing and convex but has a pole at the saturation bound, and in
    a large rack the root sits right against it: one hot worker at 99.9999 %
    utilisation with half a million clients queued behind it. Newton on g
    then crawls (near the pole each step only doubles the distance to it),
    and a bisection needs 50-60 halvings to reach the last bits. So Newton
    runs on ``h(X) = (1 - X b*) g(X)``, b* = max b_i, which has g's sign
    below the bound and no pole there: h = (1 - X b*)(X Z - n) + sum p_i r_i
    with r_i = (1 - X b*) / (1 - X b_i) in [0, 1]. Each step keeps a bracket
    and falls back to its midpoint when the Newton step leaves it. Measured
    on the 171 calls of a 3,517-server, 568,877-client plan row: 5 steps
    median, 13 at most, against about 55 halvings; the roots agree with the
    bisection's to 3e-16 (relative)."""
    bs = np.max(b, axis=2)
    B = bs[:, :, None]
    top = b >= B                       # the station(s) whose pole h removes
    with np.errstate(divide="ignore"):
        sat = np.where(bs > 0, 1.0 / bs, np.inf)
    lo = np.zeros_like(n)
    # X <= n / (Z + sum a0): each client's cycle is at least its own service
    hi = np.minimum(sat, n / (Z + np.sum(a0, axis=2)))
    x = hi.copy()
    done = np.zeros(n.shape, dtype=bool)
    for _ in range(max_steps):
        X = x[:, :, None]
        e = 1.0 - x * bs
        # at a pole (X b_i = 1 for a station next to the top one) d is inf and
        # r, h NaN: expected, and handled below (NaN counts as above the root),
        # so numpy is not to warn about it (a soak scenario printed it)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            d = np.where(top, 0.0, 1.0 / (1.0 - X * b))
            r = np.where(top, 1.0, (1.0 - X * B) * d)
            p = X * (a0 + a1 * X)
            pr = np.sum(p * r, axis=2)
            h = e * (x * Z - n) + pr
            dh = -bs * (x * Z - n) + e * Z + np.sum((a0 + 2.0 * a1 * X) * r + p * (b - B) * d * d,
                                                    axis=2)
        over = ~(h <= 0)               # h is NaN only at a pole, so above the root
        hi = np.where(over, np.minimum(hi, x), hi)
        lo = np.where(over, lo, np.maximum(lo, x))
        with np.errstate(divide="ignore", invalid="ignore"):
            dx = h / dh
        xn = x - dx
        # a step below the last bit is the root only where h is ~0 against its
        # terms: next to a second, almost equal pole h is steep, and the step
        # is tiny far from the root
        tiny = np.abs(dx) <= 4e-16 * x
        root = tiny & (np.abs(h) <= 1e-9 * (e * (x * Z + n) + pr))
        newton = root | (np.isfinite(xn) & (xn > lo) & (xn < hi) & ~tiny)
        x = np.where(done, x, np.where(newton, xn, 0.5 * (lo + hi)))
        done |= root | (hi - lo <= 4e-16 * hi)
        if done.all():
            break
    return x
