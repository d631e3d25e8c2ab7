"""Python mirrors of the native option structs.

`ServerOptions` mirrors `kv::ServerOptions` (native/kv/options.hpp) and
`LoadOptions` mirrors `kv::LoadOptions` (native/kv/loadgen.hpp): same field
names, same defaults. The C++ side is the single place that validates
ranges; its OptionError is re-raised here as model.errors.InputError with
`field` set to the option at fault.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from model.errors import InputError

SEQ_CHECKS = ("disk-get", "none", "evicted-only")


@dataclass
class ServerOptions:
    datadir: str = ""                 # worker i keeps RocksDB in datadir/worker-i (required)
    bind_address: str = "127.0.0.1"
    base_port: int = 0                # worker i on base_port + i; 0 = OS-chosen ports
    workers: int = 1                  # worker threads = partitions = RocksDB instances
    pin_cpus: list[int] = field(default_factory=list)  # worker i -> pin_cpus[i % len]; [] = unpinned
    rcvbuf_bytes: int = 0             # SO_RCVBUF per socket; 0 = OS default
    max_value: int = 128              # largest accepted value in bytes
    idle_poll_ms: int = 20            # stop/snapshot check period of an idle worker
    memtable_mb: int = 64             # write_buffer_size (MiB)
    flushnum: int = 1                 # min_write_buffer_number_to_merge
    maxnum: int = 2                   # max_write_buffer_number
    wal: bool = True                  # write-ahead log on/off
    sync: bool = False                # fsync WAL per write (needs wal)
    wal_bytes_per_sync: int = 0       # incremental WAL writeback (bytes); 0 = off
    flush_threads: int = 1            # RocksDB HIGH pool (process-wide)
    compaction_threads: int = 1       # RocksDB LOW pool (process-wide)
    bg_write_rate: int = 0            # bytes/s of flush + compaction writes (one limiter); 0 = unlimited
    delayed_write_rate: int = 0       # bytes/s while writes are delayed; 0 = RocksDB's (16 MiB/s, or bg_write_rate)
    level0_file_num_compaction_trigger: int = 0  # L0 files starting a compaction; 0 = 4
    level0_slowdown_writes_trigger: int = 0      # L0 files delaying writes; 0 = 20
    level0_stop_writes_trigger: int = 0          # L0 files stopping writes; 0 = 36
    preload_records: int = 0          # load records 0..N-1 before the run, close, reopen; 0 = none
    preload_value_bytes: int = 128    # value size of the preloaded records (B)
    preload_partition: str = "hash"   # hash | range: as the load generator's partition
    transaction_db: bool = False      # TransactionDB instead of a plain DB
    seq_check: str = "disk-get"       # disk-get | none | evicted-only

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["datadir"] = str(d["datadir"])
        return d


@dataclass
class LoadOptions:
    targets: list[tuple[str, int]] = field(default_factory=list)  # one per worker, or one switch port
    partition: str = "range"          # range | hash (ignored with one target)
    threads: int = 1                  # closed-loop client threads
    duration_s: float = 1.0           # time bound (s)
    max_requests: int = 1_000_000     # count bound over all threads
    read_ratio: float = 0.5           # GET fraction; the rest are PUTs
    distribution: str = "zipfian"     # zipfian (YCSB scrambled) | uniform | sequential
    records: int = 1_000_000          # key space size
    value_size: int = 128             # PUT value bytes
    timeout_ms: float = 10.0          # resend after this long (ms)
    seed: int = 1
    max_value: int = 65000            # replies with larger vlen count as malformed

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["targets"] = [(str(h), int(p)) for h, p in d["targets"]]
        return d


def _with_overrides(cls, options, overrides: dict):
    if options is None:
        options = cls()
    names = {f.name for f in dataclasses.fields(cls)}
    for key in overrides:
        if key not in names:
            raise InputError("unknown option", source=cls.__name__, field=key)
    return dataclasses.replace(options, **overrides)


def as_input_error(exc: ValueError, source: str) -> InputError:
    """Turn a native OptionError ("option: message") into an InputError."""
    text = str(exc)
    option, _, detail = text.partition(": ")
    if not detail:
        return InputError(text, source=source)
    return InputError(detail, source=source, field=option)
