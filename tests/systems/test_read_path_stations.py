"""The replicated read-path block (``model.systems.pools.read_path_stations``):
who does the work of one read on each path -- one node's core pool, any of r
replicas' pools, or a leader's log (the leader's pool for the read, every
node's serial log loop) -- and its per-event form: a seeded simulation of the
closed loop through the same stations holds the mean-value solution
(``model.blocks.closed_loop_scv``, constant service) to it."""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import pytest

from model.blocks import closed_loop_scv
from model.errors import InputError
from model.systems.pools import read_path_stations

# --------------------------------------------------------------------------
# the block
# --------------------------------------------------------------------------

def test_read_paths_who_does_the_work():
    s = read_path_stations("single", 36.0, 2)
    assert s.demands == (36.0,) and s.cores == (2,) and s.names == ("server pool",)
    a = read_path_stations("any", 36.0, 4, serving=3)
    assert a.demands == pytest.approx((12.0,) * 3) and a.cores == (4,) * 3
    # Raft: the leader's pool does the read and one exchange (entry out, ack
    # back) with each follower; each follower's pool its side of it
    log = read_path_stations("log", 36.0, 8, replicas=3, msg=18.0)
    assert log.names == ("leader pool", "follower 1 pool", "follower 2 pool")
    assert log.cores == (8, 8, 8)
    assert log.demands == pytest.approx((36.0 + 4 * 18.0, 36.0, 36.0))
    # with a serial append, every node also has a one-core log loop
    loop = read_path_stations("log", 36.0, 8, replicas=3, msg=5.0, append=4.0)
    assert loop.names[3:] == ("leader log loop", "follower 1 log loop", "follower 2 log loop")
    assert loop.cores == (8, 8, 8, 1, 1, 1) and loop.demands[3:] == (4.0,) * 3
    # one replica: no followers, no messages
    one = read_path_stations("log", 36.0, 2, replicas=1, msg=5.0, append=4.0)
    assert one.demands == (36.0, 4.0) and one.cores == (2, 1)


@pytest.mark.parametrize("bad", [{"path": "ring"}, {"cores": 0}, {"read": -1.0},
                                 {"path": "any", "serving": 0}, {"path": "log", "replicas": 0}])
def test_read_paths_refuse_bad_input(bad):
    kw = {"path": "log", "read": 10.0, "cores": 2}
    kw.update(bad)
    path, read, cores = kw.pop("path"), kw.pop("read"), kw.pop("cores")
    with pytest.raises(InputError):
        read_path_stations(path, read, cores, **kw)


def _simulate_loop(n, think, demands, cores, reads, rng):
    """Event form: n clients; each thinks (exponential, mean ``think``), then
    visits the stations in order; station i has cores[i] servers taking reads
    first come first served, each for exactly demands[i]. Returns reads per
    unit time after a warm-up of a fifth of the reads."""
    k = len(demands)
    busy = [0] * k
    queue = [deque() for _ in range(k)]
    ev = [(rng.exponential(think), i, 0, -1) for i in range(n)]   # (t, seq, client, station)
    heapq.heapify(ev)
    seq = n
    done, t0, t = 0, None, 0.0

    def push(time, client, st):
        nonlocal seq
        seq += 1
        heapq.heappush(ev, (time, seq, client, st))

    def arrive(time, client, st):
        if busy[st] < cores[st]:
            busy[st] += 1
            push(time + demands[st], client, st)
        else:
            queue[st].append(client)

    while done < reads:
        t, _, client, st = heapq.heappop(ev)
        if st < 0:                       # think over: the first station
            arrive(t, client, 0)
            continue
        busy[st] -= 1                    # service over at station st
        if queue[st]:
            busy[st] += 1
            push(t + demands[st], queue[st].popleft(), st)
        if st + 1 < k:
            arrive(t, client, st + 1)
        else:
            done += 1
            if done == reads // 5:
                t0 = t
            push(t + rng.exponential(think), client, -1)
    return (reads - reads // 5) / (t - t0)


@pytest.mark.parametrize("n", [4, 12, 24, 64])
def test_raft_log_path_mean_value_form_against_its_event_form(n):
    """A Raft read as the Go model has it (read 50 us, a message half a read's
    exchange, 2-core nodes, 400 us of hops and client): the mean-value loop
    against a seeded simulation. The leader's pool (the read and an exchange
    with each follower, 150 us on 2 cores) caps the loop at 13.3 Kops."""
    path = read_path_stations("log", 50.0, 2, replicas=3, msg=25.0)
    sim = _simulate_loop(n, 400.0, path.demands, path.cores, 20000, np.random.default_rng(7 + n))
    mva = closed_loop_scv(n, 400.0, path.demands, path.cores, 0.0).throughput
    assert mva == pytest.approx(sim, rel=0.06)
    cap = 2 / 150.0
    assert mva <= cap * (1 + 1e-9) and sim <= cap * 1.01
    if n == 64:
        assert sim == pytest.approx(cap, rel=0.02)
