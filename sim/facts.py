"""Qualitative facts of docs/domain.md section 3, reproduced by the simulator.

``python -m sim.facts [--scale X] [--engine fast] [--[no-]progress]`` prints
each fact with its figures and units, then the memtable rows of
data/farreach_tuning.csv (T36, T38, T39, T47): simulated and analytic
throughput next to the measured MOPS. Progress (simulated seconds done of
the total, with an ETA) goes to stderr on a terminal; Ctrl-C keeps the facts
printed so far, adds ``PARTIAL: interrupted after X of Y facts`` and exits
with code 130. tests/sim/test_facts.py asserts the direction of every fact
through the same functions (with shorter horizons).

Facts (each a function returning a dict of figures):

* :func:`few_clients` -- too few client threads leave the servers' wait
  above the receive floor;
* :func:`loss_and_timeout` -- many clients with small receive buffers lose
  packets, and a large timeout then costs throughput;
* :func:`false_positives` -- a timeout near the response time causes false
  positives (duplicate replies);
* :func:`memtable_stall` -- small memtables under heavy writes stall;
* :func:`data_decay` -- more data makes throughput decay over the run.

The first four simulate the first seconds of their runs (their effects are
there from the start); the data decay and the tuning rows simulate whole
runs (their runs' queries from the loaded database, as the analytic solver
by phases predicts them).
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("sim.facts:main")

import csv
import math
from pathlib import Path

import numpy as np

from model.profile import Profile
from model.scenario import Scenario

from .run import simulate
from runio.inputs import load_profile

ROOT = Path(__file__).resolve().parents[1]


def default_profile() -> Profile:
    """The embedded testbed profile."""
    return load_profile("tofino-testbed")


#: called with the simulated seconds of every finished simulation (main's progress bar)
_on_simulated = None


def _sim(sc, pf, seconds, seed=1, engine="fast", **kw):
    """``sc`` simulated: its first ``seconds``, or (None) its whole run."""
    p = simulate(sc, pf, seconds=seconds, seed=seed, engine=engine, progress=False, **kw)
    if p.details.get("interrupted"):
        # a fact from a cut-short simulation would be wrong: stop the whole run
        raise KeyboardInterrupt
    if _on_simulated is not None:
        _on_simulated(p.details.get("simulated_s", seconds or 0.0))
    return p


def _min_wait(p) -> float:
    return min(s.wait_us for s in p.servers if s.share > 0)


#: The scenarios of the facts, as changes to the embedded default (the parity
#: table, ``python -m sim.parity``, runs every one of them through both solvers).
SCENARIOS: dict[str, dict] = {
    "16 clients": {"clients.threads": 16},
    "1024 clients": {},
    "4096 clients, 32 KiB buffers, timeout 1000 ms": {"clients.threads": 4096,
                                                      "servers.rcvbuf_kb": 32},
    "4096 clients, 32 KiB buffers, timeout 20 ms": {"clients.threads": 4096,
                                                    "servers.rcvbuf_kb": 32,
                                                    "clients.timeout_ms": 20.0},
    "4096 clients, 16 MiB buffers": {"clients.threads": 4096, "servers.rcvbuf_kb": 16384},
    "timeout 5 ms": {"clients.timeout_ms": 5.0},
    # write-only traffic, WAL off, a 1 MiB L1 (little L0->L1 compaction):
    # only the flush/stall mechanism acts
    "write-only, 0.125 MiB memtables, flushnum 1, maxnum 2": {
        "workload.read_ratio": 0.0, "storage.wal": False, "storage.memtable_mb": 0.125,
        "storage.flushnum": 1, "storage.maxnum": 2, "storage.l1_mb": 1.0},
    "write-only, 64 MiB memtables": {"workload.read_ratio": 0.0, "storage.wal": False},
    # WAL off, so WAL-switch dips don't mask the trend; 16 MiB receive buffers,
    # so no request is lost and no thread sleeps out a 1 s timeout (the first
    # second of a lossy rack falls as more of its threads fall asleep)
    "16 MiB memtables, 10M queries": {"storage.wal": False, "storage.memtable_mb": 16.0,
                                      "storage.flushnum": 2, "storage.maxnum": 8,
                                      "servers.rcvbuf_kb": 16384},
    "16 MiB memtables, 100M queries": {"storage.wal": False, "storage.memtable_mb": 16.0,
                                       "storage.flushnum": 2, "storage.maxnum": 8,
                                       "servers.rcvbuf_kb": 16384, "workload.queries_m": 100.0},
}

#: The memtable rows of data/farreach_tuning.csv the facts compare with.
TUNING_IDS = ("T36", "T38", "T39", "T47")


def scenario(name: str) -> Scenario:
    return Scenario.default().updated(SCENARIOS[name])


def tuning_scenarios() -> dict[str, tuple[Scenario, dict]]:
    """id -> (scenario, CSV row) of the tuning rows the facts use."""
    from runio.farreach_kinds import farreach_scenario
    out = {}
    with open(ROOT / "data" / "farreach_tuning.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["id"] in TUNING_IDS:
                out[row["id"]] = (farreach_scenario(row), row)
    return out


def few_clients(pf: Profile, seconds: float = 2.0, engine: str = "fast") -> dict:
    few = _sim(scenario("16 clients"), pf, seconds, engine=engine)
    many = _sim(scenario("1024 clients"), pf, seconds, engine=engine)
    return {"floor_us": pf["recv_floor_us"],
            "clients_few": 16, "min_wait_few_us": _min_wait(few), "mops_few": few.throughput_mops,
            "clients_many": 1024, "min_wait_many_us": _min_wait(many),
            "mops_many": many.throughput_mops}


def loss_and_timeout(pf: Profile, seconds: float = 4.0, engine: str = "fast") -> dict:
    # 4096 clients over 16 workers: ~256 requests per worker in the loop,
    # against a 32 KiB buffer (a few dozen packets).
    long_to = _sim(scenario("4096 clients, 32 KiB buffers, timeout 1000 ms"), pf, seconds,
                   engine=engine)
    short_to = _sim(scenario("4096 clients, 32 KiB buffers, timeout 20 ms"), pf, seconds,
                    engine=engine)
    big_buf = _sim(scenario("4096 clients, 16 MiB buffers"), pf, seconds, engine=engine)
    return {"clients": 4096, "buffer_pkts": long_to.details.get("buffer_pkts", math.nan),
            "pktloss_per_s_small_buf": long_to.details["pktloss_sim"] / seconds,
            "pktloss_per_s_big_buf": big_buf.details["pktloss_sim"] / seconds,
            "mops_small_buf_timeout_1000ms": long_to.throughput_mops,
            "mops_small_buf_timeout_20ms": short_to.throughput_mops,
            "mops_big_buf_timeout_1000ms": big_buf.throughput_mops}


def false_positives(pf: Profile, seconds: float = 2.0, engine: str = "fast") -> dict:
    # 5 ms: a few times the p99 latency, yet below the tail when queues swell
    small = _sim(scenario("timeout 5 ms"), pf, seconds, engine=engine)
    large = _sim(scenario("1024 clients"), pf, seconds, engine=engine)
    return {"latency_p99_us": large.details["latency_us_percentiles"]["p99"],
            "timeout_small_ms": 5.0, "false_pos_per_s_small": small.details["false_pos_sim"] / seconds,
            "timeout_large_ms": Scenario.default().clients.timeout_ms,
            "false_pos_per_s_large": large.details["false_pos_sim"] / seconds,
            "mops_small": small.throughput_mops, "mops_large": large.throughput_mops}


def memtable_stall(pf: Profile, seconds: float = 3.0, engine: str = "fast") -> dict:
    small = _sim(scenario("write-only, 0.125 MiB memtables, flushnum 1, maxnum 2"), pf, seconds,
                 engine=engine)
    large = _sim(scenario("write-only, 64 MiB memtables"), pf, seconds, engine=engine)
    return {"stall_frac_small": small.stall_fraction, "mops_small": small.throughput_mops,
            "flushes_small": small.details["flushes"],
            "stall_frac_large_64mib": large.stall_fraction, "mops_large_64mib": large.throughput_mops}


def _decay(p, frac: float = 0.25) -> float:
    """1 - the last ``frac`` of the run's throughput over its first (its
    timeline's chunks; a last partial chunk left out)."""
    rows = p.details["timeline"]
    if len(rows) > 2:
        rows = rows[:-1]
    x = np.array([r["throughput_mops"] for r in rows])
    k = max(1, int(round(len(x) * frac)))
    return float(1.0 - x[-k:].mean() / x[:k].mean())


