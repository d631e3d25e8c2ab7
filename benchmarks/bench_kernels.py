"""Three inner kernels of the analytic solver against their baselines, same run.

    python benchmarks/bench_kernels.py [--repeat 7]

1. Schweitzer throughput (``mva_core._throughput``, Newton on the pole-free
   form) against a bisection of the same equation to the last bit (what
   ``approximate_batch`` ran before), on a rack like a full-range plan row:
   3,517 workers, one of them hot, 568,877 clients, the 21 populations
   ``approximate_batch`` solves, 4 racks at once.
2. CPU contention of one machine's 1,340 workers (``service._peers_expectation``,
   compiled) against the numpy division (``service._peers_by_division`` and
   its product with the stretch).
3. Block overflow of many stations (``analytic._overflow_pairs``, compiled)
   against the numpy reference (``_overflow_pairs_numpy``), on 8 racks of
   281 queue-length columns and 192 stations, the largest call of the
   issue-14 sweep.

Each prints the median wall time over ``--repeat`` runs of both, the ratio
baseline / new, and the largest relative difference of their results.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.rack import service  # noqa: E402
from model.solvers import mva_core  # noqa: E402

from bench_mva import median_of  # noqa: E402  (this folder: the same medians)


def bisect(a0, a1, b, Z, n):
    """The baseline: halve [0, min(1 / max b, n / (Z + sum a0))] until it is a
    few ulps wide (as approximate_batch did, up to 200 halvings)."""
    with np.errstate(divide="ignore"):
        sat = np.min(np.where(b > 0, 1.0 / b, np.inf), axis=2)
    lo = np.zeros_like(n)
    hi = np.minimum(sat, n / (Z + np.sum(a0, axis=2)))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        X = mid[:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = X * (a0 + a1 * X) / (1.0 - X * b)
        over = (mid * Z + q.sum(axis=2) > n) | ~np.isfinite(q).all(axis=2) | np.any(q < 0, axis=2)
        hi = np.where(over, mid, hi)
        lo = np.where(over, lo, mid)
        if np.all(hi - lo <= 4e-16 * hi):
            break
    return lo


def schweitzer_case(R=4, m=3517, N=568_877, seed=1):
    rng = np.random.default_rng(seed)
    steps = np.concatenate([[0], 2 ** np.arange(0, int(np.log2(N)) + 1)])
    n = np.maximum(N - steps, 1).astype(float)[None, :].repeat(R, axis=0)
    f = ((n - 1.0) / n)[:, :, None]
    a0 = (rng.uniform(0.5, 1.5, (R, 1, m)) / m)
    a0[:, :, 0] *= 40.0                                   # one hot worker
    b = f * a0
    a1 = f * a0 * 1e-3
    Z = rng.uniform(1000.0, 3000.0, (R, 1))
    return a0, a1, b, Z, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"median of {args.repeat} runs")
    print(f"{'kernel':>40} {'baseline ms':>12} {'new ms':>9} {'ratio':>7} {'max rel diff':>13}")

    case = schweitzer_case()
    t_old, x_old = median_of(lambda: bisect(*case), args.repeat)
    t_new, x_new = median_of(lambda: mva_core._throughput(*case), args.repeat)
    print(f"{'Schweitzer X, 4 x 21 pops x 3517 workers':>40} {t_old * 1e3:12.1f} {t_new * 1e3:9.1f} "
          f"{t_old / t_new:7.1f} {np.max(np.abs(x_new / x_old - 1.0)):13.1e}")

    rng = np.random.default_rng(2)
    u = rng.random(1340) * 0.1
    g = 1.0 + np.maximum(np.arange(1340) - 30.0, 0.0) * 0.04
    t_old, (d_old, s_old) = median_of(
        lambda: ((q := service._peers_by_division(u)) @ g, q.sum(axis=1)), args.repeat)
    t_new, (d_new, s_new) = median_of(lambda: service._peers_expectation(u, g), args.repeat)
    diff = max(np.max(np.abs(d_new / d_old - 1.0)), np.max(np.abs(s_new / s_old - 1.0)))
    label = "busy peers, 1340 workers" + ("" if service._compiled is not None else " (NOT BUILT)")
    print(f"{label:>40} {t_old * 1e3:12.1f} {t_new * 1e3:9.1f} {t_old / t_new:7.1f} {diff:13.1e}")

    from model.solvers import analytic
    R, width, P = 8, 281, 192
    N = np.full(R, 1024)
    x_hist = np.cumsum(rng.uniform(0.1, 1.0, (R, 1024)), axis=1) / np.arange(1, 1025) * 0.9
    cum = analytic._cum_logx(x_hist, N, width - 1)
    rows = np.repeat(np.arange(R), P // R)
    logd = np.log(rng.uniform(0.5, 1.5, P))
    c = rng.uniform(0.0, 20.0, P)
    t_old, o_old = median_of(lambda: analytic._overflow_pairs_numpy(cum, logd, c, rows), args.repeat)
    t_new, o_new = median_of(lambda: analytic._overflow_pairs(cum, logd, c, rows), args.repeat)
    diff = np.max(np.abs(o_new - o_old) / np.maximum(np.abs(o_old), 1e-300))
    label = f"block overflow, {P} x {width}" + ("" if mva_core._compiled is not None else " (NOT BUILT)")
    print(f"{label:>40} {t_old * 1e3:12.1f} {t_new * 1e3:9.1f} {t_old / t_new:7.1f} {diff:13.1e}")


if __name__ == "__main__":
    main()
