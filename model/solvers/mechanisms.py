"""The mechanism modules' mean-value forms, as the compiled solver calls them.

Each formula lives once, in its mechanism module of :mod:`model.rack`
(clients, network, service, lsm); the solver compiles those very functions
in (numba's ``register_jitable``) rather than writing them again. They are
registered here, once, and the solver's compiled modules import them from
here, so they are registered before anything that calls them compiles.
RocksDB's rules over counts (:mod:`model.rack.lsm_rules`) are registered
here too, for the trajectory of the run (:mod:`model.solvers.trajectory_kernel`)
and the simulators' kernel alike.
"""

from __future__ import annotations

from ..rack import clients as cl_mech, lsm as lsm_mech, lsm_rules, network as nw_mech, \
    service as svc_mech
from ._jit import register_jitable

for _f in (cl_mech.client_residence, cl_mech.client_core_wait, cl_mech.client_utilization,
           cl_mech.budget_us, cl_mech.gamma_sf,
           cl_mech.late_resends, cl_mech.residence_scv, nw_mech.wire_lost_per_request,
           nw_mech.tail_overflow,
           nw_mech.block_gather, svc_mech.commit_wait, svc_mech.stretch, svc_mech.state_cost,
           svc_mech.service_scv, svc_mech.residual_us,
           lsm_mech.wal_switch_block_us):
    register_jitable(_f)

#: RocksDB's rules, in the order they call each other (callees first)
LSM_RULES = (lsm_rules.level_target, lsm_rules.fill_levels, lsm_rules.pending_bytes,
             lsm_rules.start_state, lsm_rules.stall_condition,
             lsm_rules.recalc, lsm_rules.close_counters, lsm_rules.probes, lsm_rules._free_job,
             lsm_rules._flush_limit_ok, lsm_rules._compact_limit_ok, lsm_rules._start,
             lsm_rules._try_flush, lsm_rules._try_compact, lsm_rules.schedule,
             lsm_rules.job_rate, lsm_rules.next_job_event, lsm_rules.advance_jobs,
             lsm_rules.job_event, lsm_rules.seal, lsm_rules.any_job, lsm_rules.bg_running)
for _f in LSM_RULES:
    register_jitable(_f)

client_residence = cl_mech.client_residence
late_resends = cl_mech.late_resends
residence_scv = cl_mech.residence_scv
gamma_sf = cl_mech.gamma_sf
client_core_wait = cl_mech.client_core_wait
client_utilization = cl_mech.client_utilization
budget_us = cl_mech.budget_us
wire_lost_per_request = nw_mech.wire_lost_per_request
tail_overflow = nw_mech.tail_overflow
block_gather = nw_mech.block_gather
commit_wait = svc_mech.commit_wait
service_scv = svc_mech.service_scv
residual_us = svc_mech.residual_us
stretch = svc_mech.stretch
state_cost = svc_mech.state_cost
wal_switch_block_us = lsm_mech.wal_switch_block_us
