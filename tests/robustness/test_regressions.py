"""One test per failure listed in issue 15, each run the way the user met it.

Every bad input must end with exit code 2 and one message naming the file,
the line and the user's own column or key, without a traceback, and before
any work is done; no user file may be changed or lost. (The physical cases,
a timeout below the round trip and a profile rate of zero, are in
test_physical.py.)
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from calibrate import cli as ccli
from calibrate.local_runner import SCRATCH_PREFIX, run_plan
from calibrate.plan import expand, plan_from_mapping
from runio import safe_io
from model.errors import InputError
from model.scenario import Scenario
from model.solvers import predict
from cli import main as scli
from runio.inputs import load_profile, load_scenario

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "calibrate" / "fixtures"
RUNS = ROOT / "data" / "farreach_runs.csv"
TUNING = ROOT / "data" / "farreach_tuning.csv"


def fails_cleanly(capsys, main, argv, *words):
    """Exit 2, one located message holding ``words``, no traceback."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:       # refused by the argument parser
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2, err
    # one message (a progress bar may have started before the error)
    assert "Traceback" not in err and err.count("error: ") == 1
    for w in words:
        assert str(w) in err, (w, err)
    return err


def write_rows(path: Path, rows: list[dict], header: list[str] | None = None) -> Path:
    header = header or list(rows[0])
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


def farreach_rows(n: int = 3) -> list[dict]:
    with open(RUNS, newline="") as fh:
        return list(csv.DictReader(fh))[:n]


def no_solving(monkeypatch):
    """Make any solver call fail the test: errors must come before the work."""
    def refuse(*a, **k):
        raise AssertionError("the solver ran before the input was checked")
    import model.solvers as solvers
    monkeypatch.setattr(solvers, "predict_many", refuse)
    monkeypatch.setattr(solvers, "predict", refuse)


# ---------------------------------------------------------------- tracebacks
@pytest.mark.parametrize("changes", [
    {"servers.count": 1, "clients.threads": 1, "clients.timeout_ms": 0.3},
    {"servers.count": 1, "clients.threads": 1, "clients.timeout_ms": 0.5},
    {"servers.count": 12, "clients.threads": 512, "clients.timeout_ms": 1.0},
])
def test_timeout_solver_regions_of_the_issue_solve(changes):
    # brentq "f(a) and f(b) must have different signs" in these regions
    p = predict(Scenario.default().updated(changes), load_profile("tofino-testbed"))
    assert 0 < p.throughput_mops < float("inf")
    assert p.throughput_mops * p.client.latency_us == pytest.approx(changes["clients.threads"])


def test_folder_given_as_an_input_file(tmp_path, capsys):
    fails_cleanly(capsys, scli.main, ["predict", "--runs", tmp_path, "--out", tmp_path / "o.csv"],
                  tmp_path, "--runs", "folder")
    fails_cleanly(capsys, scli.main, ["predict", "--scenario", tmp_path], "--scenario", "folder")
    fails_cleanly(capsys, scli.main, ["predict", "--profile", tmp_path], "--profile", "folder")
    fails_cleanly(capsys, ccli.main, ["run", "--plan", tmp_path, "--dry-run"], "--plan", "folder")
    fails_cleanly(capsys, ccli.main, ["run", "--out", tmp_path, "--dry-run"], "--out", "folder")
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "tofino-testbed", "--runs", tmp_path],
                  "--runs", "folder")
    fails_cleanly(capsys, ccli.main, ["ingest", "--stats", tmp_path, "--out", tmp_path / "o.csv"],
                  "--stats", "folder")


def test_invalid_utf8_is_located(tmp_path, capsys):
    sc = tmp_path / "s.toml"
    sc.write_bytes(b'name = "x"\n[servers]\ncount = 4 # caf\xe9\n')
    fails_cleanly(capsys, scli.main, ["predict", "--scenario", sc], sc, "line 3", "UTF-8")
    plan = tmp_path / "p.toml"
    plan.write_bytes(b'name = "p"\n[factors]\nclients = [1]\n\xff\n')
    fails_cleanly(capsys, ccli.main, ["run", "--plan", plan, "--dry-run"], plan, "line 4")
    runs = tmp_path / "r.csv"
    runs.write_bytes(RUNS.read_bytes().replace(b"stable over", b"stable \xb5 over", 1))
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                  runs, "line 2")


