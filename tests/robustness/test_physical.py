"""Physical validity as part of the model (issue 15).

* A timeout no longer than the shortest round trip, with ``retry = strict``:
  no reply is ever on time, so no request completes. Both engines say so
  (zero goodput, the reason as the bottleneck) instead of a throughput that
  breaks Little's law; the simulator run without that shortcut shows the same
  steady state after its transient.
* The simulator's latency obeys Little's law over its window even when
  threads wait far longer than the window.
* A rate or a buffer of zero in a profile is an error naming the parameter.
"""

import math
import re
from pathlib import Path

import pytest

from model.errors import InputError
from model.prediction import no_goodput
from model.rack import compile_rack
from model.rack.clients import no_completion
from model.scenario import Scenario
from model.solvers import predict, predict_many
from sim.run import FastSimulator, run_config, simulate
from runio.inputs import load_profile

# sub-millisecond timers (no kernel tick floor), and round trips apart enough
# for a timeout between the hit and the miss round trip (the fitted ones are
# 10-11 us each, and poorly identified: +-16 us)
PROFILE = load_profile("tofino-testbed").with_values(
    {"timer_floor_ms": 0.0, "hit_rtt_us": 10.0, "miss_rtt_us": 25.0}, "test")
SMALL = {"servers.count": 4, "clients.threads": 64}


def strict(timeout_ms, **more):
    return Scenario.default().updated({**SMALL, "clients.retry": "strict",
                                       "clients.timeout_ms": timeout_ms, **more})


def test_timeout_below_round_trip_is_zero_goodput_in_both_engines():
    # the issue: 0.605 MOPS for every timeout from 0.01 to 0.2 ms (analytic),
    # 0.000637 MOPS with a 26 us latency (simulator)
    miss_rtt = PROFILE["miss_rtt_us"]
    for timeout_ms in (0.005, 0.01, miss_rtt / 1e3):
        sc = strict(timeout_ms)
        a = predict(sc, PROFILE)
        s = simulate(sc, PROFILE, seconds=0.2, progress=False)
        for p in (a, s):
            assert p.throughput_mops == 0.0 and p.client.latency_us == math.inf
            assert p.bottleneck.kind == "no-replies"
            assert "zero goodput" in p.bottleneck.text() and "strict" in p.details["no_goodput"]
            # the stuck threads' resends keep the workers busy
            assert max(x.utilization for x in p.servers) > 0.5
        assert [x.utilization for x in a.servers] == [x.utilization for x in s.servers]


def test_farreach_retry_still_completes_with_a_short_timeout():
    # FarReach's client takes the reply to any attempt: a short timeout costs
    # resends, not every request
    sc = Scenario.default().updated({**SMALL, "clients.timeout_ms": 0.01})
    spec = compile_rack(sc, PROFILE)
    assert no_completion(spec.clients, spec.placement.hit_ratio) is None
    s = simulate(sc, PROFILE, seconds=0.2, progress=False)
    assert s.throughput_mops > 0
    assert s.throughput_mops * s.client.latency_us == pytest.approx(64, rel=1e-9)


def test_just_above_the_round_trip_is_not_refused():
    sc = strict(PROFILE["miss_rtt_us"] / 1e3 * 1.5)
    spec = compile_rack(sc, PROFILE)
    assert no_completion(spec.clients, spec.placement.hit_ratio) is None


def test_all_hits_need_only_the_switch_round_trip():
    # every key cached: a timeout between the hit and the miss round trip completes
    sc = strict(0.019, **{"workload.records": 1000, "switch.cache_keys": 1000})
    spec = compile_rack(sc, PROFILE)
    assert spec.placement.hit_ratio == pytest.approx(1.0)
    assert PROFILE["hit_rtt_us"] < 19 < PROFILE["miss_rtt_us"]
    assert no_completion(spec.clients, spec.placement.hit_ratio) is None
    assert no_completion(spec.clients, 0.9) is not None


def test_the_simulator_without_the_shortcut_reaches_the_same_state():
    """The per-event engine, run raw: hits complete (the timeout is longer than
    their round trip) until every thread has drawn a miss; then nothing does."""
    assert PROFILE["hit_rtt_us"] < 20 < PROFILE["miss_rtt_us"]
    spec = compile_rack(strict(0.02), PROFILE)
    cfg, dyn = FastSimulator(0.3).config(spec)
    res = run_config(cfg, 0.3, dynamics=dyn, chunk_s=0.1)
    done = [row["throughput_mops"] for row in res.timeline]
    assert done[0] > 0 and done[-1] == 0.0


def test_batch_mixes_stuck_and_live_racks_in_order():
    live = Scenario.default().updated(SMALL)
    preds = predict_many([live, strict(0.01), live], PROFILE)
    assert preds[1].throughput_mops == 0 and preds[0].throughput_mops > 0
    assert preds[0].throughput_mops == preds[2].throughput_mops


def test_no_goodput_counts_are_infinite_not_nan():
    spec = compile_rack(strict(0.01), PROFILE)
    p = no_goodput(spec, "analytic", "test")
    assert p.false_pos == math.inf and not math.isnan(p.pktloss)
    assert all(math.isfinite(x.process_us) and 0 <= x.utilization <= 1 for x in p.servers)


def test_simulated_latency_obeys_littles_law_in_a_collapse():
    # strict, timeout just above the round trip: threads get stuck on requests
    # far longer than the window; the latency must say so
    sc = strict(0.03, **{"clients.threads": 16})
    s = simulate(sc, PROFILE, seconds=0.5, progress=False)
    assert s.throughput_mops > 0
    assert s.throughput_mops * s.client.latency_us == pytest.approx(16, rel=1e-9)
    # the few that completed were quick; the threads waited far longer
    assert s.client.latency_us > 10 * s.details["latency_completed_us"]


@pytest.mark.parametrize("name, value", [
    ("rcvbuf_pkt_bytes", "0.0"), ("disk_mbps", "0.0"), ("disk_mbps", "-1.0"),
    ("miss_rtt_us", "-1.0"), ("rcvbuf_pkt_bytes", "nan"), ("disk_mbps", "inf")])
def test_zero_or_negative_profile_rate_names_the_parameter(tmp_path, name, value):
    text = Path("model/profiles/tofino-testbed.toml").read_text()
    bad = re.sub(rf"(\[params\.{name}\]\nvalue = )[^\n]+", rf"\g<1>{value}", text)
    assert bad != text
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    with pytest.raises(InputError) as ei:
        predict(Scenario.default().updated(SMALL), load_profile(str(path)))
    e = ei.value
    assert e.source == str(path) and name in str(e) and e.line is not None
    line = bad.splitlines()[e.line - 1]
    assert name in line or line.startswith("value")
