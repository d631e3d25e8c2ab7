"""What is modelled: the scenario language.

A :class:`Scenario` describes one configuration of the switch-cached KV rack
(docs/domain.md section 1): client threads, network, switch cache, servers,
storage engine settings and workload. It holds no calibrated numbers; those
live in a :class:`model.profile.Profile`.

Scenarios are written in TOML, one table per section::

    name = "my-rack"
    [servers]
    count = 32
    [storage]
    memtable_mb = 16

and can be changed from the command line with ``--set section.key=value``
(or a bare ``key=value`` when the key name is unique, plus a few short
aliases such as ``servers=32`` and ``clients=1024``).

Every field is declared once, with its type, default, unit, allowed values
and meaning, and validation is driven from those declarations, so error
messages always name the key and what it accepts.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any, Iterable, Mapping

from .errors import InputError
from .toml_text import locate_in_toml, parse_toml, toml_value


def spec(default, *, unit: str = "", doc: str = "", min=None, max=None,
         choices: tuple | None = None, min_exclusive: bool = False):
    """Declare a scenario field: its default and what values it accepts."""
    return field(default=default, metadata=dict(
        unit=unit, doc=doc, min=min, max=max, choices=choices,
        min_exclusive=min_exclusive))


@dataclass(frozen=True)
class Clients:
    """Closed-loop client threads, each with one request outstanding."""
    threads: int = spec(1024, unit="threads", min=1, max=1_000_000,
                        doc="client threads over all client machines")
    timeout_ms: float = spec(1000.0, unit="ms", min=0.0, min_exclusive=True,
                             max=600_000.0, doc="resend timeout")
    retry: str = spec("farreach", choices=("farreach", "strict"),
                      doc="which reply completes a request: 'farreach' (FarReach's client: a reply "
                          "to any attempt of it; a stale reply restarts the wait) or 'strict' (only "
                          "the latest attempt's reply, as the native load generator)")
    machines: int = spec(1, unit="machines", min=1, max=4096,
                         doc="client machines the threads are spread over")
    cores: int = spec(0, unit="cores", min=0, max=1_000_000,
                      doc="cores per client machine, which every send and resend needs for the "
                          "client's own work; 0 = the testbed's (the profile's client_cores)")


@dataclass(frozen=True)
class Network:
    """The path between clients, switch and servers."""
    loss_rate: float = spec(0.0, unit="fraction", min=0.0, max=0.5,
                            doc="random per-packet loss on the wire, besides buffer overflow")


@dataclass(frozen=True)
class Switch:
    """The programmable switch: partitioning and the in-switch cache."""
    cache: bool = spec(True, doc="in-switch cache on (FarReach, NetCache) or off (NoCache)")
    mode: str = spec("write-back", choices=("write-back", "read-only"),
                     doc="write-back (FarReach: hits for reads and writes) or read-only "
                         "(NetCache: writes to cached keys go to the server)")
    cache_keys: int = spec(10_000, unit="keys", min=0, max=10_000_000,
                           doc="hot keys the switch caches (the most popular ones)")
    partition: str = spec("hash", choices=("range", "range-even", "hash"),
                          doc="key to server partitioning (docs/workload.md section 3): "
                              "'range' = FarReach's split of the key's top 16 bits into "
                              "65536/N slices (YCSB keys never set the top bit, so servers "
                              "N/2..N-1 get no keys); 'range-even' = the populated top 32 "
                              "bits split evenly; 'hash' = CRC32 of the 16-byte key modulo "
                              "hash_buckets, buckets split evenly")
    hash_buckets: int = spec(32_768, unit="buckets", min=1, max=1 << 24,
                             doc="CRC32 buckets for hash partitioning (FarReach's partitionnum)")
    max_value_bytes: int = spec(128, unit="B", min=0, max=65_536,
                                doc="largest value the switch's registers hold (the public "
                                    "code's switch_max_vallen, config.ini: 128 B); a larger "
                                    "value is never cached, by FarReach or NetCache "
                                    "(docs/switch.md)")


@dataclass(frozen=True)
class Servers:
    """Storage server worker threads, one RocksDB instance each."""
    count: int = spec(16, unit="workers", min=1, max=4096,
                      doc="worker threads (partitions), possibly on fewer machines")
    machines: int = spec(2, unit="machines", min=1, max=4096,
                         doc="physical server machines the workers are spread over (they share disk, and cores when unpinned)")
    cores: int = spec(0, unit="cores", min=0, max=100_000,
                      doc="cores per machine for workers and RocksDB background threads; 0 = as many as needed")
    pinned: bool = spec(True, doc="workers pinned to their own cores")
    rcvbuf_kb: int = spec(208, unit="KiB", min=1, max=1 << 20,
                          doc="per-worker UDP receive buffer")
    seq_check: str = spec("evicted-only",
                          choices=("disk-get", "none", "seq-cache", "evicted-only"),
                          doc="how writes check sequence numbers")
    flush_threads: int = spec(8, unit="threads", min=0, max=4096,
                              doc="RocksDB flush threads per server machine (its HIGH pool, "
                                  "also each instance's max_background_flushes; FarReach's "
                                  "GLOBAL_MAX_FLUSH_THREAD_NUM); 0 = one per job")
    compaction_threads: int = spec(8, unit="threads", min=0, max=4096,
                                   doc="RocksDB compaction threads per server machine (its LOW "
                                       "pool, also each instance's max_background_compactions); "
                                       "0 = one per job")
    bg_on_worker_cores: bool = spec(True, doc="RocksDB's background threads run on the workers' "
                                              "cores (false: kept apart, as the lab's tuning "
                                              "series did)")


@dataclass(frozen=True)
class Storage:
    """RocksDB settings of every worker's instance."""
    memtable_mb: float = spec(64.0, unit="MiB", min=0.0625, max=65_536.0,
                              doc="write_buffer_size")
    flushnum: int = spec(4, unit="memtables", min=1, max=1024,
                         doc="min_write_buffer_number_to_merge")
    maxnum: int = spec(5, unit="memtables", min=2, max=1024,
                       doc="max_write_buffer_number")
    l0_files: int = spec(4, unit="files", min=1, max=1024,
                         doc="level0_file_num_compaction_trigger (RocksDB default 4)")
    l0_slowdown: int = spec(20, unit="files", min=1, max=1 << 20,
                            doc="level0_slowdown_writes_trigger (RocksDB default 20)")
    l0_stop: int = spec(36, unit="files", min=1, max=1 << 20,
                        doc="level0_stop_writes_trigger (RocksDB default 36)")
    l1_mb: float = spec(256.0, unit="MiB", min=1.0, max=1e9,
                        doc="max_bytes_for_level_base (RocksDB default 256 MiB)")
    delayed_write_rate_mbps: float = spec(16.0, unit="MiB/s", min=0.016, max=1e6,
                                          doc="delayed_write_rate: the write rate a slowdown "
                                              "starts at (RocksDB default 16 MiB/s)")
    rate_limit_mbps: float = spec(0.0, unit="MiB/s", min=0.0, max=1e6,
                                  doc="RocksDB's rate_limiter per server process: the bytes "
                                      "per second its flushes and compactions write at most; "
                                      "0 = none")
    preloaded: bool = spec(True, doc="the run starts from a database loaded with "
                                     "workload.records records (YCSB's load phase, then a "
                                     "server restart); false: an empty database")
    wal: bool = spec(True, doc="write-ahead log on")
    wal_bytes_per_sync_mb: float = spec(0.0, unit="MiB", min=0.0, max=65_536.0,
                                        doc="wal_bytes_per_sync; 0 = RocksDB default")
    db: str = spec("txn", choices=("txn", "normal"),
                   doc="TransactionDB or plain DB")


