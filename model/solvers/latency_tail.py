"""Latency percentiles of the analytic answer: the response time as a mixture.

The analytic solver gives mean values; the percentiles a researcher compares
with YCSB's or the load generator's come from the distribution of one
request's response time, built here from the same solved figures (its
``details``) and checked against the simulator's histogram on the parity
racks (tests/parity/test_parity.py; docs/model.md, "Latency percentiles").

A request, from the moment its thread asks for a client core to the reply
that completes it, is (docs/model.md, section 2):

* one client-core stay per attempt (mean ``client_cores_us_per_request /
  visits``; squared CV 1, as a single-queue Seidmann station with
  exponential CPU work has) and one send cost per attempt;
* the path: a hit with probability ``h`` (``hit_rtt_us``), else worker ``i``
  with probability ``share_i``: ``miss_rtt_us`` plus the residence there,
  ``k + 1`` services with ``k`` requests found ahead. In a closed loop of
  many threads the count an arrival finds is nearly geometric (product form:
  the threads spread over the queues like Bose-Einstein counts), cut at the
  most there can be (the buffer, the other threads): a truncated
  exponential with the solver's mean ``f Q``. It is split into
  :data:`BINS` bins of equal probability, each a gamma with its bin's mean
  and variance plus the services' own variance; the bins are scaled so
  their mean is the solver's residence exactly;
* a block (WAL switch, sync, write stop) found on arrival, with probability
  the worker's blocked fraction, holding the request ``held / p`` on average
  (a block's residual: squared CV 1/3, as a uniform residual has);
* ``k`` lost attempts, geometric with the solver's mean lost attempts per
  visit (buffer overflow, drops behind blocks, the wire; under
  ``retry = "strict"`` a late reply counts as lost), each costing the
  timeout and another client-core stay and send.

Each combination is a shifted gamma matching the mean and variance of its
independent parts; a percentile is the root of the mixture's distribution
function (bisection on a log scale, compiled). The mixture's mean is
returned beside the percentiles (``mean_us``) and equals Little's law's
``latency_us`` wherever the solver's cycle is the running rack's.

Where it misses (docs/model.md): the simulator's losses come in bursts and
its blocks pile most threads onto one worker for a while; a mean-value
loss rate spreads them evenly, so in those regimes the simulated body
(p50) is faster and the tail (p99, p99.9) slower than this form says.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..rack import clients as cl_mech, network as nw_mech, service as svc_mech
from ._jit import njit, register_jitable
from .bracket import illinois_step

register_jitable(cl_mech.gamma_sf)
register_jitable(svc_mech.service_scv)
_gamma_sf = cl_mech.gamma_sf
_service_scv = svc_mech.service_scv

__all__ = ["QUANTILES", "of_arrays", "none"]

#: key -> quantile, the percentiles both engines report (``details
#: ["latency_us_percentiles"]``, us)
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}

#: lost attempts followed until the rest of the geometric tail is below this
TAIL_MASS = 1e-5
#: squared CV of a client-core stay and of a block's residual
CLIENT_SCV = 1.0
BLOCK_SCV = 1.0 / 3.0
#: equal-probability bins of the count found ahead
BINS = 4
#: workers whose residence differs by less than this share one path (a
#: thousand-worker rack has a few dozen distinct ones)
MERGE_REL = 0.05

# path columns: weight, round trip, residence mean, service mean and squared
# CV, mean count ahead and the most there can be, held probability, held
# mean when held, mean lost attempts per visit
(P_W, P_RTT, P_R, P_S, P_SCVS, P_AHEAD, P_CAP, P_PH, P_HELD, P_LOST, P_NCOL) = range(11)


def none() -> dict[str, float]:
    """The percentiles of a rack without goodput: NaN throughout."""
    return {k: math.nan for k in (*QUANTILES, "mean_us")}


def of_arrays(spec, share, R, Q, process, held, blocked, lost, dup, client_us: float,
              visits: float) -> dict[str, float]:
    """The percentiles from the solver's per-worker figures (arrays, us):
    share of requests, residence, queue, process time, thread-us held behind
    blocks per visit, blocked fraction, lost attempts per visit, duplicates per
    request; the client cores' us per request and attempts per request."""
    c, sv = spec.clients, spec.service
    n = float(c.threads)
    K = float(spec.network.buffer_pkts) if spec.network.buffer_pkts >= 1.0 else math.inf
    wire = float(spec.network.loss_rate)
    qs = np.array(list(QUANTILES.values()))
    out_q = np.zeros(qs.size)
    paths = _build_paths(
        np.ascontiguousarray(share, dtype=float), np.ascontiguousarray(R, dtype=float),
        np.ascontiguousarray(Q, dtype=float), np.ascontiguousarray(process, dtype=float),
        np.ascontiguousarray(held, dtype=float), np.ascontiguousarray(blocked, dtype=float),
        np.ascontiguousarray(lost, dtype=float), np.ascontiguousarray(dup, dtype=float),
        float(spec.placement.hit_ratio), c.hit_rtt_us, c.miss_rtt_us,
        nw_mech.wire_lost_per_request(wire), sv.recv_floor_us + sv.gap_us, sv.cv ** 2,
        n, K, c.retry == cl_mech.RETRY_STRICT)
    if paths.shape[0] == 0:
        return none()
    T = float(c.timeout_us) if math.isfinite(c.timeout_us) else 0.0
    mean = _mixture_quantiles(paths, c.send_us, T, client_us / max(visits, 1.0), qs, out_q)
    out = {k: float(v) for k, v in zip(QUANTILES, out_q)}
    out["mean_us"] = float(mean)
    return out


