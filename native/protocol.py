"""Pure-Python codec for the wire protocol of docs/protocol.md.

The C++ server and load generator are the fast path; this module is the
readable reference used by tests, by tools that poke a server by hand, and by
anything else in Python that speaks the protocol (e.g. a software switch).
One datagram = 32-byte little-endian header + value:

    op u8 | status u8 | vlen u16 | seq u32 | req_id u64 | key 16 B | value
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

HEADER = struct.Struct("<BBHIQ16s")
HEADER_SIZE = HEADER.size  # 32
KEY_SIZE = 16

GET, PUT, DEL, WB_PUT, WB_DEL, LOAD = 1, 2, 3, 4, 5, 6
OP_NAMES = {GET: "GET", PUT: "PUT", DEL: "DEL", WB_PUT: "WB_PUT", WB_DEL: "WB_DEL", LOAD: "LOAD"}
REPLY = 0x80
OK, NOT_FOUND, STALE, ERROR = 0, 1, 2, 3


@dataclass(frozen=True)
class Packet:
    op: int
    status: int
    seq: int
    req_id: int
    key: bytes
    value: bytes = b""


def pack(op: int, key: bytes, value: bytes = b"", *, seq: int = 0, req_id: int = 0, status: int = 0) -> bytes:
    """Encode one datagram; `key` must be exactly 16 bytes."""
    if len(key) != KEY_SIZE:
        raise ValueError(f"key: must be {KEY_SIZE} bytes, got {len(key)}")
    if len(value) > 0xFFFF:
        raise ValueError(f"value: at most 65535 bytes, got {len(value)}")
    return HEADER.pack(op, status, len(value), seq, req_id, key) + value


def unpack(data: bytes) -> Packet:
    """Decode one datagram; raises ValueError when malformed (same rules as the server)."""
    if len(data) < HEADER_SIZE:
        raise ValueError(f"datagram: {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    op, status, vlen, seq, req_id, key = HEADER.unpack_from(data)
    if len(data) != HEADER_SIZE + vlen:
        raise ValueError(f"datagram: length {len(data)} B does not match header + vlen = {HEADER_SIZE + vlen} B")
    return Packet(op, status, seq, req_id, key, bytes(data[HEADER_SIZE:]))


def range_partition(key: bytes, n: int) -> int:
    """server = min(n-1, (first 4 key bytes, big-endian) * n >> 31): YCSB keys fill [0, 2^31)."""
    return min(n - 1, (int.from_bytes(key[:4], "big") * n) >> 31)


class Client:
    """Blocking one-request-at-a-time client (tests and manual checks, not load)."""

    def __init__(self, address: tuple[str, int], timeout_s: float = 2.0):
        self.address = address
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(timeout_s)
        self._next_id = 1

    def request(self, op: int, key: bytes, value: bytes = b"", seq: int = 0) -> Packet:
        req_id = self._next_id
        self._next_id += 1
        self.sock.sendto(pack(op, key, value, seq=seq, req_id=req_id), self.address)
        while True:  # skip late replies of earlier requests
            reply = unpack(self.sock.recv(65535))
            if reply.req_id == req_id:
                return reply

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
