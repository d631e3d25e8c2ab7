"""The fast engine's memory is known before it is allocated, and a rack too big
for the machine is refused before any work (issue 43).

``python -m sim predict --engine sim --set servers=3739 --set clients=1000000
--set servers.rcvbuf_kb=1048576`` died in numpy's allocation with a
traceback: the engine sizes its event rings and receive queues from the
scenario (93 GiB there). :func:`sim.fast.memory_bytes` computes what an
engine would allocate from the same sizing (:func:`sim.fast.sizing`,
:func:`sim.fast.layout`) the engine allocates from, and
:func:`sim.fast.check_memory` refuses with an InputError naming the keys.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from model.errors import InputError
from model.rack import clients as cl_mech
from model.rack import compile_rack
from model.scenario import Scenario
from cli import main as cli
from sim import fast
from sim.config import SimConfig, rack_config
from sim.fast import FastEngine
from sim.run import run_config
from tests.sim.racks import lsm_fields

ENV = "KVPERF_SIM_MEMORY_LIMIT_MB"
SMALL = ["--set", "servers=2", "--set", "clients=8", "--set", "workload.records=100000"]
HUGE = ["--set", "servers=3739", "--set", "clients=1000000",
        "--set", "servers.rcvbuf_kb=1048576"]


def _configs(profile) -> dict[str, SimConfig]:
    return {
        "closed, strict timeout, two-slot station": SimConfig(
            n_clients=64, station_probs=np.array([0.4, 0.35, 0.25]),
            service_mean_us=np.array([20.0, 25.0, 30.0]), hit_ratio=0.3, send_us=2.0,
            hit_rtt_us=6.0, miss_rtt_us=12.0, timeout_us=400.0, retry=cl_mech.RETRY_FARREACH,
            station_servers=np.array([2, 1, 1]), buffer_pkts=np.array([32, 32, 32]),
            open_rate_per_us=0.002, **lsm_fields([0, 0, 1], 2),
            station_machine=np.array([0, 0, 1]), machines=2, wal_block_us=np.array([5.0, 5.0])),
        "open network": SimConfig(
            n_clients=0, station_probs=np.array([1.0]), service_mean_us=np.array([1.0]),
            station_servers=np.array([3]), open_rate_per_us=0.5),
        "client cores, commits, no timeout": SimConfig(
            n_clients=1000, station_probs=np.full(5, 0.2), service_mean_us=np.full(5, 10.0),
            send_us=1.0, miss_rtt_us=4.0, client_cpu_us=3.0, client_cores=7,
            txn_commit_us=2.0, write_frac=0.5, buffer_pkts=np.full(5, 5000)),
        "a compiled rack": rack_config(compile_rack(
            Scenario.default().updated({"servers.count": 6, "clients.threads": 300}), profile)),
    }


def _engine_arrays(eng: FastEngine) -> list[np.ndarray]:
    """Every array the engine holds that it allocated (not the config's own)."""
    cfg = eng.cfg
    owned_by_cfg = {id(a) for a in vars(cfg).values() if isinstance(a, np.ndarray)}
    seen: dict[int, np.ndarray] = {}
    for a in [*eng.args, *vars(eng).values()]:
        if isinstance(a, np.ndarray) and id(a) not in owned_by_cfg:
            seen[id(a)] = a
    return list(seen.values())


@pytest.mark.parametrize("name", ["closed, strict timeout, two-slot station", "open network",
                                  "client cores, commits, no timeout", "a compiled rack"])
def test_the_estimate_is_what_an_engine_allocates(profile, name):
    cfg = _configs(profile)[name]
    eng = FastEngine(cfg, 1)
    real = sum(a.nbytes for a in _engine_arrays(eng))
    parts = fast.memory_parts(cfg)
    # the engine's own arrays, to the byte; with the kernel's scratch within 1 %
    assert sum(v for k, v in parts.items() if k != "kernel") == real
    assert fast.memory_bytes(cfg) == pytest.approx(real, rel=0.01)
    # the engine made every array of the layout: as many as it lists
    assert len(_engine_arrays(eng)) == len(fast.layout(cfg))


def test_the_estimate_follows_the_receive_buffers_and_the_threads(profile):
    def need(**changes) -> int:
        sc = Scenario.default().updated({"servers.count": 8, "clients.threads": 4096, **changes})
        return fast.memory_bytes(rack_config(compile_rack(sc, profile)))
    base = need()
    # a receive queue holds what its buffer takes, up to what the threads can send
    assert need(**{"servers.rcvbuf_kb": 1 << 20}) > 4 * base
    assert need(**{"servers.rcvbuf_kb": 1 << 20, "clients.threads": 64}) < base
    assert need(**{"clients.threads": 400_000}) > 50 * base
    # the issue's rack: tens of GiB, mostly the receive queues and the reply ring
    cfg = rack_config(compile_rack(Scenario.default().with_overrides(
        [s for s in HUGE if s != "--set"]), profile))
    assert fast.memory_bytes(cfg) > 50 * 2 ** 30


def test_the_issues_rack_is_refused_before_any_work(profile, monkeypatch, capsys):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr(fast, "_available_bytes", lambda: int(23.4 * 2 ** 30))

    def no_solve(*a, **k):
        raise AssertionError("the analytic solve that starts the dynamics ran")
    monkeypatch.setattr("model.solvers.analytic.solve", no_solve)
    for argv in (["predict", "--engine", "sim"], ["simulate", "--no-progress"]):
        rc = cli.main(argv + HUGE)
        out, err = capsys.readouterr()
        assert rc == 2, (argv, out, err)
        assert "Traceback" not in err and out == ""
        line = err.strip()
        assert "\n" not in line and line.startswith("error: ") and len(line) < 300 + 7
        assert "servers.rcvbuf_kb" in line and "servers.count" in line
        assert "GiB" in line and "half of the 23.4 GiB this machine has available" in line
        need = float(line.split("would need ")[1].split(" GiB")[0])
        assert need > 50


def test_the_limit_can_be_set_and_the_cli_refuses_in_one_line(monkeypatch, capsys):
    # a small rack under a small limit: its threads' state and packets on the wire
    monkeypatch.setenv(ENV, "0.01")
    rc = cli.main(["simulate", "--seconds", "1", "--no-progress"] + SMALL)
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in err and out == ""
    line = err.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert "clients.threads=8" in line and "KiB" in line and " 0.0 " not in line
    assert "the limit of 10.2 KiB set by KVPERF_SIM_MEMORY_LIMIT_MB" in line
    # and under a higher one it is simulated
    monkeypatch.setenv(ENV, "64")
    assert cli.main(["simulate", "--seconds", "0.01", "--no-progress", "--json"] + SMALL) == 0
    capsys.readouterr()
    # the issue's rack under a limit of 1 GiB
    monkeypatch.setenv(ENV, "1024")
    rc = cli.main(["predict", "--engine", "sim"] + HUGE)
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in err
    line = err.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert "servers.rcvbuf_kb" in line and "3739 workers" in line
    assert "GiB for" in line and "the limit of 1.0 GiB set by KVPERF_SIM_MEMORY_LIMIT_MB" in line
    assert fast.MEMORY_LIMIT_ENV == ENV


def test_a_bad_limit_is_an_input_error(monkeypatch):
    for bad in ("lots", "0", "-5", "nan", "inf"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(InputError) as ei:
            fast.memory_limit()
        assert ENV in str(ei.value)


def test_every_way_into_the_fast_engine_checks(profile, monkeypatch):
    cfg = _configs(profile)["client cores, commits, no timeout"]
    need = fast.memory_bytes(cfg)
    monkeypatch.setenv(ENV, str(need / 2 ** 20 * 0.9))
    with pytest.raises(InputError) as ei:
        FastEngine(cfg, 1)
    # a bare config names its own fields: here the threads' state dominates
    assert ei.value.field == "n_clients" and "n_clients=1000" in str(ei.value)
    with pytest.raises(InputError):
        run_config(cfg, 0.01)
    monkeypatch.setenv(ENV, str(need / 2 ** 20 * 1.1))
    assert run_config(cfg, 0.01).done > 0
    # the SimPy engine preallocates nothing by the buffers or the threads: not checked
    monkeypatch.setenv(ENV, "0.001")
    assert run_config(cfg, 0.001, engine="simpy").span_us > 0


def test_the_message_names_the_threads_when_they_bound_the_queues(profile, monkeypatch):
    # many threads, unbounded buffers: the threads bound each receive queue
    cfg = SimConfig(n_clients=200_000, station_probs=np.full(64, 1 / 64),
                    service_mean_us=np.full(64, 10.0), send_us=1.0, miss_rtt_us=4.0,
                    extra={"keys": {"stations": "servers.count", "clients": "clients.threads",
                                    "buffer": "servers.rcvbuf_kb"}})
    monkeypatch.setenv(ENV, "64")
    with pytest.raises(InputError) as ei:
        fast.check_memory(cfg)
    msg = str(ei.value)
    assert ei.value.field == "clients.threads"
    assert "clients.threads=200000" in msg and "64 workers (servers.count)" in msg
    assert "GiB" in msg and len(msg) < 300
    need = fast.memory_bytes(cfg)
    assert math.isclose(float(msg.split("would need ")[1].split(" GiB")[0]), need / 2 ** 30,
                        abs_tol=0.05)
