"""The compiled rack: Scenario + Profile -> RackSpec, a closed description in plain numbers.

:func:`compile_rack` is the only place where raw settings (a
:class:`~model.scenario.Scenario`) meet calibrated numbers (a
:class:`~model.profile.Profile`). Each mechanism module compiles its own
section from the scenario keys and profile parameters it declares; the
solvers (:mod:`model.solvers.analytic`, :mod:`sim`) read only the result.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..profile import Profile
from ..scenario import Scenario
from .clients import ClientSpec, compile_clients
from . import lsm_rules
from .lsm import LsmSpec, compile_lsm, distinct_share
from .network import NetworkSpec, compile_network
from .params import ProfileReader
from .placement import PlacementSpec, compile_placement, evaluate_workload
from .service import ServiceSpec, compile_service


@dataclass(frozen=True)
class RackSpec:
    """One configuration of the rack, as every solver sees it."""
    name: str
    clients: ClientSpec
    network: NetworkSpec
    placement: PlacementSpec
    service: ServiceSpec
    lsm: LsmSpec
    queries: float              # requests in the run (sets its length and data volume)
    profile_name: str

    @property
    def servers(self) -> int:
        return self.placement.servers


def flush_distinct_shares(lsm: LsmSpec, wres, servers: int) -> tuple[float, ...]:
    """Per instance, the share of distinct keys among the writes one flush
    takes (``flushnum`` memtables): hot keys written twice in its memtables
    reach its SST once. From the workload's popularity (all distinct where
    the workload gives none)."""
    if wres.win_write_mass is None:
        return (1.0,) * servers
    from .. import workload
    W = float(lsm.flushnum * lsm.entries)
    table = {}

    def hit(w):
        if w not in table:
            table[w] = np.asarray(workload.window_hit_fraction(wres, w, lookups="writes"))
        return table[w]
    return tuple(float(distinct_share(lambda w, i=i: hit(w)[i], W)) for i in range(servers))


def compile_rack(scenario: Scenario, profile: Profile) -> RackSpec:
    return compile_with(scenario, ProfileReader(profile))


def compile_with(scenario: Scenario, pr: ProfileReader, wres=None) -> RackSpec:
    """:func:`compile_rack` through a given reader (which records what was read).
    ``wres``: the workload's load split and popularity, when the caller has
    it (a server rotation's partitions, :mod:`model.rotation`); else the
    scenario's own (:func:`model.rack.placement.evaluate_workload`)."""
    profile = pr.profile
    lsm = compile_lsm(scenario, pr)
    if wres is None:
        wres = evaluate_workload(scenario)
    elif len(wres.shares) != scenario.servers.count:
        raise ValueError("the workload result has one share per server")
    placement = compile_placement(scenario, pr, wres)
    lsm = replace(lsm, unique=flush_distinct_shares(lsm, wres, placement.servers))
    # the SST places a lookup checks in the run's first state: the loaded levels
    p = lsm.rule_params()
    first = [lsm_rules.loaded_levels(p, d) for d in (lsm.data_bytes or (0.0,) * placement.servers)]
    return RackSpec(
        name=scenario.name,
        clients=compile_clients(scenario, pr),
        network=compile_network(scenario, pr),
        placement=placement,
        service=compile_service(scenario, pr, placement, lsm, wres, first),
        lsm=lsm,
        queries=scenario.workload.queries_m * 1e6,
        profile_name=profile.name)