@dataclass(frozen=True)
class Workload:
    """YCSB-style key and operation stream."""
    distribution: str = spec("zipf", choices=("zipf", "uniform", "sequential"),
                             doc="key popularity: scrambled zipfian, uniform or sequential")
    zipf_theta: float = spec(0.99, min=0.0, max=0.9999, doc="zipfian constant")
    records: int = spec(100_000_000, unit="keys", min=1, max=10**12,
                        doc="records in the store (YCSB recordcount)")
    generator: str = spec("ycsb", choices=("ycsb", "kvperf"),
                          doc="who draws the keys (docs/workload.md sections 1-2): 'ycsb' = "
                              "YCSB 0.17 CoreWorkload (scrambled zipfian modulo records + 1, "
                              "the out-of-range draw redrawn) with FarReach's 16-byte key; "
                              "'kvperf' = this repository's load generator and key layout "
                              "(modulo records; docs/protocol.md)")
    insertorder: str = spec("hashed", choices=("hashed", "ordered"),
                            doc="YCSB insertorder: key name 'user' + fnvhash64(keynum) "
                                "('hashed', YCSB's default) or 'user' + keynum ('ordered'); "
                                "generator 'ycsb' only")
    profile: str = spec("", doc="workload profile: '' = the generator above as the public "
                                "code runs it; else an embedded profile name (e.g. 'lab'), a "
                                "profile or measured-description .toml, FarReach client "
                                "statistics .json, or a key trace file (docs/workload.md "
                                "section 4)")
    read_ratio: float = spec(0.5, unit="fraction", min=0.0, max=1.0,
                             doc="share of GETs; the rest are updates (workload A = 0.5)")
    key_bytes: int = spec(16, unit="B", min=1, max=1024, doc="key size")
    value_bytes: int = spec(128, unit="B", min=0, max=65_536, doc="value size")
    queries_m: float = spec(10.0, unit="M queries", min=0.001, max=1e6,
                            doc="queries in the run (sets data volume and run length)")


