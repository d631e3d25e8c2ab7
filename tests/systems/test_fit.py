"""The calibration estimator: sklearn-style contract and a re-fit that
recovers the embedded profile."""

from __future__ import annotations

import pytest

from calibrate.systems_fit import SystemFitter, load_rows, main
from model.errors import InputError
from runio.inputs import load_profile


def test_fitter_contract_and_recovers_embedded_profile():
    f = SystemFitter("morphling-c")
    assert not hasattr(f, "profile_")
    assert f.fit(load_rows("morphling-c")) is f
    emb = load_profile("morphling-c")
    for k in ("server_us", "net_us", "guidance_net_us"):
        assert f.profile_[k] == pytest.approx(emb[k], rel=1e-3)
    assert f.residuals_ and all(r["ape_pct"] >= 0 for r in f.residuals_)
    assert f.ape_["morphling_c.kops"] < 10


def test_fitter_rejects_rows_of_another_system():
    rows = load_rows("morphling-go")
    with pytest.raises(InputError) as e:
        SystemFitter("morphling-c").fit(rows)
    assert "__kind__" in str(e.value)


def test_cli_print_only(capsys):
    assert main(["--system", "morphling-go", "--print"]) == 0
    out = capsys.readouterr().out
    assert "median APE" in out and " us" in out
    assert main(["--system", "nope"]) == 2