def shrunk(sc: Scenario, scale: float) -> Scenario:
    """The run of ``sc`` in miniature: ``scale`` times its queries, memtables
    and L1, so it fills, flushes and compacts as many memtables, L0 files
    and L1s in ``scale`` times the time."""
    if scale == 1.0:
        return sc
    return sc.updated({"workload.queries_m": sc.workload.queries_m * scale,
                       "storage.memtable_mb": sc.storage.memtable_mb * scale,
                       "storage.l1_mb": sc.storage.l1_mb * scale})


def data_decay(pf: Profile, scale: float = 1.0, engine: str = "fast") -> dict:
    """Per-second throughput over a whole run, 10M vs 100M queries (16 MiB
    memtables, flushnum 2, maxnum 8, WAL off).

    Each run starts from the loaded database, memtables empty; the 100M run
    fills ten times the memtables, so its flushes and compactions add L0
    files and levels that every lookup then checks (``sst_probe_us`` each)
    and its throughput falls over the run. ``scale`` < 1 simulates the runs
    in miniature (:func:`shrunk`), in chunks of ``scale`` seconds.
    """
    out = {}
    for q, name in ((10.0, "16 MiB memtables, 10M queries"), (100.0, "16 MiB memtables, 100M queries")):
        p = _sim(shrunk(scenario(name), scale), pf, None, engine=engine, chunk_s=min(1.0, scale))
        tl = p.details["timeline"]
        out[f"mops_first_s_{q:g}M"] = tl[0]["throughput_mops"]
        out[f"mops_last_s_{q:g}M"] = tl[-1]["throughput_mops"]
        out[f"mops_run_{q:g}M"] = p.throughput_mops
        out[f"decay_{q:g}M"] = _decay(p)
    return out


