"""Morphling Go past its calibration points (issue 54): where each read path
stops growing, from mechanism, with no prior in the fit.

The notes (DOMAIN.md section 4; docs/systems.md "Where each read path stops
growing"): at 50 connections per client machine, two machines, Morphling
reads reached about 44 Kops and unreplicated reads about 40 Kops. Those two
numbers set the client machines' and the server's CPU per read; Raft's
ceiling follows from its messages (the leader's pool does an exchange with
each follower besides the read)."""

from __future__ import annotations

import pytest

from calibrate.cv import cross_validate
from calibrate.systems_fit import load_rows
from model.systems import SYSTEMS, morphling
from runio.inputs import load_profile


def test_the_three_read_modes_level_off_at_the_notes_peaks():
    p = load_profile("morphling-go")
    x = {m: [morphling.go_solve(m, n, p)[0] * 1e6 for n in (8, 50, 100, 200)]
         for m in ("raft", "morphling", "unreplicated")}
    for m, xs in x.items():
        assert xs == sorted(xs)
        assert xs[-1] == pytest.approx(xs[-2], rel=0.01), m          # levelled off by 100
    for m, peak in morphling.NOTED_PEAKS_OPS.items():
        assert x[m][2] == pytest.approx(peak, rel=0.15), m            # issue 54: within 15 %
    # the order the notes give: Morphling above unreplicated, a small gap
    assert 1.0 < x["morphling"][2] / x["unreplicated"][2] < 1.2
    # Raft: the leader's pool, read + an exchange with each of 2 followers
    cap, who = morphling.go_capacity("raft", p)
    assert who == "leader pool"
    assert cap == pytest.approx(p["server_cores"] / (p["replicas"] * p["read_us"]), rel=1e-9)
    assert x["raft"][2] < x["unreplicated"][2]


def test_who_stops_each_path():
    p = load_profile("morphling-go")
    assert morphling.go_capacity("morphling", p)[1].startswith("client machine")
    assert morphling.go_capacity("unreplicated", p)[1] == "server pool"


def test_no_prior_sets_a_ceiling():
    """The profile's CPU costs come from the notes' peaks (fixed, cited), the
    rest from the rows: the fit carries no prior."""
    assert dict(SYSTEMS["morphling-go"].priors) == {}
    p = load_profile("morphling-go")
    for name in ("client_cpu_us", "read_us"):
        src = p.params[name].source
        assert src.startswith("fixed:") and "DOMAIN.md section 4" in src, name
    assert p["client_cpu_us"] == pytest.approx(2 / 44e3 * 1e6 / 2 * 2, rel=1e-3)
    assert p["read_us"] == pytest.approx(p["server_cores"] / 40e3 * 1e6, rel=1e-3)


def test_a_refit_on_the_lowest_levels_keeps_the_ceilings():
    """``--cv top:2``: fitted on 2 clients (fixed) and 2-4 clients (controller)
    the refitted profile levels off at the same peaks."""
    res = cross_validate(load_rows("morphling-go"), "top:2")
    prof = res.profiles[0]
    for m, peak in morphling.NOTED_PEAKS_OPS.items():
        assert morphling.go_solve(m, 100, prof)[0] * 1e6 == pytest.approx(peak, rel=0.15)
