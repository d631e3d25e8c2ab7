"""The runs CSVs' ``workload`` column reaches the prediction.

The lab's rows name the calibrated workload profile (docs/workload.md, section
5), a rank-ordered zipf popularity. Its uniform and uniform-seq runs have no
popular keys: the profile's layout applies to them, its popularity does not.
Until 2026-11-24 the column was silently ignored under the profile, and F077
was predicted like its zipf twin F057 (0.074 against 0.193 MOPS measured)."""

import csv

import pytest

from runio.farreach_kinds import farreach_scenario
from model.solvers import predict
from runio.inputs import load_profile


def rows(*ids):
    with open("data/farreach_runs.csv", newline="") as fh:
        by_id = {r["id"]: r for r in csv.DictReader(fh)}
    return [by_id[i] for i in ids]


@pytest.mark.parametrize("zipf_id, other_id", [
    ("F057", "F077"),   # NoCache, 4 servers: uniform-seq 2.47x the zipf run ("no load imbalance")
    ("F003", "F004"),   # NoCache, 1 server: uniform 0.71x (its lookups miss the memtables)
])
def test_uniform_runs_against_their_zipf_twins(zipf_id, other_id):
    prof = load_profile("tofino-testbed")
    z, o = rows(zipf_id, other_id)
    assert z["workload"] == "zipf" and o["workload"] != "zipf"
    # the twins differ in the workload column only
    same = {k for k in z if k not in ("id", "block", "workload", "mops", "wait_us", "process_us",
                                      "send_us", "note")}
    assert all(z[k] == o[k] for k in same)
    measured = float(o["mops"]) / float(z["mops"])
    pz = predict(farreach_scenario(z), prof).throughput_mops
    po = predict(farreach_scenario(o), prof).throughput_mops
    assert po / pz == pytest.approx(measured, rel=0.25)