SECTIONS: dict[str, type] = {
    "clients": Clients, "network": Network, "switch": Switch,
    "servers": Servers, "storage": Storage, "workload": Workload,
}

# Keys that once existed, and what says the same now: a file written for an
# earlier version is refused with the way to say it, not with "unknown key".
REPLACED = {
    "servers.bg_threads": "servers.bg_threads is gone (2026-12): RocksDB's background "
                          "threads are servers.flush_threads and servers.compaction_threads "
                          "(per server machine, RocksDB's HIGH and LOW pools)",
}

# Short names accepted by --set, on top of any field name that is unique.
ALIASES = {
    "servers": "servers.count",
    "clients": "clients.threads",
    "cache": "switch.cache",
    "workload": "workload.distribution",
    "theta": "workload.zipf_theta",
    "timeout": "clients.timeout_ms",
}


@dataclass(frozen=True)
class Scenario:
    """One configuration of the rack. Immutable; use :meth:`updated`."""
    name: str = "farreach-rack"
    clients: Clients = field(default_factory=Clients)
    network: Network = field(default_factory=Network)
    switch: Switch = field(default_factory=Switch)
    servers: Servers = field(default_factory=Servers)
    storage: Storage = field(default_factory=Storage)
    workload: Workload = field(default_factory=Workload)

    def __post_init__(self):
        # RocksDB cannot merge more immutables than it may hold.
        if self.storage.flushnum >= self.storage.maxnum:
            raise InputError(
                f"flushnum ({self.storage.flushnum}) must be less than "
                f"storage.maxnum ({self.storage.maxnum})", field="storage.flushnum")

    # ---- construction -------------------------------------------------
    @classmethod
    def default(cls) -> "Scenario":
        """The embedded FarReach rack (16 servers, 1024 clients, YCSB A)."""
        return _default()

    @classmethod
    def from_toml_text(cls, text: str, source: str) -> "Scenario":
        """A scenario from its TOML text; an error names the source, the line and the key."""
        data = parse_toml(text, source)
        try:
            return cls.from_mapping(data, source=source)
        except InputError as exc:
            raise locate_in_toml(exc, text, source) from None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str | None = None) -> "Scenario":
        values: dict[str, Any] = {}
        for key, val in data.items():
            if key == "name":
                if not isinstance(val, str):
                    raise InputError(f"expected a string, got {val!r}", source=source, field="name")
                values["name"] = val
                continue
            if key not in SECTIONS:
                raise InputError(
                    f"unknown section; allowed: name, {', '.join(SECTIONS)}",
                    source=source, field=key)
            if not isinstance(val, Mapping):
                raise InputError("expected a table of settings", source=source, field=key)
            values[key] = _build_section(key, val, source)
        return cls(**values)

    # ---- changes ------------------------------------------------------
    def updated(self, changes: Mapping[str, Any], source: str | None = None) -> "Scenario":
        """Return a copy with ``{"section.key": value}`` changes applied and validated.

        Only the changed keys are checked (the rest were checked when this
        scenario was made), then the whole-scenario rules (``__post_init__``):
        the same result and errors as rebuilding it from a mapping, at a
        tenth of the cost (a 1,000-row plan builds 3,000 scenarios)."""
        name = self.name
        per_section: dict[str, dict[str, Any]] = {}
        for key, value in changes.items():
            path = resolve_key(key, source)
            if path == "name":
                if not isinstance(value, str):
                    raise InputError(f"expected a string, got {value!r}", source=source,
                                     field="name")
                name = value
                continue
            section, key_ = path.split(".")
            per_section.setdefault(section, {})[key_] = value
        new = {}
        for section, values in per_section.items():
            cls = SECTIONS[section]
            known = _fields_of(cls)
            new[section] = dataclasses.replace(getattr(self, section), **{
                k: _check_value(cls, known[k], v, f"{section}.{k}", source)
                for k, v in values.items()})
        return dataclasses.replace(self, name=name, **new)

    def with_overrides(self, assignments: Iterable[str]) -> "Scenario":
        """Apply ``key=value`` strings as given to ``--set``."""
        changes = {}
        for text in assignments:
            if "=" not in text:
                raise InputError(f"expected key=value, got {text!r}", source="--set")
            key, raw = text.split("=", 1)
            changes[key.strip()] = parse_value(raw.strip())
        return self.updated(changes, source="--set")

    # ---- output -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for sec in SECTIONS:
            out[sec] = dataclasses.asdict(getattr(self, sec))
        return out

    def to_toml(self, header: str = "") -> str:
        """The scenario as TOML that :meth:`from_toml` reads back to an equal scenario.

        Each section and key carries its meaning, unit and allowed values as
        comments (from the declarations above), so the printout documents
        itself; ``header`` is written first as comment lines.
        """
        lines = [f"# {h}".rstrip() for h in header.splitlines()]
        if lines:
            lines.append("")
        lines.append(f"name = {toml_value(self.name)}")
        for sec, cls in SECTIONS.items():
            lines += ["", f"[{sec}]"] + _comment(cls.__doc__ or "")
            obj = getattr(self, sec)
            for f in fields(cls):
                md = f.metadata
                about = md.get("doc", "") or f.name
                unit = f" Unit: {md['unit']}." if md.get("unit") else ""
                lines += [""] + _comment(f"{about}.{unit} Allowed: {describe(cls, f.name)}.")
                lines.append(f"{f.name} = {toml_value(getattr(obj, f.name))}")
        return "\n".join(lines) + "\n"


