"""runio.safe_io: the rules every command reads and writes files by."""

import os
import stat

import pytest

from model import toml_text
from runio import safe_io
from model.errors import InputError

TOML = '''name = "x"
[servers]
count = "abc"  # c
[params.disk_mbps]
value = 0
unit = "MiB/s"
[factors]
clients = [1, 2,
  3]
[[points]]
workers = 1
'''


@pytest.mark.parametrize("key, line", [
    ("name", 1), ("servers", 2), ("servers.count", 3), ("params.disk_mbps", 4),
    ("params.disk_mbps.value", 5), ("factors.clients[2]", 8), ("points[0].workers", 11),
    ("nowhere.key", None),
])
def test_toml_line_finds_the_key(key, line):
    assert toml_text.toml_line(TOML, key) == line


def test_toml_syntax_errors_carry_the_line():
    with pytest.raises(InputError) as ei:
        toml_text.parse_toml('a = 1\nb = [1,,]\n', "f.toml")
    assert ei.value.line == 2 and ei.value.source == "f.toml" and "(at line" not in str(ei.value)


def test_decode_locates_bad_bytes_and_drops_a_bom():
    assert safe_io.decode(b"\xef\xbb\xbfa\r\nb", "f") == "a\r\nb"
    with pytest.raises(InputError) as ei:
        safe_io.decode(b"ok\nalso ok\nbad \xff here", "f")
    assert ei.value.line == 3 and "column 5" in str(ei.value)
    with pytest.raises(InputError):
        safe_io.decode(b"a\x00b", "f")


def test_read_csv_counts_lines_of_quoted_newlines(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text('id,note\na,"one\ntwo\nthree"\n\nb,x\n')
    header, rows = safe_io.read_csv(p)
    assert header == ["id", "note"] and [r["__line__"] for r in rows] == ["2", "6"]
    p.write_text('id,,x\n1,2,3\n')
    with pytest.raises(InputError, match="no name"):
        safe_io.read_csv(p)
    p.write_text('id,note\na,x\nb,"cut sho')                 # died inside a quoted field
    with pytest.raises(InputError, match="quoted field") as ei:
        safe_io.read_csv(p)
    assert ei.value.line == 3
    p.write_text('id,note\na,5" screen\nb,"ab"c\n')        # quirks a lenient reader takes
    assert [r["note"] for r in safe_io.read_csv(p)[1]] == ['5" screen', "abc"]


def test_output_path_refuses_aliases_of_an_input(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("x\n")
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    with pytest.raises(InputError, match="also an input"):
        safe_io.output_path(link, "--out", [data])
    assert safe_io.output_path(tmp_path / "new.csv", "--out", [data]) == tmp_path / "new.csv"
    with pytest.raises(InputError, match="folder"):
        safe_io.output_path(tmp_path, "--out")


def test_atomic_write_keeps_the_files_permissions(tmp_path):
    p = tmp_path / "o.csv"
    p.write_text("old")
    os.chmod(p, 0o640)
    with safe_io.atomic_write(p) as fh:
        fh.write("new")
    assert p.read_text() == "new" and stat.S_IMODE(p.stat().st_mode) == 0o640


def test_atomic_write_turns_a_full_disk_into_an_input_error(tmp_path):
    p = tmp_path / "o.csv"
    with pytest.raises(InputError) as ei:
        with safe_io.atomic_write(p) as fh:
            fh.write("x")
            raise OSError(28, "No space left on device")
    assert "No space left" in str(ei.value) and ei.value.source == str(p)
    assert list(tmp_path.iterdir()) == []


def test_unterminated_tail(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"a\nb")
    assert safe_io.unterminated_tail(p) == b"b"
    p.write_bytes(b"a\nb\n")
    assert safe_io.unterminated_tail(p) == b""
