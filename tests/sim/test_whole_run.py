"""A simulation covers the scenario's run, from its first state to its last query (issue 50).

The run's ``workload.queries_m`` queries from the loaded database with its
memtables empty, through RocksDB's rules write by write (sim.write_path),
until the last one completes; ``--seconds`` caps it (the run's first
seconds, said so). Its outputs are those of the analytic solver by phases:
``details["lsm"]`` with the same keys, ``details["trajectory"]`` from the
timeline, and the stall fraction the time the instances were stopped.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli import main as cli
from model.rack import compile_rack, lsm_rules
from model.scenario import Scenario
from model.solvers.analytic import solve
from sim import write_path
from sim.config import rack_config
from sim.fast import FastEngine
from sim.run import FastSimulator, SimpySimulator, simulate
from tests.sim.racks import lsm_fields, tiny_lsm

#: write-only, 0.0625 MiB memtables, maxnum 2: a 0.2 M-query run stops often
STOPPING = {"servers.count": 4, "servers.machines": 4, "clients.threads": 64,
            "storage.wal": False, "storage.db": "normal", "workload.records": 1_000_000,
            "storage.l1_mb": 1.0, "storage.preloaded": False, "workload.read_ratio": 0.0,
            "storage.memtable_mb": 0.0625, "storage.flushnum": 1, "storage.maxnum": 2,
            "workload.queries_m": 0.2}


@pytest.fixture(scope="module")
def stopping(profile):
    spec = compile_rack(Scenario.default().updated(STOPPING),
                        profile.with_values({"flush_fixed_ms": 1.0, "flush_mbps": 2.0},
                                            source="test"))
    return spec, FastSimulator(None, 1).solve(spec)


def test_the_run_starts_from_the_loaded_database_with_memtables_empty(profile):
    spec = compile_rack(Scenario.default(), profile)
    cfg = rack_config(spec)
    st = FastEngine(cfg, 1).storage.st
    assert np.all(st["active"] == 0) and np.all(st["imm"] == 0) and np.all(st["l0"] == 0)
    loaded = np.sum(st["level"], axis=1)
    assert np.allclose(loaded, spec.lsm.data_bytes) and loaded.min() > 0
    assert cfg.queries == spec.queries == 10e6


def test_the_whole_run_is_its_queries(stopping):
    spec, p = stopping
    d = p.details
    assert d["requests"] == spec.queries and d["prefix_of_run"] is False
    assert d["run_queries"] == spec.queries
    assert d["lsm"]["run_s"] == pytest.approx(d["simulated_s"])
    assert p.throughput_mops == pytest.approx(spec.queries / (d["simulated_s"] * 1e6))
    # the trajectory's seconds hold the run's requests (MOPS over each second)
    per_s = d["trajectory"]["per_second_mops"]
    assert len(per_s) == int(np.ceil(d["simulated_s"]))
    assert sum(per_s) * 1e6 == pytest.approx(spec.queries)
    assert {ph["kind"] for ph in d["trajectory"]["phases"]} <= {"run", "slow", "stop"}


def test_the_lsm_details_are_the_analytic_solvers(stopping):
    spec, p = stopping
    a = solve(spec)
    assert set(p.details["lsm"]) == set(a.details["lsm"])
    assert set(p.details["trajectory"]) == set(a.details["trajectory"])
    d = p.details["lsm"]
    # every write of the run reached its instance; a memtable holds LsmSpec.entries
    writes = np.asarray(d["writes"])
    assert np.all(np.asarray(d["memtables"]) == writes // spec.lsm.entries)
    pl = spec.placement
    expected = (spec.queries * np.asarray(pl.shares) * np.asarray(pl.write_frac)
                + pl.evict_per_us * d["run_s"] * 1e6 * np.asarray(pl.evict_probs))
    assert writes == pytest.approx(expected, rel=0.03)


def test_the_stall_fraction_is_the_time_stopped(stopping):
    spec, p = stopping
    d = p.details["lsm"]
    stop = np.asarray(d["stop_s"])
    assert stop.min() > 0.05 * d["run_s"]                   # the rack stops, much
    assert d["stopped_s"] >= stop.max() - 1e-9
    # each worker's outcome: its instance's time stopped over the run (and
    # its blocks: none here, the WAL off and no slowdown at maxnum 2)
    assert max(d["slow_s"]) == 0
    assert p.stall_fraction == pytest.approx(np.mean(stop) / d["run_s"], rel=1e-6)
    assert any(r["phase"] == "stop" for r in p.details["timeline"])


def test_a_cap_simulates_the_runs_first_seconds(profile, capsys):
    sc = ["--set", "servers=2", "--set", "clients=8", "--set", "workload.records=100000"]
    assert cli.main(["simulate", "--seconds", "0.2", "--json"] + sc) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)["details"]
    assert d["prefix_of_run"] is True and d["simulated_s"] == pytest.approx(0.2)
    assert d["requests"] < d["run_queries"] == 10e6
    assert "NOTE: simulated the run's first 0.2 s only" in err
    # a cap longer than the run: the run, no note
    assert cli.main(["simulate", "--seconds", "100", "--json", "--set",
                     "workload.queries_m=0.01"] + sc) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)["details"]
    assert d["prefix_of_run"] is False and d["requests"] == 10_000 and "NOTE" not in err


def test_both_engines_run_the_same_rules(profile):
    """The SimPy engine on the stopping rack's run, shortened: the same counts
    as the fast engine (memtables within one; both stop and flush)."""
    spec = compile_rack(Scenario.default().updated({**STOPPING, "workload.queries_m": 0.02}),
                        profile.with_values({"flush_fixed_ms": 1.0, "flush_mbps": 2.0},
                                            source="test"))
    fast = FastSimulator(None, 1).solve(spec).details["lsm"]
    slow = SimpySimulator(None, 1, keys=False).solve(spec).details["lsm"]
    assert np.max(np.abs(np.asarray(fast["memtables"]) - slow["memtables"])) <= 1
    for d in (fast, slow):
        assert min(d["flushes"]) > 5 and min(d["stop_s"]) > 0 and d["stopped_s"] > 0


def test_a_stop_blocks_writers_until_a_job_event_clears_it():
    """One worker, ten writes a memtable, maxnum 2 and a slow flush: the
    writer stops at the second memtable; the flush's end releases it."""
    from sim.config import SimConfig
    from sim.run import run_config
    cfg = SimConfig(n_clients=4, station_probs=np.array([1.0]), service_mean_us=np.array([5.0]),
                    write_frac=1.0, send_us=1.0, miss_rtt_us=2.0,
                    **lsm_fields([0], flush_bytes_per_us=1.0))
    for engine in ("fast", "simpy"):
        r = run_config(cfg, 0.05, seed=2, engine=engine)
        d = r.lsm
        assert r.stall.sum() > 0.5 * r.span_us, engine        # mostly stopped
        assert d["stops"][0] >= d["flushes"][0] - 1 > 10, (engine, d)
        # the instance's time stopped and its writer's, one stop apart at most
        assert d["stop_s"][0] * 1e6 == pytest.approx(r.stall.sum(), abs=2500.0)