def _comment(text: str, width: int = 88) -> list[str]:
    """``text`` as TOML comment lines (a comment cannot span lines, so wrap it)."""
    import textwrap
    return ["# " + ln for ln in textwrap.wrap(" ".join(text.split()), width - 2)]


@functools.lru_cache(maxsize=1)
def _default() -> Scenario:
    # read once: every row of a runs CSV starts from it (scenarios are immutable)
    text = resources.files("model").joinpath("default_scenario.toml").read_text()
    return Scenario.from_mapping(tomllib.loads(text), source="<embedded default>")


def all_keys() -> list[str]:
    return [f"{sec}.{f.name}" for sec, cls in SECTIONS.items() for f in fields(cls)]


def resolve_key(key: str, source: str | None = None) -> str:
    """Map a user key (dotted, bare unique name, or alias) to ``section.field``."""
    if key == "name":
        return key
    if key in ALIASES:
        return ALIASES[key]
    for old, why in REPLACED.items():
        if key in (old, old.split(".")[1]):
            raise InputError(why, source=source, field=key)
    if "." in key:
        section, name = key.split(".", 1)
        if section not in SECTIONS:
            raise InputError(f"unknown section '{section}'; allowed: {', '.join(SECTIONS)}",
                             source=source, field=key)
        allowed = [f.name for f in fields(SECTIONS[section])]
        if name not in allowed:
            raise InputError(unknown_key(key, [f"{section}.{a}" for a in allowed])
                             .replace("unknown key;", f"unknown key in [{section}];"),
                             source=source, field=key)
        return key
    matches = [k for k in all_keys() if k.split(".")[1] == key]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(f"ambiguous key; use one of: {', '.join(matches)}", source=source, field=key)
    raise InputError(unknown_key(key, [*ALIASES, *all_keys()]), source=source, field=key)


