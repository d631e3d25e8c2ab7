"""Control plane for p4/farreach.p4, written for bfrt_python.

Run on the switch inside the SDE's shell::

    $SDE/run_bfshell.sh -b p4/controlplane/farreach_cp.py   # with CP_CONFIG=rack.json

or import it and call :func:`main` with a config dict. What it does:

* installs the partition table (range or hash, one range entry per server),
  the host forwarding table and the service address (VIP);
* **population**: for each hot key reported by the data plane's digest
  (count-min sketch over threshold), allocate a cache index, install the
  entry in state POPULATING (reads forwarded, writes held back), LOAD value
  and seq from the owning server, write the value / vallen / seq registers,
  raise the key's bucket sequence counter to at least the loaded seq, then
  mark the entry VALID;
* **eviction** (when the cache is full, or when the data plane reports an
  uncacheable write): mark EVICTING (reads still served, writes held back),
  read dirty / seq / vallen / value registers, and if dirty send WB_PUT (or
  WB_DEL) with that seq to the owning server until it answers OK or STALE
  (the server applies a write-back only if its seq is newer); then delete the
  entry and free the index;
* clears the sketch and the "already reported" bitmap every epoch.

The protocol logic (:class:`FarReachController`) talks to the switch only
through a small data-plane interface; :class:`BfrtDataPlane` implements it
with bfrt_python calls, and the tests implement it on top of the behavioural
model (model/switch.py) to check this script against the same rules. Server
I/O uses an ordinary UDP socket from the switch CPU (the management network).
Constants are read from p4/include/constants.p4 so they cannot drift.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict, deque

HERE = os.path.dirname(os.path.abspath(__file__))
CONSTANTS_P4 = os.path.join(HERE, "..", "include", "constants.p4")


def load_constants(path: str = CONSTANTS_P4) -> dict:
    with open(path) as f:
        text = f.read()
    return {k: int(v, 0) for k, v in
            re.findall(r"^\s*#define\s+(\w+)\s+(0x[0-9A-Fa-f]+|\d+)\b", text, re.M)}


C = load_constants()
HEADER = struct.Struct("<BBHIQ16s")       # op status vlen seq req_id key
assert HEADER.size == 32


def encode(op, key, value=b"", seq=0, req_id=0, status=0) -> bytes:
    return HEADER.pack(op, status, len(value), seq, req_id, key) + value


def decode(data: bytes):
    if len(data) < 32:
        return None
    op, status, vlen, seq, req_id, key = HEADER.unpack_from(data)
    if len(data) != 32 + vlen:
        return None
    return dict(op=op, status=status, seq=seq, req_id=req_id, key=key, value=data[32:])


def crc32(key: bytes) -> int:
    import zlib
    return zlib.crc32(key)


def partition_entries(n_servers: int, mode: str):
    """(lo, hi, server) ranges over the top 32 key bits or the CRC bucket.

    Range mode splits [0, 2^31), the space YCSB keys fill (fnvhash64 is
    non-negative); the last server also takes keys with the top bit set.
    """
    space = 1 << 31 if mode == "range" else C["HASH_BUCKETS"]
    out = []
    for i in range(n_servers):
        lo = -(-i * space // n_servers)
        hi = -(-(i + 1) * space // n_servers) - 1
        if mode == "range" and i == n_servers - 1:
            hi = (1 << 32) - 1
        if lo <= hi:
            out.append((lo, hi, i))
    return out


# ---------------------------------------------------------------------------
# Data-plane access through bfrt_python.
# ---------------------------------------------------------------------------
class BfrtDataPlane:
    """Thin adapter over ``bfrt.<program>.pipe``; names follow farreach.p4."""

    def __init__(self, bfrt_root, program: str = "farreach"):
        self.p4 = getattr(bfrt_root, program).pipe
        self.ig = self.p4.Ingress
        self.eg = self.p4.Egress

    def _reg(self, name):
        return getattr(self.eg if name.startswith("val_reg_") else self.ig, name)

    def reg_read(self, name: str, index: int) -> int:
        reg = self._reg(name)
        ent = reg.get(REGISTER_INDEX=index, from_hw=True, print_ts=False, return_ents=True)
        ctl = "Egress" if name.startswith("val_reg_") else "Ingress"
        values = ent.data[("%s.%s.f1" % (ctl, name)).encode()]
        return int(values[0])          # single-pipe deployment (see farreach.p4)

    def reg_write(self, name: str, index: int, value: int) -> None:
        self._reg(name).mod(REGISTER_INDEX=index, f1=value)

    def reg_clear(self, name: str) -> None:
        self._reg(name).clear()

    def cache_add(self, key: bytes, idx: int) -> None:
        hi, lo = struct.unpack(">QQ", key)
        self.ig.cache_lookup_tbl.add_with_cache_hit(keyhi=hi, keylo=lo, idx=idx)

    def cache_delete(self, key: bytes) -> None:
        hi, lo = struct.unpack(">QQ", key)
        self.ig.cache_lookup_tbl.delete(keyhi=hi, keylo=lo)

    def install(self, cfg: dict) -> None:
        ig = self.ig
        if cfg.get("partition", "range") == "hash":
            ig.partition_mode_tbl.set_default_with_use_hash_partition()
        else:
            ig.partition_mode_tbl.set_default_with_use_range_partition()
        ig.partition_tbl.clear()
        servers = cfg["servers"]
        for lo, hi, i in partition_entries(len(servers), cfg.get("partition", "range")):
            s = servers[i]
            ig.partition_tbl.add_with_to_server(
                part_key_start=lo, part_key_end=hi, port=s["dev_port"],
                mac=int(s["mac"].replace(":", ""), 16), ip=_ip(s["ip"]),
                udp_port=C["KV_SERVER_PORT_BASE"] + i)
        ig.ipv4_host_tbl.clear()
        for h in cfg.get("hosts", []) + servers:
            ig.ipv4_host_tbl.add_with_to_host(dst_addr=_ip(h["ip"]), port=h["dev_port"],
                                              mac=int(h["mac"].replace(":", ""), 16))
        ig.vip_tbl.set_default_with_set_vip(vip=_ip(cfg["vip"]),
                                            vmac=int(cfg["vmac"].replace(":", ""), 16))

    def on_digest(self, callback) -> None:
        def cb(dev_id, pipe_id, direction, parser_id, session, msg):
            for d in msg:
                key = struct.pack(">QQ", d["keyhi"], d["keylo"])
                callback(key, d["reason"])
            return 0
        self.p4.IngressDeparser.report_digest.callback_register(cb)


def _ip(s: str) -> int:
    return struct.unpack(">I", socket.inet_aton(s))[0]


# ---------------------------------------------------------------------------
# Server I/O.
# ---------------------------------------------------------------------------
class UdpServers:
    """Request/reply to server worker i at (ip_i, KV_SERVER_PORT_BASE + i)."""

    def __init__(self, addrs, timeout_s=0.2, retries=50, bind="0.0.0.0"):
        self.addrs = addrs
        self.timeout_s, self.retries = timeout_s, retries
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind, 0))
        self.lock = threading.Lock()

    def close(self) -> None:
        self.sock.close()

    def call(self, server: int, data: bytes, req_id: int):
        """Send until a reply with our req_id arrives; None after retries."""
        with self.lock:
            for _ in range(self.retries):
                self.sock.sendto(data, self.addrs[server])
                deadline = time.monotonic() + self.timeout_s
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.sock.settimeout(left)
                    try:
                        raw, _ = self.sock.recvfrom(2048)
                    except socket.timeout:
                        break
                    rep = decode(raw)
                    if rep is not None and rep["req_id"] == req_id:
                        return rep
            return None


# ---------------------------------------------------------------------------
# The protocol.
# ---------------------------------------------------------------------------
class FarReachController:
    def __init__(self, dp, servers: UdpServers, n_servers: int, partition="range",
                 capacity: int | None = None):
        self.dp, self.servers = dp, servers
        self.n_servers, self.partition = n_servers, partition
        self.capacity = min(capacity or C["CACHE_SIZE"], C["CACHE_SIZE"])
        self.free = deque(range(self.capacity))
        self.cached: "OrderedDict[bytes, int]" = OrderedDict()   # insertion order = eviction order
        self.reports: deque = deque()
        self._req = (1 << 62) + (os.getpid() << 20)
        self.stats = dict(populations=0, evictions=0, writebacks=0, stale_writebacks=0)

    def _next_req(self) -> int:
        self._req += 1
        return self._req

    def server_of(self, key: bytes) -> int:
        if self.partition == "range":
            return (int.from_bytes(key[:4], "big") * self.n_servers) >> 32
        return (crc32(key) % C["HASH_BUCKETS"]) * self.n_servers // C["HASH_BUCKETS"]

    # -- population ------------------------------------------------------
    def populate(self, key: bytes) -> bool:
        if key in self.cached:
            return True
        if not self.free and self.cached:
            self.evict(next(iter(self.cached)))     # FIFO replacement
        if not self.free:
            return False                            # victim's write-back not done yet
        idx = self.free.popleft()
        dp = self.dp
        dp.reg_write("state_reg", idx, C["ENTRY_POPULATING"])
        dp.reg_write("dirty_reg", idx, 0)
        dp.cache_add(key, idx)
        rid = self._next_req()
        rep = self.servers.call(self.server_of(key), encode(C["OP_LOAD"], key, req_id=rid), rid)
        ok = rep is not None and rep["status"] in (C["ST_OK"], C["ST_NOT_FOUND"])
        value = rep["value"] if ok and rep["status"] == C["ST_OK"] else None
        if not ok or (value is not None and (len(value) % 4 or len(value) > C["VALUE_BYTES"])):
            dp.cache_delete(key)                 # unreachable server or uncacheable value
            dp.reg_write("state_reg", idx, C["ENTRY_INVALID"])
            self.free.append(idx)
            return False
        if value is None:
            dp.reg_write("vallen_reg", idx, C["VALLEN_ABSENT"])
        else:
            for i in range(len(value) // 4):
                dp.reg_write("val_reg_%d" % i, idx, int.from_bytes(value[4 * i:4 * i + 4], "big"))
            dp.reg_write("vallen_reg", idx, len(value))
        dp.reg_write("seq_reg", idx, rep["seq"])
        bucket = crc32(key) % C["HASH_BUCKETS"]
        if dp.reg_read("bucket_seq_reg", bucket) < rep["seq"]:
            dp.reg_write("bucket_seq_reg", bucket, rep["seq"])
        dp.reg_write("state_reg", idx, C["ENTRY_VALID"])
        self.cached[key] = idx
        self.stats["populations"] += 1
        return True

    # -- eviction ----------------------------------------------------------
    def evict(self, key: bytes) -> bool:
        idx = self.cached.get(key)
        if idx is None:
            return True
        dp = self.dp
        dp.reg_write("state_reg", idx, C["ENTRY_EVICTING"])
        self.stats["evictions"] += 1
        if dp.reg_read("dirty_reg", idx):
            seq = dp.reg_read("seq_reg", idx)
            vallen = dp.reg_read("vallen_reg", idx)
            rid = self._next_req()
            if vallen == C["VALLEN_ABSENT"]:
                pkt = encode(C["OP_WB_DEL"], key, seq=seq, req_id=rid)
            else:
                value = b"".join(dp.reg_read("val_reg_%d" % i, idx).to_bytes(4, "big")
                                 for i in range(vallen // 4))
                pkt = encode(C["OP_WB_PUT"], key, value, seq=seq, req_id=rid)
            rep = self.servers.call(self.server_of(key), pkt, rid)
            if rep is None or rep["status"] not in (C["ST_OK"], C["ST_STALE"]):
                # Keep the entry (writes stay blocked) rather than lose the value.
                return False
            self.stats["writebacks"] += 1
            self.stats["stale_writebacks"] += rep["status"] == C["ST_STALE"]
        dp.cache_delete(key)
        dp.reg_write("state_reg", idx, C["ENTRY_INVALID"])
        dp.reg_write("dirty_reg", idx, 0)
        del self.cached[key]
        self.free.append(idx)
        return True

    def evict_all(self) -> None:
        for key in list(self.cached):
            self.evict(key)

    # -- hot-key reports -----------------------------------------------------
    def on_report(self, key: bytes, reason: int) -> None:
        self.reports.append((key, reason))

    def process_reports(self, limit: int = 1000) -> int:
        n = 0
        while self.reports and n < limit:
            key, reason = self.reports.popleft()
            if reason == C["REPORT_UNCACHEABLE"]:
                self.evict(key)
            elif reason == C["REPORT_HOT"]:
                self.populate(key)
            n += 1
        return n

    def new_epoch(self) -> None:
        for r in range(C["CMS_ROWS"]):
            self.dp.reg_clear("cms_reg_%d" % r)
        self.dp.reg_clear("report_bloom_reg")


def main(bfrt_root, cfg: dict, run_seconds: float | None = None) -> FarReachController:
    dp = BfrtDataPlane(bfrt_root, cfg.get("program", "farreach"))
    dp.install(cfg)
    addrs = [(s["ip"], C["KV_SERVER_PORT_BASE"] + i) for i, s in enumerate(cfg["servers"])]
    ctl = FarReachController(dp, UdpServers(addrs), len(addrs), cfg.get("partition", "range"),
                             cfg.get("cache_size"))
    dp.on_digest(ctl.on_report)
    for key_hex in cfg.get("preload_hot_keys", []):
        ctl.populate(bytes.fromhex(key_hex))
    epoch_s = float(cfg.get("epoch_s", 1.0))
    start = last_epoch = time.monotonic()
    while run_seconds is None or time.monotonic() - start < run_seconds:
        if not ctl.process_reports():
            time.sleep(0.001)
        if time.monotonic() - last_epoch >= epoch_s:
            ctl.new_epoch()
            last_epoch = time.monotonic()
    ctl.evict_all()
    return ctl


if __name__ == "__main__" and "bfrt" in globals():     # inside bfrt_python
    with open(os.environ.get("CP_CONFIG", "rack.json")) as f:
        _cfg = json.load(f)
    _ctl = main(bfrt, _cfg, _cfg.get("run_seconds"))    # noqa: F821 (bfrt_python global)
    print(json.dumps(_ctl.stats))
elif __name__ == "__main__":
    sys.exit("farreach_cp.py runs inside bfrt_python (run_bfshell.sh -b); "
             "see p4/README.md")
