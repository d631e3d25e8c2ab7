"""The run's write path: the analytic solver by phases against the simulator, phase kind by kind.

``python -m sim.parity_runs [--seeds N] [KIND ...]`` prints, for each kind
of phase a run can go through, the analytic solver's
(:mod:`model.solvers.trajectory`) and the fast simulator's answer for the
same whole run (its queries from its first state): throughput, and per
worker what RocksDB's LOG would show (memtables sealed, flushes,
compactions, seconds stopped and slowed). tests/parity/test_write_path.py
holds them together.

The racks are small, so that every kind plays out in a run of 0.05-1 M
queries: 4 workers, one per machine (a machine's background pools shared by
one instance: no instance waits for another's compaction), 64 client
threads, a plain DB (no TransactionDB commit path), the WAL off,
memtables of 0.0625-0.25 MiB, a 1 MiB L1, 1 M records, and the test profile
(:func:`test_profile`: RocksDB's jobs fast enough to keep up, or slow where
a kind needs them to fall behind). The kinds:

* ``never flushes``: fewer memtables filled than ``flushnum``;
* ``flushes``: flushes keep up (``maxnum`` never near);
* ``slows``: ``maxnum`` > 3, reached one less: writes delayed, never stopped;
* ``stops``: ``maxnum`` 2 reached: writes stopped until a flush ends;
* ``L0 slowdown``: low L0 triggers and slow compaction: delayed on L0
  files, never stopped;
* ``L0 stop``: the same with the stop trigger one file above the
  slowdown's: delayed and stopped on L0 files;
* ``long run, compacts``: the loaded database, a run ten times longer,
  flushes and compactions all along.
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("sim.parity_runs:main")

from dataclasses import dataclass

import numpy as np

from model.prediction import Prediction
from model.profile import Profile
from model.rack import RackSpec, compile_rack
from model.scenario import Scenario
from model.solvers.analytic import solve
from runio.exits import ArgumentParser, at_least, run_command
from runio.inputs import load_profile

__all__ = ["BASE", "TEST_PROFILE", "KINDS", "KindComparison", "compare", "rack",
           "test_profile", "main"]

#: what every kind's rack has (a change to the embedded default)
BASE = {"servers.count": 4, "servers.machines": 4, "clients.threads": 64,
        "storage.wal": False, "storage.db": "normal", "workload.records": 1_000_000,
        "storage.l1_mb": 1.0, "storage.preloaded": False}

#: the test profile: the embedded testbed profile with RocksDB's jobs fast
#: (a 1 ms flush set-up; 20 MiB/s a flush or compaction job; a 200 MiB/s disk)
TEST_PROFILE = {"flush_fixed_ms": 1.0, "flush_mbps": 20.0, "compaction_mbps": 20.0,
                "disk_mbps": 200.0}

#: kind -> (scenario changes to BASE, profile changes to TEST_PROFILE)
KINDS: dict[str, tuple[dict, dict]] = {
    "never flushes": ({"storage.memtable_mb": 0.25, "storage.flushnum": 8, "storage.maxnum": 10,
                       "workload.queries_m": 0.05}, {}),
    "flushes": ({"storage.memtable_mb": 0.125, "storage.flushnum": 1, "storage.maxnum": 4,
                 "workload.queries_m": 0.3}, {}),
    "slows": ({"storage.memtable_mb": 0.0625, "storage.flushnum": 2, "storage.maxnum": 5,
               "workload.queries_m": 0.3, "workload.read_ratio": 0.0,
               "storage.delayed_write_rate_mbps": 2.0}, {"flush_mbps": 5.0}),
    "stops": ({"storage.memtable_mb": 0.0625, "storage.flushnum": 1, "storage.maxnum": 2,
               "workload.queries_m": 0.3, "workload.read_ratio": 0.0}, {"flush_mbps": 2.0}),
    "L0 slowdown": ({"storage.memtable_mb": 0.0625, "storage.flushnum": 1, "storage.maxnum": 4,
                     "workload.queries_m": 0.3, "workload.read_ratio": 0.0,
                     "storage.l0_files": 2, "storage.l0_slowdown": 3, "storage.l0_stop": 8},
                    {"compaction_mbps": 8.0}),
    "L0 stop": ({"storage.memtable_mb": 0.0625, "storage.flushnum": 1, "storage.maxnum": 4,
                 "workload.queries_m": 0.3, "workload.read_ratio": 0.0,
                 "storage.l0_files": 2, "storage.l0_slowdown": 3, "storage.l0_stop": 4},
                {"compaction_mbps": 8.0}),
    "long run, compacts": ({"storage.memtable_mb": 0.25, "storage.flushnum": 1,
                            "storage.maxnum": 4, "workload.queries_m": 1.0,
                            "storage.preloaded": True}, {}),
}

#: per-worker counts compared one by one, and times compared over exchangeable workers
COUNTS = ("memtables", "flushes")
TIMES = ("stop_s", "slow_s")


def test_profile(changes: dict | None = None) -> Profile:
    """The embedded testbed profile with :data:`TEST_PROFILE` (and ``changes``)."""
    return load_profile("tofino-testbed").with_values(
        {**TEST_PROFILE, **(changes or {})}, source="sim.parity_runs test profile")


def rack(kind: str) -> RackSpec:
    sc_changes, pf_changes = KINDS[kind]
    sc = Scenario.default().updated({**BASE, **sc_changes})
    return compile_rack(sc, test_profile(pf_changes))


@dataclass
class KindComparison:
    kind: str
    analytic: Prediction
    sims: tuple[Prediction, ...]          # one per seed

    @property
    def sim_throughput(self) -> float:
        return float(np.mean([s.throughput_mops for s in self.sims]))

    @property
    def throughput_diff(self) -> float:
        """The analytic throughput over the simulator's mean, less 1."""
        return self.analytic.throughput_mops / self.sim_throughput - 1.0

    def counts(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Per worker: the analytic count and the simulator's mean over its seeds."""
        a = np.asarray(self.analytic.details["lsm"][key], dtype=float)
        s = np.mean([np.asarray(p.details["lsm"][key], dtype=float) for p in self.sims], axis=0)
        return a, s

    def count_diff(self, key: str) -> float:
        """The largest per-worker difference of a count (memtables, flushes)
        from the simulator's mean over its seeds (a seed's own count varies
        with the writes the draw sends each worker: about 0.6 of a memtable
        either way in a run of 0.3 M queries here)."""
        a, s = self.counts(key)
        return float(np.max(np.abs(a - s))) if len(a) else 0.0

    def time_diff(self, key: str, floor_s: float = 0.1) -> float:
        """Relative difference of a time (stop_s, slow_s) per worker,
        averaged over the workers of equal share (within 5 %: exchangeable,
        so which of them a chaotic stretch falls on is chance); 0 where both
        are under ``floor_s``."""
        a, s = self.counts(key)
        shares = np.asarray([w.share for w in self.analytic.servers])
        worst = 0.0
        for members in _groups(shares):
            ma, ms = float(np.mean(a[members])), float(np.mean(s[members]))
            if max(ma, ms) < floor_s:
                continue
            worst = max(worst, abs(ma - ms) / max(ms, 1e-12))
        return worst


def _groups(shares: np.ndarray) -> list[list[int]]:
    """Workers in runs of shares within 5 % of the run's first."""
    order = np.argsort(shares)
    groups: list[list[int]] = []
    for i in order:
        if groups and shares[i] <= shares[groups[-1][0]] * 1.05:
            groups[-1].append(int(i))
        else:
            groups.append([int(i)])
    return groups


def compare(kind: str, seeds: tuple[int, ...] = (1, 2, 3)) -> KindComparison:
    """Both engines on the kind's whole run (the simulator over ``seeds``)."""
    from .run import FastSimulator
    spec = rack(kind)
    return KindComparison(kind, solve(spec), tuple(FastSimulator(None, k).solve(spec)
                                                    for k in seeds))


def _fmt(v: np.ndarray) -> str:
    return "[" + " ".join(f"{x:.3g}" for x in v) + "]"


def main(argv=None) -> int:
    ap = ArgumentParser(prog="python -m sim.parity_runs", description=__doc__.split("\n\n")[0])
    ap.add_argument("kinds", nargs="*", help=f"phase kinds (default: all of {', '.join(KINDS)})")
    ap.add_argument("--seeds", type=at_least(1, int), default=3,
                    help="simulator seeds per kind (their mean is compared)")
    args = ap.parse_args(argv)

    def action() -> int:
        from model.errors import InputError
        unknown = [k for k in args.kinds if k not in KINDS]
        if unknown:
            raise InputError(f"unknown phase kind; the kinds are: {', '.join(KINDS)}",
                             field=unknown[0])
        for kind in args.kinds or list(KINDS):
            c = compare(kind, tuple(range(1, args.seeds + 1)))
            la, ls = c.analytic.details["lsm"], c.sims[0].details["lsm"]
            print(f"{kind}: analytic {c.analytic.throughput_mops:.4f} MOPS, simulator "
                  f"{c.sim_throughput:.4f} MOPS ({100 * c.throughput_diff:+.1f} %); run "
                  f"{la['run_s']:.3f} / {ls['run_s']:.3f} s, rack stopped {la['stopped_s']:.3f}"
                  f" / {ls['stopped_s']:.3f} s", flush=True)
            for key in (*COUNTS, "compactions", *TIMES):
                a, s = c.counts(key)
                diff = (f"largest difference {c.count_diff(key):.3g}" if key in COUNTS else
                        f"{100 * c.time_diff(key):.0f} % over equal-share workers"
                        if key in TIMES else "")
                print(f"   {key:12s} analytic {_fmt(a)}  simulator {_fmt(s)}  {diff}")
        return 0

    return run_command(action)
