"""docs/api.md's examples run: every ```python block, in order, in one namespace.

The blocks run in a scratch working directory (files they write land in a
tmp_path), so a later block may use what an earlier one defined. A failure
names the block by its first line in docs/api.md.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import time
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api.md"

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line in the file where the code starts, code) for every ```python block."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _FENCE.finditer(text)]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Execute the blocks once for the module: (namespace, per-block seconds,
    stdout, the first failure or None)."""
    work = tmp_path_factory.mktemp("api-examples")
    blocks = python_blocks(API.read_text(encoding="utf-8"))
    ns: dict = {"__name__": "__api_examples__"}
    seconds: list[tuple[int, float]] = []
    out = io.StringIO()
    failure = None
    here = os.getcwd()
    os.chdir(work)
    try:
        for line, code in blocks:
            t0 = time.perf_counter()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(code, f"{API}:{line}", "exec"), ns)
            except Exception:        # report which block, with its traceback
                failure = (f"docs/api.md block at line {line} failed:\n"
                           + traceback.format_exc())
                break
            finally:
                seconds.append((line, time.perf_counter() - t0))
    finally:
        os.chdir(here)
    return ns, seconds, out.getvalue(), failure, work


def test_api_md_has_python_examples():
    blocks = python_blocks(API.read_text(encoding="utf-8"))
    assert len(blocks) >= 6, "docs/api.md lost its ```python examples (or the fence changed)"
    assert all(code.strip() for _, code in blocks)


def test_python_blocks_are_found_with_their_lines():
    text = "intro\n```python\na = 1\n```\nprose\n```bash\nls\n```\n```python\nb = a\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n"), (10, "b = a\n")]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_api_examples_run(run):
    ns, seconds, _out, failure, _work = run
    assert failure is None, failure
    assert len(seconds) == len(python_blocks(API.read_text(encoding="utf-8")))


def test_api_examples_write_only_into_their_directory(run):
    *_, failure, work = run
    if failure is not None:
        pytest.skip("the examples did not all run")
    assert (work / "my-rack.toml").is_file()
    assert not (ROOT / "my-rack.toml").exists()


def test_explain_table_names_every_part(run):
    """The page's table of explain keys lists every bar explain gives."""
    ns, *_ = run
    ex = ns.get("ex")
    if ex is None:
        pytest.skip("the explain example did not run")
    documented = set(re.findall(r"^\| `(\w+)`", API.read_text(encoding="utf-8"), re.M))
    parts = set(ex.to_frame().index) - {"gap"}
    assert parts <= documented, f"undocumented explain parts: {sorted(parts - documented)}"


def test_prediction_fields_named_on_the_page_exist(run):
    ns, *_ = run
    p = ns.get("p")
    if p is None:
        pytest.skip("the predict example did not run")
    for name in ("throughput_mops", "cache_hit_ratio", "normalized_x", "bottleneck",
                 "servers", "client", "pktloss", "false_pos", "stall_fraction", "details"):
        assert hasattr(p, name), name
    assert {"lo_mops", "hi_mops", "level"} <= set(p.details["throughput_interval"])
    assert {"p50", "p99", "p999"} <= set(p.details["latency_us_percentiles"])
    assert list(p.to_frame().columns) == ["share", "share_nocache", "utilization",
                                          "wait_us", "process_us"]


def test_sweep_columns_named_on_the_page_exist(run):
    ns, *_ = run
    s = ns.get("s")
    if s is None:
        pytest.skip("the sweep example did not run")
    text = API.read_text(encoding="utf-8")
    section = text[text.index("## Sweep"):text.index("## Explain")]
    named = set(re.findall(r"`(\w+_(?:mops|us|pct|x|ratio|workers|text|baseline|pktloss))`",
                           section))
    missing = {c for c in named if c not in s.rows[0]}
    assert not missing, f"sweep rows lack columns docs/api.md names: {sorted(missing)}"
