"""Long work shows progress and stops cleanly on Ctrl-C: exit code 130, what was
finished printed or written and marked partial (runio.progress)."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cli import main as cli
from runio.progress import Interrupted, partial_text, wanted
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--set", "servers=2", "--set", "clients=8", "--set", "workload.records=100000"]


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_progress_policy(monkeypatch):
    assert wanted(True, json=True) is True and wanted(False) is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert wanted(None) is True and wanted(None, json=True) is False
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert wanted(None) is False
    assert str(Interrupted(3, 10, "rows", "see x.csv")) == \
        "PARTIAL: interrupted after 3 of 10 rows; see x.csv"
    assert partial_text(2.0, 5.0, "s simulated") == "PARTIAL: interrupted after 2 of 5 s simulated"


def _interrupt_on_call(monkeypatch, n: int):
    from sim import fast
    real = fast.FastEngine.run_until
    calls = {"n": 0}

    def run_until(self, t_us, done_cap=float("inf")):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(self, t_us, done_cap)
    monkeypatch.setattr(fast.FastEngine, "run_until", run_until)


def test_simulate_interrupted_marks_table_json_and_timeline(tmp_path, monkeypatch, capsys):
    tl = tmp_path / "tl.csv"
    _interrupt_on_call(monkeypatch, 3)
    rc = cli.main(["simulate", "--seconds", "5", "--timeline", str(tl), "--no-progress"] + SMALL)
    out, err = capsys.readouterr()
    assert rc == 130
    assert out.startswith("PARTIAL: interrupted after 2 of 5 s simulated\n")
    assert "PARTIAL: interrupted after 2 of 5 s simulated" in err and str(tl) in err
    rows = _csv(tl)
    assert len(rows) == 2 and {r["partial"] for r in rows} == {"true"}

    _interrupt_on_call(monkeypatch, 2)
    rc = cli.main(["simulate", "--seconds", "5", "--json"] + SMALL)
    d = json.loads(capsys.readouterr().out)
    assert rc == 130 and d["partial"] is True and d["details"]["interrupted"] is True


def test_finished_simulation_is_not_partial(tmp_path, capsys):
    tl = tmp_path / "tl.csv"
    assert cli.main(["simulate", "--seconds", "1", "--json", "--timeline", str(tl)] + SMALL) == 0
    assert json.loads(capsys.readouterr().out)["partial"] is False
    assert "partial" not in tl.read_text().splitlines()[0]


def test_batch_interrupted_writes_rows_so_far(tmp_path, monkeypatch, capsys):
    from runio.kinds import KINDS
    kind = KINDS["farreach_runs"]
    calls = {"n": 0}
    from runio.row_prediction import predict_kind_rows

    def real(row, profile):                # the original kind, solved alone
        return predict_kind_rows(kind, [row], profile)[0]

    def predict_row(row, profile):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(row, profile)
    # row by row (no rack form), so the interrupt comes after exactly three rows
    monkeypatch.setitem(KINDS, "farreach_runs", dataclasses.replace(kind, predict_row=predict_row,
                                                                    rack=None))
    out = tmp_path / "p.csv"
    rc = cli.main(["predict", "--runs", str(ROOT / "examples" / "runs.csv"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 130 and "PARTIAL: interrupted after 3 of 10 rows" in err and str(out) in err
    rows = _csv(out)
    assert len(rows) == 3 and {r["partial"] for r in rows} == {"true"} and rows[0]["pred_mops"]


def test_cross_validation_interrupted_reports_folds_done(capsys):
    from calibrate.cv import cross_validate, format_cv
    from calibrate.runs_io import load_runs

    class OneFitThenCtrlC:
        fits = 0

        def fit(self, rows):
            OneFitThenCtrlC.fits += 1
            if OneFitThenCtrlC.fits == 2:
                raise KeyboardInterrupt
            self.profile_ = load_profile("tofino-testbed")
            return self

    _, rows = load_runs(str(ROOT / "examples" / "runs.csv"))
    res = cross_validate(rows, "column:block", fitter=OneFitThenCtrlC)
    assert res.partial and len(res.folds) == 1 and res.folds_planned == 3
    assert format_cv(res).startswith("PARTIAL: interrupted after 1 of 3 refits")


def test_calibrate_run_interrupted(tmp_path, monkeypatch, capsys):
    from calibrate import cli as ccli
    from calibrate import local_runner
    calls = {"n": 0}

    def fake_run(cfg, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return {"mops": 0.05, "completed": 1000, "wait_stat": "avg"}
    monkeypatch.setattr(local_runner, "native_run", fake_run)
    monkeypatch.setattr(local_runner, "require_native", lambda: None)
    out = tmp_path / "runs.csv"
    rc = ccli.main(["run", "--plan", str(ROOT / "examples" / "local.toml"), "--out", str(out),
                    "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 130 and "PARTIAL: interrupted after 1 of 8 runs" in err and "resume" in err
    assert len(_csv(out)) == 1


def _interrupt(args: list[str], ready: str, *, on_stdout: bool = False, timeout: float = 90,
               delay: float = 0.0) -> tuple[int, str, str]:
    """Run ``python -m args``; once ``ready`` appears on stderr (or stdout), send it
    SIGINT as Ctrl-C does. Returns the exit code, stdout and stderr."""
    p = subprocess.Popen([sys.executable, "-m"] + args, cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out: list[bytes] = []
    err: list[bytes] = []

    def read(stream, sink):
        for chunk in iter(lambda: stream.read1(4096), b""):
            sink.append(chunk)
    threads = [threading.Thread(target=read, args=(p.stdout, out), daemon=True),
               threading.Thread(target=read, args=(p.stderr, err), daemon=True)]
    with p:
        for t in threads:
            t.start()
        try:
            watched = out if on_stdout else err
            end = time.monotonic() + timeout
            while not re.search(ready, b"".join(watched).decode(errors="replace")):
                assert time.monotonic() < end and p.poll() is None, b"".join(err).decode()
                time.sleep(0.1)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            rc = p.wait(60)
        finally:
            if p.poll() is None:
                p.kill()
            for t in threads:
                t.join(5)
    return rc, b"".join(out).decode(), b"".join(err).decode()


def test_simulate_sigint_subprocess(tmp_path):
    """A real Ctrl-C (SIGINT) during `simulate`: exit 130, partial JSON and timeline."""
    tl = tmp_path / "tl.csv"
    # the bar counts simulated seconds: interrupt once one is done
    rc, out, err = _interrupt(["sim", "simulate", "--seconds", "500", "--json", "--progress",
                               "--timeline", str(tl)] + SMALL, r"\b[1-9]\d*(\.\d+)?/500\b")
    assert rc == 130, err
    assert "PARTIAL: interrupted after" in err and "Traceback" not in err
    assert json.loads(out)["partial"] is True
    rows = _csv(tl)
    assert rows and all(r["partial"] == "true" for r in rows)


def test_facts_sigint_subprocess():
    """SIGINT during `python -m sim.facts`: the facts so far, a PARTIAL line, exit 130."""
    # Interrupt once the first fact is printed: by then the kernel is compiled.
    # (A Ctrl-C that lands while numba compiles is swallowed inside llvmlite's
    # ctypes callback -- a known limit, docs/contracts.md.)
    rc, out, err = _interrupt(["sim.facts", "--scale", "0.25", "--no-progress"], r"1\. ",
                              on_stdout=True, delay=0.2)
    assert rc == 130, err
    assert re.search(r"PARTIAL: interrupted after \d of 6 facts", out)
    assert "Traceback" not in err


def test_batch_bar_moves_while_a_chunk_of_racks_is_solved(monkeypatch):
    """A chunk of rows is solved as one batch of racks; its bar must move as the
    racks finish, not jump at the end (slow racks would look like a hang)."""
    import runio.row_prediction as rp
    from runio.kinds import KINDS
    from runio import batch, progress

    seen = []

    class Recorder:
        def __init__(self, total, *a, **k):
            self.total, self.n = total, 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def refresh(self):
            seen.append(self.n)

    real = rp.solve_grid
    # one scenario per block of the grid, so every rack is a step of progress
    monkeypatch.setattr(rp, "solve_grid", lambda s, p, f, prog=None: real(s, p, f, prog, chunk=1))
    monkeypatch.setattr(progress, "bar", Recorder)
    kind = KINDS["farreach_runs"]
    _, rows = batch.read_runs(ROOT / "examples" / "runs.csv")
    rows = rows[:3]
    out = list(batch.predict_rows(kind, rows, load_profile(kind.profile), "runs.csv",
                                  progress=True, intervals=False))
    assert len(out) == 3
    assert seen[-1] == 3 and seen == sorted(seen)
    assert any(0 < n < 3 for n in seen), seen          # moved inside the chunk


def test_batch_interrupted_keeps_every_piece_of_racks_solved(tmp_path, monkeypatch, capsys):
    """Rack rows are solved in pieces, smallest rack first. Ctrl-C during the
    second piece keeps the first piece's rows, whichever lines they are on,
    in the input's order; a rack two pieces need is solved once."""
    import runio.row_prediction as rp
    from runio import batch
    header, rows = batch.read_runs(ROOT / "examples" / "runs.csv")
    # three rows; the smallest rack is on the last line
    pick = [dict(rows[0], id="A", servers="8", clients="256"),
            dict(rows[1], id="B", servers="4", clients="128"),
            dict(rows[0], id="C", servers="1", clients="32")]
    src = tmp_path / "runs.csv"
    with open(src, "w", newline="") as fh:
        w = csv.DictWriter(fh, header, extrasaction="ignore")
        w.writeheader()
        w.writerows(pick)
    real, pieces = rp.solve_grid, []

    def solve_grid(scs, profs, fn, prog=None):
        pieces.append(list(scs))
        if len(pieces) == 2:
            raise KeyboardInterrupt
        return real(scs, profs, fn, prog)
    monkeypatch.setattr(rp, "solve_grid", solve_grid)
    monkeypatch.setattr(batch, "rows_per_piece", lambda *a: 1)
    out = tmp_path / "p.csv"
    rc = cli.main(["predict", "--runs", str(src), "--out", str(out)])
    assert rc == 130 and "PARTIAL: interrupted after 1 of 3 rows" in capsys.readouterr().err
    kept = _csv(out)
    assert [(r["id"], r["servers"], r["partial"]) for r in kept] == [("C", "1", "true")]
    assert float(kept[0]["pred_mops"]) > 0

    # uninterrupted, with one row per piece: the FarReach row's NoCache baseline
    # is the NoCache row's rack, solved in the first piece that needs it only
    monkeypatch.setattr(rp, "solve_grid", lambda scs, profs, fn, prog=None:
                        (pieces.append(list(scs)), real(scs, profs, fn, prog))[1])
    pieces.clear()
    same = [dict(rows[0], id="A", servers="4", clients="128"),
            dict(rows[1], id="B", servers="4", clients="128")]
    got = dict(batch.predict_rows(batch.detect(header, "x"), same, batch.load_profile("tofino-testbed"),
                                  "x", intervals=False))
    solved = [s for p in pieces for s in p]
    assert len(solved) == len(set(solved)) == 2 and set(got) == {0, 1}
    whole = batch.predict_kind_rows(batch.detect(header, "x"), same,
                                    batch.load_profile("tofino-testbed"), intervals=False)
    assert [got[0], got[1]] == whole


