"""Which worker a request goes to, per event (model.rack.placement.draw_station
over Walker's alias table): the table holds the shares exactly, the draw
follows them, and cache hits take the hit ratio."""

import numpy as np
import pytest
from scipy import stats

from model.rack import placement as pl


def table_probs(accept, alias):
    """The distribution an alias table draws: (accept[i] + the rest of every
    column aliased to i) / n."""
    n = len(accept)
    p = np.array(accept, dtype=float)
    for j in range(n):
        p[alias[j]] += 1.0 - accept[j]
    return p / n


@pytest.mark.parametrize("probs", [
    [1.0], [0.5, 0.5], [0.7, 0.2, 0.1], [0.0, 0.3, 0.0, 0.7],
    list(np.random.default_rng(1).random(16)), list(np.random.default_rng(2).pareto(1.0, 512)),
])
def test_the_alias_table_holds_the_shares(probs):
    accept, alias = pl.station_table(probs)
    want = np.asarray(probs) / np.sum(probs)
    np.testing.assert_allclose(table_probs(accept, alias), want, rtol=0, atol=1e-12)
    assert np.all((accept >= 0) & (accept <= 1))
    # a worker with no share is never drawn: its column always goes to its alias
    for i in np.nonzero(want == 0)[0]:
        assert accept[i] == 0.0 and want[alias[i]] > 0


def test_draws_follow_the_shares_and_the_hit_ratio():
    probs = np.array([0.05, 0.4, 0.15, 0.0, 0.3, 0.1])
    accept, alias = pl.station_table(probs)
    rng = np.random.default_rng(5)
    n = 60_000
    got = np.array([pl.draw_station(rng.random(), rng.random(), 0.25, accept, alias)
                    for _ in range(n)])
    hits = np.mean(got == -1)
    assert abs(hits - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n)
    counts = np.bincount(got[got >= 0], minlength=len(probs))
    assert counts[3] == 0
    live = probs > 0
    expected = probs[live] * counts.sum()
    assert stats.chisquare(counts[live], expected).pvalue > 1e-3


def test_the_last_uniform_below_one_stays_in_range():
    accept, alias = pl.station_table([0.2, 0.3, 0.5])
    u = np.nextafter(1.0, 0.0)
    assert pl.draw_station(1.0, u, 0.0, accept, alias) in (0, 1, 2)
