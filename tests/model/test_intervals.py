"""Intervals over many racks: which sigma points are solved (model.intervals.solve_grid)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace


DATA = Path(__file__).resolve().parents[2] / "data"


def test_a_scenario_whose_centre_does_not_settle_gets_no_sigma_points():
    """solve_grid solves a block's centres as leaders and their sigma points,
    each warm-started from its centre, in one call; the solver leaves the
    followers of a centre that did not settle unsolved (None), and so does
    the grid."""
    from model.intervals import solve_grid
    calls = []

    def predict_many(scs, profs, warm_from=None):
        calls.append((list(scs), list(profs), warm_from))
        out = [SimpleNamespace(sc=s, prof=p, details={"converged": s != "b"})
               for s, p in zip(scs, profs)]
        return [None if w is not None and scs[w] == "b" else o for o, w in zip(out, warm_from)]

    out = solve_grid(["a", "b", "c"], ["p0", "p1", "p2"], predict_many)
    assert len(calls) == 1
    assert calls[0][0] == ["a", "b", "c"] * 3
    assert calls[0][1] == ["p0"] * 3 + ["p1"] * 3 + ["p2"] * 3
    assert calls[0][2] == [None, None, None, 0, 1, 2, 0, 1, 2]
    assert [p.prof for p in out[0]] == ["p0"] * 3
    assert out[1][1] is None and out[2][1] is None
    assert (out[1][0].sc, out[1][0].prof) == ("a", "p1")
    assert (out[2][2].sc, out[2][2].prof) == ("c", "p2")


def test_the_solver_leaves_followers_of_an_unsettled_leader_unsolved(monkeypatch):
    """predict_many(warm_from=...): a sigma point of a centre that did not
    settle is None, not solved; the centre keeps its last iterate."""
    import model.solvers.analytic as an
    from model.intervals import sigma_profiles
    from model.profile import Profile
    from model.scenario import Scenario
    from model.solvers import predict_many
    profile = Profile.load("tofino-testbed")
    point = sigma_profiles(profile)[0][0]
    monkeypatch.setattr(an, "MAX_ITER", 3)
    monkeypatch.setattr(an, "STEP_BUDGET", 6)
    centre, sigma = predict_many([Scenario.default()] * 2, [profile, point], warm_from=[None, 0])
    assert not centre.details["converged"] and centre.throughput_mops > 0
    assert sigma is None


def test_an_unsettled_rack_is_predicted_without_an_interval(monkeypatch):
    """A rack whose fixed point did not settle keeps its throughput (the map's
    last output) and has no interval, in predict and in predict --runs;
    a settled rack keeps its interval."""
    import model.solvers.analytic as an
    from model.intervals import predict_with_intervals
    from model.kinds import detect
    from model.profile import Profile
    from model.row_prediction import predict_kind_rows
    from model.scenario import Scenario
    from sim.batch import read_runs

    profile = Profile.load("tofino-testbed")
    settled = predict_with_intervals([Scenario.default()], profile)[0]
    assert settled.prediction.details["converged"]
    assert settled.mops_lo < settled.prediction.throughput_mops < settled.mops_hi

    header, rows = read_runs(str(DATA / "farreach_runs.csv"))
    kind = detect(header, source="farreach_runs.csv")
    row = rows[0]
    with_iv = predict_kind_rows(kind, [row], profile)[0]
    assert with_iv["pred_mops_lo"] < with_iv["pred_mops"] < with_iv["pred_mops_hi"]

    # fewer steps than the minimum a rack needs to settle (4): nothing settles
    monkeypatch.setattr(an, "MAX_ITER", 3)
    monkeypatch.setattr(an, "STEP_BUDGET", 6)
    ip = predict_with_intervals([Scenario.default()], profile)[0]
    assert not ip.prediction.details["converged"]
    assert ip.mops_lo is None and ip.mops_hi is None
    assert ip.prediction.throughput_mops > 0
    without = predict_kind_rows(kind, [row], profile)[0]
    assert without["pred_mops"] > 0
    assert not any(k.endswith(("_lo", "_hi")) for k in without)
    assert "did not settle" in without["pred_warning"]
    assert "pred_warning" not in with_iv


def test_predict_runs_flags_unsettled_rows_in_a_column_and_on_stderr(monkeypatch, tmp_path, capsys):
    """predict --runs: a row whose rack did not settle gets pred_warning and
    empty interval columns; stderr counts them; every input column is kept."""
    import model.solvers.analytic as an
    from sim.batch import read_runs, run_batch

    src = tmp_path / "runs.csv"
    lines = (DATA / "farreach_runs.csv").read_text().splitlines()
    src.write_text("\n".join(lines[:3]) + "\n")
    monkeypatch.setattr(an, "MAX_ITER", 3)
    monkeypatch.setattr(an, "STEP_BUDGET", 6)
    run_batch(str(src), str(tmp_path / "out.csv"), progress=False)
    header, rows = read_runs(str(tmp_path / "out.csv"))
    _, given = read_runs(str(src))
    assert len(rows) == 2 and "pred_warning" in header
    for r, g in zip(rows, given):
        assert all(r[k] == v for k, v in g.items() if not k.startswith("__"))
        assert "did not settle" in r["pred_warning"]
        assert float(r["pred_mops"]) > 0 and r.get("pred_mops_lo", "") == ""
    assert "2 of 2 rows did not settle" in capsys.readouterr().err



def test_rows_are_batched_by_rack_size_without_changing_any_answer():
    """predict_kind_rows sorts the racks by size before batching (a batch pads
    every rack to its largest); each row's answer is the same in any order."""
    from model.kinds import detect
    from model.profile import Profile
    from model.row_prediction import predict_kind_rows
    from sim.batch import read_runs

    header, rows = read_runs(str(DATA / "farreach_runs.csv"))
    kind = detect(header, source="farreach_runs.csv")
    plain = [r for r in rows if r["wait_stat"] != "per-server"][:4]
    pick = [dict(r, servers=str(m), clients=str(c))
            for r, m, c in zip(plain, (16, 1, 8, 4), (64, 1024, 256, 512))]
    profile = Profile.load("tofino-testbed")
    fwd = predict_kind_rows(kind, pick, profile, intervals=False)
    back = predict_kind_rows(kind, pick[::-1], profile, intervals=False)[::-1]
    assert fwd == back