def _plan_csv(path: Path, rows: int) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_predict import plan, write_plan_csv
    finally:
        sys.path.pop(0)
    write_plan_csv(plan(rows), path)
    return path


def test_batch_in_worker_processes_matches_one_process(tmp_path):
    """--jobs 2 solves the pieces of a plan in two worker processes, largest
    racks first; every row gets the same prediction as in one process, up to
    the fixed point's tolerance (a piece's batch differs, so its path does)."""
    runs = _plan_csv(tmp_path / "plan.csv", 300)
    outs = {}
    for jobs in ("1", "2"):
        outs[jobs] = tmp_path / f"out{jobs}.csv"
        done = subprocess.run([sys.executable, "-m", "sim", "predict", "--runs", str(runs),
                               "--out", str(outs[jobs]), "--no-intervals", "--jobs", jobs,
                               "--progress"], cwd=ROOT, check=True, capture_output=True,
                              text=True, timeout=300)
        assert "300/300" in done.stderr          # the bar reaches the end either way
    one, two = _csv(outs["1"]), _csv(outs["2"])
    assert [r["id"] for r in one] == [r["id"] for r in two] == [f"P{i:04d}" for i in range(300)]
    for a, b in zip(one, two):
        assert a.keys() == b.keys()
        for col in ("pred_mops", "pred_wait_us", "pred_process_us"):
            x, y = float(a[col]), float(b[col])
            assert abs(x - y) <= 1e-4 * abs(x), (a["id"], col, x, y)


