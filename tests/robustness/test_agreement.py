"""Issue 43: the analytic solver and the simulator tell one story.

A bounded sample of the random-scenario check (``python -m sim.agreement``,
which runs it in full on demand) with the same criteria: every answer
finite, Little's law, each engine within its time limit, and the throughputs
within 10 % of each other or the disagreement named by a caveat of the
analytic prediction (:mod:`model.regimes`), unnamed ones at most 5 %;
scenarios the simulation cannot measure (``inconclusive``: its own noise
above 10 %, or timeouts its run is too short to span) and racks too slow to
simulate within the limit are counted apart, with their reason. Both engines
answer for the same finite run: the queries the simulation completed
(:func:`sim.agreement.same_run`).
Plus one unit test per rule: a rack in the regime is flagged, the default
rack is not.
"""

from __future__ import annotations

import pytest

from model.rack import compile_rack
from model.regimes import analytic_caveats
from model.scenario import Scenario
from model.solvers import predict
from model.solvers.analytic import solve
from sim import agreement
from runio.inputs import load_profile

#: the CI sample: 16 scenarios of the full declared space, seed 43 (about a
#: minute on two cores; each simulation plans for at most 4 wall seconds)
CI_N, CI_SEED, CI_WALL_S = 16, 43, 4.0

OVERLOAD = {"clients.threads": 8192, "servers.count": 2, "servers.rcvbuf_kb": 4,
            "clients.timeout_ms": 10.0, "switch.cache": False}


@pytest.fixture(scope="module")
def profile():
    return load_profile("tofino-testbed")


def _names(sc, profile):
    return [c["name"] for c in predict(sc, profile).details["caveats"]]


@pytest.mark.xfail(strict=False, reason="issue 43 open: the CI sample (seed 43, 16 scenarios) "
                   "has 2 unnamed disagreements (12.5 %; at most 5 %, so none, allowed): #5 a "
                   "strict-retry resend storm the simulator enters at a worker the analytic "
                   "answer puts at 62 % (below the storm rule's 99 %), #13 a receive buffer "
                   "under one packet where the analytic drops 10x more per request than the "
                   "simulator. Everything else holds there: no non-finite answer, Little's "
                   "law, each engine under 10 s")
def test_bounded_sample_agrees_or_is_named():
    counts, named_by, rows = agreement.run(CI_N, CI_SEED, "full", wall_s=CI_WALL_S, quiet=True)
    bad = [(r["index"], r["nonfinite"], r["law"]) for r in rows if r["nonfinite"] or r["law"]]
    assert not bad, bad
    slow = [(r["index"], r["t_analytic_s"], r["t_sim_s"]) for r in rows if r["slow"]]
    assert not slow, slow
    for r in rows:
        if r["outcome"] == "inconclusive":
            assert r["inconclusive"].split(":")[0] in ("noisy", "timeouts-unreached", "stuck"), r
        if r["outcome"] == "too-slow":
            assert "workers" in r["too_slow"] and "client threads" in r["too_slow"], r
    unnamed = [(r["index"], r["x_analytic"], r["x_sim"]) for r in rows
               if r["outcome"] == "unnamed"]
    assert agreement.passed(counts, CI_N), (counts, named_by, unnamed)


def test_default_rack_has_no_caveat(profile):
    pred = predict(Scenario.default(), profile)
    assert pred.details["caveats"] == []
    # a closed loop with nothing lost: Little's law holds the threads
    sc = Scenario.default()
    latency = pred.details["latency_us_percentiles"]["mean_us"]
    assert pred.throughput_mops * latency == pytest.approx(sc.clients.threads, rel=0.01)


def test_overload_drops_flagged(profile):
    # 8,192 threads on 2 workers with 4 KiB buffers and a 10 ms timeout: the
    # workers are at capacity and most threads are in the drop-and-retry loop
    sc = Scenario.default().updated(OVERLOAD)
    pred = predict(sc, profile)
    assert pred.details["saturated"]
    assert "overload-drops" in _names(sc, profile)


def test_timeout_waves_flagged(profile):
    # lossy wire, a long timeout, tiny buffers, many threads: the threads
    # asleep after a loss return together and overflow the buffer again
    sc = Scenario.default().updated({"clients.threads": 40_000, "clients.timeout_ms": 5000.0,
                                     "network.loss_rate": 0.3, "servers.rcvbuf_kb": 2,
                                     "clients.machines": 64, "clients.cores": 256})
    spec = compile_rack(sc, profile)
    pred = predict(sc, profile)
    names = [c.name for c in analytic_caveats(spec, pred)]
    assert "timeout-waves" in names, pred.details


