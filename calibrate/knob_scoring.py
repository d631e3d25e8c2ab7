"""Scoring a pair: is the measured effect large enough, does the predicted
ratio move the same way, and by how much the predicted ratio is off.

A pair is *scored* when the measured effect is at least ``min_effect`` in
log terms, ``|log ratio| >= log(1 + min_effect)``. The predicted direction
*agrees* when the predicted ratio moves the same way by at least 2 %
(``|log predicted| >= log 1.02``); within 2 % of 1 it is *flat* (a miss for a
scored pair); a pair below ``min_effect`` is *small*. Ratio error
``|predicted / measured - 1|``.
"""

from __future__ import annotations

import math

#: a predicted ratio within this factor of 1 is flat (no direction)
FLAT = 1.02

# relative slack on the thresholds, so that a ratio of exactly 1.1 (which
# floating point may give as 1.0999999999999999) counts as a 10 % effect
_EPS = 1e-12


def positive_log(x: float | None) -> float | None:
    """``log x`` of a finite positive number (a ratio or a throughput), else None."""
    if x is None or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        return None
    return math.log(x)


def scored(measured: float, min_effect: float) -> bool:
    """Is the measured effect large enough to score: ``|log ratio| >= log(1 + min_effect)``?
    A measured ratio of exactly 1 has no direction and is never scored."""
    lm = positive_log(measured)
    if lm is None or lm == 0.0:
        return False
    return abs(lm) >= math.log1p(min_effect) * (1 - _EPS) - _EPS


def direction(measured: float, predicted: float | None, min_effect: float) -> str:
    """``agree``, ``disagree`` or ``flat`` for a scored pair, ``small`` for one
    below ``min_effect``; ``-`` when there is no finite positive predicted ratio."""
    lp = positive_log(predicted)
    if lp is None:
        return "-"
    if not scored(measured, min_effect):
        return "small"
    if abs(lp) < math.log(FLAT) * (1 - _EPS) - _EPS:
        return "flat"
    return "agree" if (lp > 0) == (math.log(measured) > 0) else "disagree"


def ratio_error(measured: float, predicted: float | None) -> float | None:
    """``|predicted / measured - 1|`` (a fraction), None without a prediction."""
    if positive_log(predicted) is None or positive_log(measured) is None:
        return None
    return abs(predicted / measured - 1.0)
