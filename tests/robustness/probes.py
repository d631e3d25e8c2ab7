"""Bad input over every command and input path: the probe suite of issue 43.

A *probe* is one command line with one thing wrong in it: a file that is
missing, a folder, a pipe, a device, binary, not UTF-8, of another kind, or
holding a value no key allows (a number of 5,000 or 100,000 digits, NaN,
infinity, a negative count, text); a ``--set`` key or value no scenario
has; an option's number that is NaN, infinite, negative or text; an output
that is also an input, in a missing folder, a folder itself, of the wrong
type or on a file system that refuses writes. Every probe must give:

* exit code 2 (the toolkit's code for bad input) and no traceback;
* one message of at most 300 characters, first on stderr (no progress lines
  before it, nothing on stdout), naming the file, the key or the option;
* every file the user gave unchanged, byte for byte, and no file created.

The commands run in this process (``main(argv)`` of each command line), each
under an alarm so that a probe that blocks (a FIFO read to its end) fails
as a hang instead of stopping the suite. :func:`catalog` lists the fixed
probes CI replays; :func:`value_probe` builds one from drawn values, which
the Hypothesis test uses over the whole value space.

``python -m tests.robustness.probes [--only SUBSTRING] [--class CLASS]`` runs
the catalog -- this module's bad inputs (class ``inputs``) and issue 55's
classes (``outputs``, ``extensions-order``, ``notes``: :mod:`.probes_edges`;
``api``: :mod:`.probes_api`; ``signals``: :mod:`.probes_signals`) -- and
prints the counts per class, each failing probe with its problems.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "calibrate" / "fixtures"

HUGE = "1" * 5000                 # past Python's 4,300-digit int conversion limit
VAST = "7" * 100_000              # a cell a message must not echo
#: values no numeric key or column allows
BAD_VALUES = {"huge": HUGE, "vast": VAST, "nan": "nan", "inf": "inf", "neg": "-1",
              "text": "abc"}
MAX_MESSAGE = 300
HANG_SECONDS = 30


# ---------------------------------------------------------------- the sandbox
def _sweep_csv() -> str:
    return "id,servers,clients,mops,pred_mops\nA,16,1024,0.80,0.84\nB,32,1024,1.10,1.02\n"


def _timeline_csv() -> str:
    return "t_s,throughput_mops,stalled_frac\n1,0.8,0.0\n2,0.82,0.01\n"


def _prediction_json() -> str:
    from model.scenario import Scenario
    from model.solvers import predict_many
    pred = predict_many([Scenario.default().with_overrides(["servers=2", "clients=16"])],
                        load_profile("tofino-testbed"))[0]
    return json.dumps(pred.to_dict())


def _runs_csv() -> str:
    # two rows of the lab's runs: enough for every command that reads runs
    lines = (ROOT / "data" / "farreach_tuning.csv").read_text().splitlines()
    return "\n".join(lines[:3]) + "\n"


#: name -> (content maker, what kind of file it is)
FILES: dict[str, Callable[[], str | bytes]] = {
    "scenario.toml": lambda: (ROOT / "examples" / "rack.toml").read_text(),
    "profile.toml": lambda: (ROOT / "model" / "profiles" / "tofino-testbed.toml").read_text(),
    "runs.csv": _runs_csv,
    "plan.toml": lambda: (ROOT / "examples" / "local.toml").read_text(),
    "sweepplan.csv": lambda: "servers,clients\n8,512\n16,1024\n",
    "workload.toml": lambda: (ROOT / "model" / "profiles" / "workloads" / "lab.toml").read_text(),
    "trace.txt": lambda: "user6284781860667377211\nuser8517097267634966620\n",
    "ycsb.txt": lambda: (ROOT / "examples" / "ycsb-run.txt").read_text(),
    "dbbench.txt": lambda: (ROOT / "examples" / "db_bench.txt").read_text(),
    "stats.out": lambda: (FIX / "farreach-static2-client0.out").read_text(),
    "server.log": lambda: (FIX / "server-debug.log").read_text(),
    "lab-runs.csv": lambda: (ROOT / "data" / "farreach_runs.csv").read_text(),
    "sweep.csv": _sweep_csv,
    "validation.csv": _sweep_csv,
    "timeline.csv": _timeline_csv,
    "prediction.json": _prediction_json,
}


class Sandbox:
    """A folder of valid inputs, re-made for each probe from cached bytes:
    those of ``FILES`` that ``argv`` names (all without it; a prediction's
    JSON takes a solve to make)."""

    _cache: dict[str, bytes] = {}

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="kvperf-probe-"))
        named = " ".join(argv) if argv is not None else None
        for name, make in FILES.items():
            if named is not None and name not in named:
                continue
            if name not in Sandbox._cache:
                data = make()
                Sandbox._cache[name] = data.encode() if isinstance(data, str) else data
            (self.dir / name).write_bytes(Sandbox._cache[name])
        (self.dir / "folder.toml").mkdir()
        (self.dir / "out").mkdir()
        os.mkfifo(self.dir / "fifo.csv")

    def make(self, name: str, kind: str, target: str) -> None:
        """A special file in the sandbox: ``chr`` (a device node, ``target`` its
        "major,minor"), ``link`` (a symbolic link to ``target``, ``{d}`` the
        sandbox), ``fifo`` or ``dir``."""
        path = self.dir / name
        if kind == "chr":
            major, minor = (int(x) for x in target.split(","))
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        elif kind == "link":
            os.symlink(target.replace("{d}", str(self.dir)), path)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        else:
            raise ValueError(kind)

    def snapshot(self) -> dict[str, str]:
        """Every path in the sandbox and what it is (never followed through a
        link: a link to /proc/self/fd/1 stays a link, a device a device)."""
        out = {}
        for root, dirs, files in os.walk(self.dir):
            for name in dirs + files:
                p = Path(root) / name
                rel = str(p.relative_to(self.dir))
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = "link->" + os.readlink(p)
                elif stat.S_ISFIFO(st.st_mode):
                    out[rel] = "fifo"
                elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                    out[rel] = f"device {os.major(st.st_rdev)},{os.minor(st.st_rdev)}"
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = "dir"
                else:
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        return out

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- probes
@dataclass(frozen=True)
class Probe:
    """One bad command line. ``argv`` may hold ``{d}`` (the sandbox folder);
    ``prepare`` writes the bad file into it first; the message must contain
    one of ``names`` (after ``{d}`` is filled in)."""
    id: str
    command: str                       # "sim", "calibrate", "reports", "reports.systems", "sim.facts"
    argv: tuple[str, ...]
    names: tuple[str, ...]
    prepare: tuple[tuple[str, bytes | Callable[[], bytes]], ...] = ()  # (file name, bytes) written into the sandbox
    expect: int = 2
    says: str = ""                     # a phrase the message must hold
    special: tuple[tuple[str, str, str], ...] = ()  # (name, kind, target): Sandbox.make
    note: str = ""                     # expect 0: a NOTE line on stderr must hold this
    kind: str = "inputs"               # the class of edges the probe belongs to
    creates: tuple[str, ...] = ()      # files a probe that succeeds may create
    hang: int = 0                      # seconds before it counts as a hang (0: HANG_SECONDS)


@dataclass
class Outcome:
    probe: Probe
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def _main(command: str) -> Callable[[list[str]], int]:
    if command == "sim":
        from cli.main import main
    elif command == "calibrate":
        from calibrate.cli import main
    elif command == "reports":
        from reports.cli import main
    elif command == "reports.systems":
        from reports.systems import main
    elif command == "sim.facts":
        from sim.facts import main
    elif command == "sim.parity":
        from sim.parity import main
    elif command == "sim.agreement":
        from sim.agreement import main
    elif command == "calibrate.systems_fit":
        from calibrate.systems_fit import main
    else:
        raise ValueError(command)
    return main


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run(probe: Probe) -> Outcome:
    """Run one probe in a fresh sandbox and judge it."""
    box = Sandbox(probe.argv)
    try:
        for name, data in probe.prepare:
            (box.dir / name).write_bytes(data() if callable(data) else data)
        for name, kind, target in probe.special:
            box.make(name, kind, target)
        before = box.snapshot()
        argv = [a.replace("{d}", str(box.dir)) for a in probe.argv]
        out, err = io.StringIO(), io.StringIO()
        problems: list[str] = []
        code: int | None = None
        t0 = time.perf_counter()
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(probe.hang or HANG_SECONDS)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = _main(probe.command)(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except _Hang:
            problems.append(f"hang: no answer in {probe.hang or HANG_SECONDS} s")
        except BaseException as exc:      # noqa: BLE001 (any escape is a traceback)
            problems.append("traceback: " + "".join(
                traceback.format_exception_only(type(exc), exc)).strip()[:400])
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        seconds = time.perf_counter() - t0
        stdout, stderr = out.getvalue(), err.getvalue()
        if "Traceback" in stderr:
            problems.append("traceback printed")
        if code is not None and code != probe.expect:
            problems.append(f"exit code {code}, expected {probe.expect}")
        if code == probe.expect == 2:
            lines = [ln for ln in stderr.splitlines() if ln.strip()]
            if not lines or not lines[0].startswith("error:"):
                problems.append(f"stderr does not start with the error: {stderr[:200]!r}")
            if stdout.strip():
                problems.append(f"stdout before the refusal: {stdout[:200]!r}")
            if len(stderr.strip()) > MAX_MESSAGE:
                problems.append(f"message of {len(stderr.strip())} characters")
            names = [n.replace("{d}", str(box.dir)) for n in probe.names]
            if names and not any(n in stderr for n in names):
                problems.append(f"message names none of {probe.names}: {stderr[:200]!r}")
            if probe.says and probe.says not in stderr:
                problems.append(f"message does not say {probe.says!r}: {stderr[:200]!r}")
        if probe.note:
            notes = [ln for ln in stderr.splitlines() if ln.startswith("NOTE: ")]
            if not any(probe.note in ln for ln in notes):
                problems.append(f"no NOTE line with {probe.note!r}: {stderr[-300:]!r}")
        after = box.snapshot()
        changed = [k for k in before if after.get(k) != before[k]]
        created = [k for k in after if k not in before and k not in probe.creates]
        if changed:
            problems.append(f"changed: {changed}")
        if created:
            problems.append(f"created: {created}")
        return Outcome(probe, code, stdout, stderr, seconds, problems)
    finally:
        box.close()


# ---------------------------------------------------------------- the catalog
def _text(name: str) -> str:
    if name not in Sandbox._cache:
        data = FILES[name]()
        Sandbox._cache[name] = data.encode() if isinstance(data, str) else data
    return Sandbox._cache[name].decode()


def _replace_first_number(text: str, value: str, after: str = "") -> str:
    """``text`` with the first number after the first ``after`` replaced by ``value``."""
    start = text.index(after) + len(after) if after else 0
    m = re.compile(r"(?<![\w.])\d+(\.\d+)?(?![\w.])").search(text, start)
    assert m, (after, text[:200])
    return text[:m.start()] + value + text[m.end():]


def _csv_cell(text: str, column: str, value: str) -> str:
    lines = text.splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = value
    lines[1] = ",".join(cells)
    return "\n".join(lines) + "\n"


def bad_value_file(name: str, value: str) -> bytes:
    """The sandbox file ``name`` with one of its numbers (one a key or column
    must have positive and finite) replaced by ``value``."""
    text = _text(name)
    if name == "scenario.toml":
        text = _replace_first_number(text, value, "threads =")
    elif name == "profile.toml":
        text = _replace_first_number(text, value, "value =")
    elif name == "plan.toml":
        text = _replace_first_number(text, value, "workers =")
    elif name == "workload.toml":
        text = _replace_first_number(text, value, "[popularity.items]\nvalue =")
    elif name == "runs.csv":
        text = _csv_cell(text, "servers", value)
    elif name == "lab-runs.csv":
        text = _csv_cell(text, "servers", value)
    elif name == "sweepplan.csv":
        text = _csv_cell(text, "servers", value)
    elif name in ("sweep.csv", "validation.csv"):
        text = _csv_cell(text, "pred_mops", value)
    elif name == "timeline.csv":
        text = _csv_cell(text, "throughput_mops", value)
    elif name == "ycsb.txt":
        text = re.sub(r"(Throughput\(ops/sec\), )[0-9.]+", lambda m: m.group(1) + value, text)
    elif name == "dbbench.txt":
        text = re.sub(r"([0-9.]+)( micros/op)", lambda m: value + m.group(2), text, count=1)
    elif name == "stats.out":
        text = _replace_first_number(text, value, '"totalOpsdone":')
    elif name == "server.log":
        text = _replace_first_number(text, value, "| 1 | 4210 |")     # server 0's mean wait
    elif name == "prediction.json":
        text = _replace_first_number(text, value, '"throughput_mops":')
    elif name == "trace.txt":
        text = f"user1,{value}\n"
    else:
        raise ValueError(name)
    return text.encode()


#: whole-file defects: (id, bytes or None for a special path, the path to give)
def _file_defects(name: str) -> list[tuple[str, str, tuple[tuple[str, bytes], ...]]]:
    suffix = Path(name).suffix
    other = "scenario.toml" if suffix in (".csv", ".txt", ".out", ".log", ".json") else "runs.csv"
    wrong = _text(other).encode()
    out = [
        ("missing", "{d}/absent" + suffix, ()),
        ("folder", "{d}/folder.toml", ()),
        ("fifo", "{d}/fifo.csv", ()),
        ("device", "/dev/zero", ()),
        ("binary", "{d}/bad" + suffix, (("bad" + suffix, b"\x00\x01\x02PK\x03\x04" * 50),)),
        ("not-utf8", "{d}/bad" + suffix, (("bad" + suffix, b"\xff\xfe" + _text(name).encode("utf-16-le")[:400]),)),
        ("other-kind", "{d}/bad" + suffix, (("bad" + suffix, wrong),)),
        ("empty-file", "{d}/bad" + suffix, (("bad" + suffix, b""),)),
        ("deep", "{d}/bad" + suffix, (("bad" + suffix, b"a = " + b"[" * 5000 + b"\n"),)),
    ]
    if name == "scenario.toml":
        # an empty scenario is the default (every key has one): not a defect
        out = [o for o in out if o[0] != "empty-file"]
    if name == "trace.txt":
        # a trace is one key per line: any text is keys, so only what is not text
        out = [o for o in out if o[0] not in ("other-kind", "deep")]
    return out


@dataclass(frozen=True)
class Slot:
    """An input file option of a command: the command line with ``@`` where
    the file's path goes, and the sandbox file it normally reads."""
    id: str
    command: str
    argv: tuple[str, ...]
    file: str
    option: str