def test_caveats_have_reason_and_advice(profile):
    sc = Scenario.default().updated(OVERLOAD)
    for c in predict(sc, profile).details["caveats"]:
        assert c["name"] and c["reason"] and "--engine sim" in c["advice"]


def test_wire_loss_is_geometric_and_hits_lose_too(profile):
    # every request a hit, each packet lost with p = 0.4: p / (1 - p) lost per
    # request (the simulators drop every request packet, hit or miss, first
    # attempt or resend)
    sc = Scenario.default().updated({"workload.records": 1, "network.loss_rate": 0.4})
    spec = compile_rack(sc, profile)
    assert spec.placement.hit_ratio == pytest.approx(1.0)
    pred = predict(sc, profile)
    assert pred.pktloss / spec.queries == pytest.approx(0.4 / 0.6, rel=1e-6)


def test_strict_storm_flagged(profile):
    # strict retry, 8,192 threads on 2 workers whose 4 MiB buffers take longer
    # to drain than the timeout: a queued request's reply is always late
    sc = Scenario.default().updated({**OVERLOAD, "clients.retry": "strict",
                                     "servers.rcvbuf_kb": 4096})
    names = _names(sc, profile)
    assert "strict-storm" in names
    # FarReach's client accepts a late reply, but the duplicates still fill the
    # buffer and take the worker: the same storm, named for the FarReach client
    sc = Scenario.default().updated({**OVERLOAD, "servers.rcvbuf_kb": 4096})
    names = _names(sc, profile)
    assert "resend-storm" in names and "strict-storm" not in names
    # the default 4 KiB buffers of OVERLOAD drain within the timeout: no storm
    assert not {"strict-storm", "resend-storm"} & set(_names(Scenario.default().updated(
        {**OVERLOAD, "clients.retry": "strict"}), profile))


def test_noisy_simulation_is_inconclusive(profile):
    spec = compile_rack(Scenario.default(), profile)
    a = solve(spec)
    noisy = agreement.SimInfo(seconds=100.0, rel_se=0.2)
    assert agreement.inconclusive(spec, a, a, noisy).startswith("noisy:")
    assert agreement.inconclusive(spec, a, a, agreement.SimInfo(seconds=100.0, rel_se=0.01)) == ""
    # the default rack's threads wait out 1 s timeouts much of the time: a
    # 2 s run cannot show sleeps and returns as a steady part of it
    short = agreement.SimInfo(seconds=2.0, rel_se=0.01)
    assert agreement.inconclusive(spec, a, a, short).startswith("timeouts-unreached:")


def test_too_slow_simulation_is_cut_at_the_limit(profile):
    # a simulation that cannot finish within its hard limit is killed, not waited for
    spec = compile_rack(Scenario.default().updated({"clients.threads": 4}), profile)
    a = solve(spec)
    assert agreement.simulate_bounded(spec, a, seconds=1e4, hard_s=0.5) is None


def test_both_engines_answer_for_the_same_run(profile):
    """The simulation's run is the queries it completed; the analytic answer
    compared with it is the same rack's over those queries."""
    spec = compile_rack(Scenario.default().updated({"clients.threads": 64,
                                                    "servers.count": 4}), profile)
    a = solve(spec)
    s, info = agreement.simulate_for_check(spec, a, seconds=0.3)
    assert info.queries == s.details["requests"] > 0
    run = agreement.same_run(spec, info)
    assert run.queries == info.queries and run.queries < spec.queries
    assert s.details["lsm"]["run_s"] == pytest.approx(0.3)
    assert set(s.details["lsm"]) == set(solve(run).details["lsm"])


def test_a_stop_no_job_clears_is_inconclusive(profile):
    """An L0 stop trigger below the compaction trigger: the first L0 file
    stops the writes and no compaction ever starts (RocksDB itself would
    raise the stop trigger). The simulation ends there, and the check calls
    it what it is."""
    sc = Scenario.default().updated({
        "servers.count": 2, "clients.threads": 8, "workload.records": 100_000,
        "switch.cache": False, "workload.read_ratio": 0.0,
        "storage.memtable_mb": 0.0625, "storage.flushnum": 1, "storage.maxnum": 4,
        "storage.l0_files": 4, "storage.l0_stop": 1, "storage.wal": False,
        "storage.preloaded": False})
    spec = compile_rack(sc, profile)
    a = solve(spec)
    s, info = agreement.simulate_for_check(spec, a, seconds=5.0)
    assert info.stuck and info.seconds < 5.0 and s.details["lsm"]["stopped_s"] > 0
    assert agreement.inconclusive(spec, a, s, info).startswith("stuck:")
