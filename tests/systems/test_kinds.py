"""Every reference kind of the other systems: detection, batch prediction
through the CLI, bad input, and the mechanisms the extrapolations rely on."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from runio.kinds import detect
from model.systems import SYSTEMS
from calibrate.systems_pages import curves
from model.systems import morphling, runtimes, threads
from cli.main import main
from runio.inputs import load_profile

DATA = Path(__file__).resolve().parents[2] / "data"
KINDS = {
    "morphling_c": ("kops",), "morphling_go": ("ops", "latency_ns"),
    "morphling_go_control": ("ops", "latency_us"),
    "runtimes_curves": ("qps", "latency_us"), "runtimes_best": ("best_qps",),
    "runtimes_limited": ("qps", "latency_us", "cpu_total_pct"),
    "thread_coroutine": ("requests", "latency_mean_us", "latency_std_us"),
    "coroutine_priority": ("requests", "latency_mean_us", "latency_std_us"),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_batch_predict_keeps_rows_and_columns(name, tmp_path):
    src = DATA / f"{name}.csv"
    out = tmp_path / "out.csv"
    assert main(["predict", "--runs", str(src), "--out", str(out)]) == 0
    with open(src) as fh:
        rin = list(csv.DictReader(fh))
    with open(out) as fh:
        rout = list(csv.DictReader(fh))
    assert len(rin) == len(rout)
    for a, b in zip(rin, rout):
        for k, v in a.items():
            assert b[k] == v
        for col in KINDS[name]:
            assert float(b[f"pred_{col}"]) > 0
    with open(src) as fh:
        assert detect(next(csv.reader(fh))).name == name


@pytest.mark.parametrize("name,col,bad", [
    ("runtimes_curves", "runtime", "nodejs"), ("morphling_go", "conns_per_client", "x"),
    ("thread_coroutine", "model", "fiber"), ("coroutine_priority", "server_vcpus", "0"),
    ("morphling_c", "client_threads", ""), ("runtimes_limited", "payload", "big")])
def test_bad_cell_exits_2_naming_the_column(name, col, bad, tmp_path, capsys):
    with open(DATA / f"{name}.csv") as fh:
        rows = list(csv.DictReader(fh))
    rows[0][col] = bad
    src = tmp_path / "in.csv"
    with open(src, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["predict", "--runs", str(src), "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert f"'{col}'" in err and "line 2" in err and "Traceback" not in err


def test_embedded_profiles_exist_with_units_and_provenance():
    for name in SYSTEMS:
        p = load_profile(name)
        for k, par in p.params.items():
            assert par.unit and par.source, k


def test_morphling_c_levels_off_at_server_capacity():
    p = load_profile("morphling-c")
    ks = [morphling.c_throughput("unreplicated", n, p) * 1e3 for n in (4, 12, 36, 64)]
    assert ks == sorted(ks)
    assert ks[-1] == pytest.approx(1e3 / p["server_us"], rel=0.01)
    assert 25 < ks[-1] < 32          # ~29 Kops, docs/domain.md section 4


def test_morphling_go_raft_pays_a_quorum_round_and_littles_law_holds():
    p = load_profile("morphling-go")
    for n in (2, 8, 32):
        x_r, l_r = morphling.go_solve("raft", n, p)
        x_u, l_u = morphling.go_solve("unreplicated", n, p)
        assert l_r > l_u + 2 * p["hop_us"]                  # two more hops: the quorum round
        assert x_r * l_r == pytest.approx(n, rel=1e-6)      # clients = ops x latency


def test_morphling_go_ceiling_is_the_busiest_serving_loop_and_latency_grows_past_it():
    p = load_profile("morphling-go")
    for mode in ("morphling", "raft"):
        cap, who = morphling.go_capacity(mode, p)
        x, lat = morphling.go_solve(mode, 256, p)
        assert x <= cap * (1 + 1e-9) and x == pytest.approx(cap, rel=0.02), who
        x2, lat2 = morphling.go_solve(mode, 512, p)
        assert lat2 == pytest.approx(lat + 256 / cap, rel=0.02)    # past the knee: N / X_max
    # idle wake-ups: a Raft read at low load pays them, under load it does not
    lo = morphling.go_solve("raft", 2, p)[1]
    assert lo > 4 * p["hop_us"] + 0.5 * 4 * p["wake_us"] * math.exp(-1e-3 * p["spin_us"])
    assert morphling.sleep_loop_ops(1.0, p) == pytest.approx(610, rel=0.01)


def test_tokio_scales_worse_than_thread_per_core_runtimes():
    p = load_profile("runtimes")
    t = [runtimes.best("tokio", c, 4 * c, 100.0, p)[0] for c in (4, 8, 16, 20)]
    m = [runtimes.best("monoio", c, 4 * c, 100.0, p)[0] for c in (4, 8, 16, 20)]
    assert m[-1] / m[0] > 4.0           # thread-per-core: ~linear
    assert t[-1] / t[0] < 3.0           # work stealing: poor past 8 cores
    assert t[-1] / t[1] < 1.5


def test_runtime_curve_peaks_then_falls_with_contention():
    p = load_profile("runtimes")
    qs = [runtimes.solve("glommio", 1, n, 100.0, p)[0] for n in (200, 400, 1600)]
    assert qs[1] > qs[0] and qs[2] < qs[1]


def test_thread_latency_explodes_where_coroutines_do_not():
    p = load_profile("thread-coroutine")
    thr = [threads.solve_tc("thread", n, 1, 50, 5000, None, p)["latency_mean_us"]
           for n in (8, 16, 32, 64)]
    co = [threads.solve_tc("coroutine", n, 1, 50, 5000, "2-2-2", p)["latency_mean_us"]
          for n in (8, 16, 32, 64)]
    assert thr[-1] / thr[0] > 10 and co[-1] / co[0] < 10 and thr[-1] > 3 * co[-1]


def test_priority_latency_ordered_and_grows_as_cpus_get_scarce():
    p = load_profile("thread-coroutine")
    by_v = {v: [r["latency_mean_us"] for r in threads.solve_priority(v, 40, 100, 5000, p)]
            for v in (1, 2, 3, 4)}
    for v, lat in by_v.items():
        assert lat == sorted(lat)
    assert by_v[1][-1] > by_v[2][-1] > by_v[3][-1] >= by_v[4][-1] * 0.99


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_curves_extend_past_measured_points_with_flags(system):
    rows = curves(system)
    meas = [r for r in rows if r["kind"] == "measured"]
    pred = [r for r in rows if r["kind"] == "predicted"]
    assert meas and pred
    assert all(math.isfinite(r["y"]) for r in pred)
    if system != "thread-coroutine":
        assert any(r["flag"] for r in pred)
