"""Benchmark of the native KV server on loopback (one command, < 1 minute).

    python benchmarks/bench_native.py

For a few server configurations it measures, with one worker:
  * per-request process time (server-side, receive -> reply sent) for PUTs
    and GETs with one closed-loop client (no queueing), and the clients'
    response time;
  * throughput with 4 client threads, 50 % reads;
  * an in-process RocksDB Put/Get loop through the same store code (same
    options, no sockets) in the same run.
It prints the ratio process time / raw RocksDB op time: the server's
per-request overhead (UDP receive/send, parsing, timing) on this machine.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import native  # noqa: E402
from native import _core  # noqa: E402

CONFIGS = [
    ("wal on, 64 MiB memtable", dict(wal=True, memtable_mb=64)),
    ("wal off, 64 MiB memtable", dict(wal=False, memtable_mb=64)),
    ("wal on, 4 MiB memtable", dict(wal=True, memtable_mb=4)),
    ("wal on, seq_check none", dict(wal=True, memtable_mb=64, seq_check="none")),
]
RECORDS = 100_000
SECONDS = 1.0


def one_config(name: str, overrides: dict) -> dict:
    out = {"name": name}
    with tempfile.TemporaryDirectory() as d:
        opts = native.ServerOptions(datadir=d + "/srv", workers=1, **overrides)
        with native.Server(opts) as srv:
            for kind, ratio in (("put", 0.0), ("get", 1.0)):
                srv.stats(reset=True)
                res = native.run_load(targets=srv.addresses(), threads=1, duration_s=SECONDS, max_requests=200_000,
                                      read_ratio=ratio, records=RECORDS, timeout_ms=1000, seed=7)
                w = srv.stats()["workers"][0]
                out[f"{kind}_process_us"] = w["process"]["mean_us"]
                out[f"{kind}_process_p99_us"] = w["process"]["p99_us"]
                out[f"{kind}_response_us"] = res["response"]["mean_us"]
            res = native.run_load(targets=srv.addresses(), threads=4, duration_s=SECONDS, max_requests=500_000,
                                  read_ratio=0.5, records=RECORDS, timeout_ms=1000, seed=8)
            out["mix_kops"] = res["throughput_ops_s"] / 1e3
            out["mix_response_us"] = res["response"]["mean_us"]
        raw = _core.raw_rocksdb_bench(opts.to_dict(), d + "/raw", 50_000, 128, "zipfian", RECORDS, 7)
        out["raw_put_us"] = raw["put_mean_us"]
        out["raw_get_us"] = raw["get_mean_us"]
    return out


def main() -> int:
    t0 = time.time()
    rows = [one_config(n, o) for n, o in CONFIGS]
    print(f"native KV server on loopback, 1 worker, {RECORDS} records, zipfian 0.99, 128 B values")
    hdr = (f"{'config':26} {'PUT proc us':>11} {'raw put us':>10} {'x':>6} {'GET proc us':>11} {'raw get us':>10} "
           f"{'x':>6} {'PUT resp us':>11} {'GET resp us':>11} {'mix kops/s':>10}")
    print(hdr)
    for r in rows:
        print(f"{r['name']:26} {r['put_process_us']:11.2f} {r['raw_put_us']:10.2f} "
              f"{r['put_process_us'] / r['raw_put_us']:5.2f}x {r['get_process_us']:11.2f} {r['raw_get_us']:10.2f} "
              f"{r['get_process_us'] / r['raw_get_us']:5.2f}x {r['put_response_us']:11.2f} "
              f"{r['get_response_us']:11.2f} {r['mix_kops']:10.1f}")
    print("x = server process time / in-process RocksDB op time (server overhead per request); "
          "resp = client response time with 1 client thread; mix = 4 threads, 50 % reads")
    print(f"total benchmark time {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