def test_a_delayed_write_is_paced_to_the_delayed_rate():
    """A rack held at DELAYED (L0 slowdown at 0 files): writes go at the
    delayed rate, ``entry / rate`` apart, whatever the workers could do."""
    from sim.config import SimConfig
    from sim.run import run_config
    rate = 2.0                                                 # bytes per us: 100 us a write
    cfg = SimConfig(n_clients=8, station_probs=np.array([1.0]), service_mean_us=np.array([5.0]),
                    write_frac=1.0, send_us=1.0, miss_rtt_us=2.0,
                    **lsm_fields([0], memtable_bytes=1e12, l0_slowdown=0,
                                 delayed_bytes_per_us=rate))
    st = cfg.lsm_state
    lsm_rules.recalc(st, 0, cfg.lsm_params.view(np.recarray)[0], 0.0)   # the condition at the start
    assert st[0].cond == lsm_rules.DELAYED
    for engine in ("fast", "simpy"):
        r = run_config(cfg, 0.02, seed=1, engine=engine)
        per_write = r.span_us / r.writes[0]
        assert per_write == pytest.approx(tiny_lsm().entry_bytes / rate, rel=0.02), engine


def test_the_rack_stop_count_is_the_union_of_the_instances_stops():
    rack = write_path.new_rack()
    write_path.stop_changed(rack, False, True, 10.0)          # a stops
    write_path.stop_changed(rack, False, True, 15.0)          # b stops
    write_path.stop_changed(rack, True, False, 20.0)          # a goes on
    assert write_path.rack_stopped_us(rack, 25.0) == 15.0
    write_path.stop_changed(rack, True, False, 30.0)          # b goes on
    assert write_path.rack_stopped_us(rack, 40.0) == 20.0


def test_a_stop_no_job_can_clear_ends_the_simulation(profile, capsys):
    """An L0 stop trigger below the compaction trigger (RocksDB itself would
    raise it): the first L0 file stops the writes for good. The simulation
    ends there, says so, and does not spin through a run that never ends."""
    sc = ["--set", "servers=2", "--set", "clients=8", "--set", "workload.records=100000",
          "--set", "switch.cache=false", "--set", "workload.read_ratio=0",
          "--set", "storage.memtable_mb=0.0625", "--set", "storage.flushnum=1",
          "--set", "storage.l0_stop=1", "--set", "storage.wal=false",
          "--set", "storage.preloaded=false"]
    assert cli.main(["simulate", "--json"] + sc) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)["details"]
    assert d["stuck"] is True and d["prefix_of_run"] is True
    assert d["requests"] < d["run_queries"] and d["simulated_s"] < 60
    assert max(d["lsm"]["stop_s"]) > 0 and "the run never ends" in err
