"""The fast kernel's client timers (sim.fast_kernel._timer_set): three lists,
each kept in deadline order by inserting from its tail (first sends, send
deadlines, FarReach re-arms), and a fourth of the threads at the client
cores, whose timers are not armed (deadline INF); each closed by a sentinel
node (sim.fast_kernel.timer_lists)."""

import subprocess
import sys
import textwrap

import numpy as np

from model.rack import compile_rack
from model.scenario import Scenario
from sim import fast_kernel as K
from sim.fast import FastEngine
from sim.run import FastSimulator
from runio.inputs import load_profile


def _lists(engine: FastEngine):
    """Each timer list as the clients in it, head to tail, with their deadlines
    (walked forward from its sentinel and checked backward)."""
    nxt, prev, dl = engine._tl_next, engine._tl_prev, engine._cl_dl
    n = len(nxt) - K.T_LISTS
    out = []
    for lst in range(K.T_LISTS):
        sentinel = n + lst
        seen, c = [], nxt[sentinel]
        while c != sentinel:
            assert c < n and prev[nxt[c]] == c
            seen.append(c)
            c = nxt[c]
        assert prev[sentinel] == (seen[-1] if seen else sentinel)
        out.append((seen, dl[seen]))
    return out, n


def test_the_lists_start_with_every_client_in_the_first_in_start_order():
    start = np.array([0.5, 1.0, 1.0, 7.25])
    nxt, prev, dl = K.timer_lists(start)
    n = len(start)
    assert list(nxt[:n]) == [1, 2, 3, n] and nxt[n] == 0 and prev[n] == n - 1
    assert nxt[n + 1] == prev[n + 1] == n + 1 and nxt[n + 2] == prev[n + 2] == n + 2
    assert nxt[n + 3] == prev[n + 3] == n + 3
    assert np.array_equal(dl[:n], start) and np.all(dl[n:] == -np.inf)


def test_every_client_is_in_one_list_and_each_list_is_in_deadline_order():
    # FarReach clients re-arm on a stale reply (short timeout, losses): all three
    # lists are in use mid-run
    sc = Scenario.default().updated({"clients.timeout_ms": 0.5, "network.loss_rate": 0.05,
                                     "clients.threads": 512})
    spec = compile_rack(sc, load_profile("tofino-testbed"))
    sim = FastSimulator(0.02, 1)
    cfg, dyn = sim.config(spec)
    cfg.client_cpu_us, cfg.client_cores = 14.0, 24     # threads queue for the client cores
    eng = FastEngine(cfg, 1)
    for t in (50.0, 2_000.0, 20_000.0):
        eng.run_until(t)
        lists, n = _lists(eng)
        members = sorted(c for seen, _ in lists for c in seen)
        assert members == list(range(n))
        for seen, deadlines in lists:
            assert np.all(deadlines[1:] >= deadlines[:-1])
    assert sum(len(seen) for seen, _ in lists[1:3]) > 0
    # threads wait at the client cores, unarmed
    assert len(lists[K.T_PARK][0]) > 0
    assert np.all(lists[K.T_PARK][1] == K.INF)


def test_a_rack_of_many_clients_that_re_arm_finishes():
    # A valid rack the simulator soak drew (seed 3, scenario 19): 371,005
    # FarReach clients (a send costs 1.3 ms), a 1.06 ms timeout and 23 % loss,
    # so replies come back stale and re-arm timers all the time. With one
    # list, each re-arm walked back past every client that had sent within the
    # last send time: 20 simulated ms took 21 s, 50 ms did not end in 15
    # minutes. Here 50 ms must end well inside two minutes (about 3 s): a run
    # that finishes, not a speed target. (Without client core time: with the
    # profile's few client cores these threads would wait for them, not re-arm.)
    code = textwrap.dedent("""
        from model.rack import compile_rack
        from model.scenario import Scenario
        from runio.inputs import load_profile
        from sim.run import FastSimulator
        sc = Scenario.default().updated({
            "clients.threads": 371005, "clients.timeout_ms": 1.0647184796135576,
            "clients.retry": "farreach", "network.loss_rate": 0.23157900222303077,
            "switch.mode": "read-only", "switch.cache_keys": 0, "switch.partition": "hash",
            "servers.count": 612, "servers.machines": 1451, "servers.rcvbuf_kb": 79283,
            "storage.flushnum": 5, "storage.maxnum": 6, "storage.l1_mb": 1.8733652789380046,
            "servers.seq_check": "disk-get", "storage.db": "normal",
            "workload.generator": "kvperf", "workload.zipf_theta": 0.6505977731594336,
            "workload.records": 15522, "workload.read_ratio": 0.34422969876689,
            "workload.key_bytes": 11, "workload.value_bytes": 1,
            "workload.queries_m": 100.0})   # (the random scenario's own run, 4,611
            # queries, ends before its first re-arm: the 50 ms simulated are its first)
        pf = load_profile("tofino-testbed").with_values({"client_cpu_us": 0.0}, source="test")
        p = FastSimulator(0.05, 1).solve(compile_rack(sc, pf))
        print(p.details["requests"], p.details["stale_replies_sim"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    done, stale = map(float, out.stdout.split())
    assert done > 0 and stale > 0
