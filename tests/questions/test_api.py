"""The notebook API (``import kvperf``, docs/api.md) and ``from model import predict``."""

from __future__ import annotations

import json

import pytest

import kvperf
from model.prediction import Prediction
from runio.inputs import load_profile


def test_from_model_import_predict_is_the_function():
    from model import predict
    assert callable(predict) and not hasattr(predict, "__path__")
    import model
    import model.solvers  # noqa: F401 -- importing submodules must not replace it
    from model import predict as again
    assert again is predict and model.predict is predict
    p = predict(kvperf.load_scenario(clients=32), kvperf.load_profile())
    assert isinstance(p, Prediction)


def test_load_scenario_forms(tmp_path):
    sc = kvperf.load_scenario(servers=32, memtable_mb=16, changes={"clients.timeout_ms": 100})
    assert (sc.servers.count, sc.storage.memtable_mb, sc.clients.timeout_ms) == (32, 16.0, 100.0)
    path = tmp_path / "s.toml"
    path.write_text(sc.to_toml())
    assert kvperf.load_scenario(str(path)) == sc
    assert kvperf.load_scenario(sc.to_dict()) == sc
    with pytest.raises(kvperf.InputError) as exc:
        kvperf.load_scenario(memtable_mb=-1)
    assert exc.value.field == "storage.memtable_mb"


def test_predict_result():
    p = kvperf.predict(clients=32)
    assert p.throughput_mops > 0 and p.engine == "analytic"
    assert p.scenario.clients.threads == 32
    frame = p.to_frame()
    assert len(frame) == 16 and {"share", "utilization", "wait_us", "process_us"} <= set(frame)
    d = p.to_dict()
    json.dumps(d)
    assert d["scenario"]["clients"]["threads"] == 32 and d["profile"] == "tofino-testbed"
    assert p.summary()["throughput_mops"] == p.throughput_mops
    assert "MOPS" in p.text()
    many = kvperf.predict_many([kvperf.load_scenario(clients=32), {"clients": {"threads": 64}}])
    assert many[0].throughput_mops == pytest.approx(p.throughput_mops)
    assert many[1].throughput_mops > many[0].throughput_mops


def test_sweep_explain_tune_results_have_dict_and_frame():
    s = kvperf.sweep({"clients": [32, 64]})
    ex = kvperf.explain(clients=64)
    t = kvperf.tune({"clients": (32, 128)}, {"clients": {"threads": 64}}, generations=1,
                    explain=False)
    for r in (s, ex, t):
        json.dumps(r.to_dict())
        assert len(r.to_frame()) > 0


def test_simulate_checks_its_input():
    with pytest.raises(kvperf.InputError):
        kvperf.simulate(seconds=0)


def test_rotation_from_a_notebook():
    """kvperf.rotation: the same figures as the command line's --measure
    rotation, a frame with one row per partition that adds up to the aggregate,
    and bad keys named as the command line names them."""
    import kvperf
    from model.rotation import predict_rotation
    from model.scenario import Scenario
    r = kvperf.rotation(servers=4, intervals=False)
    want = predict_rotation(Scenario.default().updated({"servers.count": 4}),
                            load_profile("tofino-testbed"))
    assert r.throughput_mops == pytest.approx(want.throughput_mops, rel=1e-12)
    f = r.to_frame()
    assert len(f) == 4 and f["throughput_mops"].sum() == pytest.approx(r.throughput_mops)
    assert int(f.index[f["bottleneck"]][0]) == r.bottleneck
    assert r.to_dict()["measure"] == "rotation" and r.to_dict()["units"]["throughput_mops"] == "MOPS"
    with pytest.raises(kvperf.InputError, match="servers.count"):
        kvperf.rotation(servers=1, intervals=False)


def test_api_prediction_carries_the_cli_interval(capsys):
    # the notebook and the command line give the same 90 % interval (issue 44)
    import json

    import kvperf
    from cli import main as cli
    api = kvperf.predict(servers=4, clients=64)
    assert cli.main(["predict", "--set", "servers=4", "--set", "clients=64", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    iv = api.details["throughput_interval"]
    assert iv is not None and iv["lo_mops"] < api.throughput_mops < iv["hi_mops"]
    assert iv == shown["details"]["throughput_interval"]
    assert kvperf.predict(servers=4, clients=64, intervals=False).details.get(
        "throughput_interval") is None
