"""Plans are resumable: interrupt after k runs, resume, nothing lost or repeated."""

import csv

import pytest

from calibrate import cli, local_runner
from calibrate.local_runner import NativeUnavailable, run_plan
from calibrate.plan import expand, plan_from_mapping

PLAN = {"name": "fake", "design": "oat", "factors": {"clients": [1, 2, 4, 8, 16],
                                                     "workers": [1, 3]}}


class FakeRunner:
    """Measures a configuration instantly; raises KeyboardInterrupt on call number `stop_at`."""

    def __init__(self, stop_at=None):
        self.calls = []
        self.stop_at = stop_at

    def __call__(self, cfg):
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(cfg["config_hash"])
        return {"mops": 0.01 * cfg["clients"] / cfg["workers"], "process_us": 20.0 + cfg["workers"],
                "wait_us": 1.0, "wait_stat": "avg", "send_us": 3.0, "completed": 1000,
                "elapsed_s": 1.0}


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_interrupt_and_resume(tmp_path):
    out = tmp_path / "runs.csv"
    points = expand(plan_from_mapping(PLAN), cores=2)
    assert len(points) == 7
    first = FakeRunner(stop_at=3)
    with pytest.raises(KeyboardInterrupt):
        run_plan(points, str(out), first, progress=False)
    saved = _rows(out)
    assert [r["config_hash"] for r in saved] == first.calls == [p["config_hash"] for p in points[:3]]
    second = FakeRunner()
    counts = run_plan(points, str(out), second, progress=False)
    assert counts == {"planned": 7, "skipped": 3, "ran": 4}
    assert second.calls == [p["config_hash"] for p in points[3:]]        # nothing repeated
    rows = _rows(out)
    assert [r["config_hash"] for r in rows] == [p["config_hash"] for p in points]  # nothing lost
    assert float(rows[4]["mops"]) == pytest.approx(0.01 * points[4]["clients"] / points[4]["workers"])
    third = FakeRunner()
    assert run_plan(points, str(out), third, progress=False)["ran"] == 0 and third.calls == []


def test_run_without_native_says_how_to_build(tmp_path, monkeypatch, capsys):
    def missing():
        raise NativeUnavailable(local_runner.BUILD_HINT)
    monkeypatch.setattr(local_runner, "require_native", missing)
    rc = cli.main(["run", "--out", str(tmp_path / "r.csv"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "pip install" in err and "Traceback" not in err
    assert not (tmp_path / "r.csv").exists()


def test_run_bad_plan_names_key(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    plan.write_text('[factors]\nclients = [1, -4]\n')
    rc = cli.main(["run", "--plan", str(plan), "--out", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "factors.clients[1]" in err and str(plan) in err


def test_dry_run_lists_points(tmp_path, capsys):
    rc = cli.main(["run", "--dry-run", "--out", str(tmp_path / "r.csv")])
    out = capsys.readouterr().out
    assert rc == 0 and "default-001" in out and " ms" in out
