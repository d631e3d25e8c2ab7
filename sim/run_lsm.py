"""What a simulated run tells of RocksDB: the LOG's counts and the run's phases.

:class:`RunTrace` follows a run chunk by chunk (:func:`sim.run.run_config`):
each chunk's requests and whether, in it, an instance was stopped or delayed
(the rules' counters of :mod:`model.rack.lsm_rules` and the rack's stop
count of :mod:`sim.write_path`). At the end it gives the details the
analytic solver by phases gives (:mod:`model.solvers.trajectory`):
``details["lsm"]`` -- its very keys, from its own :func:`lsm_details` over
the simulator's state -- and ``details["trajectory"]``: the run's throughput
per second (MOPS: a second's requests over one second, so a last partial
second reads low, as the analytic solver's does) and its phases (stretches
of chunks of one kind: ``run``, ``slow`` when some instance was delayed,
``stop`` when some was stopped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from model.rack import lsm_rules
from model.solvers.trajectory import lsm_details

from . import write_path


def slow_us_so_far(st, t: float) -> float:
    """Time (us) instances spent delayed up to ``t``, summed over instances."""
    ongoing = np.where(st["cond"] == lsm_rules.DELAYED, t - st["since"], 0.0)
    return float(np.sum(st["slow_us"]) + np.sum(ongoing))


@dataclass
class RunTrace:
    chunks: list = field(default_factory=list)      # (start us, end us, requests, kind)
    _stop_us: float = 0.0
    _slow_us: float = 0.0

    def chunk(self, t0_us: float, t1_us: float, done: float, lsm: tuple | None) -> str:
        """A chunk from ``t0_us`` to ``t1_us`` completed ``done`` requests;
        ``lsm``: the engine's state at its end (``engine.lsm()``). Returns its kind."""
        kind = "run"
        if lsm is not None:
            _p, st, _jobs, _mach, rack = lsm
            stop = write_path.rack_stopped_us(rack, t1_us)
            slow = slow_us_so_far(st, t1_us)
            if stop > self._stop_us:
                kind = "stop"
            elif slow > self._slow_us:
                kind = "slow"
            self._stop_us, self._slow_us = stop, slow
        self.chunks.append((t0_us, t1_us, float(done), kind))
        return kind

    def trajectory(self) -> dict:
        """``details["trajectory"]``: phases and throughput per second."""
        phases: list[dict] = []
        for a, b, done, kind in self.chunks:
            if phases and phases[-1]["kind"] == kind:
                ph = phases[-1]
                ph["seconds"] = (b - ph["_a"]) / 1e6
                ph["_q"] += done
            else:
                phases.append({"start_s": a / 1e6, "seconds": (b - a) / 1e6, "kind": kind,
                               "_a": a, "_q": done})
        for ph in phases:
            ph["mops"] = ph.pop("_q") / (ph["seconds"] * 1e6) if ph["seconds"] > 0 else 0.0
            del ph["_a"]
        end = self.chunks[-1][1] if self.chunks else 0.0
        per_s = np.zeros(int(math.ceil(end / 1e6 - 1e-9)) if end > 0 else 0)
        for a, b, done, _kind in self.chunks:
            if b > a and len(per_s):
                k = min(int(a / 1e6), len(per_s) - 1)
                per_s[k] += done / 1e6
        return {"phases": phases, "per_second_mops": per_s.tolist()}


def details(engine, t_us: float, lsm_spec=None) -> dict:
    """``details["lsm"]`` of a run that ended at ``t_us``: the analytic
    solver's :func:`~model.solvers.trajectory.lsm_details` over the engine's
    state, its counters closed at ``t_us`` (``solves``: none, the simulator
    solves nothing). ``lsm_spec``: the :class:`~model.rack.lsm.LsmSpec` of
    the config (else the sizes its rules' parameters hold)."""
    p, st, _jobs, _mach, rack = engine.lsm()
    lsm_rules.close_counters(st, t_us)
    if lsm_spec is None:
        lsm_spec = SimpleNamespace(entry_bytes=float(p.entry), memtable_bytes=float(p.memtable))
    # (what lsm_details reads of the analytic solver's RunState)
    run = SimpleNamespace(st=st, p=p, t=t_us, stop_t=write_path.rack_stopped_us(rack, t_us),
                          solves=0, spec=SimpleNamespace(lsm=lsm_spec))
    return lsm_details(run)