# ---------------------------------------------------------------- compiled
@njit(cache=True)
def _build_paths(share, R, Q, process, held, blocked, lost, dup, hit, hit_rtt, miss_rtt,
                 wire_lost, fixed, cv2, n, K, strict):
    """One row per path a request can take (P_* columns): the hit, and the
    workers, sorted by residence, a run within MERGE_REL of its first (and
    alike in loss) merged into its share-weighted mean (a thousand-worker
    rack has a few dozen distinct ones). Weights add up to 1."""
    f = (n - 1.0) / n if n > 1.0 else 0.0
    live = np.zeros(R.size, dtype=np.int64)
    m = 0
    for i in range(R.size):
        if share[i] > 0.0 and math.isfinite(R[i]):
            live[m] = i
            m += 1
    order = live[:m][np.argsort(R[live[:m]], kind="mergesort")]
    rows = np.zeros((m + 1, P_NCOL))
    r = 0
    if hit > 0.0:
        rows[0, P_W] = hit
        rows[0, P_RTT] = hit_rtt
        rows[0, P_LOST] = wire_lost
        r = 1
    j = 0
    while j < m:
        first = order[j]
        lost0 = lost[first] + (dup[first] if strict else 0.0)
        w = 0.0
        acc = np.zeros(P_NCOL)
        k = j
        while k < m:
            i = order[k]
            li = lost[i] + (dup[i] if strict else 0.0)
            if k > j and (R[i] > R[first] * (1.0 + MERGE_REL) or li > lost0 * 1.5 + 1e-12):
                break
            S = process[i] + fixed
            ph = 0.0
            hm = 0.0
            if held[i] > 0.0:
                ph = min(1.0, blocked[i]) if blocked[i] > 0.0 else 1.0
                hm = held[i] / ph
            s_i = share[i]
            w += s_i
            acc[P_RTT] += s_i * miss_rtt
            acc[P_R] += s_i * R[i]
            acc[P_S] += s_i * S
            acc[P_SCVS] += s_i * _service_scv(S, fixed, cv2)
            acc[P_AHEAD] += s_i * min(f * Q[i], K)
            acc[P_CAP] += s_i * min(n - 1.0, K)
            acc[P_PH] += s_i * ph
            acc[P_HELD] += s_i * hm
            # a late attempt under strict retry: its reply is ignored and it is
            # resent, for the latency one more lost attempt
            acc[P_LOST] += s_i * li
            k += 1
        for col in range(1, P_NCOL):
            rows[r, col] = acc[col] / w
        rows[r, P_W] = w
        r += 1
        j = k
    rows = rows[:r]
    tot = 0.0
    for q in range(r):
        tot += rows[q, P_W]
    if tot > 0.0:
        for q in range(r):
            rows[q, P_W] /= tot
    return rows


