"""Speed of the simulator's engines on the default rack (16 servers, 1024 clients).

Runs the fast (compiled) engine for ``--seconds`` simulated seconds and the
SimPy reference engine for ``--simpy-seconds`` (shorter: it is slow), in
the same process, after one short warm-up run that compiles the kernel
(or loads it from numba's cache). Prints simulated requests per wall-second
and per CPU-second of each, and the fast/SimPy ratio. CPU time is the
honest single-core figure when other work shares the machine.

    python benchmarks/bench_sim.py [--seconds 10] [--simpy-seconds 0.1] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.scenario import Scenario  # noqa: E402
from sim.facts import default_profile  # noqa: E402
from sim.run import build_config, run_config  # noqa: E402


def timed(engine: str, seconds: float, seed: int, sc, pf) -> dict:
    cfg, dyn, _ = build_config(sc, pf)
    w0, c0 = time.perf_counter(), time.process_time()
    r = run_config(cfg, seconds, seed=seed, engine=engine, dynamics=dyn)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"requests": r.done, "wall_s": wall, "cpu_s": cpu, "mops": r.done / r.span_us,
            "per_wall_s": r.done / wall, "per_cpu_s": r.done / cpu}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="simulated seconds, fast engine")
    ap.add_argument("--simpy-seconds", type=float, default=0.1, help="simulated seconds, SimPy engine")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    sc, pf = Scenario.default(), default_profile()
    w0 = time.perf_counter()
    timed("fast", 0.01, args.seed, sc, pf)
    print(f"profile {pf.name}; kernel ready in {time.perf_counter() - w0:.1f} s (compile or cache load)")
    fast = timed("fast", args.seconds, args.seed, sc, pf)
    simpy = timed("simpy", args.simpy_seconds, args.seed, sc, pf)
    for name, r, s in (("fast", fast, args.seconds), ("simpy", simpy, args.simpy_seconds)):
        print(f"{name:5}: {s:g} simulated s, {r['requests']:.0f} requests, {r['mops']:.3f} MOPS simulated; "
              f"wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s -> "
              f"{r['per_wall_s']:.3g} requests/wall-s, {r['per_cpu_s']:.3g} requests/CPU-s")
    print(f"rate: {fast['per_wall_s']:.3g} requests/s (wall), {fast['per_cpu_s']:.3g} requests/s (CPU); "
          f"fast/simpy ratio {fast['per_wall_s'] / simpy['per_wall_s']:.0f}x (wall), "
          f"{fast['per_cpu_s'] / simpy['per_cpu_s']:.0f}x (CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
