"""Fuzzing every file format the toolkit reads: a result or an InputError naming the file.

Each format starts from real files (the embedded scenario, profile and plan,
every runs CSV in data/ and the local runs, the FarReach client statistics
and latency dumps of the test fixtures) and applies random mutations:
bytes flipped, deleted or inserted, lines duplicated or dropped, values
replaced with troublesome tokens (NaN, 1e999, 400 digits, 1_000, -1, quotes,
delimiters, invalid UTF-8, deep nesting), the file cut short. Reading the
mutated file the way the commands do must either succeed or raise
:class:`~model.errors.InputError` whose source is the file; any other
exception is a bug.
"""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path

from hypothesis import given, strategies as st

from calibrate.farreach_logs import ingest, read_client_statistics, read_latency_dump
from calibrate.plan import expand, load_plan
from calibrate.runs_io import load_runs
from model.errors import InputError
from model.rack import compile_rack
from runio.row_prediction import predict_kind_rows, row_racks
from model.scenario import Scenario
from model.workload_sources import load_source

from .budget import budget
from runio.inputs import load_profile, load_scenario

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "calibrate" / "fixtures"
RUNS_FILES = sorted(glob.glob(str(ROOT / "data" / "*.csv"))) + [str(ROOT / "calibrate/runs/local.csv")]

TOKENS = [b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"1e999", b"-1", b"0", b"1_000",
          b"9" * 400, b"\xff", b"\xc3", b"\x00", b'"', b"'", b",", b"|", b"\n", b"\r\n", b"\r",
          b"=", b"[", b"]", b"{", b"}", b"[[", b"#", b" ", b"\t", b"true", b"abc", b"1|2|x",
          b"\xef\xbb\xbf", "é".encode(), b"[" * 3000, b"-0.0", b"1e-320", b"0x10"]


@st.composite
def mutations(draw):
    """A list of edits (kind, position fraction, payload) applied in order."""
    n = draw(st.integers(1, 4))
    return [(draw(st.sampled_from(["flip", "insert", "delete", "replace", "dup", "drop", "cut"])),
             draw(st.floats(0.0, 1.0)), draw(st.sampled_from(TOKENS)),
             draw(st.integers(0, 255)), draw(st.integers(1, 40)))
            for _ in range(n)]


def mutate(data: bytes, edits) -> bytes:
    for kind, where, token, byte, span in edits:
        if not data:
            data = token
            continue
        i = min(int(where * len(data)), len(data) - 1)
        if kind == "flip":
            data = data[:i] + bytes([byte]) + data[i + 1:]
        elif kind == "insert":
            data = data[:i] + token + data[i:]
        elif kind == "delete":
            data = data[:i] + data[i + span:]
        elif kind == "replace":
            # a whole value: from i to the next delimiter
            j = i
            while j < len(data) and data[j:j + 1] not in (b",", b"\n", b" ", b"|", b"]", b"}"):
                j += 1
            data = data[:i] + token + data[j:]
        elif kind in ("dup", "drop"):
            lines = data.split(b"\n")
            k = min(int(where * len(lines)), len(lines) - 1)
            lines[k:k + 1] = [lines[k], lines[k]] if kind == "dup" else []
            data = b"\n".join(lines)
        elif kind == "cut":
            data = data[:i]
    return data


class Mutated:
    """A mutated copy of a file in a temporary folder."""

    def __init__(self, original: Path | str, edits, suffix: str | None = None):
        self.dir = tempfile.TemporaryDirectory(prefix="kvperf-fuzz-")
        self.path = Path(self.dir.name) / (Path(original).stem + (suffix or Path(original).suffix))
        self.path.write_bytes(mutate(Path(original).read_bytes(), edits))

    def __enter__(self) -> str:
        return str(self.path)

    def __exit__(self, *exc) -> None:
        self.dir.cleanup()


def reads(path: str, action) -> None:
    """``action()`` succeeds or raises an InputError naming ``path``."""
    try:
        action()
    except InputError as exc:
        assert exc.source is not None and os.path.samefile(exc.source, path), \
            f"error without the file name: {exc}"


PROFILE = load_profile("tofino-testbed")


@budget(ci=40, long=2000)
@given(mutations())
def test_scenario_toml(edits):
    with Mutated(ROOT / "model/default_scenario.toml", edits) as path:
        reads(path, lambda: compile_rack(load_scenario(path), PROFILE))


@budget(ci=40, long=2000)
@given(mutations())
def test_profile_toml(edits):
    with Mutated(ROOT / "model/profiles/tofino-testbed.toml", edits) as path:
        # compiling a rack reads and checks every parameter the model uses
        reads(path, lambda: compile_rack(Scenario.default(), load_profile(path)))


@budget(ci=30, long=1000)
@given(mutations(), st.sampled_from(["default.toml", "holdout.toml"]))
def test_plan_toml(edits, name):
    with Mutated(ROOT / "calibrate/plans" / name, edits) as path:
        reads(path, lambda: expand(load_plan(path), cores=2))


def _runs(path: str) -> None:
    """What batch prediction, fit and validate do before solving, plus the
    prediction of a rows that are not racks (closed forms, quick)."""
    kind, rows = load_runs(path)
    if kind.rack is not None:
        row_racks(kind, rows, path)
    else:
        predict_kind_rows(kind, rows[:2], load_profile(kind.profile), path, intervals=False)


@budget(ci=6, long=300)
@given(mutations(), st.sampled_from(RUNS_FILES))
def test_runs_csv(edits, original):
    with Mutated(original, edits) as path:
        reads(path, lambda: _runs(path))


STATS = [FIX / "farreach-static2-client0.out", FIX / "farreach-zipf-client0.out"]
LOGS = [FIX / "server-debug.log", FIX / "client-debug.log"]


@budget(ci=40, long=2000)
@given(mutations(), st.sampled_from(STATS))
def test_farreach_client_statistics(edits, original):
    with Mutated(original, edits) as path:
        reads(path, lambda: ingest({"system": "farreach"}, stats=[path]))


@budget(ci=40, long=2000)
@given(mutations(), st.sampled_from(LOGS))
def test_farreach_latency_dumps(edits, original):
    with Mutated(original, edits) as path:
        reads(path, lambda: read_latency_dump(path))
        if "server" in str(original):
            reads(path, lambda: ingest({"system": "nocache"}, server_log=path, wait_stat="avg"))


TRACE = "user6284781860667377211,3\nuser8517097267634966620\n42,7\n" \
        "READ usertable user1234 [ field0 ]\n"


@budget(ci=30, long=1000)
@given(mutations(), st.sampled_from(["lab.toml", "stats.json", "trace.txt"]))
def test_workload_sources(tmp_path_factory, edits, name):
    """The files ``workload.profile`` names: a workload profile, FarReach
    statistics, a key trace."""
    originals = tmp_path_factory.getbasetemp() / "workload-originals"
    originals.mkdir(exist_ok=True)
    src = {"lab.toml": ROOT / "model/profiles/workloads/lab.toml", "stats.json": STATS[0]}.get(name)
    if src is None:
        src = originals / name
        src.write_text(TRACE)
    with Mutated(src, edits, suffix=Path(name).suffix) as path:
        reads(path, lambda: load_source(path))


def test_mutations_do_change_files():
    # the harness itself: edits land, and a statistics file survives none of the bad tokens
    data = (FIX / "farreach-static2-client0.out").read_bytes()
    assert mutate(data, [("replace", 0.3, b"nan", 0, 1)]) != data
    assert read_client_statistics(FIX / "farreach-static2-client0.out").total_ops > 0
