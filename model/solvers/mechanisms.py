"""The mechanism modules' mean-value forms, as the compiled solver calls them.

Each formula lives once, in its mechanism module of :mod:`model.rack`
(clients, network, service, lsm); the solver compiles those very functions
in (numba's ``register_jitable``) rather than writing them again. They are
registered here, once, and the solver's compiled modules import them from
here, so they are registered before anything that calls them compiles.
The ``C_*`` names are the columns of :func:`model.rack.lsm.cycle_stats`'s
output, shortened.
"""

from __future__ import annotations

from ..rack import clients as cl_mech, lsm as lsm_mech, network as nw_mech, \
    service as svc_mech
from ._jit import register_jitable

for _f in (cl_mech.client_residence, cl_mech.client_core_wait, cl_mech.client_utilization,
           cl_mech.budget_us, cl_mech.gamma_sf,
           cl_mech.late_resends, cl_mech.residence_scv, nw_mech.wire_lost_per_request,
           nw_mech.tail_overflow,
           nw_mech.block_gather, svc_mech.commit_wait, svc_mech.stretch,
           svc_mech.service_scv, svc_mech.residual_us,
           lsm_mech._level_time, lsm_mech._rise, lsm_mech.cycle_stats,
           lsm_mech.wal_switch_block_us):
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
cycle_stats = lsm_mech.cycle_stats
wal_switch_block_us = lsm_mech.wal_switch_block_us
C_N = lsm_mech.C_N
C_STOP, C_STOPEV, C_STOPS, C_SLOW, C_WAL, C_WALEV, C_BUSY, C_DISK, C_COMP, C_STOPF, \
    C_MPF, C_CYCLE = (lsm_mech.C_STOP_US, lsm_mech.C_STOP_EVENT_US, lsm_mech.C_STOPS_PER_WRITE,
                      lsm_mech.C_SLOW_US, lsm_mech.C_WAL_US, lsm_mech.C_WAL_EVENT_US,
                      lsm_mech.C_FLUSH_BUSY, lsm_mech.C_FLUSH_DISK_BUSY,
                      lsm_mech.C_COMPACTION_BUSY, lsm_mech.C_STOP_FRACTION,
                      lsm_mech.C_MEMTABLES_PER_FLUSH, lsm_mech.C_CYCLE_US)