def test_batch_jobs_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:      # refused by the argument parser
        cli.main(["predict", "--runs", str(ROOT / "examples" / "runs.csv"), "--out",
                  str(tmp_path / "p.csv"), "--jobs", "0"])
    assert exc.value.code == 2 and "--jobs" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()


def test_batch_in_worker_processes_interrupted(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while worker
    processes solve: exit 130, the finished pieces' rows written and marked
    partial, no traceback, and no worker left behind."""
    runs = _plan_csv(tmp_path / "plan.csv", 1200)
    # The pieces are of about equal work, two per worker: the first ones
    # finish near half of an uninterrupted run, which is timed first (its
    # time includes what the second run finds compiled: stop at half of it)
    t0 = time.monotonic()
    # its own process group, killed whole if it runs out of time (a timeout
    # that killed the command alone left its two workers running)
    # (no intervals: the signal's handling does not depend on them, and the
    # finite-run write path makes a plan's intervals minutes of work)
    first = subprocess.Popen([sys.executable, "-m", "sim", "predict", "--runs", str(runs),
                              "--out", str(tmp_path / "whole.csv"), "--no-intervals",
                              "--jobs", "2"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        _, err0 = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 0, err0.decode()[-2000:]
    whole = time.monotonic() - t0
    assert len(_csv(tmp_path / "whole.csv")) == 1200
    out = tmp_path / "p.csv"
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "sim", "predict", "--runs", str(runs), "--out",
                          str(out), "--no-intervals", "--jobs", "2"], cwd=ROOT,
                         stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    children: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(children) < 2 and p.poll() is None:
        time.sleep(0.1)
        try:
            children = [int(c) for c in
                        Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
        except OSError:
            children = []
    assert len(children) == 2, "the workers never started"
    time.sleep(max(0.0, 0.6 * whole - (time.monotonic() - t0)))    # a piece or two are done
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    err = err.decode()
    assert p.returncode == 130, err
    assert "PARTIAL: interrupted after" in err and "Traceback" not in err
    rows = _csv(out)
    assert 0 < len(rows) < 1200 and {r["partial"] for r in rows} == {"true"}
    time.sleep(0.5)
    assert not any(Path(f"/proc/{c}").exists() and
                   "zombie" not in Path(f"/proc/{c}/status").read_text().lower()
                   for c in children)


def _worker_dies(task):                 # a piece whose worker is killed (out of memory, say)
    os._exit(9)


def test_batch_worker_killed_is_a_clear_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    """A worker process that dies without a result (the OOM killer, kill -9)
    breaks the pool: the command says so, names --jobs, keeps the rows
    finished before marked partial -- none here, so no file is left: a
    partial output always has a row and its partial column, or is not
    written --, and exits 1 without a traceback. Workers are forked, so they
    run the patched piece solver."""
    from runio import batch
    monkeypatch.setattr(batch, "_solve_piece", _worker_dies)
    runs = _plan_csv(tmp_path / "plan.csv", 200)
    out = tmp_path / "p.csv"
    rc = cli.main(["predict", "--runs", str(runs), "--out", str(out), "--no-intervals",
                   "--jobs", "2"])
    msg = capsys.readouterr().err
    assert rc == 1 and "--jobs 1" in msg and "ended abruptly" in msg and str(out) in msg
    assert "Traceback" not in msg and "not written" in msg
    assert not out.exists()                      # no row was finished


def test_one_prediction_with_its_interval_shows_its_racks(capsys):
    """``predict`` solves the centre and every sigma point (seconds to a
    minute where workers can collapse): with --progress a bar counts those
    racks on stderr up to all of them; the answer on stdout is the same as
    without it."""
    from model.intervals import sigma_profiles
    racks = 1 + len(sigma_profiles(load_profile("tofino-testbed"))[0])
    args = ["predict", "--set", "clients.timeout_ms=5", "--json"]
    assert cli.main(args + ["--progress"]) == 0
    out, err = capsys.readouterr()
    counts = [int(a) for a, b in re.findall(r"(\d+)/(\d+) \[", err) if int(b) == racks]
    assert counts and counts[-1] == racks and counts == sorted(counts)
    assert cli.main(args) == 0                     # --json: no bar unless asked
    out2, err2 = capsys.readouterr()
    assert out2 == out and "rack" not in err2


def test_solve_many_reports_racks_as_they_finish():
    """solve_many's progress hook: racks counted in order up to the total,
    cold and started from a guess (an interval's sigma points)."""
    from model.intervals import sigma_profiles
    from model.rack import compile_rack
    from model.scenario import Scenario
    from model.solvers import analytic
    prof = load_profile("tofino-testbed")
    sc = Scenario.default().updated({"clients.timeout_ms": 5.0})
    profs = [prof, *sigma_profiles(prof)[0][:3]]
    specs = [compile_rack(sc, p) for p in profs]
    centre = analytic.solve(specs[0]).throughput_mops
    for starts in (None, [None, centre, centre, centre]):
        seen = []
        analytic.solve_many(specs, starts=starts, progress=lambda d, t: seen.append((d, t)))
        assert seen[-1] == (4, 4)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)
        assert {t for _, t in seen} == {4}
