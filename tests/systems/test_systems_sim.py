"""The event forms of the other reference systems (``sim/systems_sim.py``) and
their comparison with the analytic forms on every shared row
(``sim/systems_rows.py``; docs/systems.md "Both engines")."""

from __future__ import annotations

import csv
import statistics

import numpy as np
import pytest

from calibrate.systems_fit import load_rows
from model.blocks import closed_loop as mva_loop
from runio.inputs import load_profile
from runio.kinds import KINDS
from sim import systems_rows
from model.blocks import periodic_burst_wait
from sim.systems_sim import Station, closed_loop, limited_bursts, priority_pool


def _one_station(n, think, service, cores, seed):
    def legs(client, g):
        return [float(g.exponential(think)), ("st", 0, float(g.exponential(service)))]
    return closed_loop(n, legs, [Station("pool", cores)], 30000, np.random.default_rng(seed))


@pytest.mark.parametrize("n,cores", [(4, 1), (12, 1), (40, 4)])
def test_closed_loop_against_exact_mva(n, cores):
    """Exponential service and think time: the repairman model, which exact
    MVA solves (one core; several cores via Seidmann, close past the knee)."""
    r = _one_station(n, 200.0, 30.0, cores, seed=n)
    m = mva_loop(n, 200.0, [30.0], [cores])
    assert r.throughput == pytest.approx(m.throughput, rel=0.04)
    assert r.throughput * r.latency_mean == pytest.approx(n, rel=0.03)    # Little's law


def test_same_seed_same_run():
    a = _one_station(8, 200.0, 30.0, 1, seed=3)
    b = _one_station(8, 200.0, 30.0, 1, seed=3)
    c = _one_station(8, 200.0, 30.0, 1, seed=4)
    assert a == b and a != c


def test_priority_bursts_conserve_the_mean_wait():
    """Non-preemptive priority only redistributes waits among equal-service
    classes: the mean over the classes is first come first served's."""
    rng = np.random.default_rng(5)
    pr = priority_pool(7, 16, 1.0, 1, 112.0, True, 12, 30, rng)
    fcfs, _ = limited_bursts(7, 16, 112.0, 1.0, 1, 12, 30, np.random.default_rng(5))
    means = [m for m, _, _ in pr]
    assert means[0] < means[3] < means[6]
    # the same phases: equal but for the warm-up period's requests, not counted
    assert statistics.fmean(means) == pytest.approx(fcfs, rel=0.02)
    # and both are Benes' wait among 7 periodic bursts plus the rounds ahead
    # in the own burst (model.blocks.periodic_burst_wait)
    assert fcfs == pytest.approx(periodic_burst_wait(7, 16.0, 112.0).mean + 7.5, rel=0.05)


def _compare(kind, profile):
    rows = [r for r in load_rows(profile) if r["__kind__"] == kind]
    return systems_rows.summary(systems_rows.compare(KINDS[kind], rows, load_profile(profile)))


def test_morphling_and_runtimes_event_forms_agree_with_the_analytic_forms():
    """Exact MVA is exact for Morphling C and the runtimes' curves; the Go
    loop's residual-service MVA and Poisson wake-ups are within 12 % of the
    event form (constant service, each node's own idle gaps)."""
    for kind, prof, med, top in (("morphling_c", "morphling-c", 1.0, 2.0),
                                 ("runtimes_curves", "runtimes", 1.0, 3.0),
                                 ("runtimes_best", "runtimes", 1.0, 2.0),
                                 ("morphling_go", "morphling-go", 8.0, 12.0),
                                 ("morphling_go_control", "morphling-go", 8.0, 12.0)):
        for (k, col), (n, m, mx) in _compare(kind, prof).items():
            assert m <= med and mx <= top, (k, col, m, mx)


def test_thread_coroutine_event_form():
    """The burst mechanisms request by request: means within 3 % in the median
    (the largest differences, thread bursts of 8-16 where the analytic form
    mixes two service orders, are named in docs/systems.md)."""
    s = _compare("thread_coroutine", "thread-coroutine")
    assert s[("thread_coroutine", "requests")][1] <= 2.0
    assert s[("thread_coroutine", "latency_mean_us")][1] <= 3.0
    assert s[("thread_coroutine", "latency_std_us")][1] <= 10.0


def test_command_prints_and_writes_the_comparison(tmp_path, capsys):
    out = tmp_path / "cmp.csv"
    assert systems_rows.main(["--runs", "data/morphling_c.csv", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "M19" in text and "median |sim/analytic - 1|" in text
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and {"analytic", "simulated", "diff_pct"} <= set(rows[0])


def test_command_names_a_bad_cell(tmp_path, capsys):
    src = tmp_path / "bad.csv"
    src.write_text("id,read_mode,client_threads,groups,replicas,value_bytes,requests,kops,note\n"
                   "M01,sideways,4,2,3,1000,30000,13.5,\n")
    assert systems_rows.main(["--runs", str(src)]) == 2
    err = capsys.readouterr().err
    assert "read_mode" in err and "line 2" in err and "Traceback" not in err
