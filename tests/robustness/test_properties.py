"""Property-based tests over the declared scenario space (hypothesis).

Scenarios come from :mod:`.space`: every key of :mod:`model.scenario` over
its declared range (a key keeps its default a quarter of the time, so
failures shrink to the few keys that matter). Each prediction must raise
nothing and obey the laws of :mod:`.laws`; responses must move the way
physics says when one thing changes:

* more servers (and machines for them) with the cache on: throughput does
  not fall;
* the write-ahead log off: throughput does not fall;
* a bigger receive buffer, with a timeout no reply can outlast: throughput
  does not fall.

CI runs a few derandomized examples in the part of the space the analytic
solver covers quickly (:data:`.space.FAST`); ``KVPERF_LONG=1`` runs many
more over the whole declared range.
"""

from __future__ import annotations

from hypothesis import assume, given, note, strategies as st

from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers import predict_many
from sim.run import FastSimulator

from .budget import LONG, budget
from .laws import TOL, violations
from .space import DIMENSIONS, FAST, FULL, scenario_from_unit
from runio.inputs import load_profile

PROFILE = load_profile("tofino-testbed")
BOUNDS = FULL if LONG else FAST


def scenarios(bounds=BOUNDS, **fixed):
    """Valid scenarios of the declared space (``fixed``: keys set afterwards)."""
    unit = st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=DIMENSIONS,
                    max_size=DIMENSIONS)
    return unit.map(lambda u: scenario_from_unit(u, bounds)).map(
        lambda sc: sc.updated(fixed) if fixed else sc)


def solve(*scs: Scenario):
    """Analytic predictions (one batch) and the compiled racks."""
    for sc in scs:
        note(sc.to_toml())
    preds = predict_many(list(scs), PROFILE)
    return preds, [compile_rack(sc, PROFILE) for sc in scs]


@budget(ci=8, long=2000)
@given(scenarios())
def test_laws_hold(sc):
    (pred,), (spec,) = solve(sc)
    assert violations(pred, spec) == []


def not_less(a: float, b: float) -> bool:
    return a >= b * (1 - TOL) - 1e-9


@budget(ci=3, long=500)
@given(scenarios(**{"switch.cache": True}), st.sampled_from([2, 4]))
def test_more_servers_with_the_cache_on(sc, factor):
    m = sc.servers.count * factor
    assume(m <= (64 if not LONG else 4096))
    more = sc.updated({"servers.count": m,
                       "servers.machines": min(4096, sc.servers.machines * factor)})
    (a, b), _ = solve(sc, more)
    assert not_less(b.throughput_mops, a.throughput_mops), (a.throughput_mops, b.throughput_mops)


@budget(ci=3, long=500)
@given(scenarios(**{"storage.wal": True}))
def test_wal_off_is_not_slower(sc):
    (on, off), _ = solve(sc, sc.updated({"storage.wal": False}))
    assert not_less(off.throughput_mops, on.throughput_mops), (on.throughput_mops,
                                                              off.throughput_mops)


@budget(ci=3, long=500)
@given(scenarios(**{"clients.timeout_ms": 600_000.0}), st.sampled_from([2, 8]))
def test_more_buffer_is_not_slower(sc, factor):
    # with a timeout no reply can outlast, a dropped packet only costs a wait
    kb = sc.servers.rcvbuf_kb * factor
    assume(kb <= 1 << 20 and sc.clients.threads <= 4096)
    (small, big), _ = solve(sc, sc.updated({"servers.rcvbuf_kb": kb}))
    assert not_less(big.throughput_mops, small.throughput_mops), (small.throughput_mops,
                                                                  big.throughput_mops)


SIM_SPACE = {**FAST, "clients.threads": (1, 256), "servers.count": (1, 16)}


@budget(ci=3, long=200)
@given(scenarios(SIM_SPACE))
def test_simulator_laws_hold(sc):
    note(sc.to_toml())
    spec = compile_rack(sc, PROFILE)
    pred = FastSimulator(seconds=0.2, seed=3).solve(spec)
    assert violations(pred, spec, sampled=True) == []