def test_outputs_in_a_missing_folder_fail_before_any_work(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    missing = tmp_path / "nope"
    fails_cleanly(capsys, scli.main, ["predict", "--runs", TUNING, "--out", missing / "o.csv"],
                  "--out", "does not exist")
    fails_cleanly(capsys, scli.main, ["simulate", "--timeline", missing / "t.csv"],
                  "--timeline", "does not exist")
    fails_cleanly(capsys, scli.main, ["predict", "--html", missing / "r.html"], "--html")
    fails_cleanly(capsys, ccli.main, ["fit", "--runs", TUNING, "--out", missing / "p.toml"],
                  "--out")
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "tofino-testbed", "--runs", TUNING,
                                      "--out", missing / "v.csv"], "--out")


@pytest.mark.parametrize("value, words", [
    ("NaN", ["line 2", "NaN"]), ("Infinity", ["line 2", "Infinity"]),
    ("9" * 400, ["line 2", "[0].executionMillis"]), ("1e400", ["[0].executionMillis"]),
])
def test_farreach_stats_numbers_out_of_range(tmp_path, capsys, value, words):
    stats = tmp_path / "c.out"
    stats.write_text('[\n{"totalOpsdone": 1000, "executionMillis": %s, "perserverOpsdone": [400, 600],'
                     ' "perserverCachehits": [100, 200]}]' % value)
    out = tmp_path / "o.csv"
    fails_cleanly(capsys, ccli.main, ["ingest", "--stats", stats, "--set", "system=farreach",
                                      "--out", out], stats, *words)
    assert not out.exists()


def test_deeply_nested_toml_and_json(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000 + "\n")
    for argv in (["predict", "--scenario", deep], ["predict", "--profile", deep]):
        fails_cleanly(capsys, scli.main, argv, deep, "nested too deeply")
    fails_cleanly(capsys, ccli.main, ["run", "--plan", deep, "--dry-run"], deep, "nested")
    fails_cleanly(capsys, scli.main, ["predict", "--set", "servers=" + "[" * 50_000],
                  "servers.count")
    js = tmp_path / "deep.out"
    js.write_text("[" + "[" * 50_000 + "]" * 50_000 + "]")
    fails_cleanly(capsys, ccli.main, ["ingest", "--stats", js, "--out", tmp_path / "o.csv"],
                  js, "nested too deeply")


def test_negative_seed(capsys):
    fails_cleanly(capsys, scli.main, ["simulate", "--seed", "-1", "--seconds", "0.01"], "--seed")
    fails_cleanly(capsys, scli.main, ["predict", "--engine", "sim", "--seed", str(2 ** 64)],
                  "--seed")


# ---------------------------------------------------------------- wrong answers, silently
@pytest.mark.parametrize("column, value, words", [
    ("mops", "abc", ["expected a number"]), ("mops", "-3", ["negative"]),
    ("process_us", "nan", ["expected a number"]), ("wait_us", "1|2|x", ["per-server"]),
    ("mops", "1_000", ["'_'"]), ("send_us", "inf", ["expected a number"]),
])
def test_validate_refuses_bad_measured_values(tmp_path, capsys, monkeypatch, column, value, words):
    no_solving(monkeypatch)
    rows = farreach_rows()
    rows[1][column] = value
    runs = write_rows(tmp_path / "r.csv", rows)
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "tofino-testbed", "--runs", runs],
                  runs, "line 3", f"'{column}'", *words)


