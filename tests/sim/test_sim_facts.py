"""Directions of the qualitative facts of docs/domain.md section 3 (sim.facts).

Horizons are shorter than ``python -m sim.facts`` uses; every margin below
is far outside the run-to-run spread (per-second throughput of the default
rack varies by ~0.3 %, see the timelines).
"""

import pytest

from sim import facts

pytestmark = pytest.mark.slow


def test_too_few_clients_leave_wait_above_floor(profile):
    f = facts.few_clients(profile, seconds=1.0)
    floor = f["floor_us"]
    assert f["min_wait_few_us"] > 3 * floor          # starved workers idle between requests
    # with many clients the workers idle far less. Not down to the floor: the
    # fitted client machine (client_cpu_us, client_cores) caps the default
    # rack near 1 MOPS, and in a 1 s horizon the threads whose packets a
    # receive buffer dropped are still asleep in their 1 s timeout
    assert f["min_wait_many_us"] < f["min_wait_few_us"] / 3
    assert f["mops_few"] < 0.5 * f["mops_many"]


@pytest.mark.xfail(strict=True, reason=(
    "known miss of the profile refitted 2026-12-07: its receive buffers hold 67 packets in "
    "32 KiB (rcvbuf_pkt_bytes 490 +- 747 B, below the ~768 B a small datagram takes in the "
    "kernel, and not identified by the rows), so 4,096 threads lose few packets and the 1 s "
    "timeouts cost 0.2 %, not 5 % (0.9548 against 0.9567 MOPS at a 20 ms timeout)"))
def test_many_clients_small_buffers_lose_packets_and_large_timeout_costs(profile):
    f = facts.loss_and_timeout(profile, seconds=2.0)
    assert f["pktloss_per_s_small_buf"] > 100
    assert f["pktloss_per_s_big_buf"] == 0
    assert f["mops_small_buf_timeout_1000ms"] < 0.95 * f["mops_small_buf_timeout_20ms"]
    assert f["mops_small_buf_timeout_1000ms"] < 0.95 * f["mops_big_buf_timeout_1000ms"]


@pytest.mark.xfail(strict=True, reason=(
    "known miss of the profile refitted 2026-12-07: its client timer floor (timer_floor_ms "
    "8.7 +- 16.9 ms, not identified by the rows) makes a 5 ms timeout wait 8.7 ms, which no "
    "reply of the default rack takes: no false positive; at 4,096 clients the 5 ms timeout "
    "does resend (249,000 a second) and throughput falls from 0.97 to 0.55 MOPS, the storm "
    "the lab did not see"))
def test_small_timeouts_cause_false_positives(profile):
    f = facts.false_positives(profile, seconds=1.0)
    assert f["false_pos_per_s_large"] == 0
    assert f["false_pos_per_s_small"] > 1000
    # ... and no collapse: the lab ran as fast or faster with short timeouts
    # (F043 -> F045, 5 s -> 1 ms: x1.17), so a 5 ms timeout may cost a little
    # duplicate work but not a storm
    assert f["mops_small"] > 0.9 * f["mops_large"]


def test_small_memtables_under_heavy_writes_stall(profile):
    f = facts.memtable_stall(profile, seconds=1.5)
    assert f["stall_frac_large_64mib"] == 0
    assert f["stall_frac_small"] > 0.05
    assert f["mops_small"] < 0.9 * f["mops_large_64mib"]


def test_more_data_makes_throughput_decay(profile):
    # The decay is the SST files and levels a lookup checks growing over the
    # run as its memtables are flushed and compacted. A rack capped
    # elsewhere hides it: by the machines' commit paths (TransactionDB) or by
    # the client machine, neither of which grows with the data, so both are
    # out of the loop here. Only the direction is checked: the lab's decay is
    # far larger (F108 -> F109 x0.62; docs/accuracy.md, knob table). The
    # runs in miniature (a tenth of their queries, memtables and L1).
    f = facts.data_decay(profile.with_values({"txn_commit_us": 0.0, "client_cpu_us": 0.0},
                                             source="test"),
                         scale=0.1)
    # seed 1: 0.064 and 0.019 (the 10M run in miniature seals two memtables
    # per worker, whose lookups then search them too)
    assert f["decay_100M"] > 0.03
    assert f["decay_100M"] > f["decay_10M"] + 0.02
    assert f["mops_run_100M"] < f["mops_run_10M"]
