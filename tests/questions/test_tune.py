"""``python -m sim tune``: differential evolution over the given ranges."""

from __future__ import annotations

import json

import pytest

from model.errors import InputError
from model.scenario import Scenario
from cli import tune as tn
from cli.main import main
from runio.inputs import load_profile

PROFILE = load_profile("tofino-testbed")


def test_dimensions():
    d = tn.parse_dimension("storage.memtable_mb=16:256")
    assert d.kind == "float" and d.log and not d.integral
    assert d.value(d.bounds[0]) == 16 and d.value(d.bounds[1]) == 256
    f = tn.parse_dimension("flushnum=1:3")
    assert f.kind == "int" and f.integral and f.value(2.4) == 2
    c = tn.parse_dimension("storage.wal=true,false")
    assert c.kind == "choice" and c.value(1.0) is False


def test_tune_finds_a_configuration_at_least_as_good_as_the_given_one():
    base = Scenario.default().with_overrides(["clients=64"])
    dims = tn.parse_dimensions(["clients.threads=32:256", "storage.memtable_mb=16:256"])
    t = tn.tune(base, PROFILE, dims, generations=2, seed=2)
    assert 32 <= t.best_values["clients.threads"] <= 256
    assert 16 <= t.best_values["storage.memtable_mb"] <= 256
    assert t.best_mops >= t.start_mops * (1 - 1e-9)
    # more client threads are the obvious win from 64
    assert t.best_values["clients.threads"] > 128 and t.gain_pct > 10
    assert t.explanation is not None
    assert sum(v for _, v in t.explanation.waterfall()) == pytest.approx(t.explanation.gap_x)
    assert t.evaluations == len(t.history) and "differential evolution" in t.method
    frame = t.to_frame()
    assert frame.loc["throughput_mops", "tuned"] == pytest.approx(t.best_mops)
    json.dumps(t.to_dict())


def test_latency_bound_is_respected():
    base = Scenario.default().with_overrides(["clients=64"])
    dims = tn.parse_dimensions(["clients.threads=32:256"])
    free = tn.tune(base, PROFILE, dims, generations=2, explain_result=False)
    bound = 0.8 * free.best_latency_us
    t = tn.tune(base, PROFILE, dims, generations=2, max_latency_us=bound, explain_result=False)
    assert t.best_latency_us <= bound
    with pytest.raises(InputError) as exc:
        tn.tune(base, PROFILE, dims, generations=1, max_latency_us=1.0, explain_result=False)
    assert exc.value.field == "--max-latency-us"


def test_cli_text(capsys):
    code = main(["tune", "--set", "clients=64", "--vary", "clients=32:256", "--generations", "1"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "tuned throughput" in out and "MOPS" in out and "predicted gain" in out
    assert "set it with: --set clients.threads=" in out
    assert "Why the tuned configuration" in out


@pytest.mark.parametrize("argv,field", [
    (["--vary", "storage.memtable_mb=256:16"], "storage.memtable_mb"),
    (["--vary", "storage.memtable_mb=0:16"], "storage.memtable_mb"),
    (["--vary", "storage.memtable_mb=a:b"], "storage.memtable_mb"),
    (["--vary", "storage.wal=0:1"], "storage.wal"),
    (["--vary", "flushnum=1.5:3"], "storage.flushnum"),
    (["--vary", "nosuch=1:2"], "nosuch"),
    (["--vary", "storage.db=txn"], "storage.db"),
    ([], "--vary"),
    (["--vary", "clients=32:64", "--max-latency-us", "-1"], "--max-latency-us"),
    (["--vary", "clients=32:64", "--out", "x.png"], "--out"),
])
def test_bad_input_exits_2_naming_the_key(capsys, argv, field):
    try:
        code = main(["tune"] + argv)
    except SystemExit as exc:       # refused by the argument parser
        code = exc.code
    _, err = capsys.readouterr()
    assert code == 2
    assert (f"'{field}'" in err or f"argument {field}:" in err) and "Traceback" not in err


def test_trade_off_front_and_range_edges(capsys):
    # the front of throughput against latency, configurations beyond the
    # latency bound marked, and an optimum on the edge of its range said (issue 44)
    import json as _json
    code = main(["tune", "--vary", "servers=4:8", "--vary", "clients=64:1024",
                 "--max-latency-us", "1000", "--generations", "2", "--json"])
    assert code == 0
    d = _json.loads(capsys.readouterr().out)
    front = d["pareto"]
    assert len(front) >= 2
    # the front is throughput against p99 latency; the bound reads the mean
    lats = [p["latency_p99_us"] for p in front]
    mops = [p["throughput_mops"] for p in front]
    assert lats == sorted(lats) and mops == sorted(mops)        # more MOPS costs latency
    for p in front:                                             # none beaten on both
        assert all(not (q["throughput_mops"] > p["throughput_mops"]
                        and q["latency_p99_us"] <= p["latency_p99_us"]) for q in front)
        assert p["within_bound"] == (p["latency_us"] <= 1000)
        assert p["latency_p99_us"] > p["latency_us"]
    assert {"key": "servers.count", "edge": "upper", "value": 8} in d["on_range_edge"]
    assert main(["tune", "--vary", "servers=4:8", "--vary", "clients=64:1024",
                 "--generations", "2"]) == 0
    text = capsys.readouterr().out
    assert "NOTE: servers.count = 8 is the upper edge of the range searched" in text
    assert "no other beats on both" in text


def test_a_p99_bound_reads_the_p99():
    base = Scenario.default()
    dims = tn.parse_dimensions(["clients.threads=64:2048"])
    t = tn.tune(base, PROFILE, dims, generations=2, latency_stat="p99", max_latency_us=2500,
                explain_result=False)
    assert t.latency_stat == "p99" and t.best_latency_us <= 2500
    best = [h for h in t.history if h["clients.threads"] == t.best_values["clients.threads"]][0]
    assert best["latency_p99_us"] == pytest.approx(t.best_latency_us)
    # the mean of the same configuration is well under its p99: the bound is not the mean's
    assert best["latency_us"] < 0.8 * best["latency_p99_us"]
    assert all(t.feasible(h) == (h["latency_p99_us"] <= 2500) for h in t.history)
    with pytest.raises(InputError) as exc:
        tn.tune(base, PROFILE, dims, generations=1, latency_stat="p42", explain_result=False)
    assert exc.value.field == "--latency-stat"