def tuning_rows(pf: Profile, seconds: float | None = None, engine: str = "fast") -> list[dict]:
    """Simulated vs analytic vs measured MOPS for the memtable tuning rows:
    each whole 100M-query run (or its first ``seconds``)."""
    from model.solvers import predict
    rows = []
    for rid, (sc, row) in tuning_scenarios().items():
        ana = predict(sc, pf).throughput_mops
        p = _sim(sc, pf, seconds, engine=engine)
        rows.append({"id": rid, "system": row["system"], "memtable_mb": row["memtable_mb"],
                     "flushnum": row["flushnum"], "maxnum": row["maxnum"], "wal": row["wal"],
                     "measured_mops": float(row["mops"]), "sim_mops": p.throughput_mops,
                     "analytic_mops": ana, "sim_stall_frac": p.stall_fraction,
                     "sim_min_second_mops": min(r["throughput_mops"] for r in p.details["timeline"])})
    return rows


#: the facts main() prints, in order, with the simulated seconds each takes at
#: scale 1 (those of whole runs as the analytic solver predicts them: for the bar)
STEPS = (("few_clients", 2 * 2.0), ("loss_and_timeout", 3 * 4.0), ("false_positives", 2 * 2.0),
         ("memtable_stall", 2 * 3.0), ("data_decay", 6.0 + 52.0),
         ("tuning_rows", len(TUNING_IDS) * 100.0))


def main(argv=None) -> int:
    from runio.exits import ArgumentParser, at_least, run_command

    from runio.progress import add_flag
    ap = ArgumentParser(prog="python -m sim.facts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=at_least(0, exclusive=True), default=1.0,
                    help="multiply every horizon; below 1 the whole runs (data decay, tuning "
                         "rows) are simulated in miniature or cut to their first seconds")
    ap.add_argument("--engine", choices=("fast", "simpy"), default="fast")
    ap.add_argument("--profile", default=None)
    add_flag(ap)
    args = ap.parse_args(argv)
    return run_command(lambda: _print_facts(args))


def _print_facts(args) -> int:
    global _on_simulated
    from runio.progress import Interrupted, bar, wanted
    pf = load_profile(args.profile) if args.profile is not None else default_profile()
    s, e = args.scale, args.engine
    print(f"profile: {pf.name}; engine: {e}")
    done = 0
    with bar(sum(t for _, t in STEPS) * s, "facts", "sim-s", wanted(args.progress)) as b:
        _on_simulated = b.update
        try:
            for name, _ in STEPS:
                PRINTERS[name](pf, s, e)
                done += 1
        except KeyboardInterrupt:
            print(f"\nPARTIAL: interrupted after {done} of {len(STEPS)} facts")
            raise Interrupted(done, len(STEPS), "facts") from None
        finally:
            _on_simulated = None
    return 0