def test_fit_refuses_a_negative_throughput_and_writes_nothing(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    rows = farreach_rows()
    rows[2]["mops"] = "-3"
    runs = write_rows(tmp_path / "r.csv", rows)
    out = tmp_path / "p.toml"
    fails_cleanly(capsys, ccli.main, ["fit", "--runs", runs, "--out", out], runs, "line 4", "mops")
    assert not out.exists()


def test_ingest_checks_configuration_and_measurements(tmp_path, capsys):
    out = tmp_path / "o.csv"
    stats = FIX / "farreach-static2-client0.out"
    base = ["ingest", "--stats", stats, "--set", "system=farreach", "--out", out]
    fails_cleanly(capsys, ccli.main, base + ["--set", "servers=-5", "--set", "clients=abc"],
                  "--set", "servers")
    fails_cleanly(capsys, ccli.main, base + ["--set", "clients=abc"], "--set", "'clients'")
    fails_cleanly(capsys, ccli.main, base + ["--set", "pktloss=-2"], "'pktloss'")
    zero = tmp_path / "zero.out"
    zero.write_text('[{"totalOpsdone": 500, "executionMillis": 0, "perserverOpsdone": [5],'
                    ' "perserverCachehits": [0]}]')
    fails_cleanly(capsys, ccli.main, ["ingest", "--stats", zero, "--out", out],
                  zero, "executionMillis")
    assert not out.exists()


# ---------------------------------------------------------------- files changed or lost
def test_appending_never_cuts_a_file(tmp_path, capsys):
    f = tmp_path / "f.csv"
    f.write_text("keep me")
    fails_cleanly(capsys, ccli.main, ["ingest", "--stats", FIX / "farreach-static2-client0.out",
                                      "--set", "system=farreach", "--out", f], f)
    assert f.read_text() == "keep me"
    fails_cleanly(capsys, ccli.main, ["run", "--plan", ROOT / "calibrate/plans/default.toml",
                                      "--out", f, "--dry-run"], f)
    assert f.read_text() == "keep me"


def test_finished_run_without_newline_is_kept_and_not_run_again(tmp_path):
    out = tmp_path / "runs.csv"
    points = expand(plan_from_mapping({"name": "t", "design": "points",
                                       "points": [{"clients": 1}, {"clients": 2}]}), cores=2)
    measured = {"mops": 0.01, "wait_us": 1.0, "process_us": 20.0, "wait_stat": "avg"}
    calls = []

    def runner(cfg):
        calls.append(cfg["config_hash"])
        return dict(measured)
    run_plan(points[:1], str(out), runner, progress=False)
    out.write_bytes(out.read_bytes().rstrip(b"\n"))         # an editor dropped the newline
    kept = out.read_text()
    run_plan(points, str(out), runner, progress=False)
    assert calls == [points[0]["config_hash"], points[1]["config_hash"]]
    assert out.read_text().startswith(kept + "\n")
    with open(out, newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 2


def test_out_equal_to_runs_is_refused(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    runs = tmp_path / "r.csv"
    runs.write_bytes(TUNING.read_bytes())
    before = runs.read_bytes()
    alias = tmp_path / "." / "r.csv"
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", alias], "also an input")
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "tofino-testbed", "--runs", runs,
                                      "--out", runs], "also an input")
    assert runs.read_bytes() == before


def test_a_failed_write_leaves_the_old_file(tmp_path):
    out = tmp_path / "o.csv"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with safe_io.atomic_write(out) as fh:
            fh.write("new, half")
            raise RuntimeError("disk full")
    assert out.read_text() == "old\n"
    assert list(tmp_path.iterdir()) == [out]                  # no temporary file left


def test_sigkilled_run_leaves_no_folder_after_the_next_start(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = Path(tempfile.gettempdir()) / f"{SCRATCH_PREFIX}{dead}-test"
    stale.mkdir(exist_ok=True)
    (stale / "000001.sst").write_bytes(b"x" * 1024)
    mine = safe_io.scratch_dir(SCRATCH_PREFIX)
    try:
        run_plan([], str(tmp_path / "r.csv"), lambda cfg: {}, progress=False)
        assert not stale.exists() and os.path.isdir(mine)     # a live process keeps its own
    finally:
        os.rmdir(mine)


def test_sigterm_runs_cleanup():
    with pytest.raises(SystemExit) as ei:
        with safe_io.exit_on_sigterm():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):                              # the handler runs between bytecodes
                pass
    assert ei.value.code == 143


# ---------------------------------------------------------------- unclear messages
def test_toml_value_error_names_file_and_line(tmp_path, capsys):
    sc = tmp_path / "s.toml"
    sc.write_text('name = "x"\n\n[servers]\ncount = 4\nrcvbuf_kb = "big"\n')
    fails_cleanly(capsys, scli.main, ["predict", "--scenario", sc], sc, "line 5",
                  "servers.rcvbuf_kb")


def test_profile_value_error_names_the_parameter(tmp_path, capsys):
    text = (ROOT / "model/profiles/tofino-testbed.toml").read_text()
    bad = tmp_path / "p.toml"
    bad.write_text(text.replace("[params.send_base_us]\nvalue = ", "[params.send_base_us]\nvalue = -"))
    err = fails_cleanly(capsys, scli.main, ["predict", "--profile", bad], bad, "send_base_us")
    assert "think_time" not in err


def test_csv_errors_name_the_column_and_real_line(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    rows = farreach_rows()
    rows[0]["note"] = "two\nlines"                             # a quoted newline
    rows[2]["memtable_mb"] = "0.01"                          # below the scenario key's range
    runs = write_rows(tmp_path / "r.csv", rows)
    err = fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                        runs, "line 5", "'memtable_mb'")
    assert "field 'storage.memtable_mb'" not in err


def test_bad_row_2000_is_reported_before_any_work(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    rows = farreach_rows(1) * 2000
    rows = [{**r, "id": f"R{i}"} for i, r in enumerate(rows)]
    rows[-1]["clients"] = "many"
    runs = write_rows(tmp_path / "r.csv", rows)
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                  "line 2001", "'clients'")
    rows[-1]["clients"] = "32"
    rows[-1]["mops"] = "fast"
    write_rows(runs, rows)
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "tofino-testbed", "--runs", runs],
                  "line 2001", "'mops'")


