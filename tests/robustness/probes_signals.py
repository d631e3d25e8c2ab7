"""Signals (issue 55, class ``signals``): every command, stopped at any moment.

A *signal probe* starts a command as a user does (``python -m ...``, its own
process), waits until the command is where the probe wants it -- never a
sleep sized from an earlier run, so that the probes hold on a loaded
machine --, then sends a signal after a further delay, and judges:

* the exit code: 130 for SIGINT, 143 for SIGTERM (a SIGKILL kills the
  command by the signal); no traceback, no "Exception ignored" on stderr;
* no process left: a few seconds after the command's exit no process it
  started (forked, spawned, at any depth: each carries the probe's mark in
  its environment) is running, and the command's stdout reaches its end (a
  worker holding the caller's pipe would hang a script);
* a partial output holds a ``partial`` column on every row, or is not there;
  no temporary file is left beside it.

What the probe waits for (``wait``):

* ``ready`` -- the command's signal handlers are installed (its entry point
  ran: :mod:`runio.launch`), read from ``/proc/<pid>/status`` (``SigCgt``
  holds SIGTERM, which Python leaves alone by default); the delays after it
  cover the imports, the parsing and the work. A command that installs no
  handler is taken as ready :data:`NO_HANDLER_S` after its start (to run the
  catalog against a version without them);
* ``children:N`` -- the command runs N worker processes;
* ``stderr:TEXT`` -- the command printed TEXT on stderr (its progress bar
  started: the work began).
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 120           # the longest wait for a command to get where a probe wants it
EXIT_SECONDS = 60            # the longest wait for it to exit after the signal
GONE_SECONDS = 10            # ... and for its workers to end, its stdout to close
#: a command that installs no SIGTERM handler is "ready" this long after its start
NO_HANDLER_S = float(os.environ.get("KVPERF_PROBE_NO_HANDLER_S", "10"))


@dataclass(frozen=True)
class SignalProbe:
    id: str
    argv: tuple[str, ...]           # after ``python``; ``{d}`` is the probe's own folder
    signum: int
    wait: str = "ready"
    delay: float = 0.0
    output: str = ""                # a file the command writes: absent or all partial
    kind: str = "signals"


@dataclass
class SignalOutcome:
    probe: SignalProbe
    code: int | None
    stderr: str
    waited: float                   # seconds from the start to where the probe waited for
    problems: list[str] = field(default_factory=list)
    finished_first: bool = False    # the command ended before the signal: nothing judged


def expected_code(signum: int) -> int:
    return {signal.SIGINT: 130, signal.SIGTERM: 143}.get(signum, -signum)


# ---------------------------------------------------------------- the process
def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def handles_sigterm(pid: int) -> bool | None:
    """Has ``pid`` installed its SIGTERM handler (None: it is gone)?"""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return bool((int(line.split()[1], 16) >> (signal.SIGTERM - 1)) & 1)
    except OSError:
        return None
    return False


MARK = "KVPERF_SIGNAL_PROBE"


def marked(mark: str) -> list[int]:
    """The running processes whose environment holds ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode() + b"\0"
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if needle in fh.read() and alive(int(name)):
                        out.append(int(name))
            except OSError:
                continue
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(proc: subprocess.Popen, probe: SignalProbe, err_path: Path) -> bool:
    """Until the command is where the probe wants it; False if it ended first."""
    start = time.monotonic()
    deadline = start + WAIT_SECONDS
    what, _, arg = probe.wait.partition(":")
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if what == "ready" and (handles_sigterm(proc.pid)
                                or time.monotonic() - start >= NO_HANDLER_S):
            return True
        if what == "children" and len(children_of(proc.pid)) >= int(arg):
            return True
        if what == "stderr" and arg in err_path.read_text(errors="replace"):
            return True
        time.sleep(0.002 if what == "ready" else 0.02)
    raise TimeoutError(f"not {probe.wait} within {WAIT_SECONDS} s")


