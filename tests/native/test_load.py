"""Short closed-loop load runs: stats are complete and obey the operational laws.

Little's law (clients): N = X * R, with N client threads each keeping one
request outstanding, X the completed requests per second and R the mean
response time. The clients' own bookkeeping between a reply and the next send
is tiny (key draw + packet build), so we accept 15 %.

Utilization law (per worker): U_i = X_i * S_i, with U_i measured
independently of the per-request timer as 1 - (time blocked in poll) /
(window), X_i the replies per second and S_i the mean process time. U_i also
includes the receive syscall and loop overhead that S_i excludes (a few
percent of the cycle on loopback), so we accept 0.12 absolute.
"""

from __future__ import annotations

import time

import pytest

import native

pytestmark = pytest.mark.native

LITTLE_TOL = 0.15
UTIL_TOL = 0.12


def drained_stats(server, sent_bytes: int, timeout_s: float = 5.0) -> dict:
    """The server's stats once it has read every byte the clients sent.

    Requests sent just before the run's deadline (abandoned by the clients)
    can still sit in the sockets when ``run_load`` returns, more so on a busy
    machine; a snapshot taken then counts fewer bytes in than out."""
    deadline = time.monotonic() + timeout_s
    while True:
        st = server.stats()
        if st["total"]["bytes_in"] >= sent_bytes or time.monotonic() > deadline:
            return st
        time.sleep(0.01)


def test_little_and_utilization_laws(server):
    threads = 4
    server.stats(reset=True)  # measurement window = the load run
    # The timeout is longer than the run: on loopback nothing is lost, and on a
    # machine busy with other work a thread descheduled for a while must not
    # count as a timeout (the laws hold either way; the counts below need none).
    res = native.run_load(targets=server.addresses(), partition="hash", threads=threads,
                          duration_s=1.5, max_requests=300_000, read_ratio=0.5,
                          distribution="zipfian", records=100_000, timeout_ms=5000)
    st = drained_stats(server, res["bytes_out"])
    assert res["completed"] > 1000, res
    assert res["timeouts"] == 0 and res["false_positives"] == 0 and res["malformed"] == 0
    assert res["completed"] == res["reads"] + res["writes"]
    assert res["requests"] == res["completed"] + res["abandoned"]
    assert sum(res["per_second"]) == res["completed"]

    x = res["throughput_ops_s"]
    r_s = res["response"]["mean_us"] * 1e-6
    n_little = x * r_s
    print(f"Little: N = {threads} threads, X * R = {x:.0f} ops/s * {r_s * 1e6:.1f} us = {n_little:.2f}")
    assert abs(n_little - threads) / threads < LITTLE_TOL

    served = 0
    for i, w in enumerate(st["workers"]):
        served += w["tx_packets"]
        u_law = w["throughput_ops_s"] * w["process"]["mean_us"] * 1e-6
        print(f"worker {i}: X = {w['throughput_ops_s']:.0f} ops/s, S = {w['process']['mean_us']:.1f} us, "
              f"X*S = {u_law:.3f}, measured busy = {w['busy_fraction']:.3f}")
        assert w["process"]["count"] == w["tx_packets"]
        assert abs(w["busy_fraction"] - u_law) < UTIL_TOL
        assert 0 < w["busy_fraction"] <= 1
        # wait + process cycles tile the window (up to the idle tail after the run)
        cycle = (w["wait"]["sum_us"] + w["process"]["sum_us"]) * 1e-6
        assert cycle <= w["active_s"] * 1.01
    # every request was served once; those abandoned at the deadline may have been served too
    assert res["completed"] <= served <= res["completed"] + res["abandoned"]
    assert st["total"]["op_get"] + st["total"]["op_put"] == served
    total = st["total"]
    assert total["bytes_in"] == res["bytes_out"]
    p = res["response"]
    assert p["min_us"] <= p["p50_us"] <= p["p99_us"] <= p["max_us"]


def test_rocksdb_stats_flushes_and_wal(tmp_path):
    # 1 MiB memtables and 2 KiB values: ~1 MiB of writes per 500 requests, so flushes must happen.
    with native.Server(datadir=str(tmp_path), memtable_mb=1, max_value=2048) as srv:
        res = native.run_load(targets=srv.addresses(), threads=2, duration_s=3, max_requests=5000,
                              read_ratio=0.0, distribution="uniform", records=10**6, value_size=2048,
                              timeout_ms=500)
        rocks = srv.stats()["rocksdb"][0]
    assert res["completed"] > 0
    written = res["writes"] * (2048 + 4 + 16)
    print(f"{res['writes']} writes, WAL {rocks['wal_bytes'] / 1e6:.2f} MB, flushes {rocks['flushes']:.0f}")
    assert rocks["keys_written"] == res["writes"]
    assert rocks["wal_bytes"] >= written  # the WAL holds every record plus framing
    if written > 3 * 2**20:
        assert rocks["flushes"] >= 1 and rocks["flush_write_bytes"] > 0


def test_wal_off_writes_no_wal(tmp_path):
    with native.Server(datadir=str(tmp_path), wal=False) as srv:
        res = native.run_load(targets=srv.addresses(), threads=1, duration_s=1, max_requests=500,
                              read_ratio=0.0, records=1000, timeout_ms=500)
        rocks = srv.stats()["rocksdb"][0]
    assert res["completed"] == 500
    assert rocks["wal_bytes"] == 0 and rocks["keys_written"] == 500


def test_count_bound_and_time_bound(server):
    res = native.run_load(targets=server.addresses(), threads=3, duration_s=10, max_requests=301, records=100)
    assert res["completed"] == 301 and res["elapsed_s"] < 5
    res = native.run_load(targets=server.addresses(), threads=2, duration_s=0.3, max_requests=10**9, records=100)
    assert 0.3 <= res["elapsed_s"] < 1.5 and res["completed"] < 10**9


def test_timeouts_counted_when_nobody_answers():
    # A bound but silent socket: every request times out and is resent.
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    res = native.run_load(targets=[s.getsockname()], threads=2, duration_s=0.25, max_requests=100, timeout_ms=20)
    s.close()
    assert res["completed"] == 0
    assert res["abandoned"] == 2
    # ~0.25 s / 20 ms = 12 attempts per thread, each but the last a timeout
    assert 16 <= res["timeouts"] <= 26 and res["sent"] == res["timeouts"] + 2


def test_late_replies_are_false_positives(tmp_path):
    # Timeout far below the service time of a synced write: replies arrive after the resend.
    with native.Server(datadir=str(tmp_path), sync=True) as srv:
        res = native.run_load(targets=srv.addresses(), threads=2, duration_s=1.0, max_requests=400,
                              read_ratio=0.0, records=1000, timeout_ms=0.02)
    assert res["timeouts"] > 0
    assert res["false_positives"] > 0
    # every timeout caused exactly one resend
    assert res["sent"] == res["requests"] + res["timeouts"]


def test_bad_load_options_name_the_field(server):
    from model.errors import InputError
    with pytest.raises(InputError, match="read_ratio"):
        native.run_load(targets=server.addresses(), read_ratio=1.5)
    with pytest.raises(InputError, match="distribution"):
        native.run_load(targets=server.addresses(), distribution="pareto")
    with pytest.raises(InputError, match="targets"):
        native.run_load(targets=[])
    with pytest.raises(InputError, match="thread"):
        native.run_load(targets=server.addresses(), thread=3)
