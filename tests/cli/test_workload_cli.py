"""`python -m sim workload` and `python -m sim workload-fit` as a user runs them."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def run(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "sim", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def as_json(capsys, *args):
    assert main(["workload", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_and_stock_default(capsys):
    d = as_json(capsys)
    for key in ("hit_ratio", "shares", "shares_nocache", "normalized_x", "tolerance",
                "server_hot_fraction", "source", "partition"):
        assert key in d
    n = d["scenario"]["servers"]
    assert len(d["shares"]) == len(d["shares_nocache"]) == n
    assert sum(d["shares"]) == pytest.approx(1 - d["hit_ratio"], abs=1e-9)
    assert sum(d["shares_nocache"]) == pytest.approx(1, abs=1e-9)
    assert d["normalized_x"] == pytest.approx(max(d["shares_nocache"]) / max(d["shares"]))
    # the default: FarReach's default build (hash partitioning), every server gets keys
    assert d["idle_servers"] == 0 and d["source"] == "ycsb" and d["partition"] == "hash"
    # FarReach's public range split: the upper half of the servers get no keys
    r = as_json(capsys, "--set", "switch.partition=range")
    assert r["idle_servers"] == n // 2


def test_same_scenario_and_set_as_predict(capsys, tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text("[servers]\ncount = 8\n[switch]\npartition = \"hash\"\n")
    d = as_json(capsys, "--scenario", str(sc), "--set", "switch.cache_keys=1000")
    assert len(d["shares"]) == 8 and d["partition"] == "hash" and d["cached_keys"] == 1000
    assert d["idle_servers"] == 0
    off = as_json(capsys, "--scenario", str(sc), "--set", "cache=false")
    assert off["hit_ratio"] == 0 and off["shares"] == off["shares_nocache"]


def test_lab_profile_and_table(capsys):
    d = as_json(capsys, "--set", "servers=4", "--set", "switch.partition=range",
                "--workload-profile", "lab")
    assert d["source"] == "profile lab"
    assert np.argmax(d["shares_nocache"]) == 0 and max(d["shares_nocache"]) > 0.5
    assert main(["workload", "--set", "servers=4", "--set", "workload.profile=lab"]) == 0
    out = capsys.readouterr().out
    assert "cache hit ratio" in out and "x over NoCache" in out and "profile lab" in out


def test_measured_and_trace(capsys, tmp_path):
    m = tmp_path / "m.toml"
    m.write_text("hit_ratio = 0.4\nload_ratio = [1, 1]\nload_ratio_nocache = [3, 1]\n")
    d = as_json(capsys, "--set", "servers=2", "--measured", str(m))
    assert d["shares"] == pytest.approx([0.3, 0.3]) and d["normalized_x"] == pytest.approx(2.5)
    t = tmp_path / "keys.txt"
    t.write_text("user6284781860667377211\n" * 3 + "user5\n")
    d = as_json(capsys, "--set", "servers=1", "--trace", str(t), "--set", "switch.cache_keys=1")
    assert d["hit_ratio"] == pytest.approx(0.75)


@pytest.mark.parametrize("args, words", [
    (["--set", "switch.partition=modulo"], "switch.partition"),
    (["--workload-profile", "no-such"], "no-such"),
    (["--measured", "MEASURED"], "line 2"),
    (["--trace", "TRACE"], "line 3"),
    (["--set", "servers=3", "--measured", "MEASURED"], "load_ratio"),
])
def test_bad_input_exit_2_without_traceback(tmp_path, args, words):
    m = tmp_path / "m.toml"
    m.write_text("hit_ratio = 0.5\nload_ratio = [1, 2, x]\n")
    good = tmp_path / "g.toml"
    good.write_text("hit_ratio = 0.5\nload_ratio = [1, 2]\n")
    t = tmp_path / "t.txt"
    t.write_text("user12\nuser13\nuserABC\n")
    args = [str(m) if a == "MEASURED" and "servers=3" not in args else
            str(good) if a == "MEASURED" else str(t) if a == "TRACE" else a for a in args]
    p = run("workload", *args, check=False)
    assert p.returncode == 2, p.stderr
    assert words in p.stderr and "Traceback" not in p.stderr


def test_startup_imports_neither_scipy_nor_numba():
    code = ("import sys; from cli.main import main; main(['workload', '--json']); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('scipy', 'numba')]; "
            "assert not bad, bad")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr


def test_workload_fit_command(tmp_path):
    out = tmp_path / "lab.toml"
    p = run("workload-fit", "--runs", "data/farreach_runs.csv", "--fit-on", "hit",
            "--out", str(out), "--json")
    d = json.loads(p.stdout)
    assert 1e5 < d["items"] < 1e9
    held = [o for o in d["observations"] if not o["fitted"] and o["kind"] == "split"]
    assert held and all(abs(a - b) < 0.02 for o in held for a, b in zip(o["measured"], o["predicted"]))
    text = out.read_text()
    assert "[popularity.items]" in text and 'unit = "keys"' in text and "fitted_by" in text
    q = run("workload", "--set", "servers=1", "--workload-profile", str(out), "--json")
    assert json.loads(q.stdout)["hit_ratio"] == pytest.approx(
        next(o["measured"][0] for o in d["observations"] if o["kind"] == "hit"), abs=0.011)
