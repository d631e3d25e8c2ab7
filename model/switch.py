"""Behavioural reference model of the in-switch write-back cache (FarReach).

This module is the executable specification of ``p4/farreach.p4``: the same
match tables, register arrays, sizes and per-packet decisions, written as
plain Python so that the simulator can use it and property tests can check
the protocol's guarantees under loss, duplication and reordering. The native
software switch (``native/switch``) implements the same rules in C++.

Everything is pure: no sockets, no clocks. A *frame* (packet plus source and
destination endpoint) goes into :meth:`SwitchModel.process`, frames come
out. The control plane (:class:`ControlPlane`) talks to servers through the
frames it returns and the replies handed to :meth:`ControlPlane.on_reply`,
so a test harness decides when (and whether) each packet is delivered.

Consistency protocol (why each rule exists)
-------------------------------------------

* Every client write that reaches the switch (hit or miss) is stamped with
  ``seq = ++bucket_seq[crc32(key) % HASH_BUCKETS]``. The counter is shared by
  all keys of a bucket, so sequence numbers of any one key grow across
  cache/miss transitions, and a server that compares seqs can always tell a
  delayed packet from a newer one.
* A cache entry has a state: ``POPULATING`` (installed, value not loaded yet:
  reads go to the server, writes are dropped so clients retry), ``VALID``
  (reads and writes answered by the switch; writes set ``dirty``) and
  ``EVICTING`` (reads answered from the cache, writes dropped while the dirty
  value is written back). The entry is only deleted after the server
  acknowledged the write-back, so no acknowledged write is lost.
* A server's reply to a forwarded write passes the switch. If the key is
  ``POPULATING``, or cached with an older seq than the reply, the LOAD may
  have read the server before that write was applied; the reply is dropped
  so the write stays unacknowledged (the client retries and the retry goes
  to the cache). Otherwise a later read from the cache could return a value
  older than an acknowledged write.
* Write-backs (WB_PUT / WB_DEL) carry the cached seq; the server applies them
  only if newer, so delayed or duplicated write-backs are harmless.
* Values are cached as VALUE_WORDS 32-bit register words. A write hit whose
  length is not a multiple of 4 cannot be stored by the data plane; it is
  dropped and reported (reason UNCACHEABLE) so the control plane evicts the
  key; the client's retry then goes to the server.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Iterable

# ---------------------------------------------------------------------------
# Constants. Mirrors p4/include/constants.p4 (#define NAME value); the test
# tests/switch/test_p4_constants.py parses that file and compares.
# ---------------------------------------------------------------------------
CONSTANTS = dict(
    CACHE_SIZE=16384,          # cache table entries / per-key register cells
    CACHE_IDX_BITS=14,         # log2(CACHE_SIZE): register index width
    VALUE_WORDS=32,            # 32-bit value registers, one per pipeline slot
    VALUE_BYTES=128,           # VALUE_WORDS * 4: largest cacheable value
    HASH_BUCKETS=32768,        # CRC32 buckets (hash partitioning, seq counters)
    HASH_BUCKET_BITS=15,
    MAX_SERVERS=128,           # partition table entries
    CMS_ROWS=4,                # count-min sketch rows
    CMS_WIDTH=65536,           # counters per row
    CMS_INDEX_BITS=16,
    CMS_COUNTER_BITS=16,       # saturating counters
    HOT_THRESHOLD=64,          # min-estimate at which a key is reported hot
    REPORT_BLOOM_BITS=262144,  # "already reported" bitmap, cleared per epoch
    REPORT_BLOOM_INDEX_BITS=18,
    VALLEN_ABSENT=0xFFFF,      # vallen register marker: cached key is deleted
    KV_UDP_PORT=5008,          # switch (virtual service) port for clients
    KV_SERVER_PORT_BASE=5120,  # server worker i listens on base + i
)
globals().update(CONSTANTS)

# Wire protocol (docs/protocol.md).
HEADER_LEN = 32
GET, PUT, DEL, WB_PUT, WB_DEL, LOAD = 1, 2, 3, 4, 5, 6
REQUEST_OPS = (GET, PUT, DEL, WB_PUT, WB_DEL, LOAD)
REPLY = 0x80
OK, NOT_FOUND, STALE, ERROR = 0, 1, 2, 3
# Extra ops understood by the software switch only (not by servers): STATS
# replies with the counters as JSON, FLUSH evicts every entry with write-back.
STATS, FLUSH = 0x7F, 0x7E

# Entry states held in the state register.
INVALID, VALID, EVICTING, POPULATING = 0, 1, 2, 3
# Digest reasons.
REPORT_HOT, REPORT_UNCACHEABLE = 1, 2

# CRC polynomials of the four CMS rows (reflected CRC-32 family, init and
# xor-out 0xFFFFFFFF). Row 0 is plain CRC-32, the same function as the
# partition hash; the others make the rows independent. Mirrored in the P4
# CRCPolynomial declarations.
CMS_POLYS = (0x04C11DB7, 0x1EDC6F41, 0x741B8CD7, 0x814141AB)


def _reflect(v: int, width: int) -> int:
    r = 0
    for _ in range(width):
        r = (r << 1) | (v & 1)
        v >>= 1
    return r


def _crc_table(poly: int) -> list[int]:
    rpoly = _reflect(poly, 32)
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ rpoly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLES = {p: _crc_table(p) for p in CMS_POLYS}


def crc32_poly(data: bytes, poly: int) -> int:
    """Reflected CRC-32 with the given (normal form) polynomial."""
    if poly == 0x04C11DB7:
        return zlib.crc32(data)
    table = _TABLES[poly]
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def hash_bucket(key: bytes) -> int:
    """crc32(key) mod HASH_BUCKETS (the P4 takes the low 15 bits)."""
    return zlib.crc32(key) & (HASH_BUCKETS - 1)


def cms_indices(key: bytes) -> list[int]:
    return [crc32_poly(key, p) & (CMS_WIDTH - 1) for p in CMS_POLYS]


def bloom_index(key: bytes) -> int:
    return zlib.crc32(key) >> (32 - REPORT_BLOOM_INDEX_BITS)


def server_of(key: bytes, n_servers: int, mode: str = "range") -> int:
    """The partition function exactly as docs/protocol.md states it."""
    if mode == "range":
        return min(n_servers - 1, (int.from_bytes(key[:4], "big") * n_servers) >> 31)
    if mode == "hash":
        return hash_bucket(key) * n_servers // HASH_BUCKETS
    raise ValueError(f"unknown partition mode {mode!r}")


def partition_entries(n_servers: int, mode: str) -> list[tuple[int, int, int]]:
    """Range-match entries (lo, hi, server) the control plane installs.

    The table key is the top 32 key bits (range mode) or the CRC bucket (hash
    mode); entry i covers exactly the keys ``server_of`` maps to server i.
    Range mode splits [0, 2^31), the space YCSB keys fill; the last server
    also takes keys with the top bit set.
    """
    if not 1 <= n_servers <= MAX_SERVERS:
        raise ValueError(f"servers must be 1..{MAX_SERVERS}, got {n_servers}")
    space = 1 << 31 if mode == "range" else HASH_BUCKETS
    out = []
    for i in range(n_servers):
        lo = -(-i * space // n_servers)           # ceil(i*space/n)
        hi = -(-(i + 1) * space // n_servers) - 1
        if mode == "range" and i == n_servers - 1:
            hi = (1 << 32) - 1
        if lo <= hi:
            out.append((lo, hi, i))
    return out


# ---------------------------------------------------------------------------
# Packets.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Packet:
    op: int
    key: bytes
    value: bytes = b""
    status: int = 0
    seq: int = 0
    req_id: int = 0

    @property
    def vlen(self) -> int:
        return len(self.value)

    @property
    def is_reply(self) -> bool:
        return bool(self.op & REPLY)

    def encode(self) -> bytes:
        return (bytes([self.op, self.status]) + len(self.value).to_bytes(2, "little")
                + self.seq.to_bytes(4, "little") + self.req_id.to_bytes(8, "little")
                + self.key + self.value)

    @staticmethod
    def decode(data: bytes, max_value: int = VALUE_BYTES) -> "Packet | None":
        """Parse one datagram; None if malformed (docs/protocol.md rules)."""
        if len(data) < HEADER_LEN:
            return None
        op, status = data[0], data[1]
        vlen = int.from_bytes(data[2:4], "little")
        if (op & 0x7F) not in REQUEST_OPS and (op & 0x7F) not in (STATS, FLUSH):
            return None
        if vlen > max_value or len(data) != HEADER_LEN + vlen:
            return None
        return Packet(op=op, status=status, seq=int.from_bytes(data[4:8], "little"),
                      req_id=int.from_bytes(data[8:16], "little"),
                      key=bytes(data[16:32]), value=bytes(data[32:]))


def reply_to(p: Packet, status: int = OK, value: bytes = b"", seq: int | None = None) -> Packet:
    return Packet(op=(p.op & 0x7F) | REPLY, key=p.key, value=value, status=status,
                  seq=p.seq if seq is None else seq, req_id=p.req_id)


@dataclass(frozen=True)
class Frame:
    """A packet on a link: src/dst are endpoints like ("client", 3),
    ("server", 1) or ("cpu", 0) for the control plane."""
    packet: Packet
    src: tuple
    dst: tuple


# ---------------------------------------------------------------------------
# Data-plane building blocks with the P4 semantics.
# ---------------------------------------------------------------------------
class RegisterArray:
    """A Tofino register array: fixed size and width, zero initialised.

    Sparse storage keeps 16K x 32 value cells cheap for property tests."""

    def __init__(self, name: str, size: int, bits: int):
        self.name, self.size, self.bits = name, size, bits
        self._mask = (1 << bits) - 1
        self._cells: dict[int, int] = {}

    def read(self, i: int) -> int:
        self._check(i)
        return self._cells.get(i, 0)

    def write(self, i: int, v: int) -> None:
        self._check(i)
        self._cells[i] = v & self._mask

    def clear(self) -> None:
        self._cells.clear()

    def _check(self, i: int) -> None:
        if not 0 <= i < self.size:
            raise IndexError(f"{self.name}[{i}] out of range {self.size}")


class ExactTable:
    """Exact-match table with a capacity (the P4 ``size``)."""

    def __init__(self, name: str, size: int):
        self.name, self.size = name, size
        self.entries: dict = {}

    def lookup(self, k):
        return self.entries.get(k)

    def add(self, k, v) -> None:
        if k in self.entries:
            raise KeyError(f"{self.name}: duplicate entry")
        if len(self.entries) >= self.size:
            raise OverflowError(f"{self.name}: table full ({self.size})")
        self.entries[k] = v

    def delete(self, k) -> None:
        del self.entries[k]


@dataclass
class Counters:
    hits: int = 0
    misses: int = 0
    forwarded: int = 0
    replies_relayed: int = 0
    blocked_writes: int = 0
    dropped_replies: int = 0
    hot_reports: int = 0
    evictions: int = 0
    writebacks: int = 0
    populations: int = 0


class SwitchModel:
    """The data plane: tables and registers of p4/farreach.p4."""

    def __init__(self, n_servers: int, partition: str = "range"):
        self.n_servers = n_servers
        self.partition = partition
        self.partition_tbl = partition_entries(n_servers, partition)
        self.cache_tbl = ExactTable("cache_lookup", CACHE_SIZE)
        self.state_reg = RegisterArray("state_reg", CACHE_SIZE, 8)
        self.dirty_reg = RegisterArray("dirty_reg", CACHE_SIZE, 8)
        self.seq_reg = RegisterArray("seq_reg", CACHE_SIZE, 32)
        self.vallen_reg = RegisterArray("vallen_reg", CACHE_SIZE, 16)
        self.val_regs = [RegisterArray(f"val_reg_{i}", CACHE_SIZE, 32)
                         for i in range(VALUE_WORDS)]
        self.bucket_seq_reg = RegisterArray("bucket_seq_reg", HASH_BUCKETS, 32)
        self.cms_regs = [RegisterArray(f"cms_reg_{r}", CMS_WIDTH, CMS_COUNTER_BITS)
                         for r in range(CMS_ROWS)]
        self.bloom_reg = RegisterArray("report_bloom_reg", REPORT_BLOOM_BITS, 1)
        self.digests: list[tuple[bytes, int]] = []   # (key, reason)
        self.counters = Counters()

    # -- partition (table lookup, equal to server_of by construction) -------
    def server_for(self, key: bytes) -> int:
        k = (int.from_bytes(key[:4], "big") if self.partition == "range"
             else hash_bucket(key))
        for lo, hi, server in self.partition_tbl:
            if lo <= k <= hi:
                return server
        raise LookupError("partition table has no entry")  # unreachable when populated

    # -- value registers ----------------------------------------------------
    def read_value(self, idx: int) -> bytes | None:
        n = self.vallen_reg.read(idx)
        if n == VALLEN_ABSENT:
            return None
        words = [self.val_regs[i].read(idx) for i in range(n // 4)]
        return b"".join(w.to_bytes(4, "big") for w in words)

    def write_value(self, idx: int, value: bytes | None) -> None:
        if value is None:
            self.vallen_reg.write(idx, VALLEN_ABSENT)
            return
        self.vallen_reg.write(idx, len(value))
        for i in range(len(value) // 4):
            self.val_regs[i].write(idx, int.from_bytes(value[4 * i:4 * i + 4], "big"))

    # -- the pipeline -----------------------------------------------------
    def process(self, frame: Frame) -> list[Frame]:
        p = frame.packet
        if p.is_reply:
            return self._reply(frame)
        return self._request(frame)

    def _request(self, frame: Frame) -> list[Frame]:
        p, c = frame.packet, self.counters
        bucket = hash_bucket(p.key)
        server = ("server", self.server_for(p.key))
        idx = self.cache_tbl.lookup(p.key)
        if p.op in (PUT, DEL):
            # Stamped unconditionally (P4: no dependency on the state read).
            seq = self.bucket_seq_reg.read(bucket) + 1
            self.bucket_seq_reg.write(bucket, seq)
            p = replace(p, seq=self.bucket_seq_reg.read(bucket))
        if p.op in (GET, PUT, DEL) and idx is not None:
            state = self.state_reg.read(idx)
            if p.op == GET and state in (VALID, EVICTING):
                c.hits += 1
                value = self.read_value(idx)
                seq = self.seq_reg.read(idx)
                if value is None:
                    rep = reply_to(p, NOT_FOUND, seq=seq)
                else:
                    rep = reply_to(p, OK, value, seq=seq)
                return [Frame(rep, ("switch", 0), frame.src)]
            if p.op in (PUT, DEL) and state == VALID:
                if p.op == PUT and p.vlen % 4:
                    c.blocked_writes += 1
                    self.digests.append((p.key, REPORT_UNCACHEABLE))
                    return []
                c.hits += 1
                self.write_value(idx, p.value if p.op == PUT else None)
                self.seq_reg.write(idx, p.seq)
                self.dirty_reg.write(idx, 1)
                return [Frame(reply_to(p, OK), ("switch", 0), frame.src)]
            if p.op in (PUT, DEL):          # POPULATING or EVICTING
                c.blocked_writes += 1
                return []
            # GET while POPULATING: the server still holds the truth.
        if p.op in (GET, PUT, DEL):
            c.misses += 1
            if idx is None:
                self._count_hot(p.key)
        c.forwarded += 1
        return [Frame(p, frame.src, server)]

    def _count_hot(self, key: bytes) -> None:
        hot = True
        top = (1 << CMS_COUNTER_BITS) - 1
        for r, i in enumerate(cms_indices(key)):
            v = min(self.cms_regs[r].read(i) + 1, top)
            self.cms_regs[r].write(i, v)
            hot = hot and v >= HOT_THRESHOLD
        if hot:
            b = bloom_index(key)
            if not self.bloom_reg.read(b):
                self.bloom_reg.write(b, 1)
                self.digests.append((key, REPORT_HOT))
                self.counters.hot_reports += 1

    def _reply(self, frame: Frame) -> list[Frame]:
        p, c = frame.packet, self.counters
        base = p.op & 0x7F
        idx = self.cache_tbl.lookup(p.key)
        if base in (PUT, DEL) and idx is not None:
            state = self.state_reg.read(idx)
            if state == POPULATING or (state != INVALID and p.seq > self.seq_reg.read(idx)):
                c.dropped_replies += 1
                return []
        c.replies_relayed += 1
        return [Frame(p, ("switch", 0), frame.dst)]

    def estimate(self, key: bytes) -> int:
        """Count-min estimate (what the control plane reads)."""
        return min(self.cms_regs[r].read(i) for r, i in enumerate(cms_indices(key)))

    def reset_sketch(self) -> None:
        """Start a new detection epoch (control plane clears the registers)."""
        for r in self.cms_regs:
            r.clear()
        self.bloom_reg.clear()


# ---------------------------------------------------------------------------
# Control plane.
# ---------------------------------------------------------------------------
@dataclass
class _Pending:
    kind: str            # "load" or "wb"
    packet: Packet
    server: int


class ControlPlane:
    """Population and eviction, as p4/controlplane/farreach_cp.py does them.

    Operations are split at the points where the real control plane waits
    for a server, so a harness can interleave them with data-plane traffic.
    """

    def __init__(self, switch: SwitchModel):
        self.sw = switch
        self.free = list(range(CACHE_SIZE - 1, -1, -1))
        self.pending: dict[bytes, _Pending] = {}
        self._req = 1 << 62   # control-plane req_ids never collide with clients'

    def _next_req(self) -> int:
        self._req += 1
        return self._req

    def cached(self) -> list[bytes]:
        return list(self.sw.cache_tbl.entries)

    def populate(self, key: bytes) -> list[Frame]:
        """Install the entry (POPULATING) and send LOAD to the owning server."""
        sw = self.sw
        if key in sw.cache_tbl.entries or not self.free:
            return []
        idx = self.free.pop()
        sw.state_reg.write(idx, POPULATING)
        sw.dirty_reg.write(idx, 0)
        sw.cache_tbl.add(key, idx)
        pkt = Packet(op=LOAD, key=key, req_id=self._next_req())
        self.pending[key] = _Pending("load", pkt, sw.server_for(key))
        return [self._frame(key)]

    def evict(self, key: bytes) -> list[Frame]:
        """Block writes (EVICTING), read dirty value + seq, write back."""
        sw = self.sw
        idx = sw.cache_tbl.lookup(key)
        if idx is None or sw.state_reg.read(idx) != VALID:
            return []
        sw.state_reg.write(idx, EVICTING)
        sw.counters.evictions += 1
        if not sw.dirty_reg.read(idx):
            self._delete(key, idx)
            return []
        value = sw.read_value(idx)
        seq = sw.seq_reg.read(idx)
        op = WB_DEL if value is None else WB_PUT
        pkt = Packet(op=op, key=key, value=value or b"", seq=seq, req_id=self._next_req())
        self.pending[key] = _Pending("wb", pkt, sw.server_for(key))
        sw.counters.writebacks += 1
        return [self._frame(key)]

    def tick(self) -> list[Frame]:
        """Retransmit every outstanding LOAD / write-back (timeout fired)."""
        return [self._frame(k) for k in self.pending]

    def on_reply(self, p: Packet) -> list[Frame]:
        sw = self.sw
        pend = self.pending.get(p.key)
        if pend is None or pend.packet.req_id != p.req_id:
            return []                                # late or duplicate reply
        idx = sw.cache_tbl.lookup(p.key)
        del self.pending[p.key]
        if pend.kind == "load":
            if p.status not in (OK, NOT_FOUND) or (p.status == OK and len(p.value) % 4):
                self._delete(p.key, idx)             # uncacheable: give up
                return []
            sw.write_value(idx, p.value if p.status == OK else None)
            sw.seq_reg.write(idx, p.seq)
            b = hash_bucket(p.key)
            # Keep per-bucket stamps above anything the server has seen
            # (matters after a switch restart).
            if sw.bucket_seq_reg.read(b) < p.seq:
                sw.bucket_seq_reg.write(b, p.seq)
            sw.dirty_reg.write(idx, 0)
            sw.state_reg.write(idx, VALID)
            sw.counters.populations += 1
        else:
            if p.status == ERROR:                    # retry later
                self.pending[p.key] = pend
                return []
            self._delete(p.key, idx)                 # OK or STALE: server has >= our seq
        return []

    def _delete(self, key: bytes, idx: int) -> None:
        sw = self.sw
        sw.cache_tbl.delete(key)
        sw.state_reg.write(idx, INVALID)
        sw.dirty_reg.write(idx, 0)
        self.free.append(idx)

    def _frame(self, key: bytes) -> Frame:
        pend = self.pending[key]
        return Frame(pend.packet, ("cpu", 0), ("server", pend.server))

    def poll_reports(self) -> list[tuple[bytes, int]]:
        out, self.sw.digests = self.sw.digests, []
        return out


# ---------------------------------------------------------------------------
# Reference server: one seq-checked store per worker.
# ---------------------------------------------------------------------------
@dataclass
class ServerModel:
    """The storage server as docs/protocol.md specifies it.

    Records are (seq, value or None for a tombstone); tombstones keep their
    seq so a delayed older PUT cannot resurrect a deleted key."""
    seq_check: str = "disk-get"
    store: dict = field(default_factory=dict)
    applied: list = field(default_factory=list)   # (key, seq) in apply order

    def preload(self, items: Iterable[tuple[bytes, bytes]]) -> None:
        for k, v in items:
            self.store[k] = (0, v)

    def _checked(self, op: int, seq: int) -> bool:
        if seq == 0 or self.seq_check == "none":
            return False
        if self.seq_check == "disk-get":
            return True
        return op in (WB_PUT, WB_DEL)            # evicted-only

    def handle(self, p: Packet) -> Packet:
        cur_seq, cur_val = self.store.get(p.key, (0, None))
        if p.op in (GET, LOAD):
            if cur_val is None:
                return reply_to(p, NOT_FOUND, seq=cur_seq)
            return reply_to(p, OK, cur_val, seq=cur_seq)
        if p.op in (PUT, DEL, WB_PUT, WB_DEL):
            if self._checked(p.op, p.seq) and p.seq <= cur_seq:
                return reply_to(p, STALE)
            value = p.value if p.op in (PUT, WB_PUT) else None
            self.store[p.key] = (p.seq, value)
            self.applied.append((p.key, p.seq))
            return reply_to(p, OK)
        return reply_to(p, ERROR)
