"""Load-dependent inputs of a simulated rack, updated once per simulated second.

The mechanisms say how a worker's mean service time depends on load
(:func:`model.rack.service.load_factor`: idle slowdown, busy peers) and on
the data written so far (:func:`model.rack.service.cost_at`), and how long a
WAL switch blocks at the machine's write rate
(:func:`model.rack.lsm.wal_block_us`). The simulators evaluate them between
chunks at what the last chunk measured; the engines read the updated arrays
of the :class:`~sim.config.SimConfig` when a service starts.

``data_scale`` counts every simulated write as that many writes of data, so
a short simulation can preview how a whole run's data growth slows it down.
"""

from __future__ import annotations

import numpy as np

from model.rack import RackSpec, lsm as lsm_mech, service as svc_mech
from model.solvers import mva_core

from .config import SimConfig

MIB = lsm_mech.MIB


class RackDynamics:
    def __init__(self, spec: RackSpec, cfg: SimConfig, data_scale: float = 1.0):
        self.spec = spec
        self.cfg = cfg
        self.data_scale = float(data_scale)
        self.machine_of = np.asarray(spec.placement.machine_of, dtype=np.int64)
        self.writes = np.zeros(spec.servers)
        self.util, self.machine_mbps, _ = initial_load(spec)
        self.apply()

    def apply(self) -> None:
        sv = self.spec.service
        cost = svc_mech.cost_at(sv, self.writes * self.data_scale)
        peers = svc_mech.busy_peers(self.util, self.machine_of)
        proc = cost * svc_mech.load_factor(self.util, peers, sv.idle_penalty, sv.share_penalty)
        self.cfg.service_mean_us[:] = proc + sv.recv_floor_us + sv.gap_us
        ls = self.spec.lsm
        self.cfg.wal_block_us[:] = lsm_mech.wal_block_us(ls.wal, ls.wal_block_base_us,
                                                         ls.wal_block_us_per_mbps, self.machine_mbps)

    def update(self, span_us: float, busy_us: np.ndarray, writes: np.ndarray) -> None:
        if span_us <= 0:
            return
        self.util = np.clip(busy_us / span_us, 0.0, 1.0)
        self.writes = self.writes + writes
        per_machine = np.bincount(self.machine_of, weights=writes * self.spec.lsm.entry_bytes,
                                  minlength=self.cfg.machines)
        self.machine_mbps = per_machine / MIB / (span_us / 1e6)
        self.apply()


def initial_load(spec: RackSpec) -> tuple[np.ndarray, np.ndarray, float]:
    """A product-form estimate of utilisations, machine write rates (MiB/s) and
    throughput (requests per us), only to start a simulation from a plausible load."""
    n = spec.servers
    sv, pl = spec.service, spec.placement
    machine_of = np.asarray(pl.machine_of, dtype=np.int64)
    ones = np.ones(n)
    proc = svc_mech.cost_at(sv, np.zeros(n)) * svc_mech.load_factor(
        ones, svc_mech.busy_peers(ones, machine_of), sv.idle_penalty, sv.share_penalty)
    svc = proc + sv.recv_floor_us + sv.gap_us
    shares = np.asarray(pl.shares)
    h = pl.hit_ratio
    c = spec.clients
    think = c.send_us + h * c.hit_rtt_us + (1 - h) * c.miss_rtt_us
    active = shares > 0
    util = np.zeros(n)
    mbps = np.zeros(pl.machines)
    if not active.any():
        return util, mbps, 0.0
    # the analytic solver's X(N) (exact up to mva_core.N_EXACT clients, the
    # Schweitzer root past them: the fixed-point iteration used here before
    # did not converge for a soak rack of 687,883 clients)
    v, S = shares[active], svc[active]
    zero = np.zeros(len(v))
    x = mva_core.throughput_at(v, S, S, zero, zero, zero, think, int(c.threads))
    util[active] = np.minimum(x * v * S, 1.0)
    writes = x * 1e6 * shares * np.asarray(pl.write_frac)
    mbps = np.bincount(machine_of, weights=writes * spec.lsm.entry_bytes, minlength=pl.machines) / MIB
    return util, mbps, float(x)
