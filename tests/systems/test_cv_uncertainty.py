"""Cross-validation (calibrate.cv) and prediction intervals (model.uncertainty):
fold construction, refits that do not see held-out rows, interval coverage by
simulation, profile round trip of the new tables, and the command line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibrate.cli import main as calibrate_main
from calibrate.cv import cross_validate, make_folds, register_grouping, Fold, GROUPINGS
from calibrate.systems_fit import SystemFitter, load_rows
from model.errors import InputError
from model.profile import Param, Profile
from model.uncertainty import fitted_uncertainty, predict_interval, with_intervals
from runio.inputs import load_profile, save_profile


def _rows(kind, curve_vals, order_vals):
    return [{"__kind__": kind, "id": f"r{i}", "series": s, "step": str(x), "__line__": str(i + 2)}
            for i, (s, x) in enumerate(zip(curve_vals, order_vals))]


def test_first_and_last_split_every_curve_by_its_order_and_keep_repeats_together():
    rows = _rows("morphling_go_control", ["a"] * 4 + ["b"] * 3, [3, 1, 2, 1, 1, 2, 3])
    (f,) = make_folds(rows, "first:2")
    assert [rows[i]["step"] for i in f.train] == ["1", "2", "1", "1", "2"]   # repeats of step 1
    assert sorted(rows[i]["step"] for i in f.test) == ["3", "3"]
    (g,) = make_folds(rows, "last:1")
    assert set(g.test) == set(f.test)
    folds = make_folds(rows, "column:series")
    assert [f.name for f in folds] == ["series=a", "series=b"]
    assert all(set(f.train).isdisjoint(f.test) for f in folds)


def test_top_holds_out_the_top_connection_count_and_the_top_priority_core_count():
    rows = load_rows("thread-coroutine")
    (f,) = make_folds(rows, "top:1")
    held = {rows[i]["id"] for i in f.test}
    # every thread/coroutine series loses its 64-connection run ...
    assert {rows[i]["id"] for i in f.test if rows[i]["__kind__"] == "thread_coroutine"} == \
        {"P07", "P15", "P23", "P31", "P39", "P47"}
    # ... and the priority runs their top core count, every class of it
    prio = [r for r in rows if r["__kind__"] == "coroutine_priority"]
    assert {r["id"] for r in prio if r["server_vcpus"] == "4"} <= held
    assert not {r["id"] for r in prio if r["server_vcpus"] == "1"} & held
    assert set(f.train).isdisjoint(f.test) and len(f.train) + len(f.test) == len(rows)


@pytest.mark.parametrize("bad", ["first:0", "first:x", "nope:1", "first", "column:", "top:0"])
def test_bad_groupings_are_input_errors(bad):
    rows = _rows("morphling_go_control", ["a"] * 3, [1, 2, 3])
    with pytest.raises(InputError) as e:
        make_folds(rows, bad)
    assert e.value.field == "--cv"


def test_a_grouping_that_holds_out_nothing_says_so():
    with pytest.raises(InputError, match="holds out no row"):
        make_folds(_rows("morphling_go_control", ["a", "b"], [1, 1]), "first:1")


def test_registered_grouping_is_used():
    register_grouping("evens", lambda rows, arg: [Fold("evens", tuple(range(0, len(rows), 2)),
                                                       tuple(range(1, len(rows), 2)))])
    try:
        (f,) = make_folds(_rows("morphling_go_control", ["a"] * 4, [1, 2, 3, 4]), "evens:")
        assert f.test == (1, 3)
    finally:
        GROUPINGS.pop("evens")


def test_cross_validation_refits_without_held_out_rows_and_reports_coverage():
    rows = load_rows("morphling-go")
    res = cross_validate(rows, "first:3")
    held_ids = {h.id for h in res.held}
    assert held_ids == {"C04", "C23", "C42", "C61", "C80"}     # fixed curves: 3 points only
    # the refit must differ from a fit that saw everything (it did not see them)
    full = SystemFitter("morphling-go").fit(rows).profile_
    assert any(res.profiles[0][k] != pytest.approx(full[k], rel=1e-6)
               for k in ("hop_us", "morphling_extra_us"))
    s = res.summary[("morphling_go_control", "ops")]
    assert s.n == 5 and s.unit == "ops/s" and 0 <= s.coverage <= 1 and s.n_intervals == 5
    for h in res.held:
        assert h.lo is not None and h.lo <= h.predicted <= h.hi


def test_rows_of_two_systems_are_refused():
    rows = load_rows("morphling-go")[:3] + load_rows("morphling-c")
    with pytest.raises(InputError, match="different fitters"):
        cross_validate(rows, "first:1")


def test_cli_cv_prints_a_table_with_units_and_bad_group_exits_2(capsys):
    assert calibrate_main(["validate", "--cv", "first:1", "--runs", "data/morphling_c.csv",
                           "--summary-only"]) == 0
    out = capsys.readouterr().out
    assert "morphling_c" in out and "Kops" in out and "coverage" in out
    assert calibrate_main(["validate", "--cv", "first:9", "--runs", "data/morphling_c.csv"]) == 2
    err = capsys.readouterr().err
    assert "holds out no row" in err and "Traceback" not in err
    assert calibrate_main(["validate", "--runs", "data/morphling_c.csv"]) == 2
    assert "--profile" in capsys.readouterr().err


def test_cli_cv_out_writes_every_held_out_cell(tmp_path, capsys):
    """``--out`` with ``--cv`` writes one row per held-out cell (it was silently
    ignored): unit, out-of-sample prediction, interval, error, and the run's own
    columns, matching the table's summary."""
    import csv
    out = tmp_path / "held.csv"
    assert calibrate_main(["validate", "--cv", "first:1", "--runs", "data/morphling_c.csv",
                           "--summary-only", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and f"{len(rows)} held-out cells" in printed.err
    assert rows[0].keys() >= {"fold", "kind", "id", "column", "unit", "measured", "predicted",
                              "lo", "hi", "ape_pct", "inside"}
    with open("data/morphling_c.csv", newline="") as fh:
        own = set(next(csv.reader(fh)))
    assert own - {"id"} <= set(rows[0])           # the user's columns come along
    for r in rows:
        m, p = float(r["measured"]), float(r["predicted"])
        assert float(r["ape_pct"]) == pytest.approx(abs(p - m) / abs(m) * 100, abs=1e-3)
        assert r["inside"] == str(int(float(r["lo"]) <= m <= float(r["hi"])))
        assert r["unit"] != ""
    import re
    header = re.search(r"(\d+) held-out cells;", printed.out)
    assert header and int(header.group(1)) == len(rows)


def test_cli_cv_refuses_html_and_a_bad_out_before_refitting(tmp_path, capsys):
    assert calibrate_main(["validate", "--cv", "first:1", "--runs", "data/morphling_c.csv",
                           "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "--html" in err and "--out" in err and "Traceback" not in err
    assert calibrate_main(["validate", "--cv", "first:1", "--runs", "data/morphling_c.csv",
                           "--out", str(tmp_path / "missing" / "held.csv")]) == 2
    err = capsys.readouterr().err
    assert "missing" in err and "Traceback" not in err and "refit" not in err
    assert calibrate_main(["validate", "--cv", "first:1", "--runs", "data/morphling_c.csv",
                           "--out", "data/morphling_c.csv"]) == 2
    assert "Traceback" not in capsys.readouterr().err


# ---- intervals ------------------------------------------------------------------

def _linear_profile(sd_a: float, noise: float) -> Profile:
    return Profile("t", {"a": Param(2.0, "us", "x"), "b": Param(5.0, "us", "x")}, {},
                   {"params": ["a"], "log_covariance": [[sd_a ** 2]]}, {"y": noise})


def test_interval_of_a_log_normal_parameter_matches_its_quantiles():
    p = _linear_profile(0.1, 0.0)
    lo, hi = predict_interval(lambda q: {"y": q["a"] * 3.0}, p, level=0.9, draws=4000)["y"]
    z = 1.6448536
    assert lo == pytest.approx(6.0 * math.exp(-z * 0.1), rel=0.02)
    assert hi == pytest.approx(6.0 * math.exp(z * 0.1), rel=0.02)


def test_noise_alone_and_parameter_spread_combine():
    only_noise = Profile("t", {"a": Param(2.0, "us", "x")}, {}, None, {"y": 0.2})
    lo, hi = predict_interval(lambda q: {"y": q["a"]}, only_noise, draws=4000)["y"]
    assert math.log(hi / lo) == pytest.approx(2 * 1.6448536 * 0.2, rel=0.05)
    both = _linear_profile(0.2, 0.2)
    lo2, hi2 = predict_interval(lambda q: {"y": q["a"]}, both, draws=4000)["y"]
    assert math.log(hi2 / lo2) == pytest.approx(2 * 1.6448536 * 0.2 * math.sqrt(2), rel=0.06)


def test_interval_coverage_by_simulation():
    # y = a x with log(a) ~ N(log 2, 0.1^2) and noise 0.05: 90 % of new draws inside
    p = _linear_profile(0.1, 0.05)
    lo, hi = predict_interval(lambda q: {"y": q["a"] * 10}, p, draws=2000)["y"]
    rng = np.random.default_rng(5)
    new = 20 * np.exp(rng.normal(0, 0.1, 20000) + rng.normal(0, 0.05, 20000))
    assert np.mean((new >= lo) & (new <= hi)) == pytest.approx(0.9, abs=0.02)


def test_with_intervals_adds_columns_only_for_profiles_with_tables():
    def row_fn(row, prof):
        return {"pred_y": prof["a"] * float(row["x"])}
    f = with_intervals(row_fn, "k")
    plain = Profile("t", {"a": Param(2.0, "us", "x")})
    assert f({"x": "3"}, plain) == {"pred_y": 6.0}
    out = f({"x": "3"}, _linear_profile(0.1, 0.05))
    assert out["pred_y_lo"] < out["pred_y"] < out["pred_y_hi"]


def test_fitted_uncertainty_recovers_a_known_covariance_and_caps_unconstrained():
    x = np.linspace(1, 10, 50)
    a = 2.0
    jac = np.column_stack([1 / a * np.ones_like(x), np.zeros_like(x)])   # d log(y)/d a; b unused
    rng = np.random.default_rng(1)
    r = rng.normal(0, 0.05, len(x))
    unc, noise = fitted_uncertainty(["a", "b"], [a, 1.0], jac, r, ["k.y"] * len(x))
    assert unc["params"] == ["a"]                 # b does not move the residuals
    var = unc["log_covariance"][0][0]
    assert var == pytest.approx(float(r @ r) / (len(x) - 2) / len(x), rel=1e-4)
    # noise from leave-one-out residuals: each of the 50 cells has leverage 1/50
    assert noise["k.y"] == pytest.approx(math.sqrt(np.mean(r * r)) / (1 - 1 / len(x)), rel=1e-9)
    unc2, _ = fitted_uncertainty(["a"], [a], jac[:, :1] * 1e-6, r, ["k.y"] * len(x))
    assert unc2["log_covariance"][0][0] == pytest.approx(1.0)        # capped at log-sd 1


def test_noise_counts_a_cell_that_alone_pins_a_parameter_as_if_left_out():
    """A cell whose residual only one parameter moves fits itself exactly in the
    linearised problem (leverage 1); its noise is its error capped at h = 0.9
    (x 10), and it does not touch the noise of the cells beside it."""
    rng = np.random.default_rng(2)
    r = np.concatenate([rng.normal(0, 0.05, 40), [0.02]])
    jac = np.zeros((41, 2))
    jac[:40, 0] = 1.0                  # parameter a: the 40 cells of column y
    jac[40, 1] = 1.0                   # parameter b: the lone cell of column z
    _, noise = fitted_uncertainty(["a", "b"], [1.0, 1.0], jac, r, ["k.y"] * 40 + ["k.z"])
    assert noise["k.z"] == pytest.approx(0.2, rel=1e-9)
    assert noise["k.y"] == pytest.approx(math.sqrt(np.mean(r[:40] ** 2)) / (1 - 1 / 40), rel=1e-9)
    # a prior term (column None) is not a measurement but shares the leverage
    jp = np.vstack([jac, [0.0, 1.0]])
    _, n2 = fitted_uncertainty(["a", "b"], [1.0, 1.0], jp, np.append(r, 0.0),
                               ["k.y"] * 40 + ["k.z", None])
    assert n2["k.z"] == pytest.approx(0.02 / 0.5, rel=1e-9)


def test_a_weighted_objective_gives_the_noise_of_the_unweighted_errors():
    """The FarReach fit weighs its columns (the objective's balance), but a
    column's noise is the spread of the data's own log errors: weights=
    divides each left-out residual by its term's weight. A fit whose terms all
    carry one weight has the leverages of the unweighted fit, so it gives the
    unweighted noise; with unequal weights a column's left-out errors are its
    own errors over (1 - h), h the weighted fit's leverage. The leverages do
    not depend on whether a positive parameter is fitted as its value or its
    log."""
    rng = np.random.default_rng(3)
    r = rng.normal(0, 0.05, 30)
    jac = np.column_stack([np.ones(30), rng.normal(0, 1, 30)])
    cols = ["k.y"] * 20 + ["k.z"] * 10
    _, plain = fitted_uncertainty(["a", "b"], [2.0, 0.5], jac, r, cols)
    w = np.full(30, 3.0)
    _, scaled = fitted_uncertainty(["a", "b"], [2.0, 0.5], jac * w[:, None], r * w, cols, weights=w)
    assert scaled == pytest.approx(plain, rel=1e-9)
    w = np.array([3.0] * 20 + [0.5] * 10)
    jw = jac * w[:, None]
    _, weighted = fitted_uncertainty(["a", "b"], [2.0, 0.5], jw, r * w, cols, weights=w)
    h = np.einsum("ij,jk,ik->i", jw, np.linalg.inv(jw.T @ jw), jw)
    loo = r / (1.0 - h)
    assert weighted["k.z"] == pytest.approx(math.sqrt(np.mean(loo[20:] ** 2)), rel=1e-9)
    assert weighted["k.z"] != pytest.approx(plain["k.z"], rel=1e-3)
    _, as_logs = fitted_uncertainty(["a", "b"], [7.0, 0.01], jac, r, cols)
    assert as_logs == pytest.approx(plain, rel=1e-9)


def test_profile_tables_round_trip_and_bad_tables_are_located(tmp_path):
    p = _linear_profile(0.1, 0.05)
    p = Profile(p.name, p.params, {"name": "t"}, p.uncertainty, {"y": 0.05, "kind.y": 0.1})
    f = tmp_path / "p.toml"
    save_profile(p, f)
    q = load_profile(str(f))
    assert q.uncertainty == p.uncertainty and q.noise == p.noise
    assert q.with_values({"a": 3.0}, "x").uncertainty is None      # a changed profile has none
    text = f.read_text().replace("log_covariance = [", "log_covariance = [[1.0, 2.0],")
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(InputError) as e:
        load_profile(str(bad))
    assert e.value.field == "uncertainty.log_covariance" and str(bad) in str(e.value)
    for name in ("morphling-c", "morphling-go", "runtimes", "thread-coroutine"):
        emb = load_profile(name)
        assert emb.uncertainty and emb.noise