@njit(cache=True)
def _texp_mean(t):
    """Mean of a truncated exponential on [0, 1] with rate t (any sign)."""
    if abs(t) < 1e-4:
        return 0.5 - t / 12.0
    return 1.0 / t - 1.0 / math.expm1(t)


@njit(cache=True)
def _texp_var(t):
    """Variance of a truncated exponential on [0, 1] with rate t."""
    if abs(t) < 1e-3:
        return 1.0 / 12.0 - t * t / 720.0
    e = math.expm1(t)
    return 1.0 / (t * t) - (e + 1.0) / (e * e)


@njit(cache=True)
def _ahead_bins(ahead, cap, bins, mean_out, var_out):
    """Equal-probability bins of the count found ahead: a truncated exponential
    on [0, cap] with mean ``ahead`` (the continuous form of a truncated
    geometric); each bin's mean and variance into the outputs."""
    if not (ahead > 0.0) or not (cap > 0.0):
        for b in range(bins):
            mean_out[b] = 0.0
            var_out[b] = 0.0
        return
    c = min(cap, 60.0 * ahead)              # past 60 means the cut does not matter
    g = min(ahead / c, 1.0 - 1e-9)
    lo, hi = -60.0, 60.0                    # the rate times c: mean/c falls as it rises
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if _texp_mean(mid) > g:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi)
    r = t / c
    y0 = 0.0
    for b in range(bins):
        u = (b + 1.0) / bins
        if b == bins - 1:
            y1 = c
        elif abs(t) < 1e-9:
            y1 = u * c
        else:
            # inverse distribution function: F(y) = (1 - e^{-r y}) / (1 - e^{-r c})
            y1 = -math.log1p(-u * (-math.expm1(-t))) / r
        L = y1 - y0
        tl = r * L
        mean_out[b] = y0 + L * _texp_mean(tl)
        var_out[b] = L * L * _texp_var(tl)
        y0 = y1