def run(probe: SignalProbe) -> SignalOutcome:
    d = Path(tempfile.mkdtemp(prefix="kvperf-signal-probe-"))
    proc = reader = None
    try:
        prepare(d)
        argv = [a.replace("{d}", str(d)) for a in probe.argv]
        err_path = d / "stderr.txt"
        with open(err_path, "wb") as err:
            t0 = time.monotonic()
            proc = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=err,
                                    env=dict(os.environ, **{MARK: d.name}))
        out_closed = threading.Event()
        reader = threading.Thread(target=lambda: (proc.stdout.read(), out_closed.set()),
                                  daemon=True)
        reader.start()
        try:
            there = _wait_for(proc, probe, err_path)
        except TimeoutError as exc:
            proc.kill()
            proc.wait()
            _end(marked(d.name))
            return SignalOutcome(probe, None, err_path.read_text(errors="replace"),
                                 time.monotonic() - t0, [str(exc)])
        waited = time.monotonic() - t0
        if there and probe.delay:
            time.sleep(probe.delay)
        if not there or proc.poll() is not None:
            proc.wait()
            _end(marked(d.name))
            return SignalOutcome(probe, proc.returncode, err_path.read_text(errors="replace"),
                                 waited, [], finished_first=True)
        proc.send_signal(probe.signum)
        problems = []
        try:
            proc.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            problems.append(f"no exit within {EXIT_SECONDS} s of the signal")
            proc.kill()
            proc.wait()
        stderr = err_path.read_text(errors="replace")
        problems += judge(probe, proc.returncode, stderr, out_closed, d)
        return SignalOutcome(probe, proc.returncode, stderr, waited, problems)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        # (a process left holding the pipe keeps the reader in read(): closing
        # the file under it would wait for it)
        if proc is not None and proc.stdout is not None and not (reader and reader.is_alive()):
            proc.stdout.close()
        shutil.rmtree(d, ignore_errors=True)


def judge(probe: SignalProbe, code: int | None, stderr: str, out_closed: threading.Event,
          d: Path) -> list[str]:
    problems = []
    if code != expected_code(probe.signum):
        problems.append(f"exit code {code}, expected {expected_code(probe.signum)}")
    for word in ("Traceback", "Exception ignored"):
        if word in stderr:
            problems.append(f"{word.lower()} on stderr: {stderr[-400:]!r}")
    deadline = time.monotonic() + GONE_SECONDS
    while time.monotonic() < deadline and marked(d.name):
        time.sleep(0.05)
    left = marked(d.name)
    if left:
        problems.append(f"workers left behind: {left}")
        _end(left)
    if not out_closed.wait(GONE_SECONDS):
        problems.append("stdout still open: a process holds the caller's pipe")
    if probe.output:
        problems += _partial_problems(Path(probe.output.replace("{d}", str(d))))
    return problems


