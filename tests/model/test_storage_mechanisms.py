"""Two storage mechanisms of a worker's process time (model/rack/lsm.py,
model/rack/service.py):

* L0->L1 compaction: per written byte it rewrites ``min(L1, data) /
  (l0_files x memtable x flushnum)`` bytes of L1 (``l1_passes``), and the
  worker pays ``compaction_us x log2(1 + l1_passes)`` per write;
* SST growth: the SST part of a lookup grows by ``sst_growth_factor`` per
  doubling of the instance's data (records loaded, plus writes so far), and
  not with the memtable size.
"""

import math

import numpy as np
import pytest

from model.rack import compile_rack, lsm, service
from model.scenario import Scenario
from runio.inputs import load_profile

MIB = 1024.0 * 1024.0


def rack(profile=None, **changes):
    return compile_rack(Scenario.default().updated(changes),
                        profile or load_profile("tofino-testbed"))


@pytest.mark.parametrize("memtable_mb, flushnum, passes", [
    (4.0, 1, 16.0), (64.0, 1, 1.0), (64.0, 4, 0.25), (256.0, 16, 256 / (4 * 256 * 16))])
def test_l1_passes_with_rocksdb_defaults(memtable_mb, flushnum, passes):
    r = rack(**{"storage.memtable_mb": memtable_mb, "storage.flushnum": flushnum,
                "storage.maxnum": flushnum + 1})
    assert r.lsm.l1_bytes == 256 * MIB          # 100M records on 16 servers: 1 GB each
    assert r.lsm.l1_passes == pytest.approx(passes)


def test_l1_holds_no_more_than_the_instance_has():
    """A small instance's L1 is all its data, so its compactions rewrite less."""
    r = rack(**{"workload.records": 1_000_000, "servers.count": 64, "storage.memtable_mb": 4.0,
                "storage.flushnum": 1})
    data = 1_000_000 / 64 * r.lsm.entry_bytes
    assert r.lsm.l1_bytes == pytest.approx(data)
    assert r.lsm.l1_passes == pytest.approx(data / (4 * 4 * MIB))


def test_compaction_cost_is_paid_per_write_and_grows_with_the_data():
    """With ``compaction_us`` = c, a worker's cost at the start of a run rises by
    c x log2(1 + passes) x its write fraction, and grows with the data like the
    SST part; read-only workers pay nothing."""
    prof = load_profile("tofino-testbed")
    small = {"storage.memtable_mb": 4.0, "storage.flushnum": 1, "storage.maxnum": 2}
    base = rack(prof.with_values({"compaction_us": 0.0}, "no"), **small)
    paid = rack(prof.with_values({"compaction_us": 2.0}, "yes"), **small)
    wf = np.asarray(base.placement.write_frac)
    assert paid.service.flat_us == base.service.flat_us
    extra = np.asarray(paid.service.sst_us) - np.asarray(base.service.sst_us)
    # only the part of the run's writes that was flushed is compacted (a run
    # that fills fewer memtables than a flush takes compacts nothing)
    flushed = lsm.flushed_fraction(np.asarray(paid.service.writes_per_run) / paid.lsm.entries,
                                   paid.lsm.flushnum)
    assert np.all(flushed > 0.5)
    assert extra == pytest.approx(2.0 * math.log2(17.0) * wf * flushed, rel=1e-9)
    per_instance = 100_000_000 / 16          # one doubling of each instance's data
    grow = service.cost_at(paid.service, np.full(16, per_instance)) - \
        service.cost_at(base.service, np.full(16, per_instance))
    assert grow == pytest.approx(extra * (1.0 + paid.service.sst_factor), rel=1e-9)
    ro = rack(prof.with_values({"compaction_us": 2.0}, "yes"), **small,
              **{"workload.read_ratio": 1.0})
    ro0 = rack(prof.with_values({"compaction_us": 0.0}, "no"), **small,
               **{"workload.read_ratio": 1.0})
    assert ro.service.flat_us == ro0.service.flat_us and ro.service.sst_us == ro0.service.sst_us


def test_sst_growth_is_per_doubling_of_the_instances_data():
    r = rack()
    s = r.service
    # one write adds 1 / (records per instance) of the data, whatever the memtable
    assert s.growth_per_write == pytest.approx(16 / 100_000_000)
    assert rack(**{"storage.memtable_mb": 4.0, "storage.flushnum": 1,
                   "storage.maxnum": 2}).service.growth_per_write == s.growth_per_write
    per_instance = 100_000_000 / 16
    now = service.cost_at(s, np.array([0.0] * 16))
    doubled = service.cost_at(s, np.array([per_instance] * 16))
    quadrupled = service.cost_at(s, np.array([3 * per_instance] * 16))
    sst = np.asarray(s.sst_us)
    assert doubled - now == pytest.approx(sst * s.sst_factor)
    assert quadrupled - now == pytest.approx(2 * sst * s.sst_factor)


def test_run_average_is_the_time_average_of_cost_at():
    """The analytic form (run average) equals the mean of the per-event form over
    a run whose writes grow linearly."""
    s = rack(**{"workload.queries_m": 400.0}).service
    t = (np.arange(20_000) + 0.5) / 20_000
    w = np.asarray(s.writes_per_run)
    avg = np.mean([service.cost_at(s, w * x) for x in t], axis=0)
    assert service.run_average_cost(s) == pytest.approx(avg, rel=1e-6)
    assert math.isclose(service.sst_shape_average(0.0), 0.0)
