"""The single places issue 55's classes are fixed in, tested on their own:
the argument layer (runio/arguments.py), the ignored-option notes of the
parser (runio/exits.py, runio/notes.py) and the worker pool (runio/workers.py).
The probes (probes_edges, probes_api, probes_signals) hold every command to them."""

from __future__ import annotations

import argparse
import time

import pytest

from model.errors import InputError
from runio import notes
from runio.arguments import ARGS, Arg


@pytest.mark.parametrize("name,text,value", [
    ("seconds", "-1", -1), ("seconds", "0", 0), ("seed", "-1", -1), ("baseline", "0", 0),
    ("generations", "0", 0), ("max_latency_us", "0", 0)])
def test_the_command_line_and_the_api_refuse_alike(name, text, value):
    arg = ARGS[name]
    with pytest.raises(argparse.ArgumentTypeError) as cli:
        arg.parse(text)
    with pytest.raises(InputError) as api:
        arg.check(value, name)
    assert str(cli.value) == api.value.detail, (str(cli.value), api.value.detail)
    assert api.value.field == name


def test_the_api_refuses_what_only_text_would_be():
    # the command line reads text; Python values are taken as they are typed
    with pytest.raises(InputError, match="a str"):
        ARGS["seconds"].check("1", "seconds")
    with pytest.raises(InputError, match="a bool"):
        ARGS["seed"].check(True, "seed")
    with pytest.raises(InputError, match="empty"):
        ARGS["profile"].check("", "profile")
    assert ARGS["seconds"].check(2, "seconds") == 2.0
    assert ARGS["profile"].check(None, "profile") is None
    assert Arg("integer", minimum=1).check(3.0, "n") == 3


def _notes_of(argv: list[str]) -> list[str]:
    from cli.main import build_parser
    notes.discard()
    build_parser(argv[0]).parse_args(argv)
    out = list(notes._pending)
    notes.discard()
    return out


def test_an_ignored_option_is_noted_when_given_only():
    assert _notes_of(["predict"]) == []
    assert _notes_of(["predict", "--engine", "sim", "--seconds", "3"]) == []
    got = _notes_of(["predict", "--seconds", "10"])        # the default value, but given
    assert len(got) == 1 and got[0].startswith("--seconds is ignored")
    assert _notes_of(["predict", "--engine", "analytic"]) == []


def test_an_option_with_a_text_default_is_noted_when_given_only():
    # argparse sets a text default again after parsing: not "given" for that
    assert _notes_of(["tune", "--vary", "servers=8:16"]) == []
    got = _notes_of(["tune", "--vary", "servers=8:16", "--latency-stat", "mean"])
    assert got and got[0].startswith("--latency-stat is ignored")
    assert _notes_of(["tune", "--vary", "servers=8:16", "--latency-stat", "p99",
                      "--objective", "latency"]) == []


def test_notes_wait_for_the_work_and_go_with_a_refusal(capsys):
    from runio.exits import run_command

    def refused():
        notes.note("said too soon")
        raise InputError("bad", field="--x")
    assert run_command(refused) == 2
    assert "said too soon" not in capsys.readouterr().err

    def answered():
        notes.note("other than asked")
        print("the answer")
    assert run_command(answered) == 0
    captured = capsys.readouterr()
    assert captured.out == "the answer\n" and captured.err == "NOTE: other than asked\n"


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_worker_pool_ends_its_workers_when_left_by_an_exception():
    from runio.workers import worker_pool
    procs = []
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            futures = [pool.submit(_sleep, 60) for _ in range(4)]
            deadline = time.monotonic() + 60
            while len(pool._processes) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            procs = list(pool._processes.values())
            raise KeyboardInterrupt
    assert procs and not any(p.is_alive() for p in procs)
    assert all(f.cancelled() or f.done() for f in futures)


def test_the_api_takes_paths_as_well_as_names():
    from pathlib import Path

    import kvperf
    root = Path(__file__).resolve().parents[2]
    assert kvperf.load_scenario(root / "examples" / "rack.toml").servers.count > 0
    assert kvperf.load_profile(root / "model" / "profiles" / "tofino-testbed.toml").params