SLOTS: list[Slot] = [
    Slot("predict-scenario", "sim", ("predict", "--no-progress", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("predict-profile", "sim", ("predict", "--no-progress", "--profile", "@"), "profile.toml", "--profile"),
    Slot("predict-runs", "sim", ("predict", "--no-progress", "--no-intervals", "--runs", "@", "--out", "{d}/out/p.csv"), "runs.csv", "--runs"),
    Slot("simulate-scenario", "sim", ("simulate", "--no-progress", "--seconds", "0.1", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("sweep-scenario", "sim", ("sweep", "--no-intervals", "--set", "servers=8,16", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("sweep-plan", "sim", ("sweep", "--no-intervals", "--plan", "@"), "sweepplan.csv", "--plan"),
    Slot("explain-scenario", "sim", ("explain", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("tune-scenario", "sim", ("tune", "--vary", "servers=8:16", "--generations", "1", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("workload-profile", "sim", ("workload", "--workload-profile", "@"), "workload.toml", "--workload-profile"),
    Slot("workload-trace", "sim", ("workload", "--trace", "@"), "trace.txt", "--trace"),
    Slot("workload-fit-runs", "sim", ("workload-fit", "--runs", "@"), "lab-runs.csv", "--runs"),
    Slot("scenario-show", "sim", ("scenario", "show", "--scenario", "@"), "scenario.toml", "--scenario"),
    Slot("run-plan", "calibrate", ("run", "--dry-run", "--no-progress", "--plan", "@"), "plan.toml", "--plan"),
    Slot("fit-runs", "calibrate", ("fit", "--runs", "@", "--out", "{d}/out/f.toml"), "runs.csv", "--runs"),
    Slot("fit-priors", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--priors", "@", "--out", "{d}/out/f.toml"), "profile.toml", "--priors"),
    Slot("validate-runs", "calibrate", ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "@"), "runs.csv", "--runs"),
    Slot("validate-profile", "calibrate", ("validate", "--no-progress", "--runs", "{d}/runs.csv", "--profile", "@"), "profile.toml", "--profile"),
    Slot("ingest-ycsb", "calibrate", ("ingest", "--format", "ycsb", "@", "--set", "servers=16", "--set", "clients=16", "--out", "{d}/out/i.csv"), "ycsb.txt", "FILE"),
    Slot("ingest-dbbench", "calibrate", ("ingest", "--format", "dbbench", "@", "--out", "{d}/out/i.csv"), "dbbench.txt", "FILE"),
    Slot("ingest-stats", "calibrate", ("ingest", "--stats", "@", "--set", "system=farreach", "--out", "{d}/out/i.csv"), "stats.out", "--stats"),
    Slot("ingest-server-log", "calibrate", ("ingest", "--server-log", "@", "--set", "system=nocache", "--out", "{d}/out/i.csv"), "server.log", "--server-log"),
    Slot("knobs-runs", "calibrate", ("knobs", "--no-progress", "--engine", "analytic", "--runs", "@"), "runs.csv", "--runs"),
    Slot("report-prediction", "reports", ("build", "--prediction", "@", "--out", "{d}/out/r.html"), "prediction.json", "--prediction"),
    Slot("report-sweep", "reports", ("build", "--sweep", "@", "--out", "{d}/out/r.html"), "sweep.csv", "--sweep"),
    Slot("report-validation", "reports", ("build", "--validation", "@", "--out", "{d}/out/r.html"), "validation.csv", "--validation"),
    Slot("report-timeline", "reports", ("build", "--timeline", "@", "--out", "{d}/out/r.html"), "timeline.csv", "--timeline"),
    Slot("report-scenario", "reports", ("build", "--sweep", "{d}/sweep.csv", "--scenario", "@", "--out", "{d}/out/r.html"), "scenario.toml", "--scenario"),
    Slot("report-profile", "reports", ("build", "--sweep", "{d}/sweep.csv", "--profile", "@", "--out", "{d}/out/r.html"), "profile.toml", "--profile"),
    Slot("systems-profile", "reports.systems", ("--out", "{d}/out/sys", "--system", "runtimes", "--profile", "@"), "profile.toml", "--profile"),
    Slot("facts-profile", "sim.facts", ("--no-progress", "--profile", "@"), "profile.toml", "--profile"),
]


def _slot_probe(slot: Slot, defect: str, path: str, prepare) -> Probe:
    argv = tuple(path if a == "@" else a for a in slot.argv)
    shown = path.replace("{d}/", "") if path.startswith("{d}") else path
    return Probe(f"{slot.id}:{defect}", slot.command, argv, (shown, slot.option), tuple(prepare))


def file_probes() -> list[Probe]:
    """Every input file option, each with every whole-file defect and every bad value."""
    out = []
    for slot in SLOTS:
        for defect, path, prepare in _file_defects(slot.file):
            out.append(_slot_probe(slot, defect, path, prepare))
        out.append(_slot_probe(slot, "empty-path", "", ()))
        for vid, value in BAD_VALUES.items():
            if slot.file == "trace.txt" and vid in ("text",):
                continue
            name = "v-" + slot.file
            out.append(_slot_probe(slot, f"value-{vid}", "{d}/" + name,
                                   ((name, bad_value_file(slot.file, value)),)))
    return out


#: commands that take --set KEY=VALUE on a scenario
SET_COMMANDS = [
    ("sim", ("predict", "--no-progress")),
    ("sim", ("simulate", "--no-progress", "--seconds", "0.1")),
    ("sim", ("explain",)),
    ("sim", ("scenario", "show")),
    ("sim", ("workload",)),
]
SET_CASES = [
    ("unknown-key", "no_such_key=1", "no_such_key"),
    ("unknown-section", "nosection.count=1", "nosection"),
    ("no-equals", "servers", "servers"),
    ("empty-key", "=4", "--set"),
    ("empty-value", "servers=", "servers"),
    ("huge", f"servers={HUGE}", "servers"),
    ("vast", f"clients={VAST}", "clients"),
    ("nan", "storage.memtable_mb=nan", "memtable_mb"),
    ("inf", "clients.timeout_ms=inf", "timeout_ms"),
    ("neg", "servers=-1", "servers"),
    ("zero", "clients=0", "clients"),
    ("float-int", "servers=2.5", "servers"),
    ("text", "servers=abc", "servers"),
    ("bool", "servers=true", "servers"),
    ("choice", "switch.mode=sideways", "switch.mode"),
    ("string-number", "workload.profile=5", "workload.profile"),
    ("range", "servers=100000", "servers"),
    ("array", "servers=[1,2]", "servers"),
    ("table", "servers={a=1}", "servers"),
    ("deep", "servers=" + "[" * 3000, "servers"),
]


def set_probes() -> list[Probe]:
    out = []
    for command, base in SET_COMMANDS:
        for cid, expr, name in SET_CASES:
            out.append(Probe(f"{'-'.join(base[:1])}-set:{cid}", command, (*base, "--set", expr),
                             (name,)))
    # sweep's --set takes lists of values
    for cid, expr, name in SET_CASES:
        if cid in ("empty-key", "no-equals", "array", "table", "deep"):
            continue
        out.append(Probe(f"sweep-set:{cid}", "sim", ("sweep", "--no-intervals", "--set", expr),
                         (name,)))
    return out


#: (id, command, argv with @ for the number, the option)
NUMBER_OPTIONS = [
    ("predict-seconds", "sim", ("predict", "--no-progress", "--engine", "sim", "--seconds", "@"), "--seconds"),
    ("predict-jobs", "sim", ("predict", "--no-progress", "--runs", "{d}/runs.csv", "--out", "{d}/out/p.csv", "--jobs", "@"), "--jobs"),
    ("predict-seed", "sim", ("predict", "--no-progress", "--engine", "sim", "--seconds", "0.1", "--seed", "@"), "--seed"),
    ("simulate-seconds", "sim", ("simulate", "--no-progress", "--seconds", "@"), "--seconds"),
    ("sweep-baseline", "sim", ("sweep", "--no-intervals", "--set", "servers=8,16", "--baseline", "@"), "--baseline"),
    ("tune-generations", "sim", ("tune", "--vary", "servers=8:16", "--generations", "@"), "--generations"),
    ("tune-max-latency", "sim", ("tune", "--vary", "servers=8:16", "--generations", "1", "--max-latency-us", "@"), "--max-latency-us"),
    ("workload-hot", "sim", ("workload", "--hot-records", "@"), "--hot-records"),
    ("validate-max-error", "calibrate", ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv", "--max-error", "@"), "--max-error"),
    ("fit-bootstrap", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "{d}/out/f.toml", "--bootstrap", "@"), "--bootstrap"),
    ("knobs-seconds", "calibrate", ("knobs", "--no-progress", "--runs", "{d}/runs.csv", "--engine", "sim", "--seconds", "@"), "--seconds"),
    ("knobs-min-effect", "calibrate", ("knobs", "--no-progress", "--runs", "{d}/runs.csv", "--min-effect", "@"), "--min-effect"),
    ("run-quiet-timeout", "calibrate", ("run", "--dry-run", "--no-progress", "--quiet-timeout", "@"), "--quiet-timeout"),
    ("facts-scale", "sim.facts", ("--no-progress", "--scale", "@"), "--scale"),
]
NUMBER_VALUES = {"nan": "nan", "inf": "inf", "neg": "-1", "text": "abc", "huge": HUGE}


def number_probes() -> list[Probe]:
    out = []
    for oid, command, argv, option in NUMBER_OPTIONS:
        for vid, value in NUMBER_VALUES.items():
            out.append(Probe(f"{oid}:{vid}", command,
                             tuple(value if a == "@" else a for a in argv), (option,)))
    return out


#: (id, command, argv with @ for the output, the option)
OUTPUTS = [
    ("predict-html", "sim", ("predict", "--no-progress", "--html", "@"), "--html", ".html"),
    ("predict-out", "sim", ("predict", "--no-progress", "--no-intervals", "--runs", "{d}/runs.csv", "--out", "@"), "--out", ".csv"),
    ("simulate-timeline", "sim", ("simulate", "--no-progress", "--seconds", "0.1", "--timeline", "@"), "--timeline", ".csv"),
    ("sweep-out", "sim", ("sweep", "--no-intervals", "--set", "servers=8,16", "--out", "@"), "--out", ".csv"),
    ("explain-out", "sim", ("explain", "--out", "@"), "--out", ".json"),
    ("tune-out", "sim", ("tune", "--vary", "servers=8:16", "--generations", "1", "--out", "@"), "--out", ".csv"),
    ("workload-fit-out", "sim", ("workload-fit", "--runs", "{d}/lab-runs.csv", "--out", "@"), "--out", ".toml"),
    ("fit-out", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "@"), "--out", ".toml"),
    ("validate-out", "calibrate", ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv", "--out", "@"), "--out", ".csv"),
    ("ingest-out", "calibrate", ("ingest", "--format", "ycsb", "{d}/ycsb.txt", "--set", "servers=16", "--set", "clients=16", "--out", "@"), "--out", ".csv"),
    ("knobs-out", "calibrate", ("knobs", "--no-progress", "--engine", "analytic", "--runs", "{d}/runs.csv", "--out", "@"), "--out", ".csv"),
    ("report-out", "reports", ("build", "--sweep", "{d}/sweep.csv", "--out", "@"), "--out", ".html"),
]


def _output_cases(argv: Sequence[str], ext: str) -> list[tuple[str, str]]:
    inputs = [a for a in argv if a.startswith("{d}/")]
    cases = [("missing-folder", "{d}/nowhere/x" + ext), ("folder", "{d}/out"),
             ("proc", "/proc/kvperf-probe" + ext), ("empty", "")]
    if inputs:
        cases.append(("is-input", inputs[0]))
        cases.append(("is-input-relative", inputs[0].replace("{d}/", "{d}/out/../")))
    if ext in (".html", ".json") or "sweep" in " ".join(argv) or "explain" in argv:
        cases.append(("wrong-type", "{d}/out/x.exe"))
    return cases


def output_probes() -> list[Probe]:
    out = []
    for oid, command, argv, option, ext in OUTPUTS:
        for cid, path in _output_cases(argv, ext):
            out.append(Probe(f"{oid}:{cid}", command,
                             tuple(path if a == "@" else a for a in argv),
                             (option, path.replace("{d}/", "").split("/")[-1] or option)))
    return out


def _without(name: str, column: str) -> bytes:
    lines = _text(name).splitlines()
    i = lines[0].split(",").index(column)
    return ("\n".join(",".join(c for k, c in enumerate(ln.split(",")) if k != i)
                      for ln in lines) + "\n").encode()


def issue_probes() -> list[Probe]:
    """The cases issue 43 found, as it found them."""
    sweep = _text("sweep.csv").encode()
    return [
        # a report over its own input: the CSV, the scenario, an .html input
        Probe("issue:report-over-sweep", "reports", ("build", "--sweep", "{d}/sweep.csv", "--out", "{d}/sweep.csv"), ("--out",)),
        Probe("issue:report-over-scenario", "reports", ("build", "--sweep", "{d}/sweep.csv", "--scenario", "{d}/scenario.toml", "--out", "{d}/scenario.toml"), ("--out",)),
        Probe("issue:report-over-html-input", "reports", ("build", "--sweep", "{d}/s.html", "--out", "{d}/s.html"), ("--out",), (("s.html", sweep),), says="also an input"),
        Probe("issue:report-into-missing-folder", "reports", ("build", "--sweep", "{d}/sweep.csv", "--out", "{d}/new/r.html"), ("--out",), says="does not exist"),
        Probe("issue:ingest-into-missing-folder", "calibrate", ("ingest", "--format", "ycsb", "{d}/ycsb.txt", "--set", "servers=16", "--set", "clients=16", "--out", "{d}/new/i.csv"), ("--out",), says="does not exist"),
        # (an input named .csv: a .txt output is refused first, for its type)
        Probe("issue:ingest-over-its-input", "calibrate", ("ingest", "--format", "ycsb", "{d}/ycsb.csv", "--set", "servers=16", "--set", "clients=16", "--out", "{d}/ycsb.csv"), ("--out",), (("ycsb.csv", _text("ycsb.txt").encode()),), says="also an input"),
        Probe("issue:ingest-unwritable", "calibrate", ("ingest", "--format", "ycsb", "{d}/ycsb.txt", "--set", "servers=16", "--set", "clients=16", "--out", "/proc/kvperf.csv"), ("--out",), says="cannot write"),
        Probe("issue:set-huge", "sim", ("predict", "--set", f"servers={HUGE}"), ("servers",)),
        Probe("issue:sweep-set-huge", "sim", ("sweep", "--set", f"servers=8,{HUGE}"), ("servers",)),
        Probe("issue:scenario-huge", "sim", ("predict", "--scenario", "{d}/h.toml"), ("h.toml",), (("h.toml", f"[servers]\ncount = {HUGE}\n".encode()),), says="line 2"),
        Probe("issue:scenario-dev-zero", "sim", ("predict", "--scenario", "/dev/zero"), ("/dev/zero",)),
        Probe("issue:scenario-fifo", "sim", ("predict", "--scenario", "{d}/fifo.csv"), ("fifo.csv",)),
        Probe("issue:runs-fifo", "sim", ("predict", "--runs", "{d}/fifo.csv", "--out", "{d}/out/o.csv"), ("fifo.csv",)),
        Probe("issue:ycsb-nan-throughput", "calibrate", ("ingest", "--format", "ycsb", "{d}/y.txt", "--set", "servers=16", "--set", "clients=16", "--out", "{d}/out/i.csv"), ("y.txt",), (("y.txt", bad_value_file("ycsb.txt", "NaN")),), says="NaN"),
        Probe("issue:empty-scenario", "sim", ("predict", "--scenario", ""), ("--scenario",)),
        Probe("issue:empty-profile", "sim", ("predict", "--profile", ""), ("--profile",)),
        Probe("issue:max-error-nan", "calibrate", ("validate", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv", "--max-error", "nan"), ("--max-error",)),
        Probe("issue:negative-pred-mops", "reports", ("build", "--validation", "{d}/v.csv", "--out", "{d}/out/r.html"), ("v.csv",), (("v.csv", bad_value_file("validation.csv", "-0.5")),), says="pred_mops"),
        Probe("issue:vast-cell", "sim", ("predict", "--runs", "{d}/v.csv", "--out", "{d}/out/o.csv"), ("v.csv",), (("v.csv", bad_value_file("runs.csv", VAST)),), says="characters"),
        Probe("issue:runs-without-servers", "sim", ("predict", "--runs", "{d}/v.csv", "--out", "{d}/out/o.csv"), ("v.csv",), (("v.csv", _without("lab-runs.csv", "servers")),), says="missing column servers"),
        Probe("issue:profile-number", "sim", ("predict", "--set", "workload.profile=5"), ("workload.profile",), says="a name or a file path"),
        Probe("issue:fit-says-nothing-first", "calibrate", ("fit", "--runs", "{d}/v.csv", "--out", "{d}/out/f.toml"), ("v.csv",), (("v.csv", bad_value_file("runs.csv", "nan")),)),
    ]


def other_probes() -> list[Probe]:
    """The smaller command lines: reports check, the systems' fit, parity."""
    out = []
    for defect, path in (("missing", "{d}/absent.html"), ("folder", "{d}/folder.toml"),
                         ("fifo", "{d}/fifo.csv"), ("device", "/dev/zero"), ("empty", "")):
        out.append(Probe(f"check-report:{defect}", "reports", ("check", path),
                         (path.replace("{d}/", "") or "report", "REPORT", "report")))
    for cid, shot in (("over-input", "{d}/page.png"), ("missing-folder", "{d}/nowhere/s.png"),
                      ("wrong-type", "{d}/out/s.html"), ("folder", "{d}/out")):
        out.append(Probe(f"check-screenshot:{cid}", "reports",
                         ("check", "{d}/page.png" if cid == "over-input" else "{d}/page.html",
                          "--screenshot", shot), ("--screenshot",),
                         (("page.html", b"<html></html>"), ("page.png", b"png"))))
    out += [
        Probe("systems-fit:unknown", "calibrate.systems_fit", ("--system", "nope", "--print"), ("--system",)),
        Probe("systems-fit:data-missing", "calibrate.systems_fit", ("--system", "runtimes", "--data", "{d}/absent"), ("--data",)),
        Probe("systems-fit:data-file", "calibrate.systems_fit", ("--system", "runtimes", "--data", "{d}/runs.csv"), ("--data",)),
        Probe("systems-fit:out-missing", "calibrate.systems_fit", ("--system", "runtimes", "--out-dir", "{d}/absent"), ("--out-dir",)),
        Probe("systems-fit:out-proc", "calibrate.systems_fit", ("--system", "runtimes", "--out-dir", "/proc"), ("--out-dir",)),
        Probe("systems-fit:empty", "calibrate.systems_fit", ("--system", ""), ("--system",)),
    ]
    for vid, value in NUMBER_VALUES.items():
        out.append(Probe(f"parity-seconds:{vid}", "sim.parity", ("--seconds", value), ("--seconds",)))
    out.append(Probe("parity-profile:missing", "sim.parity", ("--profile", "{d}/absent.toml"), ("absent.toml",)))
    out.append(Probe("parity-regime:unknown", "sim.parity", ("no such regime",), ("no such regime",)))
    for vid, value in NUMBER_VALUES.items():
        out.append(Probe(f"agreement-n:{vid}", "sim.agreement", ("--n", value), ("--n",)))
    for cid, path in (("missing-folder", "{d}/nowhere/a.csv"), ("folder", "{d}/out"),
                      ("wrong-type", "{d}/out/a.html"), ("proc", "/proc/kvperf.csv")):
        out.append(Probe(f"agreement-csv:{cid}", "sim.agreement", ("--n", "1", "--csv", path),
                         ("--csv",)))
    return out


def catalog() -> list[Probe]:
    """The fixed probes CI replays."""
    probes = (issue_probes() + file_probes() + set_probes() + number_probes()
              + output_probes() + other_probes())
    ids = [p.id for p in probes]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, dup
    return probes


def value_probe(slot_index: int, value: str) -> Probe:
    """A probe from drawn values: ``value`` in place of a number in the slot's file."""
    slot = SLOTS[slot_index % len(SLOTS)]
    name = "v-" + slot.file
    return _slot_probe(slot, "drawn", "{d}/" + name, ((name, bad_value_file(slot.file, value)),))


# ---------------------------------------------------------------- on demand
#: the classes of probes, in order: issue 43's bad inputs, then issue 55's edges
CLASSES = ("inputs", "outputs", "extensions-order", "signals", "api", "notes")


def every_probe(classes=CLASSES, only: str = "") -> list:
    """Every probe of the given classes: the in-process command lines
    (:func:`catalog`, :mod:`.probes_edges`), the API's (:mod:`.probes_api`)
    and the signals' (:mod:`.probes_signals`, each its own process)."""
    from . import probes_api, probes_edges, probes_signals
    probes = catalog() + probes_edges.catalog() + probes_api.catalog() + probes_signals.catalog()
    return [p for p in probes if p.kind in classes and only in p.id]


def run_any(probe):
    """Run a probe of any class with its own runner."""
    from . import probes_api, probes_signals
    if isinstance(probe, probes_api.ApiProbe):
        return probes_api.run(probe)
    if isinstance(probe, probes_signals.SignalProbe):
        return probes_signals.run(probe)
    return run(probe)


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tests.robustness.probes")
    ap.add_argument("--only", default="", help="run the probes whose id contains this")
    ap.add_argument("--class", dest="classes", action="append", choices=CLASSES,
                    help="run this class of probes (repeatable; default: every class)")
    args = ap.parse_args(argv)
    probes = every_probe(tuple(args.classes or CLASSES), args.only)
    counts = {c: [0, 0, 0] for c in CLASSES}             # probes, failing, not reached
    t0 = time.perf_counter()
    for i, p in enumerate(probes, 1):
        o = run_any(p)
        counts[p.kind][0] += 1
        if getattr(o, "finished_first", False):
            counts[p.kind][2] += 1
            print(f"NOT REACHED {p.id}: the command ended (exit {o.code}) before the signal",
                  flush=True)
        elif o.problems:
            counts[p.kind][1] += 1
            text = getattr(o, "stderr", None) or getattr(o, "error", "")
            print(f"FAIL {p.id}: {'; '.join(o.problems)[:300]} | {text.strip()[-160:]!r}",
                  flush=True)
        if i % 50 == 0:
            print(f"  {i}/{len(probes)} probes, {sum(c[1] for c in counts.values())} failing, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    for c, (n, bad, early) in counts.items():
        if n:
            print(f"{c:<17} {n:4d} probes: {n - bad - early} pass, {bad} fail"
                  + (f", {early} not reached (the command finished before the signal)"
                     if early else ""))
    total_bad = sum(c[1] for c in counts.values())
    print(f"{len(probes)} probes, {total_bad} failing; {time.perf_counter() - t0:.0f} s")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
