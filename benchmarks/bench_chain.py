"""Racks whose workers can collapse (a timeout shorter than a full buffer's
service): the collapse chain's states solved compiled against the numpy
reference.

    python benchmarks/bench_chain.py [--repeat 3]

Each rack's analytic prediction (the centre, no interval) is solved in-process
with the compiled step for its collapsed states (the shipped setting,
``rack_step.USE_COMPILED``) and with the numpy reference (the baseline, same
run); it prints the median wall time of each over ``--repeat`` runs, their
ratio, the steps taken and the throughput of both. Then, once each, the
prediction with its 90 % interval (the centre and every sigma point, each
with its own chain), as ``python -m sim predict`` runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.intervals import predict_with_intervals  # noqa: E402
from model.profile import Profile  # noqa: E402
from model.rack import compile_rack  # noqa: E402
from model.scenario import Scenario  # noqa: E402
from model.solvers import analytic, rack_step  # noqa: E402

from bench_mva import median_of, setting  # noqa: E402  (this folder: the same medians)

RACKS = [
    ("16 servers, 1 ms timeout", {"clients.timeout_ms": 1.0}),
    ("128 servers, 5 ms timeout", {"servers.count": 128, "clients.timeout_ms": 5.0}),
    ("1,024 workers on 2 machines, 16,500 clients, 100 ms timeout",
     {"servers.count": 1024, "clients.threads": 16_500, "clients.timeout_ms": 100.0}),
]


def timed(fn, compiled: bool, repeat: int):
    with setting(rack_step, "USE_COMPILED", compiled):
        return median_of(fn, repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    prof = Profile.load("tofino-testbed")
    print(f"median of {args.repeat}; numpy = the baseline, measured in the same run")
    for name, changes in RACKS:
        sc = Scenario.default().updated(changes)
        spec = compile_rack(sc, prof)
        tc, pc = timed(lambda: analytic.solve(spec), True, args.repeat)
        tn, pn = timed(lambda: analytic.solve(spec), False, args.repeat)
        states = len(pc.details.get("collapsed_workers", []))
        print(f"{name}: chain of {states} states, {pc.details['iterations']} steps")
        print(f"  compiled {tc:7.2f} s   numpy {tn:7.2f} s   speed-up {tn / tc:5.1f}x   "
              f"{pc.throughput_mops:.6f} / {pn.throughput_mops:.6f} MOPS")
        ti, iv = timed(lambda: predict_with_intervals([sc], prof)[0], True, 1)
        print(f"  with its interval (compiled, once): {ti:.2f} s, "
              f"{iv.prediction.throughput_mops:.4f} MOPS ({iv.mops_lo:.4f}-{iv.mops_hi:.4f})")


if __name__ == "__main__":
    main()
