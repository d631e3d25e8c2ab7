"""End to end: the software switch (kvswitch) in front of the native server.

* A deterministic skewed sequence of PUT/GET from a Python UDP client runs
  once through the switch (small cache: hot keys are preloaded, others are
  populated from count-min reports, evicted FIFO with write-back) and once
  directly against a second server. Every reply must be the same on both
  paths, all keys must read back the same, and after the switch flushes its
  cache (FLUSH, every dirty value written back with WB_PUT) the two servers'
  stored values must be equal.
* The native load generator sends a YCSB zipfian load to the switch port;
  the switch's hit ratio must match the request share of the preloaded hot
  keys, computed independently from the same key stream.

Uses native.Server / native.run_load (native/kv) when built; otherwise a
Python stand-in server (tests/switch/udp_server.py) replaces the server and
the load test is skipped. Everything is on 127.0.0.1 and bounded in time.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from model.switch import FLUSH, GET, OK, PUT, STATS, Packet, server_of

from .udp_server import StandInServer

pytestmark = pytest.mark.native

ROOT = Path(__file__).resolve().parents[2]

try:
    import native
    native.Server  # noqa: B018 (raises ImportError when the module is not built)
    HAVE_NATIVE = True
except ImportError:
    HAVE_NATIVE = False


def record_key(i: int) -> bytes:
    if HAVE_NATIVE:
        return native.record_key(i)
    return (i * 0x9E3779B97F4A7C15 % (1 << 64)).to_bytes(8, "big") + i.to_bytes(8, "big")


@pytest.fixture(scope="module")
def kvswitch(tmp_path_factory) -> str:
    """The kvswitch binary: installed in the package, $KVSWITCH, or built here."""
    cands = [os.environ.get("KVSWITCH"), ROOT / "native" / "kvswitch"]
    if HAVE_NATIVE:                      # installed next to native._core
        cands.append(Path(native.__file__).parent / "kvswitch")
    for cand in cands:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand)
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("kvswitch not built and no C++ compiler")
    out = tmp_path_factory.mktemp("kvswitch") / "kvswitch"
    subprocess.run([cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
                    str(ROOT / "native" / "switch" / "kvswitch.cpp"), "-o", str(out)],
                   check=True, timeout=300)
    return str(out)


class Servers:
    """Two server instances (native if available), same interface."""

    def __init__(self, tmp: Path, workers: int):
        self.tmp, self.workers = tmp, workers
        self.handles = []

    def start(self, name: str) -> list[tuple[str, int]]:
        if HAVE_NATIVE:
            srv = native.Server(datadir=str(self.tmp / name), workers=self.workers,
                                seq_check="disk-get").start()
            self.handles.append(srv)
            return srv.addresses()
        srv = StandInServer(self.workers).__enter__()
        self.handles.append(srv)
        return [("127.0.0.1", p) for p in srv.ports]

    def stop(self):
        for h in self.handles:
            h.stop()


class UdpClient:
    """Closed-loop client: one request outstanding, resent on timeout."""

    def __init__(self, addr, timeout_s=0.3, tries=20):
        self.addr, self.tries = addr, tries
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(timeout_s)
        self.rid = 1

    def request(self, op: int, key: bytes, value: bytes = b"") -> Packet:
        self.rid += 1
        data = Packet(op=op, key=key, value=value, req_id=self.rid).encode()
        for _ in range(self.tries):
            self.sock.sendto(data, self.addr)
            deadline = time.monotonic() + self.sock.gettimeout()
            while time.monotonic() < deadline:
                try:
                    raw = self.sock.recv(65536)
                except socket.timeout:
                    break
                p = Packet.decode(raw, max_value=65000)
                if p is not None and p.req_id == self.rid:
                    if p.op in (PUT | 0x80,) and p.status != OK:
                        break                      # STALE: resend
                    return p
        raise AssertionError(f"no reply for op {op} after {self.tries} tries")

    def close(self):
        self.sock.close()


class SwitchProc:
    def __init__(self, binary, ports, *extra):
        cmd = [binary, "--listen-port", "0", "--server-ports", ",".join(map(str, ports)),
               "--drain-ms", "3000", *map(str, extra)]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            raise AssertionError(f"kvswitch did not start: {self.p.stderr.read()}")
        self.ready = json.loads(line)
        self.addr = ("127.0.0.1", self.ready["port"])

    def stats(self) -> dict:
        with UdpClient(self.addr) as c:
            return json.loads(c.request(STATS, bytes(16)).value)

    def stop(self) -> dict:
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=20)
        assert self.p.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=10)


UdpClient.__enter__ = lambda self: self
UdpClient.__exit__ = lambda self, *exc: self.close()


@pytest.mark.parametrize("partition", ["hash", "range"])
def test_switch_and_direct_paths_store_the_same(kvswitch, tmp_path, partition):
    workers, n_keys, n_ops = 2, 120, 1500
    rng = random.Random(42)
    keys = [record_key(i) for i in range(n_keys)]
    # skewed (zipf-like) key choice so the cache sees hot and cold keys
    weights = [1.0 / (r + 1) for r in range(n_keys)]
    ops = []
    for i in range(n_ops):
        k = rng.choices(range(n_keys), weights)[0]
        if rng.random() < 0.5:
            ops.append((PUT, k, (b"%06d-%04d-" % (i, k) * 11)[:128]))
        else:
            ops.append((GET, k, b""))
    for _, _, v in ops:
        assert len(v) in (0, 128), len(v)
    hot = [k for k, _ in Counter(k for _, k, _ in ops).most_common(8)]
    preload = tmp_path / "hot.txt"
    preload.write_text("".join(keys[k].hex() + "\n" for k in hot))

    servers = Servers(tmp_path, workers)
    sw = None
    try:
        direct_addrs = servers.start("direct")
        via_addrs = servers.start("via")
        sw = SwitchProc(kvswitch, [p for _, p in via_addrs], "--partition", partition,
                        "--cache-size", "10", "--preload", preload, "--hot-threshold", "4",
                        "--epoch-ms", "500")
        assert sw.ready["cached"] == len(hot)
        direct = [UdpClient(a) for a in direct_addrs]
        via = UdpClient(sw.addr)
        mismatches = []
        for op, k, v in ops:
            key = keys[k]
            d = direct[server_of(key, workers, partition)].request(op, key, v)
            s = via.request(op, key, v)
            if (d.status, d.value) != (s.status, s.value):
                mismatches.append((op, k, d, s))
        assert not mismatches, mismatches[:3]

        def read_all(client_for):
            return [(p.status, p.value) for p in
                    (client_for(k).request(GET, k) for k in keys)]

        through_switch = read_all(lambda k: via)
        direct_values = read_all(lambda k: direct[server_of(k, workers, partition)])
        assert through_switch == direct_values
        st = sw.stats()
        assert st["hits"] > 0 and st["misses"] > 0, st
        assert st["populations"] > len(hot)          # CMS reports populated more keys
        assert st["evictions"] > 0 and st["writebacks"] > 0, st

        # flush: every dirty cached value goes back to its server
        assert via.request(FLUSH, bytes(16)).op == FLUSH | 0x80
        assert sw.stats()["cached"] == 0
        via_direct = [UdpClient(a) for a in via_addrs]
        behind_switch = read_all(lambda k: via_direct[server_of(k, workers, partition)])
        assert behind_switch == direct_values
        final = sw.stop()
        sw = None
        print(f"\nswitch vs direct ({partition}): {n_ops} ops, hit ratio {final['hit_ratio']:.3f}, "
              f"populations {final['populations']}, evictions {final['evictions']}, "
              f"write-backs {final['writebacks']} (stale {final['stale_writebacks']}), "
              f"server: {'native' if HAVE_NATIVE else 'Python stand-in'}")
        for c in direct + via_direct + [via]:
            c.close()
    finally:
        if sw is not None:
            sw.kill()
        servers.stop()


@pytest.mark.skipif(not HAVE_NATIVE, reason="needs native.Server and native.run_load")
def test_zipfian_load_through_switch_hit_ratio(kvswitch, tmp_path):
    records, cache = 10_000, 200
    # the hottest records of the load generator's own key stream
    sample = native.key_stream("zipfian", records, 7, 200_000)
    counts = Counter(sample.tolist())
    hot = [r for r, _ in counts.most_common(cache)]
    expected = sum(counts[r] for r in hot) / len(sample)
    preload = tmp_path / "hot.txt"
    preload.write_text("".join(native.record_key(r).hex() + "\n" for r in hot))
    srv = native.Server(datadir=str(tmp_path / "kv"), workers=2).start()
    sw = None
    try:
        sw = SwitchProc(kvswitch, [p for _, p in srv.addresses()], "--partition", "hash",
                        "--cache-size", str(cache), "--preload", preload, "--no-cms")
        assert sw.ready["cached"] == cache
        res = native.run_load(targets=[sw.addr], threads=4, duration_s=3.0, max_requests=40_000,
                              read_ratio=0.5, distribution="zipfian", records=records,
                              value_size=128, timeout_ms=200, seed=11)
        st = sw.stop()
        sw = None
        completed = res["completed"] if "completed" in res else sum(
            t["completed"] for t in res["threads"])
        assert completed > 1000
        hit = st["hit_ratio"]
        print(f"\nzipfian via kvswitch: {completed} requests, "
              f"{res.get('throughput_ops_s', 0):.0f} ops/s, hit ratio {hit:.3f} "
              f"(hot-key share of the stream {expected:.3f}), forwarded {st['forwarded']}")
        assert abs(hit - expected) < 0.05
        assert st["hits"] + st["misses"] >= completed
        assert st["writebacks"] > 0                  # dirty hot keys written back on exit
    finally:
        if sw is not None:
            sw.kill()
        srv.stop()


def test_kvswitch_rejects_bad_options(kvswitch):
    for args, msg in ([[], "no servers given"],
                      [["--server-ports", "5000", "--partition", "ring"], "--partition"],
                      [["--server-ports", "5000", "--cache-size", "99999"], "--cache-size"]):
        r = subprocess.run([kvswitch, *args], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