def test_bad_local_run_is_reported_before_any_work(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    with open(ROOT / "calibrate/runs/local.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[-1]["workers"] = "0"
    runs = write_rows(tmp_path / "local.csv", rows)
    line = f"line {len(rows) + 1}"
    fails_cleanly(capsys, ccli.main, ["validate", "--profile", "local", "--runs", runs],
                  line, "'workers'")
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                  line, "'workers'")


def test_duplicate_ids_and_underscored_numbers(tmp_path, capsys, monkeypatch):
    no_solving(monkeypatch)
    rows = farreach_rows()
    rows[2]["id"] = rows[0]["id"]
    runs = write_rows(tmp_path / "r.csv", rows)
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                  "line 4", "line 2", "'id'")
    rows = farreach_rows()
    rows[1]["clients"] = "1_000"
    write_rows(runs, rows)
    fails_cleanly(capsys, scli.main, ["predict", "--runs", runs, "--out", tmp_path / "o.csv"],
                  "line 3", "'clients'", "1_000")


def test_real_world_text_is_read(tmp_path, monkeypatch):
    """BOM, CRLF line ends and no final newline are what real files have."""
    text = TUNING.read_text()
    odd = tmp_path / "odd.csv"
    odd.write_bytes(b"\xef\xbb\xbf" + text.rstrip("\n").replace("\n", "\r\n").encode())
    from runio.batch import read_runs
    assert read_runs(odd) == read_runs(TUNING)
    sc = tmp_path / "s.toml"
    sc.write_bytes(b'\xef\xbb\xbfname = "crlf"\r\n[servers]\r\ncount = 4')
    assert load_scenario(str(sc)).servers.count == 4
    with pytest.raises(InputError):
        load_scenario(str(tmp_path / "missing.toml"))


def test_a_cache_holding_every_key_leaves_no_negative_share():
    """Found by the soak (seed 2): 4.27M cached keys over 402,892 records left
    shares of -3e-19 after rounding and a NaN normalized gain; a cache that
    answers every request has shares of 0 and an infinite gain."""
    from model.rack import compile_rack
    from model.scenario import Scenario
    from model.solvers import predict_many

    from .laws import violations
    sc = Scenario.default().updated({
        "clients.threads": 2, "clients.timeout_ms": 14450.0, "network.loss_rate": 0.48,
        "switch.mode": "write-back", "switch.cache_keys": 4270848, "servers.count": 14,
        "servers.machines": 2, "workload.records": 402892, "workload.generator": "kvperf",
        "workload.insertorder": "ordered", "workload.read_ratio": 0.506})
    pf = load_profile("tofino-testbed")
    spec = compile_rack(sc, pf)
    assert min(spec.placement.shares) >= 0.0
    pred = predict_many([sc], pf)[0]
    assert violations(pred, spec) == []


def test_a_worker_stopped_and_blocked_counts_as_stalled_once():
    """Soak seed 3, scenario 945 (4 workers, 0.07 MiB memtables, 45 % wire
    loss, 2.5 ms timeout), solved in its batch of 20: the mean-value write-stop
    and WAL-block fractions of a worker added to 1.39, and the stall fraction
    broke [0, 1]. A worker is stopped or blocked, not both: each worker's sum
    is capped at 1."""
    import dataclasses as dc

    from model.prediction import from_outcome
    from model.rack import compile_rack
    from model.solvers import analytic as an
    from model.solvers.analytic import AnalyticSolver
    from model.solvers.outcome import _outcome
    spec = compile_rack(Scenario.default().updated({"servers.count": 4}),
                        load_profile("tofino-testbed"))
    RO, WO, OFF = an._solve_packed([an._pack(spec)])
    out, _ = _outcome(spec, RO[0], WO)
    m = spec.servers
    stuck = dc.replace(out, stall_frac=np.full(m, 0.9), block_frac=np.full(m, 0.5))
    pred = from_outcome(spec, stuck, "analytic", {})
    assert pred.stall_fraction == pytest.approx(1.0)
    assert AnalyticSolver().solve(spec).stall_fraction <= 1.0


@pytest.mark.slow
def test_the_soak_batch_that_stalled_past_one_stays_within_laws():
    from model.rack import compile_rack
    from model.solvers import predict_many

    from .laws import violations
    from .space import FAST, random_scenarios
    prof = load_profile("tofino-testbed")
    batch = random_scenarios(960, 3, FAST)[940:960]
    for sc, pred in zip(batch, predict_many(batch, prof)):
        assert violations(pred, compile_rack(sc, prof)) == []
        assert 0.0 <= pred.stall_fraction <= 1.0
