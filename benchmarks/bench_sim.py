"""Speed of the fast (compiled) simulator, against a minimal SimPy model (issue 12).

    python benchmarks/bench_sim.py [--seconds 4] [--simpy-seconds 0.05] [--repeat 3] [--seed 1] [--no-process]

Printed, each a median of ``--repeat`` runs measured in this process after one
short warm-up run that compiles the kernel (or loads it from numba's cache):

* baseline: the default rack's closed network (1024 client threads, 16 FIFO
  workers at their shares and mean service times, gamma service of the rack's
  CV, the send and round-trip delays) as a minimal SimPy model, against the
  fast engine on the same network: simulated requests per CPU-second of each,
  their ratio, and both simulated throughputs (the same network: they agree
  within the short SimPy run's noise and start-up transient);
* the fast engine on whole racks (every mechanism: RocksDB's write path,
  WAL blocks, timeouts, load factors), the first ``--seconds`` of their
  runs: the default scenario (target >= 10M requests per CPU-second), 512
  servers and 16384 clients (target: not below half the default's rate);
* the default rack's whole run (its 10M queries, from the loaded database),
  as ``python -m sim simulate`` runs it by default: CPU seconds;
* ``python -m sim simulate --seconds 2`` as a process: a user's first run
  (an empty compiled-code cache: numba compiles the kernel) and second run
  (target <= 1.5 s), against ``python -c pass``.

CPU time (``time.process_time``) is the honest single-core figure when other
work shares the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from runio.inputs import load_profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.rack import compile_rack  # noqa: E402
from model.scenario import Scenario  # noqa: E402
from sim.config import SimConfig  # noqa: E402
from sim.run import FastSimulator, run_config  # noqa: E402

RACKS = {
    "default (16 servers, 1024 clients)": {},
    "512 servers": {"servers.count": 512},
    "16384 clients": {"clients.threads": 16384},
}


def closed_network(cfg: SimConfig) -> SimConfig:
    """The rack's bare closed network: the same clients, stations, shares,
    delays and mean service (``service_mean_us`` holds the receive floor and
    the gap already; here they are not split off as a fixed part), none of the
    storage, loss or timeout mechanisms."""
    return SimConfig(n_clients=cfg.n_clients, station_probs=cfg.station_probs.copy(),
                     service_mean_us=cfg.service_mean_us.copy(), hit_ratio=cfg.hit_ratio, send_us=cfg.send_us,
                     hit_rtt_us=cfg.hit_rtt_us, miss_rtt_us=cfg.miss_rtt_us,
                     service_cv=cfg.service_cv, write_frac=0.0)


def simpy_closed(net: SimConfig, seconds: float, seed: int) -> tuple[int, float]:
    """The closed network as a minimal SimPy model: (requests done, span in us)."""
    import simpy
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    stations = [simpy.Resource(env, capacity=1) for _ in range(len(net.station_probs))]
    cum = np.cumsum(net.station_probs / net.station_probs.sum())
    shape = 1.0 / net.service_cv ** 2
    scale = net.service_mean_us / shape
    half = net.miss_rtt_us / 2.0
    done = [0]

    def client():
        while True:
            yield env.timeout(net.send_us)
            if rng.random() < net.hit_ratio:
                yield env.timeout(net.hit_rtt_us)
            else:
                i = min(int(np.searchsorted(cum, rng.random(), side="right")), len(cum) - 1)
                yield env.timeout(half)
                with stations[i].request() as req:
                    yield req
                    yield env.timeout(rng.gamma(shape, scale[i]))
                yield env.timeout(half)
            done[0] += 1

    for _ in range(net.n_clients):
        env.process(client())
    env.run(until=seconds * 1e6)
    return done[0], seconds * 1e6


def timed(fn, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        c0 = time.process_time()
        n, span_us = fn()
        runs.append((time.process_time() - c0, n, span_us))
    rates = [n / max(cpu, 1e-9) for cpu, n, _ in runs]
    return {"per_cpu_s": statistics.median(rates), "range": (min(rates), max(rates)),
            "mops": statistics.median(n / span for _, n, span in runs),
            "cpu_s": statistics.median(cpu for cpu, _, _ in runs)}


def fast_run(cfg: SimConfig, seconds: float, seed: int, dyn=None):
    def go():
        r = run_config(cfg, seconds, seed=seed, engine="fast", dynamics=dyn)
        return r.done, r.span_us
    return go


def whole_run(pf, args) -> None:
    """The default rack's whole run (queries_m of the default scenario) on the
    fast engine, as ``python -m sim simulate`` runs it: CPU seconds, median of
    ``--repeat``."""
    spec = compile_rack(Scenario.default(), pf)
    # a fresh config for every repeat (a run moves its dynamics), made before the clock
    fresh = [FastSimulator(None, args.seed).config(spec) for _ in range(args.repeat)]

    def go():
        cfg, dyn = fresh.pop()
        r = run_config(cfg, None, seed=args.seed, engine="fast", dynamics=dyn)
        return r.done, r.span_us
    r = timed(go, args.repeat)
    print(f"fast engine, the default rack's whole run ({spec.queries / 1e6:g}M queries, "
          f"{spec.queries / r['mops'] / 1e6:.1f} simulated s at {r['mops']:.4f} MOPS): "
          f"{r['cpu_s']:.2f} CPU-s (median of {args.repeat}; "
          f"{r['per_cpu_s'] / 1e6:.2f}M requests/CPU-s)")


def process_runs(repeat: int) -> None:
    """``python -m sim simulate --seconds 2`` as a user runs it: first with an
    empty compiled-code cache, then again (medians of ``repeat``)."""
    import os
    import subprocess
    import tempfile
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR")}

    def wall(cmd, env) -> float:
        t = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=root, env=env, capture_output=True)
        return time.perf_counter() - t
    sim = [sys.executable, "-m", "sim", "simulate", "--seconds", "2"]
    bare = statistics.median(wall([sys.executable, "-c", "pass"], env) for _ in range(repeat))
    with tempfile.TemporaryDirectory() as tmp:
        fresh = dict(env, KVPERF_CACHE_DIR=tmp)
        first = wall(sim, fresh)
        second = statistics.median(wall(sim, fresh) for _ in range(repeat))
    print(f"process, python -m sim simulate --seconds 2: first run (empty kernel cache) "
          f"{first:.2f} s, second run {second:.2f} s (median of {repeat}); bare python "
          f"{bare:.3f} s ({second / bare:.0f}x)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="simulated seconds, fast engine")
    ap.add_argument("--simpy-seconds", type=float, default=0.05,
                    help="simulated seconds, SimPy baseline (it is slow)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-process", dest="process", action="store_false",
                    help="skip the `python -m sim simulate` process timings")
    args = ap.parse_args(argv)
    pf = load_profile("tofino-testbed")
    sim = FastSimulator(args.seconds, args.seed)
    cfg0, _ = sim.config(compile_rack(Scenario.default(), pf))
    w0 = time.perf_counter()
    fast_run(cfg0, 0.01, args.seed)()
    print(f"profile {pf.name}; kernel ready in {time.perf_counter() - w0:.1f} s "
          "(compile, or load from numba's cache)")

    net = closed_network(cfg0)
    simpy = timed(lambda: simpy_closed(net, args.simpy_seconds, args.seed), args.repeat)
    bare = timed(fast_run(net, args.seconds, args.seed), args.repeat)
    print(f"baseline, the default rack's closed network ({net.n_clients} clients, "
          f"{len(net.station_probs)} stations): SimPy {simpy['per_cpu_s'] / 1e6:.3f}M requests/CPU-s "
          f"({simpy['mops']:.4f} MOPS simulated); fast engine {bare['per_cpu_s'] / 1e6:.2f}M "
          f"requests/CPU-s ({bare['mops']:.4f} MOPS simulated): "
          f"{bare['per_cpu_s'] / simpy['per_cpu_s']:.0f}x SimPy")
    rates = {}
    for name, ch in RACKS.items():
        cfg, dyn = sim.config(compile_rack(Scenario.default().updated(ch), pf))
        r = timed(fast_run(cfg, args.seconds, args.seed, dyn), args.repeat)
        rates[name] = r["per_cpu_s"]
        lo, hi = r["range"]
        print(f"fast engine, whole rack, {name}: {r['per_cpu_s'] / 1e6:.2f}M requests/CPU-s "
              f"(range {lo / 1e6:.2f}-{hi / 1e6:.2f}M over {args.repeat} runs of {args.seconds:g} "
              f"simulated s; {r['mops']:.4f} MOPS simulated): "
              f"{r['per_cpu_s'] / simpy['per_cpu_s']:.0f}x SimPy")
    first = next(iter(rates.values()))
    for name, rate in list(rates.items())[1:]:
        print(f"{name} against the default rack: {rate / first:.2f}x the rate")
    whole_run(pf, args)
    if args.process:
        process_runs(args.repeat)
    if not all(math.isfinite(v) for v in rates.values()):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