def _end(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _partial_problems(path: Path) -> list[str]:
    leftovers = [p.name for p in path.parent.glob(f".{path.name}.*.tmp")]
    out = [f"temporary files left: {leftovers}"] if leftovers else []
    if not path.exists():
        return out
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or "partial" not in rows[0]:
        return out + [f"{path.name} is left without a partial column ({len(rows) - 1} rows)"]
    i = rows[0].index("partial")
    if len(rows) < 2:
        return out + [f"{path.name} is left with a header and no row"]
    bad = [n for n, r in enumerate(rows[1:], 2) if len(r) <= i or r[i] not in ("true", "false")]
    return out + ([f"{path.name}: rows without their partial mark, lines {bad[:5]}"] if bad else [])


# ---------------------------------------------------------------- the catalog
def prepare(d: Path) -> None:
    """The probes' inputs: files big enough for worker processes (the lab's
    rows repeated, 440 rack rows and 1,080 of an async runtime's)."""
    for name, source, times in (("big.csv", "farreach_tuning.csv", 20),
                                ("big-runtimes.csv", "runtimes_curves.csv", 30)):
        lines = (ROOT / "data" / source).read_text().splitlines()
        with open(d / name, "w") as fh:
            fh.write(lines[0] + "\n")
            for k in range(times):
                for r in lines[1:]:
                    cells = r.split(",")
                    cells[0] = f"{cells[0]}-{k}"           # ids stay unique
                    fh.write(",".join(cells) + "\n")


#: every entry point, in a form that runs a while (seconds to minutes)
ENTRY_POINTS = [
    ("sim", ("-m", "sim", "predict", "--engine", "sim", "--seconds", "60", "--no-progress")),
    ("calibrate", ("-m", "calibrate", "validate", "--runs", "data/farreach_runs.csv", "--cv",
                   "column:servers", "--no-progress", "--out", "{d}/held.csv")),
    ("reports", ("-m", "reports", "build", "--sweep", "data/farreach_runs.csv", "--out",
                 "{d}/r.html")),
    ("reports.systems", ("-m", "reports.systems", "--out", "{d}/sys", "--system", "runtimes")),
    ("sim.facts", ("-m", "sim.facts", "--no-progress")),
    ("sim.parity", ("-m", "sim.parity",)),
    ("sim.agreement", ("-m", "sim.agreement", "--n", "20")),
    ("calibrate.systems_fit", ("-m", "calibrate.systems_fit", "--system", "runtimes",
                               "--print")),
    # the other long commands of python -m sim
    ("sim-sweep", ("-m", "sim", "sweep", "--set", "servers=1,2,4,8,16,32,64,128,256,512",
                   "--set", "clients=64,128,256,512,1024,2048,4096,8192,16384,32768")),
    ("sim-tune", ("-m", "sim", "tune", "--vary", "servers=8:512", "--vary", "clients=64:4096",
                  "--generations", "30")),
]
#: seconds after the handlers are installed: the imports, parsing, the work
DELAYS = (0.0, 0.03, 0.1, 0.3, 1.0, 3.0)

#: commands with worker processes, waited for until N of them run
WORKERS = [
    ("predict-runs", ("-m", "sim", "predict", "--runs", "{d}/big.csv", "--out", "{d}/o.csv",
                      "--jobs", "2", "--no-progress"), "{d}/o.csv"),
    ("validate", ("-m", "calibrate", "validate", "--profile", "runtimes", "--runs",
                  "{d}/big-runtimes.csv", "--jobs", "2", "--no-progress", "--out", "{d}/v.csv"),
     "{d}/v.csv"),
    ("knobs-sim", ("-m", "calibrate", "knobs", "--runs", "data/farreach_runs.csv", "--engine",
                   "sim", "--seconds", "2", "--jobs", "2", "--no-progress", "--out",
                   "{d}/k.csv"), "{d}/k.csv"),
    ("agreement", ("-m", "sim.agreement", "--n", "20", "--jobs", "2"), ""),
]

#: commands with a partial output, waited for until their progress bar starts
PARTIAL = [
    ("predict-runs", ("-m", "sim", "predict", "--runs", "{d}/big.csv", "--out", "{d}/o.csv",
                      "--jobs", "1", "--progress"), "predicting", "{d}/o.csv"),
    ("validate-cv", ("-m", "calibrate", "validate", "--runs", "data/farreach_runs.csv", "--cv",
                     "column:servers", "--progress", "--out", "{d}/held.csv"), "refits",
     "{d}/held.csv"),
    ("simulate-timeline", ("-m", "sim", "simulate", "--seconds", "30", "--progress",
                           "--timeline", "{d}/tl.csv"), "simulating", "{d}/tl.csv"),
    ("knobs-sim", ("-m", "calibrate", "knobs", "--runs", "data/farreach_runs.csv", "--engine",
                   "sim", "--seconds", "2", "--jobs", "1", "--progress", "--out", "{d}/k.csv"),
     "simulating", "{d}/k.csv"),
]
PARTIAL_DELAYS = (0.0, 0.5, 2.0)


def catalog() -> list[SignalProbe]:
    out = []
    for name, argv in ENTRY_POINTS:
        for delay in DELAYS:
            out.append(SignalProbe(f"signals:sigint:{name}:{delay:g}s", argv, signal.SIGINT,
                                   "ready", delay))
        for delay in (0.0, 1.0):
            out.append(SignalProbe(f"signals:sigterm:{name}:{delay:g}s", argv, signal.SIGTERM,
                                   "ready", delay))
    for name, argv, output in WORKERS:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            out.append(SignalProbe(f"signals:workers:{name}:{signal.Signals(signum).name}",
                                   argv, signum, "children:2", 0.3, output))
    for name, argv, text, output in PARTIAL:
        for delay in PARTIAL_DELAYS:
            out.append(SignalProbe(f"signals:partial:{name}:{delay:g}s", argv, signal.SIGINT,
                                   f"stderr:{text}", delay, output))
    return out
