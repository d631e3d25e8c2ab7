"""Analytic prediction of racks with very many clients: Schweitzer against exact.

    python benchmarks/bench_large.py [--repeat 3]

For each rack (the embedded default with more servers and clients) it solves
the prediction in-process, with the closed-network recursion past
``mva_core.N_EXACT`` clients approximated (the shipped setting) and with the
exact recursion forced (the baseline, same run), and prints the median wall
time of each over ``--repeat`` runs, their ratio and the throughput of each.

Then issue 12's rack of 65,536 clients on 4,096 workers (target: 10 ms warm),
whose exact recursion would take minutes: its warm prediction with worker
classes (the shipped setting, ``rack_step.LUMP_TOL``) against the same
prediction solving every worker (the baseline, same run), with the answers of
both, and against one Schweitzer solve of its bare closed network (the same
stations, shares and mean service, ``mva_core.approximate_batch``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.profile import Profile  # noqa: E402
from model.rack import compile_rack  # noqa: E402
from model.scenario import Scenario  # noqa: E402
from model.solvers import analytic, mva_core, rack_step  # noqa: E402

from bench_mva import median_of, setting  # noqa: E402  (this folder: the same medians)

RACKS = [(16, 65_536), (128, 131_072), (694, 217_962)]


def timed(spec, exact: bool, repeat: int) -> tuple[float, float]:
    with setting(mva_core, "N_EXACT", 10 ** 12 if exact else mva_core.N_EXACT):
        return median_of(lambda: analytic.solve(spec).throughput_mops, repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    prof = Profile.load("tofino-testbed")
    print(f"median of {args.repeat}; exact = the baseline, measured in the same run")
    print(f"{'servers':>8} {'clients':>9} {'exact s':>8} {'approx s':>9} {'speed-up':>9} "
          f"{'exact MOPS':>11} {'approx MOPS':>12}")
    for servers, clients in RACKS:
        sc = Scenario.default().updated({"servers.count": servers, "clients.threads": clients})
        spec = compile_rack(sc, prof)
        te, xe = timed(spec, True, args.repeat)
        ta, xa = timed(spec, False, args.repeat)
        print(f"{servers:>8} {clients:>9} {te:>8.2f} {ta:>9.2f} {te / ta:>8.1f}x "
              f"{xe:>11.4f} {xa:>12.4f}")
    sc = Scenario.default().updated({"servers.count": 4096, "clients.threads": 65_536})
    spec = compile_rack(sc, prof)

    def warm(lump_tol: float, repeat: int):
        with setting(rack_step, "LUMP_TOL", lump_tol):
            analytic.solve(spec)                            # warm
            return median_of(lambda: analytic.solve(spec), repeat)

    fast, pred = warm(rack_step.LUMP_TOL, max(args.repeat, 11))
    every, pred_every = warm(0.0, args.repeat)
    v = np.asarray(spec.placement.shares, dtype=float)[None, :]
    S = np.full_like(v, float(np.mean(analytic.svc_mech.run_average_cost(spec.service))))
    z = np.zeros_like(v)
    one, _ = median_of(lambda: mva_core.approximate_batch(v, S, S, z, z, z, np.array([30.0]),
                                                         np.array([65_536])),
                       max(args.repeat, 5))
    print(f"4,096 workers, 65,536 clients ({pred.details['iterations']} steps; target 10 ms warm):")
    print(f"  warm prediction, worker classes (shipped, LUMP_TOL {rack_step.LUMP_TOL}): "
          f"{fast * 1e3:.2f} ms, {pred.throughput_mops:.5f} MOPS, {pred.pktloss:,.0f} lost packets")
    print(f"  warm prediction, every worker (baseline, same run):          "
          f"{every * 1e3:.2f} ms, {pred_every.throughput_mops:.5f} MOPS, "
          f"{pred_every.pktloss:,.0f} lost packets")
    print(f"  speed-up {every / fast:.1f}x; one Schweitzer solve of the bare network "
          f"{one * 1e3:.2f} ms ({fast / one:.1f}x of it)")


if __name__ == "__main__":
    main()
