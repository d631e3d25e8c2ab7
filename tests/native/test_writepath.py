"""RocksDB's write path as the server records it (issue 50), checked against
RocksDB's own accounts: its statistics (STALL_MICROS, FLUSH_TIME,
FLUSH_WRITE_BYTES), its cfstats map property (io_stalls.*) and its LOG.

Each run is set up so that RocksDB's rules (db/column_family.cc,
GetWriteStallConditionAndCause) leave one outcome only, whatever the
machine's speed: flushes are held to a known speed by the background-write
rate limiter, so a flush of 16 MiB at 8 MiB/s lasts about 2 s.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import native
from model.errors import InputError

pytestmark = pytest.mark.native

MIB = 1 << 20
VALUE = 1024


def write_run(srv, seconds: float, records: int = 10**6, read_ratio: float = 0.0,
              value: int = VALUE, distribution: str = "uniform") -> dict:
    return native.run_load(targets=srv.addresses(), partition="hash", threads=4,
                           duration_s=seconds, max_requests=10**8, read_ratio=read_ratio,
                           distribution=distribution, records=records, value_size=value,
                           timeout_ms=10_000)


def settled(srv, drained: bool = False, timeout_s: float = 15.0) -> dict:
    """Instance 0's RocksDB stats once no stall is in force and no flush runs (a
    writer records its wait in STALL_MICROS only when the wait ends); `drained`:
    and no memtable waits for a flush, no compaction runs."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = srv.stats()["rocksdb"][0]
        busy = [r["stopped_now"], r["delayed_now"], r["running_flushes"]]
        if drained:
            busy += [r["immutable_memtables"], r["running_compactions"]]
        quiet = not any(busy)
        if quiet or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def log_lines(datadir: Path, pattern: str) -> int:
    return len(re.findall(pattern, (datadir / "worker-0" / "LOG").read_text(errors="replace")))


def check_timeline(r: dict) -> None:
    """The transitions are a chain in time order whose stopped and delayed
    intervals add up to stop_s and slow_s (the last one runs up to the snapshot)."""
    tr = r["stall_transitions"]
    assert r["stall_order_errors"] == 0
    assert [t for t, _ in tr] == sorted(t for t, _ in tr)
    assert all(0 <= t <= r["window_s"] for t, _ in tr)
    assert all(a[1] != b[1] for a, b in zip(tr, tr[1:]))     # each entry changes the condition
    spans = {"stopped": 0.0, "delayed": 0.0, "normal": 0.0}
    for (t, cond), nxt in zip(tr, [t for t, _ in tr[1:]] + [r["window_s"]]):
        spans[cond] += nxt - t
    assert spans["stopped"] == pytest.approx(r["stop_s"], abs=0.02)
    assert spans["delayed"] == pytest.approx(r["slow_s"], abs=0.02)
    assert r["stops"] == sum(c == "stopped" for _, c in tr)
    assert r["slows"] == sum(c == "delayed" for _, c in tr)


def test_a_run_that_stops(tmp_path):
    # flush at 16 immutable memtables of 1 MiB (16 MiB at 8 MiB/s: ~2 s); one more
    # memtable (1 MiB, well under 2 s at any write rate of this server) reaches
    # maxnum 17: writes stop. maxnum > 3, but 16 - 1 < flushnum: never delayed.
    with native.Server(datadir=str(tmp_path), memtable_mb=1, flushnum=16, maxnum=17,
                       bg_write_rate=8 * MIB, max_value=VALUE) as srv:
        srv.stats(reset=True)
        res = write_run(srv, 5.0)
        r = settled(srv)
    print({k: r[k] for k in ("memtables_sealed", "flushes_completed", "stops", "stop_s",
                             "stall_micros", "io_stalls.memtable_compaction")})
    assert res["completed"] > 0
    assert r["memtables_sealed"] >= 17
    assert r["stops"] >= 1 and r["stop_s"] > 0.2 and r["slows"] == 0 and r["slow_s"] == 0
    # RocksDB's own: the writer waited (STALL_MICROS), the recalculations that found
    # the memtable limit (io_stalls.memtable_compaction), its LOG's warnings
    assert r["stall_micros"] > 0
    assert r["io_stalls.memtable_compaction"] >= r["stops"]
    assert log_lines(tmp_path, r"Stopping writes because we have \d+ immutable memtables") >= 1
    # the writer waits at least as long as the stop lasts, within the dating slack
    assert r["stall_micros"] / 1e6 >= 0.8 * r["stop_s"]
    check_timeline(r)
    # the listener's flushes are RocksDB's (FLUSH_TIME count, FLUSH_WRITE_BYTES)
    assert r["flushes_completed"] == r["flushes"] >= 1
    assert r["flush_bytes"] == pytest.approx(r["flush_write_bytes"], rel=0.01)


