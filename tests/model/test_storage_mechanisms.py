"""RocksDB's write path as rules over counts (model/rack/lsm_rules.py), and the
run it makes (model/solvers/trajectory.py).

Each rule is checked against what RocksDB's source says it does
(db/column_family.cc, db/memtable_list.cc, db/version_set.cc, the compaction
picker), on hand-made states; the run against counts worked out by hand.
"""

import math

import numpy as np
import pytest

from model.rack import compile_rack, lsm, lsm_rules as R, service
from model.scenario import Scenario
from model.solvers import analytic
from runio.inputs import load_profile

MIB = 1024.0 * 1024.0


def params(**kw):
    base = dict(entry_bytes=200.0, memtable_bytes=1 * MIB, flushnum=2, maxnum=5, wal=False,
                wal_block_base_us=0.0, wal_block_us_per_mbps=0.0, flush_fixed_us=1000.0,
                flush_bytes_per_us=100.0, compaction_bytes_per_us=100.0,
                disk_bytes_per_us=400.0, l0_files=4, l0_slowdown=20, l0_stop=36,
                l1_target_bytes=256 * MIB, delayed_bytes_per_us=16 * MIB / 1e6,
                flush_threads=2, compaction_threads=1)
    base.update(kw)
    return lsm.LsmSpec(**base)


def state(spec, n=1, data=0.0):
    p = spec.rule_params()
    st, jobs, mach = R.initial_state(p, np.zeros(n, dtype=np.int64), 1, np.full(n, data),
                                     np.ones(n))
    return p, st, jobs, mach


@pytest.mark.parametrize("imm, l0, pending, want", [
    (5, 0, 0.0, (R.STOPPED, R.CAUSE_MEMTABLES)),          # maxnum reached
    (4, 0, 0.0, (R.DELAYED, R.CAUSE_MEMTABLES)),          # maxnum - 1, and 4 - 1 >= flushnum 2
    (3, 0, 0.0, (R.NORMAL, R.CAUSE_NONE)),
    (0, 36, 0.0, (R.STOPPED, R.CAUSE_L0)),
    (0, 20, 0.0, (R.DELAYED, R.CAUSE_L0)),
    (0, 19, 0.0, (R.NORMAL, R.CAUSE_NONE)),
    (0, 0, R.HARD_PENDING_BYTES, (R.STOPPED, R.CAUSE_PENDING)),
    (0, 0, R.SOFT_PENDING_BYTES, (R.DELAYED, R.CAUSE_PENDING)),
])
def test_write_stall_conditions_are_rocksdbs(imm, l0, pending, want):
    p = params().rule_params()
    assert R.stall_condition(p, imm, l0, pending) == want


def test_no_slowdown_when_maxnum_is_three_or_less():
    """RocksDB slows writes one memtable early only when max_write_buffer_number > 3."""
    p = params(flushnum=1, maxnum=3).rule_params()
    assert R.stall_condition(p, 2, 0, 0.0) == (R.NORMAL, R.CAUSE_NONE)
    assert R.stall_condition(p, 3, 0, 0.0)[0] == R.STOPPED
    # ... and only when one more than flushnum waits: 4 - 1 >= 4 fails
    p = params(flushnum=4, maxnum=5).rule_params()
    assert R.stall_condition(p, 4, 0, 0.0) == (R.NORMAL, R.CAUSE_NONE)


