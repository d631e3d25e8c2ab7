"""Regula falsi with the Illinois modification: one step, compiled.

Shared by the analytic solver's count of threads awake (``analytic._evaluate``)
and the latency percentiles' roots (``latency_tail._mixture_quantiles``). Both
keep a bracket [lo, hi] of a function falling from ``f_lo > 0`` to
``f_hi <= 0`` and try a point inside it.
"""

from __future__ import annotations

from ._jit import njit


@njit(cache=True)
def illinois_step(lo, f_lo, hi, f_hi, side, x, fx):
    """The bracket after trying ``x`` (value ``fx``): ``x`` replaces the end
    whose value has its sign; when the same end moved last time too, the
    other end's value is halved, so the next secant point falls on its side
    (plain regula falsi would keep moving one end). Returns (lo, f_lo, hi,
    f_hi, side), ``side`` -1 where the low end moved, 1 where the high."""
    if fx > 0.0:
        if side == -1:
            f_hi *= 0.5
        return x, fx, hi, f_hi, -1
    if side == 1:
        f_lo *= 0.5
    return lo, f_lo, x, fx, 1
