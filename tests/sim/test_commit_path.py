"""TransactionDB's commit path (model.rack.service): one commit at a time per machine.

A write whose service ended waits, holding its worker, for its machine's
commit lock (FIFO), holds it for an exponential time of mean ``c`` and only
then completes. Reads never commit. Checked on bare configurations whose
services are all but instant, so the commit path is the only thing that
takes time, against its arithmetic:

* k busy writers on one machine keep the lock busy: writes complete at 1/c,
  and each spends k c on the path (Little's law: k writers always there);
* the lock is per machine: two machines, twice the writes;
* one writer alone never waits: its write takes service + c;
* write-backs of the control plane commit too (an open M/M/1).
"""

import math

import numpy as np
import pytest

from sim.config import SimConfig
from sim.run import run_config

C = 10.0            # mean commit time, us


def writers(k, commit=C, service=0.01, clients=256, machine=None, write_frac=1.0, **kw):
    """k one-slot workers (one machine unless ``machine`` says), clients that
    only write (``write_frac``), services of mean ``service``."""
    machine = np.zeros(k, dtype=np.int64) if machine is None else np.asarray(machine)
    return SimConfig(n_clients=clients, station_probs=np.full(k, 1.0 / k),
                     service_mean_us=np.full(k, float(service)), write_frac=write_frac,
                     send_us=1.0, miss_rtt_us=2.0, txn_commit_us=commit,
                     station_machine=machine, machines=int(machine.max()) + 1, **kw)


def batch_stats(res, key):
    x = np.array([row[key] for row in res.timeline])
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


@pytest.mark.parametrize("engine,seconds", [("fast", 2.0), ("simpy", 0.2)])
def test_busy_writers_of_a_machine_are_capped_at_one_commit_at_a_time(engine, seconds):
    k = 4
    res = run_config(writers(k), seconds, seed=1, engine=engine, chunk_s=seconds / 10)
    x, se = batch_stats(res, "throughput_mops")
    assert x == pytest.approx(1.0 / C, rel=0.02)
    assert abs(x - 1.0 / C) <= 4 * se + 2e-3 / C
    # every write waits for the other k - 1 and commits: k c on the path
    per_write = res.commit.sum() / res.writes.sum()
    assert per_write == pytest.approx(k * C, rel=0.03)
    # waiting and committing are the worker's busy time (and so process time)
    assert np.all(res.busy / res.span_us > 0.99)
    assert res.busy.sum() == pytest.approx(res.commit.sum() + 0.01 * res.compl.sum(), rel=0.01)


def test_each_machine_has_its_own_commit_path():
    res = run_config(writers(4, machine=[0, 0, 1, 1]), 2.0, seed=2, chunk_s=0.2)
    x, _ = batch_stats(res, "throughput_mops")
    assert x == pytest.approx(2.0 / C, rel=0.02)
    assert res.commit.sum() / res.writes.sum() == pytest.approx(2 * C, rel=0.03)


@pytest.mark.parametrize("engine,seconds", [("fast", 2.0), ("simpy", 0.3)])
def test_a_lone_writer_takes_its_service_plus_the_commit(engine, seconds):
    s = 5.0
    res = run_config(writers(1, service=s, clients=8), seconds, seed=3, engine=engine,
                     chunk_s=seconds / 10)
    n = res.compl[0]
    # a write's time at the worker: its service and its commit, no wait
    se = math.sqrt(s * s + C * C) / math.sqrt(n)
    assert res.busy[0] / n == pytest.approx(s + C, abs=4 * se)
    assert res.commit[0] / res.writes[0] == pytest.approx(C, abs=4 * C / math.sqrt(n))
    x, bse = batch_stats(res, "throughput_mops")
    assert abs(x - 1.0 / (s + C)) <= 4 * bse + 0.005 / (s + C)
    # the notes' process time includes it
    assert res.timeline[-1]["process_us_0"] == pytest.approx(s + C, rel=0.1)


def test_reads_never_commit():
    # no writes: the commit path is never used, and the run is the one
    # without it, draw for draw
    cfg = dict(service=5.0, clients=16, write_frac=0.0)
    on = run_config(writers(2, **cfg), 0.5, seed=4).totals
    off = run_config(writers(2, commit=0.0, **cfg), 0.5, seed=4).totals
    for key in on:
        np.testing.assert_array_equal(on[key], off[key], err_msg=key)
    assert on["commit"].sum() == 0.0
    # half writes: the reads' part of the busy time is their service alone
    res = run_config(writers(2, service=5.0, clients=16, write_frac=0.5), 2.0, seed=5)
    assert res.busy.sum() - res.commit.sum() == pytest.approx(5.0 * res.compl.sum(), rel=0.02)
    assert res.commit.sum() / res.writes.sum() >= C * 0.97


def test_write_backs_commit_too():
    # an open stream of write-backs to one worker, service ~0: worker and
    # commit path together are an M/M/1 of mean C (plus 0.01) at load 0.5
    lam = 0.5 / C
    cfg = SimConfig(n_clients=0, station_probs=np.array([1.0]), service_mean_us=np.array([0.01]),
                    open_rate_per_us=lam, open_write=True, txn_commit_us=C)
    res = run_config(cfg, 4.0, seed=6, chunk_s=0.4)
    mean, se = batch_stats(res, "latency_us")
    want = (C + 0.01) / (1.0 - lam * (C + 0.01))
    assert abs(mean - want) <= 4 * se + 0.01 * want, (mean, se, want)
    assert res.writes[0] == res.open_done
