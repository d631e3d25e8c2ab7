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
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match="also an input"):
        safe_io.output_path(tmp_path / "sub" / ".." / "in.csv", "--out", [data], types=(".csv",))
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    with pytest.raises(InputError, match="a link"):       # a link is never an output
        safe_io.output_path(link, "--out", [data], types=(".csv",))
    assert safe_io.output_path(tmp_path / "new.csv", "--out", [data],
                               types=(".csv",)) == tmp_path / "new.csv"
    with pytest.raises(InputError, match="folder"):
        safe_io.output_path(tmp_path, "--out", types=None)


@pytest.mark.parametrize("kind", ["link-to-file", "link-to-device", "dangling-link", "fifo",
                                  "device"])
def test_only_a_regular_file_or_nothing_is_an_output(tmp_path, kind):
    # the guard every command's outputs go through, and the atomic write
    # itself: a link, a device, a pipe is neither renamed over nor written into
    kept = tmp_path / "kept.csv"
    kept.write_text("the user's\n")
    out = tmp_path / "out.csv"
    if kind == "link-to-file":
        out.symlink_to(kept)
    elif kind == "link-to-device":
        out.symlink_to("/dev/null")
    elif kind == "dangling-link":
        out.symlink_to(tmp_path / "nowhere" / "x.csv")
    elif kind == "fifo":
        os.mkfifo(out)
    else:
        try:
            os.mknod(out, stat.S_IFCHR | 0o666, os.makedev(1, 7))       # a copy of /dev/full
        except PermissionError:
            pytest.skip("making a device node needs root")
    before = os.lstat(out)
    with pytest.raises(InputError) as ei:
        safe_io.output_path(out, "--out", types=(".csv",))
    assert ei.value.field == "--out" and "not a regular file" in str(ei.value)
    with pytest.raises(InputError, match="not a regular file"):
        with safe_io.atomic_write(out) as fh:
            fh.write("new")
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino,
                                                            before.st_rdev)
    assert kept.read_text() == "the user's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.csv", "out.csv"]


def test_an_output_has_the_extension_its_option_writes(tmp_path):
    with pytest.raises(InputError, match="use a .csv file name") as ei:
        safe_io.output_path(tmp_path / "o.json", "--out", types=(".csv",))
    assert ei.value.field == "--out"
    assert safe_io.output_path(tmp_path / "o.CSV", "--out", types=(".csv",))


def test_an_output_folder_is_a_folder_or_nothing(tmp_path):
    assert safe_io.output_folder(tmp_path, "--out") == tmp_path
    assert safe_io.output_folder(tmp_path / "new", "--out") == tmp_path / "new"
    assert not (tmp_path / "new").exists()                  # made by the caller, later
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path)
    for path, what in ((tmp_path / "f", "a file"), (tmp_path / "l", "a link")):
        with pytest.raises(InputError, match=what):
            safe_io.output_folder(path, "--out")
    with pytest.raises(InputError, match="does not exist"):
        safe_io.output_folder(tmp_path / "no" / "new", "--out")


def test_a_partial_output_is_marked_or_not_written(tmp_path):
    rows = [{"a": 1}, {"a": 2}]
    assert safe_io.write_rows_csv(tmp_path / "p.csv", rows, str, partial=True)
    assert (tmp_path / "p.csv").read_text().splitlines() == ["a,partial", "1,true", "2,true"]
    assert not safe_io.write_rows_csv(tmp_path / "none.csv", [], str, ["a"], partial=True)
    assert not (tmp_path / "none.csv").exists()
    assert safe_io.write_rows_csv(tmp_path / "whole.csv", [], str, ["a"])
    assert (tmp_path / "whole.csv").read_text() == "a\n"


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
