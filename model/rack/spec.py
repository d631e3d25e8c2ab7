"""The compiled rack: Scenario + Profile -> RackSpec, a closed description in plain numbers.

:func:`compile_rack` is the only place where raw settings (a
:class:`~model.scenario.Scenario`) meet calibrated numbers (a
:class:`~model.profile.Profile`). Each mechanism module compiles its own
section from the scenario keys and profile parameters it declares; the
solvers (:mod:`model.solvers.analytic`, :mod:`sim`) read only the result.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..profile import Profile
from ..scenario import Scenario
from .clients import ClientSpec, compile_clients
from . import lsm_rules
from .lsm import LsmSpec, compile_lsm, initial_state
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
    # the SST places a lookup checks in the run's first state: the loaded levels
    _, st, _, _ = initial_state(lsm, placement.machine_of, placement.machines)
    first = [lsm_rules.probes(st, i) for i in range(len(st))]
    return RackSpec(
        name=scenario.name,
        clients=compile_clients(scenario, pr),
        network=compile_network(scenario, pr),
        placement=placement,
        service=compile_service(scenario, pr, placement, lsm, wres, first),
        lsm=lsm,
        queries=scenario.workload.queries_m * 1e6,
        profile_name=profile.name)