def test_a_run_that_only_slows(tmp_path):
    # maxnum 10 > 3: delayed at 9 unflushed (9 - 1 >= flushnum 8), stopped at 10.
    # The flush of 8 MiB lasts ~1 s at 8 MiB/s; at the delayed 128 KiB/s the next
    # 1 MiB memtable takes ~8 s, so the flush always ends before the stop.
    with native.Server(datadir=str(tmp_path), memtable_mb=1, flushnum=8, maxnum=10,
                       bg_write_rate=8 * MIB, delayed_write_rate=128 * 1024,
                       max_value=VALUE) as srv:
        srv.stats(reset=True)
        write_run(srv, 5.0)
        r = settled(srv)
    print({k: r[k] for k in ("memtables_sealed", "slows", "slow_s", "stall_micros")})
    assert r["slows"] >= 1 and r["slow_s"] > 0.2
    assert r["stops"] == 0 and r["stop_s"] == 0
    assert r["io_stalls.memtable_slowdown"] >= r["slows"]
    assert r["io_stalls.total_stop"] == 0
    assert log_lines(tmp_path, r"Stalling writes because we have \d+ immutable memtables") >= 1
    assert log_lines(tmp_path, r"Stopping writes") == 0
    check_timeline(r)


def test_a_run_that_never_flushes(tmp_path):
    with native.Server(datadir=str(tmp_path), memtable_mb=8, flushnum=8, maxnum=10,
                       max_value=VALUE) as srv:
        srv.stats(reset=True)
        res = native.run_load(targets=srv.addresses(), threads=4, duration_s=30,
                              max_requests=30_000, read_ratio=0.0, distribution="uniform",
                              records=10**6, value_size=VALUE, timeout_ms=10_000)
        r = srv.stats()["rocksdb"][0]
    # 30,000 x 1 KiB = ~31 MB: at most 4 memtables of 8 MiB, fewer than flushnum
    assert res["writes"] == 30_000
    assert 1 <= r["memtables_sealed"] < 8
    assert r["flushes_completed"] == r["flushes"] == 0 and r["flush_write_bytes"] == 0
    assert r["l0_files"] == 0 and r["files_at_level"] == [0.0] * len(r["files_at_level"])
    assert r["immutable_memtables"] == r["memtables_sealed"]
    assert r["stops"] == r["slows"] == 0 and r["stall_transitions"] == []


def test_preload_leaves_a_loaded_db_and_readable_keys(tmp_path):
    records, value = 40_000, 512
    with native.Server(datadir=str(tmp_path), workers=2, memtable_mb=1, max_value=value,
                       preload_records=records, preload_value_bytes=value) as srv:
        assert sum(srv.preloaded()) == records and min(srv.preloaded()) > 0.3 * records
        assert srv.preload_s > 0
        start = srv.stats(reset=True)["rocksdb"]
        res = native.run_load(targets=srv.addresses(), partition="hash", threads=4,
                              duration_s=30, max_requests=20_000, read_ratio=1.0,
                              distribution="uniform", records=records, timeout_ms=10_000)
    for r, n in zip(start, srv.preloaded()):
        # closed (memtables flushed) and reopened: the data are in SST files
        assert sum(r["files_at_level"]) >= 1 and r["l0_files"] == r["files_at_level"][0]
        assert r["sst_bytes"] >= 0.9 * n * (16 + 4 + value)
        assert r["memtable_bytes"] < 1 * MIB and r["immutable_memtables"] == 0
    # every key the load generator asks for is there, in the instance it asks
    assert res["completed"] == 20_000 and res["status_not_found"] == 0


def test_window_reset_zeroes_the_write_path_counts(tmp_path):
    with native.Server(datadir=str(tmp_path), memtable_mb=1, max_value=VALUE) as srv:
        write_run(srv, 1.0)
        settled(srv, drained=True)   # no flush of the run's memtables still to finish
        before = srv.stats(reset=True)["rocksdb"][0]
        after = srv.stats()["rocksdb"][0]
    assert before["memtables_sealed"] >= 1 and before["flushes_completed"] >= 1
    for k in ("memtables_sealed", "flushes_completed", "flush_bytes", "stops", "slows",
              "stop_s", "slow_s", "flushes", "keys_written"):
        assert after[k] == 0, k
    assert after["window_s"] < before["window_s"]


@pytest.mark.parametrize("opts, field", [
    ({"delayed_write_rate": -1}, "delayed_write_rate"),
    ({"delayed_write_rate": 1000}, "delayed_write_rate"),          # under RocksDB's 16 KiB/s floor
    ({"bg_write_rate": 10}, "bg_write_rate"),
    ({"level0_slowdown_writes_trigger": 2}, "level0_slowdown_writes_trigger"),   # < compaction's 4
    ({"level0_slowdown_writes_trigger": 30, "level0_stop_writes_trigger": 25},
     "level0_stop_writes_trigger"),
    ({"level0_file_num_compaction_trigger": -1}, "level0_file_num_compaction_trigger"),
    ({"preload_records": -5}, "preload_records"),
    ({"preload_value_bytes": 70_000}, "preload_value_bytes"),
    ({"preload_partition": "modulo"}, "preload_partition"),
])
def test_write_path_options_are_validated(tmp_path, opts, field):
    with pytest.raises(InputError) as ei:
        native.Server(datadir=str(tmp_path / "db"), **opts)
    assert ei.value.field == field
    assert not (tmp_path / "db").exists()          # refused before anything was made


def test_every_server_option_is_in_the_docs_table():
    import dataclasses
    text = Path("docs/native.md").read_text()
    table = text.split("## Server options")[1].split("\n## ")[0]
    for f in dataclasses.fields(native.ServerOptions):
        assert re.search(rf"^\| [^|]*\b{f.name}\b", table, re.M), f.name
