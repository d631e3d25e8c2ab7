"""The P4 program and the reference model describe the same switch.

There is no P4 compiler on this machine, so besides comparing the constants
block (p4/include/constants.p4) with model/switch.py, this test runs the C
preprocessor over p4/farreach.p4 (as bf-p4c does) with empty stand-ins for
<core.p4>/<tna.p4> and checks the expanded program's declarations: register
sizes and widths, table sizes, the number of value-word registers, CMS rows
and polynomials, and that every executed RegisterAction, applied table and
referenced register exists. That catches drift and most cross-reference
slips a compiler would report.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from model import switch as m

ROOT = Path(__file__).resolve().parents[2]
P4_DIR = ROOT / "p4"
DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(0x[0-9A-Fa-f]+|\d+)\b", re.M)


def p4_defines() -> dict[str, int]:
    text = (P4_DIR / "include" / "constants.p4").read_text()
    return {k: int(v, 0) for k, v in DEFINE.findall(text)}


def test_constants_match_model():
    d = p4_defines()
    for name, value in m.CONSTANTS.items():
        assert d.get(name) == value, name
    assert d["VALUE_BYTES"] == 4 * d["VALUE_WORDS"]
    assert 1 << d["CACHE_IDX_BITS"] == d["CACHE_SIZE"]
    assert 1 << d["HASH_BUCKET_BITS"] == d["HASH_BUCKETS"]
    assert 1 << d["CMS_INDEX_BITS"] == d["CMS_WIDTH"]
    assert 1 << d["REPORT_BLOOM_INDEX_BITS"] == d["REPORT_BLOOM_BITS"]
    assert d["KV_SERVER_PORT_MASK"] == (0xFFFF & ~(d["MAX_SERVERS"] - 1))
    assert d["KV_SERVER_PORT_BASE"] % d["MAX_SERVERS"] == 0
    ops = dict(OP_GET=m.GET, OP_PUT=m.PUT, OP_DEL=m.DEL, OP_WB_PUT=m.WB_PUT,
               OP_WB_DEL=m.WB_DEL, OP_LOAD=m.LOAD, OP_REPLY=m.REPLY,
               ST_OK=m.OK, ST_NOT_FOUND=m.NOT_FOUND, ST_STALE=m.STALE,
               ENTRY_INVALID=m.INVALID, ENTRY_VALID=m.VALID,
               ENTRY_EVICTING=m.EVICTING, ENTRY_POPULATING=m.POPULATING,
               REPORT_HOT=m.REPORT_HOT, REPORT_UNCACHEABLE=m.REPORT_UNCACHEABLE)
    for name, value in ops.items():
        assert d[name] == value, name
    assert tuple(d[f"CMS_POLY_{r}"] for r in range(d["CMS_ROWS"])) == m.CMS_POLYS


@pytest.fixture(scope="module")
def expanded(tmp_path_factory) -> str:
    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("no C preprocessor")
    stubs = tmp_path_factory.mktemp("p4stubs")
    (stubs / "core.p4").write_text("")
    (stubs / "tna.p4").write_text("")
    out = subprocess.run([cpp, "-P", "-nostdinc", "-undef", "-I", str(stubs),
                          "-I", str(P4_DIR), str(P4_DIR / "farreach.p4")],
                         capture_output=True, text=True, check=True).stdout
    # constants resolved; a leftover all-caps identifier means a missing #define
    return out


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def test_program_structure(expanded):
    src = expanded
    assert _balanced(src) and src.count("(") == src.count(")")
    for bad in ("TODO", "FIXME", "XXX"):
        assert bad not in src
    d = p4_defines()
    # every macro constant used was defined (cpp would leave it verbatim)
    leftovers = set(re.findall(r"\b(?:CACHE|VALUE|HASH|CMS|HOT|REPORT|KV|OP|ST|ENTRY)_[A-Z_0-9]+\b", src))
    assert not leftovers, leftovers

    typedefs = dict((n, int(w)) for w, n in re.findall(r"typedef\s+bit<(\d+)>\s+(\w+);", src))
    assert typedefs["cache_idx_t"] == d["CACHE_IDX_BITS"]

    def width(t: str) -> int:
        mt = re.fullmatch(r"bit<(\d+)>", t)
        return int(mt.group(1)) if mt else typedefs[t]

    regs = dict()   # name -> (width, index width, size)
    for w, it, size, name in re.findall(
            r"Register<bit<(\d+)>,\s*(bit<\d+>|\w+)>\((\d+),\s*\w+\)\s+(\w+);", src):
        regs[name] = (int(w), width(it), int(size))
    cache = (d["CACHE_IDX_BITS"], d["CACHE_SIZE"])
    values = [n for n in regs if n.startswith("val_reg_")]
    assert len(values) == m.VALUE_WORDS
    assert all(regs[n] == (32, *cache) for n in values)
    assert regs["state_reg"][1:] == cache and regs["dirty_reg"][1:] == cache
    assert regs["seq_reg"] == (32, *cache) and regs["vallen_reg"] == (16, *cache)
    assert regs["bucket_seq_reg"] == (32, d["HASH_BUCKET_BITS"], m.HASH_BUCKETS)
    cms = [n for n in regs if n.startswith("cms_reg_")]
    assert len(cms) == m.CMS_ROWS
    assert all(regs[n] == (m.CMS_COUNTER_BITS, m.CMS_INDEX_BITS, m.CMS_WIDTH) for n in cms)
    assert regs["report_bloom_reg"] == (1, m.REPORT_BLOOM_INDEX_BITS, m.REPORT_BLOOM_BITS)

    # the model has a register array of the same name and size for each
    sw = m.SwitchModel(2)
    model_regs = {r.name: r for r in [sw.state_reg, sw.dirty_reg, sw.seq_reg, sw.vallen_reg,
                                      sw.bucket_seq_reg, sw.bloom_reg, *sw.val_regs,
                                      *sw.cms_regs]}
    assert set(model_regs) == set(regs)
    for name, (w, _, size) in regs.items():
        assert (model_regs[name].bits, model_regs[name].size) == (w, size), name

    # RegisterActions bind to declared registers; every execute() is declared
    actions = dict(re.findall(r"RegisterAction<[^()]*>\((\w+)\)\s+(\w+)\s*=", src))
    bound = {a: r for r, a in re.findall(r"RegisterAction<[^()]*>\((\w+)\)\s+(\w+)\s*=", src)}
    assert set(actions) <= set(regs)
    executed = set(re.findall(r"(\w+)\.execute\(", src))
    assert executed and executed <= set(bound)
    assert set(bound) == executed, set(bound) ^ executed   # nothing declared unused

    tables = dict(re.findall(r"table\s+(\w+)\s*\{(.*?)\n    \}", src, re.S))
    applied = re.findall(r"(\w+)\.apply\(\)", src)
    assert set(tables) == set(applied)
    # a P4 table may be applied at most once per control
    assert len(applied) == len(set(applied)), applied
    # likewise each RegisterAction is executed from one place
    execs = re.findall(r"(\w+)\.execute\(", src)
    assert len(execs) == len(set(execs))
    size = {n: int(re.search(r"size\s*=\s*(\d+)", body).group(1)) for n, body in tables.items()}
    assert size["cache_lookup_tbl"] == m.CACHE_SIZE
    assert size["partition_tbl"] == m.MAX_SERVERS
    mask_entries = re.findall(r"(\d+) : set_vmask\(32w0x([0-9A-F]{8})\)", src)
    assert [(int(a), int(b, 16)) for a, b in mask_entries] == \
        [(n, (1 << n) - 1) for n in range(m.VALUE_WORDS + 1)]
    assert "Switch(pipe) main;" in src
    assert src.count("CRCPolynomial<bit<32>>(") == m.CMS_ROWS - 1
