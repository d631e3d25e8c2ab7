"""The rack model: one compiled description, every mechanism written once.

``compile_rack(scenario, profile) -> RackSpec`` turns the raw settings and
the calibrated numbers into plain numbers, section by section. Each
mechanism lives in one module that declares the scenario keys and profile
parameters it reads, and holds its mean-value form (for the analytic
solver) beside its per-event form (for both simulator engines):

==============  ==========================================================
``placement``   workload, cache and partitioning: shares, hit ratio,
                write mix, machines, eviction write-backs
``service``     a worker's time per request: storage cost, data growth,
                load and busy peers, cores and oversubscription
``lsm``         memtable fill, flush and compaction jobs on the machine's
                disk, WAL switches, write slowdown and stop
``network``     receive buffers and wire loss
``clients``     the closed client loop: send cost, round trips, timeouts,
                which reply completes a request
``bottleneck``  what limits the rack, from any solver's outcome
==============  ==========================================================

The solvers read only a :class:`RackSpec` (docs/model.md).
"""

from .spec import RackSpec, compile_rack

__all__ = ["RackSpec", "compile_rack"]
