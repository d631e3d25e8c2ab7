"""Every benchmark imports, and the simulator's runs end to end on a tiny horizon.

The benchmarks are one command each and are not run in CI (they measure
speed); this keeps them from rotting: bench_sim.py imported a function that
no longer existed and failed before printing anything, unnoticed, for weeks."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted((ROOT / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("path", BENCHES, ids=[p.stem for p in BENCHES])
def test_benchmark_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(path.parent))  # as when run as a script: its folder first
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)                  # top-level imports only: main() is guarded
    assert callable(getattr(mod, "main", None))


def test_bench_sim_runs_and_reports_its_ratios():
    out = subprocess.run([sys.executable, "benchmarks/bench_sim.py", "--seconds", "0.05",
                          "--simpy-seconds", "0.002", "--repeat", "1", "--no-process"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "x SimPy" in out.stdout and "against the default rack" in out.stdout


def test_bench_predict_runs_and_reports_its_ratios():
    out = subprocess.run([sys.executable, "benchmarks/bench_predict.py", "--rows", "60",
                          "--repeat", "1"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert "x bare python" in out.stdout and "0 unsettled" in out.stdout
