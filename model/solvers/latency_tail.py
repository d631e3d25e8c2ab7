"""Latency percentiles of the analytic answer: the response time as a mixture.

The analytic solver gives mean values; the percentiles a researcher compares
with YCSB's or the load generator's come from the distribution of one
request's response time, built here from the same solved figures (its
``details``) and checked against the simulator's histogram on the parity
racks (tests/parity/test_latency_percentiles.py; docs/model.md, "Latency
percentiles").

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

from ..rack import clients as cl_mech, service as svc_mech
from ._jit import njit, register_jitable

register_jitable(cl_mech.gamma_sf)
_gamma_sf = cl_mech.gamma_sf

__all__ = ["QUANTILES", "percentiles"]

#: key -> quantile, the percentiles both engines report (``details
#: ["latency_us_percentiles"]``, us)
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}

#: lost attempts followed until the rest of the geometric tail is below this
TAIL_MASS = 1e-6
#: squared CV of a client-core stay and of a block's residual
CLIENT_SCV = 1.0
BLOCK_SCV = 1.0 / 3.0
#: equal-probability bins of the count found ahead
BINS = 4
#: workers whose residence differs by less than this share one path (a
#: thousand-worker rack has a few dozen distinct ones)
MERGE_REL = 0.01

# path columns: weight, round trip, residence mean, service mean and squared
# CV, mean count ahead and the most there can be, held probability, held
# mean when held, mean lost attempts per visit
(P_W, P_RTT, P_R, P_S, P_SCVS, P_AHEAD, P_CAP, P_PH, P_HELD, P_LOST, P_NCOL) = range(11)


def percentiles(spec, pred) -> dict[str, float]:
    """``{p50, p90, p95, p99, p999, mean_us}`` of one analytic prediction of
    ``spec`` (us); NaN throughout where the rack has no goodput."""
    d = pred.details
    nan = {k: math.nan for k in (*QUANTILES, "mean_us")}
    if not (pred.throughput_mops > 0) or "residence_us" not in d:
        return nan
    paths = _paths(spec, pred)
    if paths.shape[0] == 0:
        return nan
    c = spec.clients
    visits = 1.0 + float(d.get("lost_per_request", 0.0)) + float(d.get("resends_per_request", 0.0))
    cc = float(d.get("client_cores_us_per_request", 0.0)) / max(visits, 1.0)
    T = float(c.timeout_us) if math.isfinite(c.timeout_us) else 0.0
    qs = np.array(list(QUANTILES.values()))
    out_q = np.zeros(qs.size)
    mean = _mixture_quantiles(paths, c.send_us, T, cc, qs, out_q)
    out = {k: float(v) for k, v in zip(QUANTILES, out_q)}
    out["mean_us"] = float(mean)
    return out


def _paths(spec, pred) -> np.ndarray:
    """One row per path a request can take (P_* columns): the hit, and each
    worker (workers with nearly equal residence merged, shares added)."""
    d, c = pred.details, spec.clients
    sv = spec.service
    fixed = sv.recv_floor_us + sv.gap_us
    cv2 = sv.cv ** 2
    n = float(c.threads)
    f = (n - 1.0) / n if n > 1.0 else 0.0
    K = float(spec.network.buffer_pkts) if spec.network.buffer_pkts >= 1.0 else math.inf
    share = np.array([s.share for s in pred.servers], dtype=float)
    R = np.asarray(d["residence_us"], dtype=float)
    Q = np.asarray(d["queue_requests"], dtype=float)
    S = np.array([s.process_us for s in pred.servers], dtype=float) + fixed
    zero = np.zeros_like(R)
    held = np.asarray(d.get("held_behind_blocks_us_per_visit", zero), dtype=float)
    p_blk = np.minimum(1.0, np.asarray(d.get("block_fraction", zero), dtype=float)
                       + np.asarray(d.get("write_stop_fraction", zero), dtype=float))
    lost = np.asarray(d.get("loss_per_visit", zero), dtype=float)
    if c.retry == cl_mech.RETRY_STRICT:
        # a late attempt's reply is ignored and the attempt resent: for the
        # latency it is one more lost attempt (a timeout and a resend)
        lost = lost + np.asarray(d.get("duplicates_per_request", zero), dtype=float)
    live = (share > 0) & np.isfinite(R)
    ph = np.where(held > 0, np.where(p_blk > 0, p_blk, 1.0), 0.0)
    rows = np.zeros((int(live.sum()), P_NCOL))
    rows[:, P_W] = share[live]
    rows[:, P_RTT] = c.miss_rtt_us
    rows[:, P_R] = R[live]
    rows[:, P_S] = S[live]
    rows[:, P_SCVS] = [svc_mech.service_scv(x, fixed, cv2) for x in S[live]]
    rows[:, P_AHEAD] = np.minimum(f * Q[live], K)
    rows[:, P_CAP] = min(n - 1.0, K)
    rows[:, P_PH] = ph[live]
    rows[:, P_HELD] = np.where(ph[live] > 0, held[live] / np.where(ph[live] > 0, ph[live], 1.0),
                               0.0)
    rows[:, P_LOST] = lost[live]
    rows = _merge(rows)
    if pred.cache_hit_ratio > 0:
        wire = float(spec.network.loss_rate)
        hit = np.zeros((1, P_NCOL))
        hit[0, P_W] = pred.cache_hit_ratio
        hit[0, P_RTT] = c.hit_rtt_us
        hit[0, P_LOST] = wire / (1.0 - wire) if wire < 1.0 else 0.0
        rows = np.vstack([hit, rows])
    tot = rows[:, P_W].sum()
    if tot > 0:
        rows[:, P_W] /= tot
    return rows


def _merge(rows: np.ndarray) -> np.ndarray:
    """Rows sorted by residence; runs within MERGE_REL of their first (and
    alike in loss) merged into their share-weighted means."""
    if rows.shape[0] <= 1:
        return rows
    rows = rows[np.argsort(rows[:, P_R], kind="stable")]
    out, start = [], 0
    for j in range(1, rows.shape[0] + 1):
        if j == rows.shape[0] or rows[j, P_R] > rows[start, P_R] * (1.0 + MERGE_REL) \
                or rows[j, P_LOST] > rows[start, P_LOST] * 1.5 + 1e-12:
            grp = rows[start:j]
            w = grp[:, P_W]
            m = grp[0].copy()
            m[P_W] = w.sum()
            if m[P_W] > 0:
                m[1:] = (grp[:, 1:] * w[:, None]).sum(axis=0) / m[P_W]
            out.append(m)
            start = j
    return np.array(out)


# ---------------------------------------------------------------- compiled
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
    for iq in range(qs.size):
        target = 1.0 - qs[iq]
        lo = max(lo0, 1e-3)
        hi = hi0
        if _sf_at(lo, W, SH, SHAPE, SCALE) <= target:
            out[iq] = lo
            continue
        for _ in range(100):
            mid = math.sqrt(lo * hi)
            if _sf_at(mid, W, SH, SHAPE, SCALE) > target:
                lo = mid
            else:
                hi = mid
            if hi / lo - 1.0 < 1e-4:
                break
        out[iq] = math.sqrt(lo * hi)
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
