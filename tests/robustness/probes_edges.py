"""The command-line edges of issue 55, each class in its generic form.

* ``outputs`` -- every output option of every command against every kind
  of path that is not a regular file: a copy of ``/dev/null`` and of
  ``/dev/full`` (device nodes, made with mknod where this user may), a link
  to ``/proc/self/fd/1``, a link to a file, a dangling link, a FIFO. Each
  must be refused before any work: exit 2, one line naming the option,
  the path left as it was (a device stays a device, a link a link).
* ``extensions-order`` -- every output option given an extension it does
  not write (``predict --runs --out o.json`` would get CSV), and the
  refusals a command can only make from a value's meaning (a parameter
  ``--free`` names, a latency bound no rack can meet, a cross-validation
  grouping), with progress forced on: the refusal comes first, before any
  progress line, and creates nothing (no output folder).
* ``notes`` -- every option a command declares it ignores in some of its
  forms (``ArgumentParser.ignored_unless``), given there, and a timeout
  below the profile's timer floor, for every command that takes a
  scenario: the command runs (exit 0) and says so in a ``NOTE:`` line.
  A server rotation's JSON is a prediction ``reports build`` reads.

The judge is :func:`tests.robustness.probes.run`. The Python API's class is
in :mod:`tests.robustness.probes_api`, the signals' in
:mod:`tests.robustness.probes_signals`.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import replace

from .probes import Probe

# ---------------------------------------------------------------- outputs
#: (id, command, argv with @ for the output, option, the extensions it writes)
#: -- every output option of every command
OUTPUT_SLOTS = [
    ("predict-html", "sim", ("predict", "--no-progress", "--no-intervals", "--html", "@"), "--html", (".html",)),
    ("predict-runs-out", "sim", ("predict", "--no-progress", "--no-intervals", "--runs", "{d}/runs.csv", "--out", "@"), "--out", (".csv",)),
    ("predict-runs-html", "sim", ("predict", "--no-progress", "--no-intervals", "--runs", "{d}/runs.csv", "--out", "{d}/out/p.csv", "--html", "@"), "--html", (".html",)),
    ("rotation-html", "sim", ("predict", "--no-progress", "--no-intervals", "--measure", "rotation", "--set", "servers=4", "--html", "@"), "--html", (".html",)),
    ("simulate-timeline", "sim", ("simulate", "--no-progress", "--seconds", "0.1", "--timeline", "@"), "--timeline", (".csv",)),
    ("simulate-html", "sim", ("simulate", "--no-progress", "--seconds", "0.1", "--html", "@"), "--html", (".html",)),
    ("sweep-out", "sim", ("sweep", "--no-intervals", "--set", "servers=8,16", "--out", "@"), "--out", (".csv", ".json", ".html")),
    ("explain-out", "sim", ("explain", "--out", "@"), "--out", (".csv", ".json", ".html")),
    ("tune-out", "sim", ("tune", "--vary", "servers=8:16", "--generations", "1", "--out", "@"), "--out", (".csv", ".json", ".html")),
    ("workload-fit-out", "sim", ("workload-fit", "--runs", "{d}/lab-runs.csv", "--out", "@"), "--out", (".toml",)),
    ("run-out", "calibrate", ("run", "--dry-run", "--no-progress", "--plan", "{d}/plan.toml", "--out", "@"), "--out", (".csv",)),
    ("fit-out", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "@"), "--out", (".toml",)),
    ("validate-out", "calibrate", ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv", "--out", "@"), "--out", (".csv",)),
    ("validate-html", "calibrate", ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv", "--html", "@"), "--html", (".html",)),
    ("cv-out", "calibrate", ("validate", "--no-progress", "--runs", "{d}/lab-runs.csv", "--cv", "column:servers", "--out", "@"), "--out", (".csv",)),
    ("ingest-ycsb-out", "calibrate", ("ingest", "--format", "ycsb", "{d}/ycsb.txt", "--set", "servers=16", "--set", "clients=16", "--out", "@"), "--out", (".csv",)),
    ("ingest-dbbench-out", "calibrate", ("ingest", "--format", "dbbench", "{d}/dbbench.txt", "--out", "@"), "--out", (".csv",)),
    ("ingest-farreach-out", "calibrate", ("ingest", "--stats", "{d}/stats.out", "--set", "system=farreach", "--out", "@"), "--out", (".csv",)),
    ("public-out", "calibrate", ("public", "--no-progress", "--out", "@"), "--out", (".csv",)),
    ("public-html", "calibrate", ("public", "--no-progress", "--html", "@"), "--html", (".html",)),
    ("knobs-out", "calibrate", ("knobs", "--no-progress", "--engine", "analytic", "--runs", "{d}/runs.csv", "--out", "@"), "--out", (".csv",)),
    ("knobs-html", "calibrate", ("knobs", "--no-progress", "--engine", "analytic", "--runs", "{d}/runs.csv", "--html", "@"), "--html", (".html",)),
    ("report-out", "reports", ("build", "--sweep", "{d}/sweep.csv", "--out", "@"), "--out", (".html",)),
    ("check-screenshot", "reports", ("check", "{d}/page.html", "--screenshot", "@"), "--screenshot", (".png",)),
    ("agreement-csv", "sim.agreement", ("--n", "1", "--csv", "@"), "--csv", (".csv",)),
    # folders: the command names the files it writes in them
    ("systems-out", "reports.systems", ("--out", "@", "--system", "runtimes", "--cv", "none"), "--out", ()),
    ("systems-fit-out-dir", "calibrate.systems_fit", ("--system", "runtimes", "--out-dir", "@"), "--out-dir", ()),
]


def can_mknod() -> bool:
    """May this user make device nodes (root, or CAP_MKNOD)? The device
    probes need one; without it they are left out (the links stay in)."""
    with tempfile.TemporaryDirectory() as d:
        try:
            os.mknod(os.path.join(d, "n"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
        except OSError:
            return False
    return True


def _kinds(ext: str) -> list[tuple[str, tuple[str, str, str]]]:
    """(id, the special file) of every path that is not a regular file."""
    name = "target" + ext
    out = [("link-stdout", (name, "link", "/proc/self/fd/1")),
           ("link-file", (name, "link", "{d}/keep.dat")),
           ("link-dangling", (name, "link", "{d}/nowhere/x")),
           ("fifo", (name, "fifo", ""))]
    if can_mknod():
        out = [("device-null", (name, "chr", "1,3")), ("device-full", (name, "chr", "1,7"))] + out
    return out


def output_probes() -> list[Probe]:
    """Every output option against every path that is not a regular file."""
    out = []
    for oid, command, argv, option, types in OUTPUT_SLOTS:
        ext = types[0] if types else ""
        for kid, special in _kinds(ext):
            path = "{d}/" + special[0]
            out.append(Probe(f"{oid}:{kid}", command, tuple(path if a == "@" else a for a in argv),
                             (option,), prepare=_PREPARE, special=(special,), kind="outputs"))
        if not types:              # a folder option: a file is no folder either
            out.append(Probe(f"{oid}:file", command, tuple("{d}/keep.dat" if a == "@" else a
                                                          for a in argv),
                             (option,), prepare=_PREPARE, kind="outputs"))
    return out


_PREPARE = (("keep.dat", b"the user's own file\n"), ("page.html", b"<html></html>"))


# ---------------------------------------------------------------- extensions and order
def extension_probes() -> list[Probe]:
    """Every file output option given an extension it does not write."""
    out = []
    for oid, command, argv, option, types in OUTPUT_SLOTS:
        if not types:
            continue
        for wrong in (".json", ".txt"):
            if wrong in types:
                continue
            path = "{d}/out/x" + wrong
            out.append(Probe(f"{oid}:ext{wrong}", command,
                             tuple(path if a == "@" else a for a in argv), (option,),
                             prepare=_PREPARE, says="output type", kind="extensions-order"))
    return out


#: refusals that need a value's meaning, with progress forced on where the
#: command has the flag: (id, command, argv, the option the message names)
ORDER = [
    ("tune-bound-below-rtt", "sim", ("tune", "--vary", "servers=8:16", "--generations", "2", "--max-latency-us", "0.001"), "--max-latency-us"),
    ("tune-latency-bound-below-rtt", "sim", ("tune", "--vary", "servers=8:16", "--generations", "2", "--objective", "latency", "--max-latency-us", "1"), "--max-latency-us"),
    ("fit-free-unknown", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "{d}/out/f.toml", "--free", "nosuchparam"), "--free"),
    ("fit-free-typo", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "{d}/out/f.toml", "--free", "hit_rtt_us,miss_rt"), "--free"),
    ("fit-free-empty-name", "calibrate", ("fit", "--runs", "{d}/runs.csv", "--out", "{d}/out/f.toml", "--free", "hit_rtt_us,,miss_rtt_us"), "--free"),
    ("systems-cv-garbage", "reports.systems", ("--out", "{d}/out/sys", "--system", "runtimes", "--cv", "garbage"), "--cv"),
    ("systems-cv-column", "reports.systems", ("--out", "{d}/out/sys", "--system", "runtimes", "--cv", "column:nosuch"), "--cv"),
    ("systems-new-folder-unknown-system", "reports.systems", ("--out", "{d}/out/sys", "--system", "nosuch"), "--system"),
    ("cv-garbage", "calibrate", ("validate", "--progress", "--runs", "{d}/lab-runs.csv", "--cv", "garbage", "--out", "{d}/out/h.csv"), "--cv"),
    ("cv-column", "calibrate", ("validate", "--progress", "--runs", "{d}/lab-runs.csv", "--cv", "column:nosuch", "--out", "{d}/out/h.csv"), "--cv"),
    ("knobs-min-effect", "calibrate", ("knobs", "--progress", "--runs", "{d}/runs.csv", "--min-effect", "x", "--out", "{d}/out/k.csv"), "--min-effect"),
    ("workload-fit-theta", "sim", ("workload-fit", "--runs", "{d}/lab-runs.csv", "--theta", "9", "--out", "{d}/out/w.toml"), "--theta"),
    ("predict-runs-bad-row", "sim", ("predict", "--progress", "--runs", "{d}/bad.csv", "--out", "{d}/out/p.csv"), "bad.csv"),
]


def order_probes() -> list[Probe]:
    from .probes import bad_value_file
    bad = (("bad.csv", bad_value_file("runs.csv", "-1")),)
    return [Probe(f"order:{oid}", command, argv, (named,), prepare=bad, kind="extensions-order")
            for oid, command, argv, named in ORDER]


# ---------------------------------------------------------------- notes
#: a quick form of each subcommand that declares ignored options, and the
#: value each such option is given (None: a flag)
NOTE_BASES = {
    ("sim", "predict"): ("predict", "--no-progress", "--no-intervals", "--set", "servers=4", "--set", "clients=64"),
    ("sim", "predict --runs"): ("predict", "--no-progress", "--no-intervals", "--runs", "{d}/runs.csv", "--out", "{d}/out/p.csv"),
    ("sim", "tune"): ("tune", "--vary", "servers=8:16", "--generations", "1"),
    ("calibrate", "fit"): ("fit", "--runs", "{d}/runs.csv", "--out", "{d}/out/f.toml", "--free", "hit_rtt_us"),
    ("calibrate", "validate"): ("validate", "--no-progress", "--profile", "tofino-testbed", "--runs", "{d}/runs.csv"),
    ("calibrate", "validate --cv"): ("validate", "--no-progress", "--runs", "{d}/runs.csv", "--cv", "column:id"),
    ("calibrate", "ingest"): ("ingest", "--format", "dbbench", "{d}/dbbench.txt", "--out", "{d}/out/i.csv"),
    ("calibrate", "ingest ycsb"): ("ingest", "--format", "ycsb", "{d}/ycsb.txt", "--set", "servers=16", "--set", "clients=16", "--out", "{d}/out/i.csv"),
    ("calibrate", "knobs"): ("knobs", "--no-progress", "--engine", "analytic", "--runs", "{d}/runs.csv"),
}
OPTION_VALUES = {"--seconds": "2", "--seed": "3", "--jobs": "2", "--engine": "sim",
                 "--latency-stat": "p99", "--cluster": "tcp://127.0.0.1:1",
                 "--priors": "{d}/profile.toml", "--max-interference": "1",
                 "--wait-stat": "max", "--no-intervals": None, "--aggregate": None,
                 "--one-run": None}
#: (command, subcommand) -> the base of NOTE_BASES where each option is ignored
IGNORED_WHERE = {
    ("sim", "predict"): {"--seconds": "predict", "--seed": "predict", "--jobs": "predict",
                         "--engine": "predict --runs", "--no-intervals": None},
    ("sim", "tune"): {"--latency-stat": "tune"},
    ("calibrate", "fit"): {"--cluster": "fit"},
    ("calibrate", "validate"): {"--priors": "validate", "--aggregate": "validate --cv",
                                "--max-interference": "validate --cv",
                                "--cluster": "validate --cv", "--jobs": "validate --cv"},
    ("calibrate", "ingest"): {"--one-run": "ingest", "--wait-stat": "ingest ycsb"},
    ("calibrate", "knobs"): {"--seconds": "knobs", "--seed": "knobs"},
}


def declared_rules() -> dict[tuple[str, str], list[str]]:
    """Every option a parser declares it ignores in some forms, by command."""
    import argparse

    from calibrate.cli import build_parser as calibrate_parser
    from cli.main import build_parser as sim_parser
    out: dict[tuple[str, str], list[str]] = {}
    for command, parser in (("sim", sim_parser()), ("calibrate", calibrate_parser())):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    rules = sub.__dict__.get("_ignored_unless", [])
                    if rules:
                        out[(command, name)] = [r[0] for r in rules]
    return out


def note_probes() -> list[Probe]:
    """Each declared ignored option where it is ignored; a timeout below the
    timer floor for each command given a scenario; a rotation's JSON read."""
    out = []
    for (command, sub), options in IGNORED_WHERE.items():
        for option, base in options.items():
            if base is None:          # ignored only with another option: below
                continue
            value = OPTION_VALUES[option]
            argv = NOTE_BASES[(command, base)] + ((option,) if value is None else (option, value))
            out.append(Probe(f"note:{sub}:{option}", command, argv, (), expect=0, note=option,
                             kind="notes", creates=("out/p.csv", "out/f.toml", "out/i.csv")))
    out.append(Probe("note:predict:--no-intervals", "sim",
                     ("predict", "--no-progress", "--engine", "sim", "--seconds", "0.1",
                      "--set", "servers=4", "--set", "clients=64", "--no-intervals"), (),
                     expect=0, note="--no-intervals", kind="notes"))
    floor = ("--set", "clients.timeout_ms=1")
    for cid, command, argv in [
            ("predict", "sim", ("predict", "--no-progress", "--no-intervals", *floor)),
            ("predict-sim", "sim", ("predict", "--no-progress", "--engine", "sim", "--seconds", "0.1", *floor)),
            ("simulate", "sim", ("simulate", "--no-progress", "--seconds", "0.1", *floor)),
            ("explain", "sim", ("explain", *floor)),
            ("tune", "sim", ("tune", "--vary", "servers=8:16", "--generations", "1", *floor)),
            ("sweep", "sim", ("sweep", "--no-intervals", "--set", "clients.timeout_ms=1,5000"))]:
        out.append(Probe(f"note:timer-floor:{cid}", command, argv, (), expect=0,
                         note="timer floor", kind="notes"))
    out.append(Probe("note:report-of-a-rotation", "reports",
                     ("build", "--prediction", "{d}/rotation.json", "--out", "{d}/out/r.html"),
                     (), expect=0, prepare=(("rotation.json", _rotation_json),),
                     kind="notes", creates=("out/r.html",)))
    # these run the command to its end: the first solve or simulation in a
    # process compiles (half a minute, more on a loaded machine)
    return [replace(p, hang=COMPILING_S) for p in out]


COMPILING_S = 600


def _rotation_json() -> bytes:
    """What ``predict --measure rotation --json`` prints, for a small rack."""
    import json

    from model.rotation import predict_rotation
    from model.scenario import Scenario
    from runio.inputs import load_profile
    sc = Scenario.default().with_overrides(["servers=4", "clients=64"])
    d = predict_rotation(sc, load_profile("tofino-testbed"), intervals=False).to_dict()
    d.update({"scenario": sc.name, "profile": "tofino-testbed"})
    return json.dumps(d).encode()


def catalog() -> list[Probe]:
    """The command-line probes of issue 55's classes."""
    probes = output_probes() + extension_probes() + order_probes() + note_probes()
    return [replace(p, id=f"edges:{p.id}") for p in probes]
