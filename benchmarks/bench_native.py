"""Benchmark of the native KV server on loopback (one command, about a minute).

    python benchmarks/bench_native.py [--rounds 3]

For a few server configurations, each measured ``--rounds`` times (median and
range printed), with one worker:
  * per-request process time (server-side, receive -> reply sent) for PUTs
    and GETs with one closed-loop client (no queueing), and the worker's CPU
    time per request (its thread CPU time over the requests it received);
  * throughput with 4 client threads, 50 % reads;
  * the baseline, measured in the same run: an in-process RocksDB Put/Get
    loop through the same store code (same options, no sockets). Printed: the
    ratio of the worker's CPU time per request to the raw RocksDB op time,
    the server's per-request overhead on this machine.

The seq-check rows really check. The load generator sends seq = 0, which
the server never checks (docs/protocol.md), so those rows send their PUTs
from a Python client with increasing sequence numbers, against a server with
``seq_check = disk-get`` (a GET of the stored seq before every write) and
with ``none``; one PUT with an older seq at the end must come back stale,
proving the check ran. Only server-side times are compared there (the Python
client is slow, not the server).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import native  # noqa: E402
from native import _core  # noqa: E402
from native import protocol as proto  # noqa: E402

CONFIGS = [
    ("wal on, 64 MiB memtable", dict(wal=True, memtable_mb=64)),
    ("wal off, 64 MiB memtable", dict(wal=False, memtable_mb=64)),
    ("wal on, 4 MiB memtable", dict(wal=True, memtable_mb=4)),
]
RECORDS = 100_000
SECONDS = 1.0
SEQ_PUTS = 2000


def _cpu_us_per_request(w: dict) -> float:
    return w["cpu_s"] * 1e6 / max(w["rx_packets"], 1)


def one_config(overrides: dict) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as d:
        opts = native.ServerOptions(datadir=d + "/srv", workers=1, **overrides)
        with native.Server(opts) as srv:
            for kind, ratio in (("put", 0.0), ("get", 1.0)):
                srv.stats(reset=True)
                res = native.run_load(targets=srv.addresses(), threads=1, duration_s=SECONDS,
                                      max_requests=200_000, read_ratio=ratio, records=RECORDS,
                                      timeout_ms=1000, seed=7)
                w = srv.stats()["workers"][0]
                out[f"{kind}_process_us"] = w["process"]["mean_us"]
                out[f"{kind}_cpu_us"] = _cpu_us_per_request(w)
                out[f"{kind}_response_us"] = res["response"]["mean_us"]
            res = native.run_load(targets=srv.addresses(), threads=4, duration_s=SECONDS,
                                  max_requests=500_000, read_ratio=0.5, records=RECORDS,
                                  timeout_ms=1000, seed=8)
            out["mix_kops"] = res["throughput_ops_s"] / 1e3
        raw = _core.raw_rocksdb_bench(opts.to_dict(), d + "/raw", 50_000, 128, "zipfian", RECORDS, 7)
        out["raw_put_us"] = raw["put_mean_us"]
        out["raw_get_us"] = raw["get_mean_us"]
    return out


def seq_round(mode: str) -> dict:
    """PUTs with increasing sequence numbers from a Python client; then one
    with an older seq, which a checking server must refuse as stale."""
    with tempfile.TemporaryDirectory() as d:
        opts = native.ServerOptions(datadir=d + "/srv", workers=1, seq_check=mode)
        with native.Server(opts) as srv:
            with native.Client(tuple(srv.addresses()[0])) as c:
                keys = [b"%016d" % i for i in range(200)]
                for i, k in enumerate(keys, start=1):          # every key stored once
                    c.request(proto.PUT, k, b"v" * 128, seq=i)
                srv.stats(reset=True)
                for i in range(SEQ_PUTS):
                    c.request(proto.PUT, keys[i % len(keys)], b"v" * 128, seq=1000 + i)
                w = srv.stats()["workers"][0]
                out = {"process_us": w["process"]["mean_us"], "cpu_us": _cpu_us_per_request(w)}
                c.request(proto.PUT, keys[0], b"old", seq=1)
                out["stale_refused"] = srv.stats()["workers"][0]["stale"] - w["stale"]
    return out


def spread(vals) -> str:
    return f"{statistics.median(vals):7.2f} ({min(vals):.2f}-{max(vals):.2f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="measurements of each configuration")
    args = ap.parse_args(argv)
    t0 = time.time()
    print(f"native KV server on loopback, 1 worker, {RECORDS} records, zipfian 0.99, 128 B values; "
          f"median (range) of {args.rounds} rounds")
    print(f"{'config':26} {'PUT proc us':>20} {'PUT CPU us':>20} {'raw put us':>20} {'x':>6}  "
          f"{'GET proc us':>20} {'GET CPU us':>20} {'raw get us':>20} {'x':>6}  {'mix kops/s':>10}")
    for name, overrides in CONFIGS:
        rs = [one_config(overrides) for _ in range(args.rounds)]
        col = {k: [r[k] for r in rs] for k in rs[0]}
        med = {k: statistics.median(v) for k, v in col.items()}
        print(f"{name:26} {spread(col['put_process_us']):>20} {spread(col['put_cpu_us']):>20} "
              f"{spread(col['raw_put_us']):>20} {med['put_cpu_us'] / med['raw_put_us']:5.2f}x  "
              f"{spread(col['get_process_us']):>20} {spread(col['get_cpu_us']):>20} "
              f"{spread(col['raw_get_us']):>20} {med['get_cpu_us'] / med['raw_get_us']:5.2f}x  "
              f"{statistics.median(col['mix_kops']):10.1f}")
    print("x = worker CPU time per request / in-process RocksDB op time (the server's overhead "
          "per request); mix = 4 threads, 50 % reads")
    seq = {m: [seq_round(m) for _ in range(args.rounds)] for m in ("none", "disk-get")}
    for m, rs in seq.items():
        stale = [r["stale_refused"] for r in rs]
        print(f"seq check {m:9} ({SEQ_PUTS} PUTs with seq numbers): process "
              f"{spread([r['process_us'] for r in rs])} us, worker CPU "
              f"{spread([r['cpu_us'] for r in rs])} us a request; an older seq refused as stale: "
              f"{'yes' if all(stale) else 'no'}")
    p_none = statistics.median(r["process_us"] for r in seq["none"])
    p_disk = statistics.median(r["process_us"] for r in seq["disk-get"])
    print(f"seq check disk-get against none: {p_disk / p_none:.2f}x the process time "
          f"(+{p_disk - p_none:.2f} us a PUT)")
    print(f"total benchmark time {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
