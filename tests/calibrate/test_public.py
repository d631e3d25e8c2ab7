"""FarReach's own published experiments (data/public, calibrate/public.py):
what the model meets, and, as strict expected failures, what it does not,
each with its measured miss. No parameter is fitted to any of these rows.

The figures quoted are those of ``python -m calibrate public`` (docs/accuracy.md,
"External check"), under the embedded ``tofino-testbed`` profile and
``data/public/testbed.toml``.
"""

import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate import public
from runio.inputs import load_profile, load_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pts():
    """Every published configuration, predicted once (about 10 s)."""
    out = public.points()
    return public.predict_points(out, load_scenario(public.SCENARIO),
                                 load_profile("tofino-testbed"))


def pick(pts, experiment, system=None):
    return [p for p in pts if p.experiment == experiment and (system is None or p.system == system)]


# ------------------------------------------------------------- the tables
def test_the_tables_hold_every_round_of_every_configuration(pts):
    counts = {(p.experiment, p.system): len(pick(pts, p.experiment, p.system)) for p in pts}
    assert {k: v for k, v in counts.items() if k[0] == "scalability"} == {
        ("scalability", s): 4 for s in public.SYSTEMS}
    assert all(counts[("value_size", s)] == 5 and counts[("dynamic", s)] == 4
               for s in public.SYSTEMS)
    rounds = {(p.experiment, len(p.mops)) for p in pts}
    # five rounds everywhere but the 256-byte values (round 1 only)
    assert rounds == {("scalability", 5), ("value_size", 5), ("value_size", 1), ("dynamic", 5)}
    big = [p for p in pick(pts, "value_size") if p.config["value_bytes"] == 256]
    assert {len(p.mops) for p in big} == {1}


def test_the_per_second_series_average_to_the_published_round():
    """Two published sources agree as transcribed: each per-second series of
    round 2 (exp_dynamic_persecond/round2.txt) averages, to the published
    three digits, to its cell of exp_dynamic.md's round 2."""
    with open(ROOT / "data/public/farreach_dynamic_persecond.csv", newline="") as fh:
        per = list(csv.DictReader(fh))
    with open(ROOT / "data/public/farreach_dynamic.csv", newline="") as fh:
        table = {(r["system"], r["rule"]): float(r["mops"]) for r in csv.DictReader(fh)
                 if r["round"] == "2"}
    assert len(table) == 12
    for (system, rule), want in table.items():
        vals = [float(r["mops"]) for r in per if r["system"] == system and r["rule"] == rule]
        assert len(vals) == 75
        assert round(statistics.mean(vals), 3) == pytest.approx(want, abs=5e-4)


# ---------------------------------------------------- normalized throughput
@pytest.mark.parametrize("system", ["farreach", "netcache"])
def test_scalability_normalized_throughput_meets_its_target(pts, system):
    """FarReach within 2 %, NetCache within 5 % at 16-128 servers (NetCache's
    invalidated entries: model.workload; it was 15-34 % high without them)."""
    for p in pick(pts, "scalability", system):
        assert abs(p.err("normalized")) <= public.NORMALIZED_TOLERANCE[system], p.config


def test_nocache_normalized_throughput_meets_its_target_to_64_servers(pts):
    for p in pick(pts, "scalability", "nocache"):
        if p.config["servers"] <= 64:
            assert abs(p.err("normalized")) <= 2.0, p.config


@pytest.mark.xfail(strict=True, reason="known miss (docs/accuracy.md): NoCache at 128 servers "
                   "is +2.8 % (22.58 against 21.96; 64 servers +1.5 %): the published "
                   "bottleneck partition answered more than YCSB's generator gives it")
def test_nocache_normalized_throughput_at_128_servers(pts):
    p = [p for p in pick(pts, "scalability", "nocache") if p.config["servers"] == 128][0]
    assert abs(p.err("normalized")) <= 2.0


def test_value_size_normalized_throughput_meets_its_target(pts):
    """Write-only at 16-256 B: FarReach's 26 until the values outgrow the
    switch's 128-byte registers, then NoCache's 11 (it was 26.2 at 256 B)."""
    for p in pick(pts, "value_size"):
        assert abs(p.err("normalized")) <= public.NORMALIZED_TOLERANCE[p.system], p.config
    fr = {p.config["value_bytes"]: p.pred_normalized for p in pick(pts, "value_size", "farreach")}
    assert fr[128] > 25 and fr[256] < 12


# ------------------------------------------------------ rotation throughput
def test_farreach_scalability_grows_as_published(pts):
    g = public.summary(pts)["growth"]["farreach"]
    assert abs(g["error_pct"]) <= 5.0


