"""Analytic solver against the simulator, regime by regime.

``python -m sim.parity [--seconds S] [NAME ...]`` prints, for each regime,
throughput and per-server wait and process time from the analytic solver
and the fast simulator, with their relative differences, and the client
latency's p50, p95 and p99 (model.solvers.latency_tail against the
simulator's histogram). The regimes are
the ones where the mechanisms matter (loss and timeouts, WAL switches,
write stalls, oversubscribed cores, too few clients) and every scenario of
``python -m sim.facts``. tests/parity/ asserts the bounds of issue 11 on
them (10 % on throughput, 15 % on per-server wait and process time);
docs/model.md lists the cases that still miss, with their size and cause.

Both solve the same finite run: the regime's rack over the queries the
analytic solver says take ``--seconds`` (:func:`run_of`), from the run's
first state (the loaded database, memtables empty). The write path's own
phase kinds (stops, slowdowns, flushes, compaction) are
:mod:`sim.parity_runs`'.

The simulator defines what a mechanism means: when the two disagree, the
mean-value form is what needs work.
"""

from __future__ import annotations

if __name__ == "__main__":   # the command: signals handled before the imports below
    from runio.launch import launch
    launch("sim.parity:main")

import math
from dataclasses import dataclass, replace

import numpy as np

from runio.exits import ArgumentParser, at_least, run_command
from model.errors import InputError
from model.prediction import Prediction
from model.profile import Profile
from model.rack import RackSpec, compile_rack
from model.scenario import Scenario
from model.solvers.analytic import AnalyticSolver, solve
from runio.inputs import load_profile

SMALL = {"servers.count": 4, "clients.threads": 64}

#: name -> scenario changes from the embedded default
REGIMES: dict[str, dict] = {
    "default": {},
    "nocache": {"switch.cache": False},
    "4 servers": {"servers.count": 4},
    "32 servers": {"servers.count": 32},
    "1 MiB memtable": {"storage.memtable_mb": 1.0},
    "5 ms timeout": {"clients.timeout_ms": 5.0},
    "4096 clients, 32 KiB buffers": {"clients.threads": 4096, "servers.rcvbuf_kb": 32},
    # the engines' own mechanism scenarios (tests/sim/test_sim_engines.py)
    "loss + timeouts": {**SMALL, "clients.threads": 512, "servers.rcvbuf_kb": 16,
                        "clients.timeout_ms": 0.4},
    # the stall scenarios keep a 1 MiB L1 (a small L0->L1 compaction for their
    # tiny memtables), with the testbed's own flush and compaction rates
    "flush stalls": {**SMALL, "workload.read_ratio": 0.0, "storage.wal": False,
                     "storage.memtable_mb": 0.25, "storage.flushnum": 1, "storage.maxnum": 2,
                     "storage.l1_mb": 1.0},
    "WAL switch + slowdown": {**SMALL, "workload.read_ratio": 0.0, "storage.wal": True,
                              "storage.wal_bytes_per_sync_mb": 0.01, "storage.memtable_mb": 0.0625,
                              "storage.flushnum": 2, "storage.maxnum": 5, "storage.l1_mb": 1.0},
    "oversubscribed cores": {**SMALL, "servers.cores": 1},
}


def regimes() -> dict[str, Scenario]:
    """Every regime's scenario: the ones above, every scenario of ``python -m
    sim.facts`` and its tuning rows (the lab's rack, from the data file)."""
    from . import facts
    out = {name: Scenario.default().updated(ch) for name, ch in REGIMES.items()}
    for name in facts.SCENARIOS:
        out[f"facts: {name}"] = facts.scenario(name)
    for rid, (sc, _row) in facts.tuning_scenarios().items():
        out[f"facts: {rid}"] = sc
    return out


#: Regimes whose outcome is itself random: a handful of long blocks per run
#: (WAL switches, and with small buffers the drops behind them), so where they
#: fall decides a run's throughput and waits. With 64 MiB memtables a 16- or
#: 32-server rack switches memtables about once per worker in 8 s. Each is
#: compared with the mean over these seeds: throughput, and each worker's wait
#: and process time.
SEEDS4 = (1, 2, 3, 4)
RANDOM_OUTCOME = {"5 ms timeout": SEEDS4, "facts: timeout 5 ms": SEEDS4,
                  "WAL switch + slowdown": SEEDS4,
                  "default": SEEDS4, "facts: 1024 clients": SEEDS4, "32 servers": SEEDS4,
                  "4096 clients, 32 KiB buffers": SEEDS4,
                  "facts: 4096 clients, 32 KiB buffers, timeout 1000 ms": SEEDS4,
                  "facts: T36": SEEDS4}


