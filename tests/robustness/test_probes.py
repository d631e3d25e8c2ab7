"""The probe suite (tests/robustness/probes.py): every bad input refused cleanly.

CI replays the fixed catalog (each command's every input path with every
defect) and a derandomized sample of drawn values; ``KVPERF_LONG=1`` draws
many more. A few probes also run as real processes, the way a user types
them, to hold the in-process runner to the real command line. Commands
stopped by signals (Ctrl-C at any moment, SIGTERM, workers, partial
outputs) are issue 55's probes: tests/robustness/test_edges.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from .budget import budget
from .probes import HUGE, SLOTS, Probe, catalog, run, value_probe

CATALOG = catalog()


def test_the_catalog_is_large_and_covers_every_command():
    assert len(CATALOG) >= 300
    commands = {(p.command, p.argv[0]) for p in CATALOG}
    for needed in [("sim", "predict"), ("sim", "simulate"), ("sim", "sweep"), ("sim", "explain"),
                   ("sim", "tune"), ("sim", "workload"), ("sim", "workload-fit"),
                   ("sim", "scenario"), ("calibrate", "run"), ("calibrate", "fit"),
                   ("calibrate", "validate"), ("calibrate", "ingest"), ("calibrate", "knobs"),
                   ("reports", "build")]:
        assert needed in commands, needed
    assert {p.command for p in CATALOG} >= {"reports.systems", "sim.facts"}


@pytest.mark.parametrize("probe", CATALOG, ids=[p.id for p in CATALOG])
def test_probe(probe: Probe):
    outcome = run(probe)
    assert not outcome.problems, f"{probe.id}: {outcome.problems}\n{outcome.stderr[:400]}"


def test_the_judge_catches_what_it_should(monkeypatch):
    # the harness itself: each kind of misbehaviour fails a probe
    from . import probes

    def command(behaviour):
        def main(argv):
            d = argv[0]
            if behaviour == "overwrite":
                Path(f"{d}/scenario.toml").write_text("x")
            elif behaviour == "create":
                Path(f"{d}/new.csv").write_text("x")
            elif behaviour == "progress":
                print("working...")
            elif behaviour == "crash":
                raise KeyError("x")
            elif behaviour == "long":
                print("error: " + "x " * 200, file=sys.stderr)
                return 2
            elif behaviour == "ok":
                return 0
            print(f"error: {d}/scenario.toml: bad", file=sys.stderr)
            return 2
        return main

    expected = {"overwrite": "changed", "create": "created", "progress": "stdout",
                "crash": "traceback", "long": "characters", "ok": "exit code 0", "fine": None}
    for behaviour, problem in expected.items():
        monkeypatch.setattr(probes, "_main", lambda name, b=behaviour: command(b))
        outcome = run(Probe(behaviour, "x", ("{d}", "{d}/scenario.toml"), ("scenario.toml",)))
        if problem is None:
            assert not outcome.problems, outcome.problems
        else:
            assert any(problem in p for p in outcome.problems), (behaviour, outcome.problems)


#: values no number in these files may take: not numbers, negative,
#: non-finite, or longer than any number
_bad_text = st.text(st.characters(blacklist_categories=("Cs",),
                                  blacklist_characters="\n\r,\"'|[]{}=#\\"),
                    min_size=1, max_size=40).filter(lambda t: _not_a_number(t))


def _not_a_number(t: str) -> bool:
    if not t.strip():
        return False
    try:
        float(t)
    except ValueError:
        return True
    return False


BAD_VALUES = st.one_of(
    _bad_text,
    st.integers(max_value=-1).map(str),
    st.floats(max_value=-1e-6, allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999"]),
    st.integers(4301, 120_000).map(lambda n: "9" * n),
)

# slots whose number the drawn values replace must refuse any of them; the
# trace's count is text by nature (a key may look like anything)
VALUE_SLOTS = [i for i, s in enumerate(SLOTS) if s.file not in ("trace.txt",)]


@budget(ci=40, long=3000)
@given(st.sampled_from(VALUE_SLOTS), BAD_VALUES)
def test_drawn_values(slot, value):
    probe = value_probe(slot, value)
    outcome = run(probe)
    assert not outcome.problems, f"{probe.id} with {value[:60]!r}: {outcome.problems}"


# ------------------------------------------------------ as a user types them
AS_TYPED = [
    (["-m", "sim", "predict", "--set", f"servers={HUGE}"], "servers"),
    (["-m", "sim", "predict", "--scenario", "/dev/zero"], "/dev/zero"),
    (["-m", "sim", "predict", "--scenario", ""], "--scenario"),
    (["-m", "calibrate", "validate", "--profile", "tofino-testbed", "--runs",
      "data/farreach_tuning.csv", "--max-error", "nan"], "--max-error"),
    (["-m", "reports", "build", "--sweep", "data/farreach_runs.csv", "--out",
      "no-such-folder/r.html"], "does not exist"),
]


@pytest.mark.parametrize("argv,named", AS_TYPED, ids=[" ".join(a[1:3]) + f" {n}" for a, n in AS_TYPED])
def test_as_typed(argv, named):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, *argv], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2, res.stderr[-500:]
    assert "Traceback" not in res.stderr
    assert res.stdout == ""
    msg = res.stderr.strip()
    assert msg.startswith("error:") and len(msg) <= 300 and named in msg, msg
    assert not os.path.exists(os.path.join(root, "no-such-folder"))


def test_fifo_as_typed(tmp_path):
    # a pipe given as the scenario would block forever on read
    fifo = tmp_path / "rack.toml"
    os.mkfifo(fifo)
    res = subprocess.run([sys.executable, "-m", "sim", "predict", "--scenario", str(fifo)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr[-300:]