@njit(cache=True)
def _mixture_quantiles(paths, send, T, cc, qs, out):
    """Quantiles ``qs`` of the mixture into ``out`` (us); returns its mean.

    Each (path, k lost attempts, held or not, bin of the count ahead) is a
    shifted gamma with the mean and variance of its independent parts."""
    n_p = paths.shape[0]
    B = BINS
    kmax = np.zeros(n_p, dtype=np.int64)
    n_c = 0
    for p in range(n_p):
        m = paths[p, P_LOST]
        q = m / (1.0 + m) if m > 0.0 else 0.0
        if q > 0.0 and T > 0.0:
            kmax[p] = min(60, max(1, int(math.ceil(math.log(TAIL_MASS) / math.log(q)))))
        n_c += (kmax[p] + 1) * (2 if paths[p, P_PH] > 0.0 else 1) * B
    W = np.zeros(n_c)
    SH = np.zeros(n_c)
    SHAPE = np.zeros(n_c)
    SCALE = np.zeros(n_c)
    bm = np.zeros(B)
    bv = np.zeros(B)
    rm = np.zeros(B)
    rv = np.zeros(B)
    j = 0
    mean = 0.0
    for p in range(n_p):
        # the residence's bins: k + 1 services for k in each bin, scaled to
        # the solver's mean residence
        R, S, scv_s = paths[p, P_R], paths[p, P_S], paths[p, P_SCVS]
        _ahead_bins(paths[p, P_AHEAD], paths[p, P_CAP], B, bm, bv)
        tot = 0.0
        for b in range(B):
            rm[b] = (bm[b] + 1.0) * S
            rv[b] = S * S * (bv[b] + (bm[b] + 1.0) * scv_s)
            tot += rm[b] / B
        scale = R / tot if tot > 0.0 else 0.0
        for b in range(B):
            rm[b] *= scale
            rv[b] *= scale * scale
        m = paths[p, P_LOST]
        q = m / (1.0 + m) if m > 0.0 else 0.0
        ph = paths[p, P_PH]
        for k in range(kmax[p] + 1):
            if kmax[p] == 0:
                pk = 1.0
            elif k < kmax[p]:
                pk = (1.0 - q) * q ** k
            else:
                pk = q ** k                       # the rest of the tail on the last term
            for held in range(2 if ph > 0.0 else 1):
                pb = 1.0 if ph <= 0.0 else (ph if held == 1 else 1.0 - ph)
                hm = paths[p, P_HELD] if held == 1 else 0.0
                for b in range(B):
                    mu = (k + 1) * cc + rm[b] + hm
                    var = (k + 1) * cc * cc * CLIENT_SCV + rv[b] + hm * hm * BLOCK_SCV
                    W[j] = paths[p, P_W] * pk * pb / B
                    SH[j] = (k + 1) * send + k * T + paths[p, P_RTT]
                    if mu > 0.0 and var > 0.0:
                        SHAPE[j] = mu * mu / var
                        SCALE[j] = var / mu
                        mean += W[j] * (SH[j] + mu)
                    else:
                        SH[j] += mu                   # a fixed delay
                        mean += W[j] * SH[j]
                    j += 1
    lo0 = 1e300
    hi0 = 0.0
    for c in range(n_c):
        if W[c] <= 0.0:
            continue
        lo0 = min(lo0, SH[c])
        hi0 = max(hi0, SH[c] + (SHAPE[c] + 12.0 * math.sqrt(SHAPE[c])) * SCALE[c])
    hi0 += 1.0
    # each quantile by regula falsi (Illinois) on log x inside its bracket; the
    # quantiles come in ascending order, so each starts at the one before
    lo_q = max(lo0, 1e-3)
    f_lo0 = _sf_at(lo_q, W, SH, SHAPE, SCALE)
    for iq in range(qs.size):
        target = 1.0 - qs[iq]
        a = math.log(lo_q)
        fa = f_lo0 - target
        if fa <= 0.0:
            out[iq] = lo_q
            continue
        b = math.log(hi0)
        fb = _sf_at(hi0, W, SH, SHAPE, SCALE) - target
        side = 0
        for _ in range(100):
            if b - a < 1e-4:
                break
            u = (a * fb - b * fa) / (fb - fa) if fb != fa else 0.5 * (a + b)
            if not (a < u < b) or (b - a) > 4.0 and side != 0:
                u = 0.5 * (a + b)                 # far apart: halve first
            fu = _sf_at(math.exp(u), W, SH, SHAPE, SCALE) - target
            a, fa, b, fb, side = illinois_step(a, fa, b, fb, side, u, fu)
        out[iq] = math.exp(0.5 * (a + b))
        lo_q = out[iq]
        f_lo0 = _sf_at(lo_q, W, SH, SHAPE, SCALE)
    return mean


@njit(cache=True)
def _sf_at(x, W, SH, SHAPE, SCALE):
    """P(latency > x): components wholly above or below x cost nothing."""
    tot = 0.0
    for c in range(W.size):
        w = W[c]
        if w <= 0.0:
            continue
        y = x - SH[c]
        if y <= 0.0:
            tot += w
            continue
        a = SHAPE[c]
        if a <= 0.0:
            continue
        z = y / SCALE[c]
        if z > a + 12.0 * math.sqrt(a) + 30.0:
            continue                              # beyond 12 sd: nothing left
        tot += w * _gamma_sf(a, z)
    return tot
