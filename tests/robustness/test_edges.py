"""Issue 55's classes of edges, each in its generic form, replayed in CI.

The command-line probes (outputs that are not regular files, extensions and
order, NOTE lines: :mod:`.probes_edges`) and the API's (:mod:`.probes_api`)
run in this process, all of them. The signal probes (:mod:`.probes_signals`)
each start a command; CI runs a fixed sample of them -- every entry point
stopped by Ctrl-C at one moment, SIGTERM, every command with workers,
every partial output --, and ``python -m tests.robustness.probes --class
signals`` all of them. The catalogs are checked to cover what the code
declares: every output option, every ignored option, every API parameter.
"""

from __future__ import annotations

import argparse
import signal

import pytest

from . import probes_api, probes_edges, probes_signals
from .probes import run

EDGES = probes_edges.catalog()
API = probes_api.catalog()


@pytest.mark.parametrize("probe", EDGES, ids=[p.id for p in EDGES])
def test_edge(probe):
    outcome = run(probe)
    assert not outcome.problems, f"{probe.id}: {outcome.problems}\n{outcome.stderr[:400]}"


@pytest.mark.parametrize("probe", API, ids=[p.id for p in API])
def test_api_edge(probe):
    outcome = probes_api.run(probe)
    assert not outcome.problems, f"{probe.id}: {outcome.problems}"


def _signal_sample() -> list[probes_signals.SignalProbe]:
    """Every entry point at one of the delays (a different one each), SIGTERM
    to the two main commands, every command with workers (batch prediction
    by every signal), every partial output half a second into its work."""
    out, every = [], probes_signals.catalog()
    delays = probes_signals.DELAYS
    for i, (name, _) in enumerate(probes_signals.ENTRY_POINTS):
        out.append(f"signals:sigint:{name}:{delays[i % len(delays)]:g}s")
    out += ["signals:sigterm:sim:0s", "signals:sigterm:calibrate:1s"]
    for name, _, _ in probes_signals.WORKERS:
        for sig in (("SIGTERM", "SIGKILL", "SIGINT") if name == "predict-runs" else ("SIGTERM",)):
            out.append(f"signals:workers:{name}:{sig}")
    out += [f"signals:partial:{name}:0.5s" for name, *_ in probes_signals.PARTIAL]
    chosen = [p for p in every if p.id in out]
    assert len(chosen) == len(out)
    return chosen


SIGNALS = _signal_sample()


@pytest.mark.slow
@pytest.mark.parametrize("probe", SIGNALS, ids=[p.id for p in SIGNALS])
def test_signal(probe):
    outcome = probes_signals.run(probe)
    if outcome.finished_first:
        pytest.skip(f"the command finished before the signal ({outcome.code})")
    assert not outcome.problems, f"{probe.id}: {outcome.problems}\n{outcome.stderr[-600:]}"


# ---------------------------------------------------------------- the catalogs cover the code
OUTPUT_OPTIONS = ("--out", "--html", "--timeline", "--csv", "--screenshot", "--out-dir")
#: options named like outputs that are inputs
INPUTS = {("reports", "build", "--timeline")}


def _declared_outputs() -> set[tuple[str, str, str]]:
    """(command, subcommand, option) of every output option the parsers declare."""
    from calibrate.cli import build_parser as calibrate_parser
    from cli.main import build_parser as sim_parser
    from reports.cli import _parser as reports_parser
    out = set()
    for command, parser in (("sim", sim_parser()), ("calibrate", calibrate_parser()),
                            ("reports", reports_parser())):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    for a in sub._actions:
                        for opt in a.option_strings:
                            if opt in OUTPUT_OPTIONS:
                                out.add((command, name, opt))
    return out


def test_every_output_option_is_probed():
    probed = {(c, argv[0], opt) for _, c, argv, opt, _ in probes_edges.OUTPUT_SLOTS}
    missing = _declared_outputs() - probed - INPUTS
    assert not missing, f"output options without probes: {sorted(missing)}"
    kinds = {p.id.rsplit(":", 1)[1] for p in EDGES if p.kind == "outputs"}
    assert {"link-stdout", "link-file", "link-dangling", "fifo"} <= kinds
    if probes_edges.can_mknod():
        assert {"device-null", "device-full"} <= kinds


def test_every_ignored_option_is_probed():
    declared = probes_edges.declared_rules()
    for (command, sub), options in declared.items():
        probed = probes_edges.IGNORED_WHERE.get((command, sub), {})
        assert set(options) == set(probed), (command, sub, options, probed)


def test_every_api_function_and_parameter_is_probed():
    probed = {(p.function, p.parameter) for p in API}
    for name, fn in probes_api.functions().items():
        for param in probes_api._kinds_of(fn):
            assert (name, param) in probed, (name, param)


def test_the_signal_judge_catches_what_it_should(tmp_path, monkeypatch):
    # a command that ignores SIGTERM's meaning: exits 0, leaves a child behind
    script = tmp_path / "bad.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
        "if os.fork() == 0:\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    time.sleep(30); os._exit(0)\n"
        "time.sleep(30)\n")
    monkeypatch.setattr(probes_signals, "GONE_SECONDS", 1.0)
    probe = probes_signals.SignalProbe("judge", (str(script),), signal.SIGTERM, "children:1")
    outcome = probes_signals.run(probe)
    assert any("exit code 0" in p for p in outcome.problems), outcome.problems
    assert any("left behind" in p for p in outcome.problems), outcome.problems
