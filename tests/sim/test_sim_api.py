"""The public simulation API: fields, timeline CSV, determinism, Ctrl-C, errors."""

import csv
import math
import re

import pytest

from model.errors import InputError
from model.prediction import Prediction
from model.scenario import Scenario
from sim.run import simulate, write_timeline

SMALL = Scenario.default().updated({"servers.count": 4, "clients.threads": 64})


def test_prediction_fields_and_details(profile, tmp_path):
    p = simulate(SMALL, profile, seconds=2.0, seed=3, progress=False)
    assert isinstance(p, Prediction) and p.engine == "sim"
    assert len(p.servers) == 4
    assert p.throughput_mops > 0 and math.isfinite(p.client.latency_us)
    d = p.details
    assert d["sim_engine"] == "fast" and d["interrupted"] is False
    tl = d["timeline"]
    assert [r["t_s"] for r in tl] == [1.0, 2.0]
    for key in ("t_s", "throughput_mops", "stalled_frac", "pktloss", "false_pos",
                "wait_us_0", "process_us_0", "wait_us_3", "process_us_3"):
        assert key in tl[0]
    pct = d["latency_us_percentiles"]
    assert pct["p50"] <= pct["p90"] <= pct["p99"] <= pct["p999"]
    hist = d["latency_hist"]
    assert len(hist["edges_us"]) == len(hist["counts"]) + 1
    assert sum(hist["counts"]) == d["requests"]
    # the mean latency lies inside the histogram's range
    assert hist["edges_us"][0] < p.client.latency_us < hist["edges_us"][-1]
    # per-second throughput averages to the run's throughput
    mean_tl = sum(r["throughput_mops"] for r in tl) / len(tl)
    assert mean_tl == pytest.approx(p.throughput_mops, rel=1e-9)

    out = tmp_path / "timeline.csv"
    write_timeline(p, out)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 and "process_us_3" in rows[0]
    assert float(rows[1]["t_s"]) == 2.0


def test_same_seed_same_output_other_seed_differs(profile):
    a = simulate(SMALL, profile, seconds=1.0, seed=7, progress=False)
    b = simulate(SMALL, profile, seconds=1.0, seed=7, progress=False)
    c = simulate(SMALL, profile, seconds=1.0, seed=8, progress=False)
    assert a.details["timeline"] == b.details["timeline"]
    assert a.details["latency_hist"] == b.details["latency_hist"]
    assert a.details["requests"] == b.details["requests"]
    assert a.details["requests"] != c.details["requests"]


def test_simpy_same_seed_same_output(profile):
    a = simulate(SMALL, profile, seconds=0.02, seed=5, engine="simpy", progress=False)
    b = simulate(SMALL, profile, seconds=0.02, seed=5, engine="simpy", progress=False)
    assert a.details["sim_engine"] == "simpy"
    assert a.details["requests"] == b.details["requests"] > 0
    assert a.details["latency_hist"] == b.details["latency_hist"]


def _ctrl_c_at_chunk(monkeypatch, n: int) -> None:
    """The fast engine's ``n``-th chunk raises KeyboardInterrupt (a Ctrl-C)."""
    from sim import fast
    real = fast.FastEngine.run_until
    calls = {"n": 0}

    def flaky(self, t_us, done_cap=float("inf")):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(self, t_us, done_cap)

    monkeypatch.setattr(fast.FastEngine, "run_until", flaky)


def test_keyboard_interrupt_returns_partial_results(profile, monkeypatch):
    _ctrl_c_at_chunk(monkeypatch, 3)
    p = simulate(SMALL, profile, seconds=10.0, progress=True)
    assert p.details["interrupted"] is True
    assert p.details["simulated_s"] == pytest.approx(2.0)
    assert len(p.details["timeline"]) == 2
    assert p.throughput_mops > 0
    assert p.details["prefix_of_run"] is True


def test_keyboard_interrupt_of_a_whole_run_says_how_many_queries(profile, monkeypatch, capsys):
    """Without --seconds the run is its queries: a Ctrl-C says how many of them."""
    from cli import main as cli
    _ctrl_c_at_chunk(monkeypatch, 2)
    rc = cli.main(["simulate", "--no-progress", "--set", "servers=2", "--set", "clients=8",
                   "--set", "workload.records=100000"])
    out, err = capsys.readouterr()
    assert rc == 130
    assert re.search(r"PARTIAL: interrupted after [\d.]+ of 10 M queries simulated", err), err


def test_bad_arguments(profile):
    with pytest.raises(InputError):
        simulate(SMALL, profile, seconds=0.0, progress=False)
    with pytest.raises(InputError):
        simulate(SMALL, profile, seconds=1.0, engine="warp", progress=False)