@pytest.mark.xfail(strict=True, reason="known miss: 16 -> 128 servers x2.10 predicted for "
                   "NoCache against x2.34 published (-10.5 %), NetCache x2.19 against x2.34 "
                   "(-6.3 %): the bottleneck partition's worker")
@pytest.mark.parametrize("system", ["nocache", "netcache"])
def test_cache_less_scalability_grows_as_published(pts, system):
    assert abs(public.summary(pts)["growth"][system]["error_pct"]) <= 5.0


def test_yscb_a_rotation_throughput_within_17_percent(pts):
    """YCSB A (scalability): FarReach +10..+16 %, NoCache -8..-17 %, NetCache
    -5..+2 % under the lab's profile (refitted 2026-12-07) with the public
    testbed's settings."""
    for p in pick(pts, "scalability"):
        assert abs(p.err("mops")) <= 17.5, (p.system, p.config)


@pytest.mark.xfail(strict=True, reason="known miss: write-only rotation throughput is 19-37 % "
                   "low (FarReach 1.24 against 1.85-1.97 MOPS): the lab's profile makes a "
                   "write dearer than a read, the public servers' writes are cheaper (plain "
                   "DB, no seq check; docs/accuracy.md). Median |error| over the 27 rotation "
                   "points 22.5 %, largest 37.0 %")
def test_rotation_throughput_meets_its_target(pts):
    s = public.summary(pts)
    assert s["rotation_median_abs_pct"] <= 10.0 and s["rotation_over_25pct"] == 0


# ------------------------------------------------------------------ dynamic
def test_the_cache_follows_moved_hot_keys_within_a_second(pts):
    """What the dynamic experiment's prediction rests on: the model has no
    moving keys and predicts each rule as its static rack, the cache holding
    the current hot keys. In the published per-second series the seconds
    right after each move run within 5 % of the series' median, for every
    system and rule."""
    for p in pick(pts, "dynamic"):
        d = p.persecond
        assert d and d["seconds"] == 75
        assert d["after_move_median"] == pytest.approx(d["median"], rel=0.05), (p.system, p.config)


def test_dynamic_keeps_the_published_order_of_the_systems(pts):
    by = {(p.system, p.config["rule"]): p.pred_mops for p in pick(pts, "dynamic")}
    for rule in ("hotin", "hotout", "random", "static"):
        assert by[("farreach", rule)] > 1.5 * by[("nocache", rule)]


@pytest.mark.xfail(strict=True, reason="known miss: write-only on 2 servers run together, "
                   "15-31 % low for every system and rule (FarReach 0.164 against 0.215-0.228 "
                   "MOPS): the same write cost as the value-size experiment")
def test_dynamic_throughput_within_10_percent(pts):
    for p in pick(pts, "dynamic"):
        assert abs(p.err("mops")) <= 10.0, (p.system, p.config)


# ------------------------------------------------------------------ command
def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "calibrate", "public", "--no-progress", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_text_names_every_experiment_with_units(pts):
    out = public.format_text(pts, public.summary(pts), "data/public/testbed.toml",
                             "tofino-testbed")
    for word in ("scalability", "value_size", "dynamic", "MOPS", "targets (issue 53)",
                 "data/public/testbed.toml", "per-second", "NetCache"):
        assert word in out
    assert len([ln for ln in out.splitlines() if ln.startswith("  dynamic ")]) == 12


def test_the_command_prints_json_and_writes_its_files(tmp_path):
    done = _cli("--json", "--out", str(tmp_path / "t.csv"), "--html", str(tmp_path / "p.html"))
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["profile"] == "tofino-testbed" and len(d["points"]) == 39
    assert d["scenario"] == "data/public/testbed.toml"
    assert d["summary"]["normalized_worst_pct"]["farreach"] < 2.0
    with open(tmp_path / "t.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 39 and {"pred_mops", "err_normalized_pct"} <= set(rows[0])
    page = (tmp_path / "p.html").read_text()
    assert "predicted against published" in page and "MOPS" in page


def test_the_command_names_a_bad_cell(tmp_path):
    data = tmp_path / "public"
    shutil.copytree(ROOT / "data" / "public", data)
    p = data / "farreach_value_size.csv"
    lines = p.read_text().splitlines()
    lines[3] = lines[3].replace(",0.0,", ",zero,", 1)
    p.write_text("\n".join(lines) + "\n")
    done = _cli("--data", str(data), "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "farreach_value_size.csv" in done.stderr and "4" in done.stderr
    assert "read_ratio" in done.stderr and "zero" in done.stderr
    p.write_text(p.read_text().replace("farreach", "farreech", 1))
    bad = _cli("--data", str(data))
    assert bad.returncode == 2 and "system" in bad.stderr
