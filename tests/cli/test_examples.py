"""The shipped examples load, the default scenario prints as TOML that loads back,
and every file a README command names exists (or an earlier command writes it)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from model.scenario import Scenario
from cli import main as cli
from runio.inputs import load_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# options whose value is a file the command writes
OUTPUT_OPTIONS = {"--out", "--html", "--timeline", "--csv"}
FILE_SUFFIXES = (".toml", ".csv", ".txt", ".json", ".py", ".sh", ".log", ".out", ".ipynb", ".html")


def test_scenario_show_default_round_trips(capsys):
    assert cli.main(["scenario", "show"]) == 0
    text = capsys.readouterr().out
    assert Scenario.from_mapping(tomllib.loads(text)) == Scenario.default()
    # every key carries its unit and what it accepts
    assert "# resend timeout. Unit: ms." in text
    assert "Allowed: one of 'write-back', 'read-only'." in text


def test_scenario_show_resolves_file_and_sets(tmp_path, capsys):
    assert cli.main(["scenario", "show", "--scenario", str(EXAMPLES / "rack.toml"),
                     "--set", "clients=512", "--set", "storage.wal=false"]) == 0
    text = capsys.readouterr().out
    back = Scenario.from_mapping(tomllib.loads(text))
    expected = load_scenario(str(EXAMPLES / "rack.toml")).updated(
        {"clients.threads": 512, "storage.wal": False})
    assert back == expected and back.servers.count == 32
    # and the printout is itself a scenario file
    f = tmp_path / "s.toml"
    f.write_text(text)
    assert load_scenario(str(f)) == expected


def test_scenario_show_bad_set_exits_2(capsys):
    assert cli.main(["scenario", "show", "--set", "servers=abc"]) == 2
    assert "servers.count" in capsys.readouterr().err


def _example_checks():
    from calibrate.dbbench_output import read_dbbench
    from calibrate.plan import expand, load_plan
    from calibrate.runs_io import load_runs
    from calibrate.ycsb_output import read_ycsb
    from cli.sweep import read_plan
    return {
        "rack.toml": lambda p: load_scenario(str(p)),
        "local.toml": lambda p: expand(load_plan(str(p)), cores=2),
        "runs.csv": lambda p: load_runs(p),
        "ycsb-run.txt": lambda p: read_ycsb(p),
        "db_bench.txt": lambda p: read_dbbench(p),
        "whatif.csv": lambda p: read_plan(p, Scenario.default()),
    }


def test_every_example_file_loads():
    checks = _example_checks()
    files = sorted(p for p in EXAMPLES.iterdir() if p.is_file())
    assert files, "examples/ is empty"
    unchecked = [p.name for p in files if p.name not in checks and not p.name.endswith(".md")]
    assert not unchecked, f"examples without a load check in this test: {unchecked}"
    for p in files:
        if p.name in checks:
            checks[p.name](p)


def test_example_runs_predict_in_batch(tmp_path):
    from runio.batch import run_batch
    kind, n = run_batch(str(EXAMPLES / "runs.csv"), str(tmp_path / "p.csv"), progress=False)
    assert kind.name == "farreach_runs" and n >= 5
    assert "pred_mops" in (tmp_path / "p.csv").read_text().splitlines()[0]


def readme_commands(text: str) -> list[str]:
    """Command lines of the README: fenced blocks (joining ``\\`` continuations) and
    inline ``python ...`` spans, in document order."""
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S):
        body = m.group(1).replace("\\\n", " ")
        out += [(m.start() + i, ln.strip()) for i, ln in enumerate(body.splitlines())
                if ln.strip().startswith(("python", "bash"))]
    fenced = [(m.start(), m.end()) for m in re.finditer(r"```.*?```", text, re.S)]
    for m in re.finditer(r"`(python [^`]+)`", text):
        if not any(a <= m.start() < b for a, b in fenced):
            out.append((m.start(), m.group(1)))
    return [c for _, c in sorted(out, key=lambda t: t[0])]


def test_readme_commands_name_existing_files():
    commands = readme_commands((ROOT / "README.md").read_text())
    assert any("examples/" in c for c in commands)
    written: set[str] = set()
    missing = []
    for command in commands:
        for part in command.split("&&"):
            words = shlex.split(part, comments=True)
            outputs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in OUTPUT_OPTIONS}
            if "scripts/install.sh" in words:
                outputs.add(".venv/bin/python")        # the installer makes the project's venv
            for w in words:
                if w.startswith("-") or w in outputs or "=" in w:
                    continue
                if w.endswith(FILE_SUFFIXES) or "/" in w:
                    if not (ROOT / w).exists() and w not in written:
                        missing.append(f"{w}  (in: {command})")
            written |= outputs
    assert not missing, "README commands name files that do not ship:\n" + "\n".join(missing)


def test_scenario_show_as_a_process():
    r = subprocess.run([sys.executable, "-m", "sim", "scenario", "show"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and tomllib.loads(r.stdout)["servers"]["count"] == 16