def _print_few_clients(pf, s, e):
    f = few_clients(pf, 2.0 * s, e)
    print("\n1. Too few clients leave wait above the floor")
    print(f"   {f['clients_few']} clients: min wait {f['min_wait_few_us']:.1f} us, "
          f"{f['mops_few']:.3f} MOPS; {f['clients_many']} clients: min wait "
          f"{f['min_wait_many_us']:.2f} us, {f['mops_many']:.3f} MOPS (floor {f['floor_us']:.2f} us)")


def _print_loss_and_timeout(pf, s, e):
    f = loss_and_timeout(pf, 4.0 * s, e)
    print("\n2. Many clients + small buffers lose packets; a large timeout then costs throughput")
    print(f"   4096 clients, 32 KiB buffers: {f['pktloss_per_s_small_buf']:.0f} packets/s lost "
          f"(16 MiB buffers: {f['pktloss_per_s_big_buf']:.0f} packets/s)")
    print(f"   throughput: timeout 1000 ms {f['mops_small_buf_timeout_1000ms']:.3f} MOPS, "
          f"timeout 20 ms {f['mops_small_buf_timeout_20ms']:.3f} MOPS, "
          f"big buffers {f['mops_big_buf_timeout_1000ms']:.3f} MOPS")


def _print_false_positives(pf, s, e):
    f = false_positives(pf, 2.0 * s, e)
    print("\n3. Small timeouts cause false positives")
    print(f"   p99 latency {f['latency_p99_us']:.0f} us; timeout {f['timeout_small_ms']:g} ms: "
          f"{f['false_pos_per_s_small']:.0f} false positives/s ({f['mops_small']:.3f} MOPS); "
          f"timeout {f['timeout_large_ms']:g} ms: {f['false_pos_per_s_large']:.0f}/s "
          f"({f['mops_large']:.3f} MOPS)")


def _print_memtable_stall(pf, s, e):
    f = memtable_stall(pf, 3.0 * s, e)
    print("\n4. Small memtables under heavy writes stall (write-only, WAL off)")
    print(f"   0.125 MiB memtable, flushnum 1, maxnum 2: stalled {100 * f['stall_frac_small']:.1f}% "
          f"of worker time, {f['flushes_small']:.0f} flushes, {f['mops_small']:.3f} MOPS; "
          f"64 MiB: stalled {100 * f['stall_frac_large_64mib']:.1f}%, {f['mops_large_64mib']:.3f} MOPS")


def _print_data_decay(pf, s, e):
    f = data_decay(pf, min(1.0, s), e)
    print("\n5. More data makes throughput decay over the run (whole runs"
          + (f", in miniature x{s:g}" if s < 1.0 else "") + ")")
    for q in ("10", "100"):
        print(f"   {q}M queries: {f[f'mops_run_{q}M']:.3f} MOPS over the run; first second "
              f"{f[f'mops_first_s_{q}M']:.3f} MOPS, last second {f[f'mops_last_s_{q}M']:.3f} "
              f"MOPS, decay {100 * f[f'decay_{q}M']:.1f}% (last vs first quarter)")


def _print_tuning_rows(pf, s, e):
    part = "whole runs" if s >= 1.0 else f"the first {20.0 * s:g} s of each run"
    print("\nMemtable tuning rows (data/farreach_tuning.csv, 16 servers, 1024 clients, 100M "
          f"queries; simulated: {part})")
    for r in tuning_rows(pf, None if s >= 1.0 else 20.0 * s, e):
        print(f"   {r['id']} {r['system']}, memtable {r['memtable_mb']} MiB, flushnum {r['flushnum']}, "
              f"maxnum {r['maxnum']}, WAL {r['wal']}: measured {r['measured_mops']:.3f} MOPS, "
              f"simulated {r['sim_mops']:.3f} MOPS (worst second {r['sim_min_second_mops']:.3f} MOPS, "
              f"stalled {100 * r['sim_stall_frac']:.1f}% of worker time), "
              f"analytic {r['analytic_mops']:.3f} MOPS")


PRINTERS = {name: globals()[f"_print_{name}"] for name, _ in STEPS}
