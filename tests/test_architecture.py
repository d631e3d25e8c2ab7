"""The house's shape, held by CI (issue 42): dependencies one way, small rooms, no cycles.

The contracts themselves are in pyproject.toml ([tool.importlinter]); the
counts come from scripts/house_counts.py, which reads the source only.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _house():
    spec = importlib.util.spec_from_file_location("house_counts", ROOT / "scripts" / "house_counts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dependencies_point_one_way():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("lint-imports (import-linter) is not installed: bash scripts/install.sh")
    run = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]


def test_no_import_cycles_between_modules():
    h = _house()
    graph = h.import_graph(h.project_modules())
    assert h.cycles(graph) == []


def test_no_module_over_600_lines():
    h = _house()
    assert h.long_modules(h.project_modules()) == []


def test_no_function_over_100_lines():
    h = _house()
    assert h.long_functions(h.project_modules()) == []


def test_the_counter_sees_a_cycle_and_a_long_function(tmp_path, monkeypatch):
    # the checks above can fail: a made-up house with a cycle and a long function
    h = _house()
    pkg = tmp_path / "model"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from .a import x\n\ndef long():\n" + "    pass\n" * 120)
    monkeypatch.setattr(h, "ROOT", tmp_path)
    mods = h.project_modules()
    assert h.cycles(h.import_graph(mods)) == [["model.a", "model.b"]]
    assert [n for n, _ in h.long_functions(mods)] == ["model.b.long"]


def _layout_rows():
    text = (ROOT / "README.md").read_text()
    table = text.split("## Layout", 1)[1].split("\n\n", 2)[1]
    rows = []
    for line in table.splitlines()[2:]:
        cells = line.split("|")
        folder = cells[1].strip().strip("`")
        rows.append((folder, cells[2]))
    return rows


def test_the_readme_layout_table_matches_the_tree():
    import re
    rows = _layout_rows()
    folders = {f for f, _ in rows}
    # every package of the project has its row
    packages = {p.name + "/" for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= folders, f"packages without a row: {sorted(packages - folders)}"
    # every file or folder a row names is there (a glob names at least one)
    missing = []
    for folder, holds in rows:
        for name in re.findall(r"`([\w*/.-]+\.(?:py|toml)|[\w-]+/)`", holds):
            n = name.rstrip("/")
            # a path within the row's folder, a file deeper in it, or a path from the top
            hits = list((ROOT / folder).glob(n)) or list((ROOT / folder).rglob(n)) \
                or list(ROOT.glob(n))
            if not hits:
                missing.append(f"{folder}{name}")
    assert not missing, f"the layout table names what is not in the tree: {missing}"