def unknown_key(key: str, known: list[str]) -> str:
    """"unknown key" with the closest known ones (a misspelling), else where
    to find them all: the full list runs to 800 characters."""
    import difflib
    bare = {k.split(".")[-1]: k for k in known}
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6) or \
        [bare[m] for m in difflib.get_close_matches(key.split(".")[-1], list(bare), n=3,
                                                     cutoff=0.6)]
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return (f"unknown key; {hint}every key with its unit and meaning: "
            "python -m sim scenario show")


def parse_value(raw: str) -> Any:
    """Read a --set value as a TOML value (numbers, true/false, strings)."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw
    except ValueError:
        # an integer of more than 4,300 digits (Python's conversion limit): as a
        # string it is refused by the key's own check, with the key named
        return raw


def path_of(cls: type, name: str) -> str:
    """``section.name`` of a field of a section class."""
    section = next((sec for sec, c in SECTIONS.items() if c is cls), "")
    return f"{section}.{name}"


def describe(cls: type, name: str) -> str:
    """A human description of what a field accepts."""
    f = {f.name: f for f in fields(cls)}[name]
    md = f.metadata
    typ = f.type if isinstance(f.type, str) else f.type.__name__
    if md.get("choices"):
        return "one of " + ", ".join(repr(c) for c in md["choices"])
    if typ == "bool":
        return "true or false"
    if typ == "str":
        return "a name or a file path, e.g. workload.profile=lab" \
            if path_of(cls, name) == "workload.profile" else "a string"
    lo, hi = md.get("min"), md.get("max")
    kind = "an integer" if typ == "int" else "a number"
    unit = f" {md['unit']}" if md.get("unit") else ""
    if lo is not None and hi is not None:
        op = "<" if md.get("min_exclusive") else "<="
        return f"{kind} with {lo} {op} value <= {hi}{unit}"
    return kind + unit


@functools.lru_cache(maxsize=None)
def _fields_of(cls) -> dict:
    return {f.name: f for f in fields(cls)}


def _build_section(section: str, values: Mapping[str, Any], source: str | None):
    cls = SECTIONS[section]
    known = _fields_of(cls)
    kwargs = {}
    for key, val in values.items():
        path = f"{section}.{key}"
        if path in REPLACED:
            raise InputError(REPLACED[path], source=source, field=path)
        if key not in known:
            raise InputError(f"unknown key; allowed in [{section}]: {', '.join(known)}",
                             source=source, field=path)
        kwargs[key] = _check_value(cls, known[key], val, path, source)
    return cls(**kwargs)


def _check_value(cls, f, val, path, source):
    md = f.metadata
    typ = f.type if isinstance(f.type, str) else f.type.__name__

    def bad(why):
        return InputError(f"{why}; allowed: {describe(cls, f.name)}", source=source, field=path)

    shown = repr(val) if len(repr(val)) <= 60 else f"{repr(val)[:40]}... ({len(repr(val))} characters)"

    if typ == "bool":
        if not isinstance(val, bool):
            raise bad(f"expected true or false, got {shown}")
        return val
    if typ == "str":
        if not isinstance(val, str):
            raise bad(f"expected a string, got {shown}")
        if md.get("choices") and val not in md["choices"]:
            raise bad(f"{shown} is not allowed")
        return val
    if isinstance(val, bool) or not isinstance(val, (int, float)):
        raise bad(f"expected {'an integer' if typ == 'int' else 'a number'}, got {shown}")
    if typ == "int":
        if isinstance(val, float):
            if not val.is_integer():
                raise bad(f"expected an integer, got {shown}")
            val = int(val)
    else:
        val = float(val)
    if val != val:  # NaN
        raise bad("NaN is not a value")
    lo, hi = md.get("min"), md.get("max")
    if lo is not None and (val < lo or (md.get("min_exclusive") and val == lo)):
        raise bad(f"{val!r} is out of range")
    if hi is not None and val > hi:
        raise bad(f"{val!r} is out of range")
    return val

