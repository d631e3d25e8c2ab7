"""``model.explain``: the parts add up to the gap; an absent mechanism changes nothing."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from model.errors import InputError
from model.explain import MECHANISMS, explain
from model.rack import compile_rack
from model.scenario import Scenario
from model.solvers.analytic import solve_many
from runio.inputs import load_profile

PROFILE = load_profile("tofino-testbed")
# few clients: no loss, so every configuration solves in milliseconds
LIGHT = ["clients=64"]


@pytest.fixture(scope="module")
def light():
    return explain(Scenario.default().with_overrides(LIGHT), PROFILE, shapley=True)


@pytest.mark.parametrize("method", ["alone", "cumulative", "shapley"])
def test_parts_add_up_to_the_gap(light, method):
    bars = light.waterfall(method)
    assert sum(v for _, v in bars) == pytest.approx(light.gap_x, abs=1e-9)
    assert light.gap_x == pytest.approx(light.normalized_x - light.runtime_x)
    frame = light.to_frame(method)
    assert frame["x"].drop("gap").sum() == pytest.approx(light.gap_x, abs=1e-9)


def test_gap_is_explained_not_left_over(light):
    # with every mechanism off and enough clients the runtime gain is the normalized gain
    assert abs(light.remainder_x) < 1e-3 * light.normalized_x
    # 64 threads cannot saturate 16 cached workers: the closed loop is most of the gap
    assert light.closed_loop_x > 0.5 * light.gap_x
    assert light.runtime_x == pytest.approx(light.cache_mops / light.nocache_mops)


def test_absent_mechanisms_have_exactly_zero_share(light):
    parts = {p.key: p for p in light.parts}
    # servers.cores = 0 (a core for every thread); the profile has no write-backs
    for key in ("cores", "writebacks"):
        assert not parts[key].present
        assert parts[key].alone_x == 0.0 and parts[key].cumulative_x == 0.0
        assert parts[key].shapley_x == 0.0
    assert parts["storage"].present and parts["storage"].alone_x != 0.0


@pytest.mark.parametrize("key,sets", [("cores", ["servers.cores=0"]),
                                      ("writebacks", ["switch.cache=false"])])
def test_switching_off_an_absent_mechanism_changes_nothing(key, sets):
    sc = Scenario.default().with_overrides(LIGHT + sets)
    spec = compile_rack(sc, PROFILE)
    mech = {m.key: m for m in MECHANISMS}[key]
    off = mech.switch(spec, spec)
    assert off == spec
    a, b = solve_many([spec, off])
    assert a.throughput_mops == b.throughput_mops
    assert [s.wait_us for s in a.servers] == [s.wait_us for s in b.servers]


def test_a_present_mechanism_switched_off_changes_the_rack():
    sc = Scenario.default().with_overrides(LIGHT + ["servers.cores=8"])
    spec = compile_rack(sc, PROFILE)
    cores = {m.key: m for m in MECHANISMS}["cores"]
    off = cores.switch(spec, spec)
    assert off != spec and off.service.cores == 0
    slow, fast = solve_many([spec, off])
    assert fast.throughput_mops > slow.throughput_mops


def test_loss_off_means_no_loss_at_all():
    sc = Scenario.default().with_overrides(["clients.timeout_ms=100", "network.loss_rate=0.01"])
    spec = compile_rack(sc, PROFILE)
    loss = {m.key: m for m in MECHANISMS}["loss"]
    off = loss.switch(spec, spec)
    (p,) = solve_many([off])
    assert p.pktloss == 0.0 and p.false_pos == 0.0
    assert math.isfinite(p.throughput_mops) and p.throughput_mops > 0


def test_no_cache_is_refused_with_the_key():
    with pytest.raises(InputError) as exc:
        explain(Scenario.default().with_overrides(["cache=false"]), PROFILE)
    assert exc.value.field == "switch.cache"


def test_sentences_and_dict(light):
    d = light.to_dict()
    assert d["gap_x"] == pytest.approx(light.gap_x)
    assert sum(b["x"] for b in d["waterfall"]) == pytest.approx(light.gap_x, abs=1e-9)
    text = " ".join(light.sentences())
    assert "too few clients" in text.lower() and "MOPS" in text


@pytest.mark.parametrize("ext", ["html", "json", "csv"])
def test_cli_table_and_outputs(tmp_path, capsys, ext):
    from cli.main import main
    path = tmp_path / f"e.{ext}"
    code = main(["explain", "--set", "clients=64", "--out", str(path)])
    out, err = capsys.readouterr()
    assert code == 0 and str(path) in err
    for words in ("normalized gain", "runtime gain", "x gain", "total = gap", "MOPS",
                  "too few clients"):
        assert words in out
    text = path.read_text()
    if ext == "html":
        assert '"base":' in text and "Why the gain falls short" in text   # floating bars
    elif ext == "json":
        import json
        d = json.loads(text)
        assert sum(b["x"] for b in d["waterfall"]) == pytest.approx(d["gap_x"], abs=1e-9)
    else:
        assert text.splitlines()[0].startswith("part,key,present,alone_x")


@pytest.mark.parametrize("argv,field", [(["--set", "cache=false"], "switch.cache"),
                                        (["--set", "nosuch=1"], "nosuch"),
                                        (["--out", "e.png"], "--out")])
def test_cli_bad_input_exits_2(capsys, argv, field):
    from cli.main import main
    code = main(["explain"] + argv)
    _, err = capsys.readouterr()
    assert code == 2 and f"'{field}'" in err and "Traceback" not in err


def test_predict_explain_and_report_tell_one_story(tmp_path):
    """Issue 44: on the same rack the prediction's table, the explanation and
    the report name the same bottleneck, the normalized gain as what the
    workload allows and the runtime gain as the rack's, and give every count
    with its unit and period."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]

    def run(*args):
        p = subprocess.run([sys.executable, "-m", "sim", *args], cwd=root, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    table = run("predict", "--no-intervals")
    why = run("explain")
    html_path = tmp_path / "p.html"
    run("predict", "--no-intervals", "--html", str(html_path))
    html = html_path.read_text()
    bottleneck = [l for l in table.splitlines() if l.strip().startswith("bottleneck")][0]
    text = bottleneck.split("bottleneck", 1)[1].strip()
    assert f"bottleneck with the cache: {text}" in why
    assert text in html
    # the two gains, each named for what it is, and the same figure everywhere
    norm = [l for l in table.splitlines() if l.strip().startswith("normalized gain")][0]
    value = norm.split()[2]
    assert "what the workload allows" in norm and "the rack's own gain: sim explain" in norm
    assert f"normalized gain     {value} x   what the workload allows" in why
    assert "runtime gain" in why and "MOPS with the cache" in why
    assert "normalized gain" in html and f"{value}×" in html and "the gain the workload allows" in html
    # counts with their unit and period, the same words in table and report
    assert "packets per run of 10M queries" in table
    assert "packets" in html and "per run of 10 M queries" in html
    assert "false positives" not in html.split("Solver details")[0].lower().replace(
        "the notes' false positives", "")