@dataclass
class Comparison:
    name: str
    analytic: Prediction
    sim: Prediction
    sim_more: tuple[Prediction, ...] = ()        # further seeds, when the outcome is random

    @staticmethod
    def _rel(a: float, b: float) -> float:
        if not (math.isfinite(a) and math.isfinite(b)):
            return 0.0 if a == b else math.inf
        return abs(a - b) / abs(b) if b != 0 else (0.0 if a == 0 else math.inf)

    @property
    def sim_runs(self) -> tuple[Prediction, ...]:
        return (self.sim, *self.sim_more)

    @property
    def sim_throughput(self) -> float:
        """The simulator's throughput: its mean over the seeds of a random outcome."""
        return float(np.mean([r.throughput_mops for r in self.sim_runs]))

    @property
    def throughput_diff(self) -> float:
        return self._rel(self.analytic.throughput_mops, self.sim_throughput)

    def percentile_diff(self, key: str) -> float:
        """Relative difference of a client latency percentile (``p50``,
        ``p95``, ``p99``): the analytic form (model.solvers.latency_tail)
        against the simulators' mean over the seeds."""
        sims = [r.details.get("latency_us_percentiles", {}).get(key, math.nan)
                for r in self.sim_runs]
        sims = [v for v in sims if math.isfinite(v)]
        a = self.analytic.details.get("latency_us_percentiles", {}).get(key, math.nan)
        return self._rel(a, float(np.mean(sims))) if sims else (0.0 if not math.isfinite(a)
                                                                 else math.inf)

    def server_diff(self, field: str) -> float:
        """Largest relative difference of a per-server field over the busy workers.

        Workers with the same share are exchangeable: the analytic value is the
        expectation for each of them, so it is compared with the simulator's
        mean over that group (a single simulated worker's wait carries the
        noise of its own queue's slow fluctuations, several percent of a
        2 us wait over a few seconds).
        """
        busy = sorted((s.share, i) for i, s in enumerate(self.sim.servers) if s.share > 0)
        groups: list[list[int]] = []
        for share, i in busy:            # runs of shares within 5 % of the run's first
            if groups and share <= self.sim.servers[groups[-1][0]].share * 1.05:
                groups[-1].append(i)
            else:
                groups.append([i])
        worst = 0.0
        for members in groups:
            sim_vals = [getattr(run.servers[i], field) for run in self.sim_runs for i in members]
            sim_vals = [v for v in sim_vals if math.isfinite(v)]
            if not sim_vals:
                continue
            sim_mean = float(np.mean(sim_vals))
            for i in members:
                worst = max(worst, self._rel(getattr(self.analytic.servers[i], field), sim_mean))
        return worst


def run_of(spec: RackSpec, seconds: float) -> RackSpec:
    """``spec`` over the run the analytic solver says takes about ``seconds``:
    its throughput over the scenario's run times ``seconds`` queries (the
    scenario's own when fewer)."""
    x = solve(spec).throughput_mops
    if not (x > 0 and math.isfinite(x)):
        return spec
    return replace(spec, queries=min(spec.queries, max(1.0, x * seconds * 1e6)))


def compare(name: str, profile: Profile, *, seconds: float = 3.0, seed: int = 1,
            scenario: Scenario | None = None) -> Comparison:
    """Both solvers on the regime's run of about ``seconds`` (:func:`run_of`);
    the simulator over the seeds of :data:`RANDOM_OUTCOME` where its outcome
    is random."""
    from .run import FastSimulator
    sc = scenario if scenario is not None else regimes()[name]
    spec = run_of(compile_rack(sc, profile), seconds)
    first = FastSimulator(None, seed).solve(spec)
    more = tuple(FastSimulator(None, k).solve(spec)
                 for k in RANDOM_OUTCOME.get(name, ()) if k != seed)
    return Comparison(name, AnalyticSolver().solve(spec), first, more)


def main(argv=None) -> int:
    ap = ArgumentParser(prog="python -m sim.parity", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="regimes (default: all)")
    ap.add_argument("--seconds", type=at_least(0, exclusive=True), default=3.0,
                    help="each regime's run: the queries the analytic solver says take this "
                         "many seconds")
    ap.add_argument("--profile", default="tofino-testbed")
    args = ap.parse_args(argv)

    def action() -> int:
        pf = load_profile(args.profile)
        all_regimes = regimes()
        names = args.names or list(all_regimes)
        unknown = [nm for nm in names if nm not in all_regimes]
        if unknown:
            raise InputError("unknown regime; without names python -m sim.parity runs (and "
                             "names) every regime",
                             field=unknown[0])
        print(f"{'regime':44} {'analytic':>9} {'sim':>9} {'diff':>6}   {'wait diff':>9} "
              f"{'proc diff':>9}   {'p50 diff':>8} {'p95 diff':>8} {'p99 diff':>8}   "
              "(MOPS; worst busy worker; client latency percentiles)")
        for nm in names:
            c = compare(nm, pf, seconds=args.seconds, scenario=all_regimes[nm])
            print(f"{nm:44} {c.analytic.throughput_mops:9.4f} {c.sim_throughput:9.4f} "
                  f"{100 * c.throughput_diff:5.1f}%   {100 * c.server_diff('wait_us'):8.1f}% "
                  f"{100 * c.server_diff('process_us'):8.1f}%   "
                  + " ".join(f"{100 * c.percentile_diff(k):7.1f}%" for k in ("p50", "p95", "p99")),
                  flush=True)
        return 0

    return run_command(action)
