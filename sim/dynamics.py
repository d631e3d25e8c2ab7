"""Load-dependent inputs of a simulated rack, updated once per simulated second.

The mechanisms say how a worker's mean service time depends on load
(:func:`model.rack.service.load_factor`: idle slowdown, busy peers) and on
its instance's state (:func:`model.rack.service.cost_in_state`: the
immutable memtables and the SST places a lookup meets, the background jobs
running on its machine, as RocksDB's rules have moved them so far), and how
long a WAL switch blocks at the machine's write rate
(:func:`model.rack.lsm.wal_block_us`). The simulators evaluate them between
chunks at what the last chunk measured and the state it ended in (the
analytic solver by phases, :mod:`model.solvers.trajectory`, re-solves the
rack when they drift); the engines read the updated arrays of the
:class:`~sim.config.SimConfig` when a service starts.

The load-dependent factors follow each chunk (a simulated second: the
utilisations of a shorter stretch would be noise). The state-dependent cost
follows RocksDB's state more closely: the engines hand the dynamics their
state (:meth:`RackDynamics.state_changed`) at the first event at least
:data:`STATE_GAP_US` after the last time once a memtable was sealed or a
job finished, so a worker's process time trails its instance's state by at
most that (the analytic solver re-solves once a process time drifts by 2 %).

The first chunk starts from the analytic solver's answer for the same rack
(:func:`initial_load`), so it runs near the load the run settles at.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from model.rack import RackSpec, lsm as lsm_mech, lsm_rules, service as svc_mech

from .config import SimConfig

MIB = lsm_mech.MIB
#: us of simulated time between two hand-overs of RocksDB's state at most
#: (the process times' lag behind it)
STATE_GAP_US = 5_000.0


class RackDynamics:
    """``initial``: :func:`initial_load` of ``spec``, when the caller has it already."""

    def __init__(self, spec: RackSpec, cfg: SimConfig,
                 initial: tuple[np.ndarray, np.ndarray, float] | None = None):
        self.spec = spec
        self.cfg = cfg
        self.machine_of = np.asarray(spec.placement.machine_of, dtype=np.int64)
        util, mbps, _ = initial if initial is not None else initial_load(spec)
        self.util, self.machine_mbps = util.copy(), mbps.copy()
        self.observe(cfg.lsm_state, cfg.lsm_machines)
        self.apply()

    def observe(self, st, mach) -> None:
        """The RocksDB state the next chunk's process times follow
        (:mod:`model.rack.lsm_rules` arrays: instances, machines)."""
        n = self.spec.servers
        self.imm = np.asarray(st["imm"][:n], dtype=float)
        self.probes = np.array([lsm_rules.probes(st, i) for i in range(n)], dtype=float)
        bg = np.array([lsm_rules.bg_running(mach, m) for m in range(len(mach))], dtype=float)
        # background jobs compete with the workers only on the cores they share
        self.bg = bg[self.machine_of] if self.spec.service.bg_shares_cores else \
            np.zeros(n)

    def state_changed(self, lsm: tuple) -> None:
        """An engine's RocksDB state changed (its ``lsm()``): process times in it."""
        self.observe(lsm[1], lsm[3])
        self.apply()

    def apply(self) -> None:
        sv = self.spec.service
        cost = svc_mech.cost_in_state(sv, self.imm, self.probes, self.bg)
        peers = svc_mech.busy_peers(self.util, self.machine_of)
        proc = cost * svc_mech.load_factor(self.util, peers, sv.idle_penalty, sv.share_penalty)
        self.cfg.service_mean_us[:] = proc + sv.recv_floor_us + sv.gap_us
        ls = self.spec.lsm
        self.cfg.wal_block_us[:] = lsm_mech.wal_block_us(ls.wal, ls.wal_block_base_us,
                                                         ls.wal_block_us_per_mbps, self.machine_mbps)

    def update(self, span_us: float, busy_us: np.ndarray, writes: np.ndarray,
               lsm: tuple | None = None) -> None:
        """What a chunk of ``span_us`` measured (busy time and writes per
        worker) and, with ``lsm`` (an engine's ``lsm()``), the state it ended in."""
        if span_us <= 0:
            return
        self.util = np.clip(busy_us / span_us, 0.0, 1.0)
        if lsm is not None:
            self.observe(lsm[1], lsm[3])
        per_machine = np.bincount(self.machine_of, weights=writes * self.spec.lsm.entry_bytes,
                                  minlength=self.cfg.machines)
        self.machine_mbps = per_machine / MIB / (span_us / 1e6)
        self.apply()


def initial_load(spec: RackSpec) -> tuple[np.ndarray, np.ndarray, float]:
    """Utilisations, machine write rates (MiB/s) and throughput (requests per
    us) to start a simulation from: the analytic solver's prediction of the
    same rack in the run's first state (:func:`model.solvers.analytic.solve`
    of a run of one query: its first phase, every mechanism in; the whole
    run's trajectory would cost a solve per phase, for nothing the start
    needs).

    Where it predicts no throughput (no request can complete: a strict
    client's timeout shorter than any reply, or a solve that found none) the
    machines write nothing and the workers start at its utilisations (the
    resends of stuck threads; idle where it has none)."""
    # imported here: the solver compiles (or loads its compiled code) on first use
    from model.solvers.analytic import solve
    return load_of(spec, solve(replace(spec, queries=1.0)))


def load_of(spec: RackSpec, pred) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`initial_load` from an analytic prediction of ``spec`` in hand."""
    n = spec.servers
    pl = spec.placement
    machine_of = np.asarray(pl.machine_of, dtype=np.int64)
    util = np.array([s.utilization for s in pred.servers[:n]], dtype=float)
    util = np.clip(np.where(np.isfinite(util), util, 0.0), 0.0, 1.0)
    x = float(pred.throughput_mops)                      # requests per us
    if not (x > 0.0 and math.isfinite(x)):
        return util, np.zeros(pl.machines), 0.0
    writes = x * 1e6 * np.asarray(pl.shares) * np.asarray(pl.write_frac)
    mbps = np.bincount(machine_of, weights=writes * spec.lsm.entry_bytes,
                       minlength=pl.machines) / MIB
    return util, mbps, x
