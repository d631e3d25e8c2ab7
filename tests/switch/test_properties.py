"""Protocol guarantees of the switch model under arbitrary interleavings.

Hypothesis drives the harness (tests/switch/harness.py) through client GET /
PUT / DEL, population, eviction with write-back, control-plane retries and
dropped, duplicated or reordered packets on every link, including delayed
and duplicated write-backs and LOADs. After each run the network is drained
and every key evicted; then:

* no acknowledged write is lost (the server holds the last write's value);
* every GET returned the latest value acknowledged before it was issued, or
  a newer one (checked online by the harness);
* the server never applied an older sequence number over a newer one.

With ``seq_check = evicted-only`` the server checks only write-backs, which
is only safe when every frame the switch sends a server, forwarded writes and
the control plane's LOADs and write-backs alike, arrives in the order sent
(one cable); that configuration runs with one FIFO path to the servers. A
write-back that overtakes a forwarded PUT loses a write (tested below).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.switch import DEL, GET, PUT, SwitchModel, server_of

from .harness import LINKS, Harness, Violation

# Two keys on different servers (range and hash partitioning, 2 servers):
# few keys make collisions between population, eviction and writes likely.
KEYS = [bytes([0x03] * 4) + bytes(12), bytes([0x93] * 4) + (1).to_bytes(12, "big")]

ACTION = st.tuples(
    st.sampled_from(["issue"] * 3 + ["deliver"] * 8 + [
        "retry", "drop", "dup", "populate", "populate", "evict", "tick", "reports"]),
    st.integers(0, 15), st.integers(0, 15), st.integers(0, 2))


def run(actions, **kw) -> Harness:
    h = Harness(KEYS, **kw)
    for name, a, b, c in actions:
        if name == "issue":
            h.issue(a % h.n_clients, KEYS[b % len(KEYS)], (GET, PUT, DEL)[c])
        elif name == "retry":
            h.retry(a % h.n_clients)
        elif name in ("deliver", "drop", "dup"):
            # pick among links that hold packets, so most steps do something
            busy = [link for link in LINKS if h.links[link]]
            if busy:
                getattr(h, name)(busy[a % len(busy)], b)
        elif name == "populate":
            h.populate(KEYS[b % len(KEYS)])
        elif name == "evict":
            h.evict(KEYS[b % len(KEYS)])
        elif name == "tick":
            h.tick()
        else:
            h.reports()
    h.finish_and_check()
    return h


# Derandomized: CI replays the same 400 examples every run, so a counterexample
# shows up as a change, not as a flaky stop. New ones are searched for on purpose
# (HYPOTHESIS_SEARCH=1 draws fresh examples) and, once found, kept below as cases.
SETTINGS = settings(max_examples=400, deadline=None, database=None,
                    derandomize=not os.environ.get("HYPOTHESIS_SEARCH"),
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.lists(ACTION, min_size=10, max_size=200), st.sampled_from(["range", "hash"]))
def test_disk_get_any_reordering(actions, partition):
    run(actions, partition=partition, seq_check="disk-get")


@SETTINGS
@given(st.lists(ACTION, min_size=10, max_size=200))
def test_evicted_only_with_ordered_data_link(actions):
    run(actions, seq_check="evicted-only", fifo_data=True)


# Found 2026-11-26 by a random draw of the property above, when the control
# plane's frames had a path of their own: a forwarded PUT (seq 1) waited on the
# data link while the key was populated, the client's retry of it hit the cache
# (seq 2), and the eviction's write-back overtook the forwarded PUT, which
# evicted-only does not check.
EVICT_OVERTAKES_PUT = [
    ("issue", 1, 0, 0), ("issue", 0, 1, 1), ("deliver", 0, 0, 0), ("deliver", 0, 0, 0),
    ("dup", 0, 0, 0), ("populate", 0, 1, 0), ("deliver", 1, 0, 0), ("deliver", 0, 0, 0),
    ("deliver", 14, 0, 0), ("retry", 0, 0, 0), ("deliver", 0, 0, 0), ("evict", 0, 1, 0)]

# The same race step by step, with a second write acknowledged before the
# eviction: "cp" is the control plane's path to the server.
OVERTAKE_STEPS = ("put", "c2s", "populate", "cp", "srv2cp", "retry", "c2s", "s2c",
                  "put", "c2s", "s2c", "evict", "cp", "srv2cp", "s2srv")


def _overtake(seq_check: str, cp_on_data_path: bool) -> Harness:
    h = Harness(KEYS, seq_check=seq_check, fifo_data=True, cp_on_data_path=cp_on_data_path)
    k = KEYS[1]
    for step in OVERTAKE_STEPS:
        if step == "put":
            h.issue(0, k, PUT)
        elif step == "retry":
            h.retry(0)
        elif step in ("populate", "evict"):
            getattr(h, step)(k)
        else:
            h.deliver(h.cp_path if step == "cp" else step)
    return h


def test_evicted_only_with_a_separate_control_path_loses_an_acknowledged_write():
    """Why evicted-only needs write-backs on the ordered data path: a forwarded
    PUT overtaken by a later write-back is applied, unchecked, over it."""
    with pytest.raises(Violation, match="seq 1 after 2"):
        run(EVICT_OVERTAKES_PUT, seq_check="evicted-only", fifo_data=True,
            cp_on_data_path=False)
    h = _overtake("evicted-only", cp_on_data_path=False)
    assert h.sw.counters.hits == 2            # the retry and the second write
    with pytest.raises(Violation, match="last acked write"):
        h.finish_and_check()


@pytest.mark.parametrize("seq_check,cp_on_data_path", [
    ("evicted-only", True),    # the write-back queues behind the forwarded PUT
    ("disk-get", False),       # the overtaken PUT is rejected as stale
])
def test_the_overtaking_write_back_is_safe_in_order_or_with_disk_checks(seq_check,
                                                                          cp_on_data_path):
    h = _overtake(seq_check, cp_on_data_path)
    h.finish_and_check()
    k = KEYS[1]
    assert h.servers[h.sw.server_for(k)].store[k][1] == h.history[k][-1]


# ---------------------------------------------------------------------------
# Deterministic scenarios: each rule of the protocol, and proof that the
# checker catches the bug the rule prevents.
# ---------------------------------------------------------------------------
class NoReplyGuard(SwitchModel):
    """The switch without the 'drop write replies that the LOAD missed' rule."""

    def _reply(self, frame):
        self.counters.replies_relayed += 1
        return [type(frame)(frame.packet, ("switch", 0), frame.dst)]


def _populate_race(switch_cls):
    """A PUT forwarded before population is applied after the LOAD read."""
    h = Harness(KEYS, switch_cls=switch_cls, n_clients=2)
    k = KEYS[0]
    h.issue(0, k, PUT)
    h.deliver("c2s")                 # forwarded, sits on s2srv
    h.populate(k)
    h.deliver("cp2srv")              # LOAD reads the old value
    h.deliver("srv2cp")              # entry VALID with the old value
    h.deliver("s2srv")               # now the PUT is applied
    h.deliver("srv2s")               # its reply passes the switch
    h.deliver("s2c")
    h.issue(1, k, GET)
    h.deliver("c2s")
    h.deliver("s2c")                 # answered from the cache
    h.finish_and_check()
    return h


def test_populate_race_is_guarded():
    h = _populate_race(SwitchModel)
    assert h.sw.counters.dropped_replies == 1
    assert h.sw.counters.hits >= 2   # the retried PUT and the GET hit the cache


def test_populate_race_without_guard_is_caught():
    with pytest.raises(Violation):
        _populate_race(NoReplyGuard)


def test_writeback_duplicate_and_delay_are_stale():
    h = Harness(KEYS)
    k = KEYS[1]
    h.populate(k)
    h.drain()
    h.issue(0, k, PUT)
    h.drain()
    assert h.sw.counters.hits == 1
    h.evict(k)
    h.dup("cp2srv")                  # the WB_PUT is duplicated ...
    h.deliver("cp2srv")              # ... one copy applied and acked
    h.deliver("srv2cp")
    assert not h.cp.cached()
    h.issue(0, k, PUT)               # newer write straight to the server
    h.drain()
    h.deliver("cp2srv")              # the delayed copy arrives last
    srv = h.servers[h.sw.server_for(k)]
    assert srv.store[k][1] == h.history[k][-1]
    h.finish_and_check()


def test_writes_blocked_while_evicting_reads_served():
    h = Harness(KEYS)
    k = KEYS[0]
    h.populate(k)
    h.drain()
    h.issue(0, k, PUT)
    h.drain()
    h.evict(k)                       # WB in flight, entry EVICTING
    h.issue(1, k, GET)
    h.deliver("c2s")
    assert h.links["s2c"] and h.links["s2c"][0].packet.value == h.history[k][-1]
    h.deliver("s2c")
    h.issue(1, k, DEL)
    h.deliver("c2s")
    assert h.sw.counters.blocked_writes == 1 and not h.links["s2srv"]
    h.finish_and_check()             # the retried DEL goes to the server
    assert h.servers[h.sw.server_for(k)].store[k][1] is None


def test_partition_table_matches_formula():
    import random
    rng = random.Random(7)
    for n in (1, 2, 3, 7, 32, 128):
        for mode in ("range", "hash"):
            sw = SwitchModel(n, mode)
            for _ in range(300):
                key = rng.randbytes(16)
                assert sw.server_for(key) == server_of(key, n, mode)
            edges = [(lo, hi) for lo, hi, _ in sw.partition_tbl]
            assert edges[0][0] == 0
            assert all(a[1] + 1 == b[0] for a, b in zip(edges, edges[1:]))