def test_a_flush_takes_every_immutable_once_flushnum_wait():
    spec = params(flushnum=3, maxnum=8)
    p, st, jobs, mach = state(spec)
    for k in range(2):
        R.seal(st, 0, p, jobs, mach, 0.0)
    assert not R.any_job(jobs), "two immutables, flushnum 3: no flush yet"
    R.seal(st, 0, p, jobs, mach, 0.0)
    live = [j for j in range(len(jobs)) if jobs[j].live]
    assert len(live) == 1 and jobs[live[0]].memtables == 3
    assert st[0].imm == 3 and st[0].imm_taken == 3
    # the flush runs its fixed part, then writes 3 memtables' SST bytes
    dt, j = R.next_job_event(jobs, p, mach, st)
    assert dt == pytest.approx(spec.flush_fixed_us)
    R.advance_jobs(jobs, p, mach, st, dt)
    R.job_event(st, p, jobs, mach, j, dt)
    dt2, j2 = R.next_job_event(jobs, p, mach, st)
    out = 3 * spec.memtable_bytes * spec.sst_ratio
    # it merges its 3 memtables at the flush rate (the disk has room for its output)
    assert dt2 == pytest.approx(3 * spec.memtable_bytes / spec.flush_bytes_per_us)
    R.advance_jobs(jobs, p, mach, st, dt2)
    R.job_event(st, p, jobs, mach, j2, dt + dt2)
    assert st[0].imm == 0 and st[0].l0 == 1 and st[0].flushes == 1
    assert st[0].l0_bytes == pytest.approx(out)


def test_the_machines_flush_pool_queues_flushes():
    spec = params(flushnum=1, maxnum=8, flush_threads=1)
    p, st, jobs, mach = state(spec, n=2)
    R.seal(st, 0, p, jobs, mach, 0.0)
    R.seal(st, 1, p, jobs, mach, 0.0)
    assert mach[0].flushes == 1 and st[1].flush_jobs == 0, "one flush thread: the second waits"


def test_a_stop_is_counted_and_the_delayed_rate_follows_setupdelay():
    spec = params(flushnum=1, maxnum=4, flush_threads=1)
    p, st, jobs, mach = state(spec)
    R.seal(st, 0, p, jobs, mach, 0.0)       # 1 immutable: flushing
    R.seal(st, 0, p, jobs, mach, 1.0)       # 2
    R.seal(st, 0, p, jobs, mach, 2.0)       # 3 = maxnum - 1, and 3 - 1 >= 1: delayed
    assert st[0].cond == R.DELAYED and st[0].slows == 1
    assert st[0].rate == pytest.approx(p.max_rate), "entering a delay keeps the rate"
    R.seal(st, 0, p, jobs, mach, 10.0)      # 4 = maxnum: stopped
    assert st[0].cond == R.STOPPED and st[0].stops == 1
    assert st[0].slow_us == pytest.approx(8.0)
    # the flush ends at 110 us: three remain, delayed again after a stop -- but
    # RocksDB only adjusts a rate it was already delaying with (NeedsDelay)
    st[0].imm_taken = 0
    st[0].imm = 3
    R.recalc(st, 0, p, 110.0)
    assert st[0].cond == R.DELAYED and st[0].stop_us == pytest.approx(100.0)
    assert st[0].rate == pytest.approx(p.max_rate)
    # still delayed at the next recalculation, with no compaction debt: unchanged;
    # with debt that does not shrink: x 0.8
    st[0].prev_pending = 1.0
    st[0].l0 = 4
    st[0].l0_bytes = 1e6
    R.recalc(st, 0, p, 120.0)
    assert st[0].rate == pytest.approx(0.8 * p.max_rate)
    # back to normal: x 1.4, at most the option
    st[0].imm = 0
    R.recalc(st, 0, p, 130.0)
    assert st[0].cond == R.NORMAL
    assert st[0].rate == pytest.approx(min(1.4 * 0.8, 1.0) * p.max_rate)


def test_l0_compaction_takes_every_l0_file_and_all_of_l1():
    spec = params(flushnum=1, maxnum=8, l0_files=2)
    p, st, jobs, mach = state(spec, data=100 * MIB)       # L1 holds 100 MiB
    st[0].l0 = 2
    st[0].l0_bytes = 2 * MIB
    assert R.schedule(st, p, jobs, mach)
    j = [j for j in range(len(jobs)) if jobs[j].live][0]
    assert jobs[j].kind == R.COMPACT_L0 and jobs[j].files == 2
    assert jobs[j].work == pytest.approx(102 * MIB)
    dt, j = R.next_job_event(jobs, p, mach, st)
    assert dt == pytest.approx(102 * MIB / spec.compaction_bytes_per_us)
    R.advance_jobs(jobs, p, mach, st, dt)
    R.job_event(st, p, jobs, mach, j, dt)
    assert st[0].l0 == 0 and st[0].level[0] == pytest.approx(102 * MIB)
    assert st[0].compactions == 1


