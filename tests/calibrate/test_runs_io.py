"""Runs CSVs: safe appends that never cut a file, config hashes, kind detection."""

import pytest

from runio.local_runs import COLUMNS
from calibrate.runs_io import RunsWriter, config_hash, existing_hashes, load_runs
from model.errors import InputError


def test_config_hash_ignores_key_order_and_int_float():
    assert config_hash({"a": 1, "b": "x"}) == config_hash({"b": "x", "a": 1.0})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_writer_appends_and_reopens(tmp_path):
    out = tmp_path / "runs.csv"
    with RunsWriter(out, ["id", "config_hash", "mops"]) as w:
        w.append({"id": "a", "config_hash": "h1", "mops": 0.5})
    with RunsWriter(out, ["id", "config_hash", "mops"]) as w:
        w.append({"id": "b", "config_hash": "h2", "mops": 0.25})
    lines = out.read_text().splitlines()
    assert lines == ["id,config_hash,mops", "a,h1,0.5", "b,h2,0.25"]
    assert existing_hashes(out) == {"h1", "h2"}


def test_a_file_from_before_newer_columns_is_still_appended_to(tmp_path):
    """A runs file written before a column was added to the kind (the response
    percentiles) takes new rows without it, says so, and loses nothing."""
    out = tmp_path / "runs.csv"
    out.write_text("id,config_hash,mops\na,h1,0.5\n")
    with RunsWriter(out, ["id", "config_hash", "mops", "p99"], optional=["p99"]) as w:
        assert w.dropped == ["p99"]
        w.append({"id": "b", "config_hash": "h2", "mops": 0.25, "p99": 9})
    assert out.read_text() == "id,config_hash,mops\na,h1,0.5\nb,h2,0.25\n"
    with pytest.raises(InputError):                       # a required column still is
        RunsWriter(out, ["id", "config_hash", "mops", "p99"])


def test_last_line_without_newline_is_kept(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_text("id,config_hash,mops\na,h1,0.5\nb,h2,0.25")     # an editor left no newline
    assert existing_hashes(out) == {"h1", "h2"}
    with RunsWriter(out, ["id", "config_hash", "mops"]) as w:
        w.append({"id": "c", "config_hash": "h3", "mops": 1})
    assert out.read_text() == "id,config_hash,mops\na,h1,0.5\nb,h2,0.25\nc,h3,1\n"


def test_torn_last_line_is_refused_and_file_untouched(tmp_path):
    out = tmp_path / "runs.csv"
    text = "id,config_hash,mops\na,h1,0.5\nb,h2"                     # died mid-write
    out.write_text(text)
    with pytest.raises(InputError) as ei:
        RunsWriter(out, ["id", "config_hash", "mops"])
    assert ei.value.source == str(out) and ei.value.line == 3
    assert out.read_text() == text
    out.write_text("keep me")                                       # not a runs file at all
    with pytest.raises(InputError):
        RunsWriter(out, ["id", "config_hash", "mops"])
    assert out.read_text() == "keep me"


def test_writer_rejects_missing_columns(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_text("id,mops\na,1\n")
    with pytest.raises(InputError) as ei:
        RunsWriter(out, ["id", "config_hash", "mops"])
    assert "config_hash" in str(ei.value) and str(out) in str(ei.value)


def test_load_runs_tags_rows_and_detects_kinds(tmp_path):
    local = tmp_path / "local.csv"
    with RunsWriter(local, COLUMNS) as w:
        w.append({"id": "x-1", "workers": 1, "clients": 2, "read_ratio": 0.5,
                  "config_hash": "abc", "mops": 0.04})
    kind, rows = load_runs([local])
    assert kind.name == "local_runs"
    assert rows[0]["__kind__"] == "local_runs" and rows[0]["__source__"] == str(local)
    assert rows[0]["__line__"] == "2"
    kind2, rows2 = load_runs("data/farreach_runs.csv")
    assert kind2.name == "farreach_runs" and len(rows2) > 10
    with pytest.raises(InputError) as ei:
        load_runs([local, "data/farreach_runs.csv"])
    assert "farreach_runs" in str(ei.value) and "local_runs" in str(ei.value)


def test_load_runs_where(tmp_path):
    kind, rows = load_runs("data/farreach_runs.csv", where={"block": "idle"})
    assert rows and all(r["block"] == "idle" for r in rows)
    with pytest.raises(InputError) as ei:
        load_runs("data/farreach_runs.csv", where={"colour": "red"})
    assert ei.value.field == "--where"
    with pytest.raises(InputError):
        load_runs("data/farreach_runs.csv", where={"block": "no-such-block"})