def test_loaded_data_fills_the_levels_from_l1_down():
    spec = params(l1_target_bytes=10 * MIB)
    p, st, jobs, mach = state(spec, data=500 * MIB)
    assert st[0].level[0] == pytest.approx(10 * MIB)
    assert st[0].level[1] == pytest.approx(100 * MIB)
    assert st[0].level[2] == pytest.approx(390 * MIB)
    assert R.probes(st, 0) == 3


def test_pending_compaction_bytes_as_estimatecompactionbytesneeded():
    spec = params(l1_target_bytes=10 * MIB, l0_files=4)
    p, st, jobs, mach = state(spec)
    st[0].l0 = 4
    st[0].l0_bytes = 8 * MIB
    st[0].level[0] = 10 * MIB
    st[0].level[1] = 50 * MIB
    # L0 triggers: L0 + L1; L1 + L0's bytes = 18 MiB over a 10 MiB target:
    # 8 MiB to L2, times (L2 / L1-with-L0 + 1)
    want = 8 * MIB + 10 * MIB + 8 * MIB * (50 / 18 + 1)
    assert R.pending_bytes(st, 0, p) == pytest.approx(want)


def _run(profile=None, **changes):
    sc = Scenario.default().updated({"storage.db": "normal", "workload.queries_m": 2.0,
                                     **changes})
    return analytic.solve(compile_rack(sc, profile or load_profile("tofino-testbed")))


def test_a_run_that_fills_fewer_memtables_than_flushnum_never_flushes():
    pred = _run(**{"storage.memtable_mb": 1.0, "storage.flushnum": 200, "storage.maxnum": 400})
    lsm_ = pred.details["lsm"]
    entries = compile_rack(Scenario.default().updated({"storage.memtable_mb": 1.0}),
                           load_profile("tofino-testbed")).lsm.entries
    assert max(lsm_["flushes"]) == 0 and max(lsm_["compactions"]) == 0
    for w, m in zip(lsm_["writes"], lsm_["memtables"]):
        assert m == int(w // entries), "memtables sealed = writes / entries per memtable"


def test_a_stopping_run_stops_and_is_slower_than_one_that_does_not():
    # 8 workers a machine fill their memtables together and share one slow
    # flush thread: the last to flush reach maxnum first
    slow = load_profile("tofino-testbed").with_values({"flush_mbps": 5.0}, "test")
    stop = _run(slow, **{"storage.memtable_mb": 1.0, "storage.flushnum": 8,
                         "storage.maxnum": 9, "servers.flush_threads": 1,
                         "workload.queries_m": 10.0})
    free = _run(slow, **{"storage.memtable_mb": 1.0, "storage.flushnum": 8,
                         "storage.maxnum": 64, "servers.flush_threads": 1,
                         "workload.queries_m": 10.0})
    assert max(stop.details["lsm"]["stop_s"]) > 0 and max(free.details["lsm"]["stop_s"]) == 0
    assert stop.throughput_mops < free.throughput_mops
    # the run's time is the sum of its phases
    ph = stop.details["trajectory"]["phases"]
    assert sum(p["seconds"] for p in ph) == pytest.approx(stop.details["lsm"]["run_s"], rel=1e-9)
    assert any(p["kind"] == "stop" for p in ph)


def test_cost_in_state_is_linear_in_memtables_and_probes():
    sp = compile_rack(Scenario.default(), load_profile("tofino-testbed"))
    s = sp.service
    n = s.servers
    base = service.cost_in_state(s, np.zeros(n), np.asarray(s.first_probes), np.zeros(n))
    assert base == pytest.approx(service.first_cost(s))
    more = service.cost_in_state(s, np.full(n, 3), np.asarray(s.first_probes) + 2, np.zeros(n))
    want = base + 3 * np.asarray(s.memprobe_us) + 2 * np.asarray(s.probe_us)
    assert more == pytest.approx(want)
    assert math.isfinite(float(np.sum(more)))
