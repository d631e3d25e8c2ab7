"""What an engine runs: a :class:`SimConfig` of plain arrays.

:func:`rack_config` builds it from a :class:`~model.rack.RackSpec` (and
nothing else), so both engines simulate exactly the compiled rack. A bare
:class:`SimConfig` also describes the small verification networks of the
tests (an open M/M/c queue, a closed product-form network): stations are
FCFS queues with ``station_servers[i]`` identical servers and a buffer of
``buffer_pkts[i]`` waiting packets; ``n_clients = 0`` gives an open network
fed by the Poisson source only.

Two shared resources sit outside the stations: the client machines' cores
(``client_cpu_us``, ``client_cores``: every send and resend of a thread first
holds one core for an exponential time, threads queue for them FIFO;
:mod:`model.rack.clients`) and each machine's commit path
(``txn_commit_us``: a write served by a worker then holds its machine's
commit lock for an exponential time, FIFO; :mod:`model.rack.service`). Zero
turns either off.

RocksDB (``lsm``): the run starts from the state of
:func:`model.rack.lsm.initial_state` (the loaded database, memtables empty),
which each engine copies and moves by :mod:`sim.write_path`; a run covers
``queries`` client requests (:func:`sim.run.run_config` ends it at the last
one).

Arrays that change between chunks (load-dependent service means, WAL switch
blocks) are updated in place by :class:`sim.dynamics.RackDynamics`; the
engines read them when a service starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from model.errors import InputError
from model.rack import RackSpec, lsm as lsm_mech, lsm_rules


@dataclass
class SimConfig:
    n_clients: int
    station_probs: np.ndarray                 # per station, given a miss (sums to 1)
    service_mean_us: np.ndarray               # per station: mean service time
    hit_ratio: float = 0.0
    send_us: float = 0.0
    hit_rtt_us: float = 0.0
    miss_rtt_us: float = 0.0
    timeout_us: float = math.inf
    retry: int = 0                            # model.rack.clients.RETRY_*
    loss_rate: float = 0.0
    write_frac: np.ndarray | float = 0.0      # per station: writes among its client requests
    service_cv: float = 1.0
    station_servers: np.ndarray | None = None  # default 1 each
    buffer_pkts: np.ndarray | None = None      # default: effectively unbounded
    open_rate_per_us: float = 0.0
    open_probs: np.ndarray | None = None
    open_write: bool = True
    lsm: bool = False
    # RocksDB's rules' parameters and starting state (model.rack.lsm.initial_state):
    # a one-record array of lsm_rules.LSM_PARAMS, the instances (one per
    # station), the job table, the machines; default: nothing written, no job
    lsm_params: np.ndarray | None = None
    lsm_state: np.ndarray | None = None
    lsm_jobs: np.ndarray | None = None
    lsm_machines: np.ndarray | None = None
    lsm_spec: Any = None                      # the model.rack.lsm.LsmSpec they come from
    sync_bytes: float = 0.0                   # wal_bytes_per_sync (0: none)
    sync_block_us: float = 0.0                # a write's wait at each sync
    queries: float = math.inf                 # client requests the run covers
    station_machine: np.ndarray | None = None
    machines: int = 1
    wal_block_us: np.ndarray | None = None    # per machine
    cores: int = 0
    ctx_penalty: float = 0.0
    bg_shares_cores: bool = True               # RocksDB's jobs run on the workers' cores
    start_spread_us: float = 0.0               # clients start uniformly over [0, spread)
    client_cpu_us: float = 0.0                 # client core time per send (mean; 0: none)
    client_cores: int = 0                      # over all client machines (0: one per thread)
    txn_commit_us: float = 0.0                 # a write's commit on its machine (mean; 0: none)
    recv_floor_us: float = 0.0                 # part of each service (reported as wait)
    gap_us: float = 0.0                        # part of each service (neither wait nor process)
    queue_cap_limit: int = 1 << 16             # open-network queues are capped here
    keyspace: Any = None                       # exact record sampler (SimPy engine), optional
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.station_probs)
        self.station_probs = np.asarray(self.station_probs, dtype=float)
        self.service_mean_us = np.asarray(self.service_mean_us, dtype=float).copy()
        self.write_frac = np.broadcast_to(np.asarray(self.write_frac, dtype=float), (n,)).copy()
        if self.station_servers is None:
            self.station_servers = np.ones(n, dtype=np.int64)
        self.station_servers = np.asarray(self.station_servers, dtype=np.int64)
        if self.buffer_pkts is None:
            self.buffer_pkts = np.full(n, 1 << 40, dtype=np.int64)
        self.buffer_pkts = np.asarray(self.buffer_pkts, dtype=np.int64)
        if self.open_probs is None:
            self.open_probs = self.station_probs.copy()
        self.open_probs = np.asarray(self.open_probs, dtype=float)
        if self.station_machine is None:
            self.station_machine = np.zeros(n, dtype=np.int64)
        self.station_machine = np.asarray(self.station_machine, dtype=np.int64)
        if self.wal_block_us is None:
            self.wal_block_us = np.zeros(self.machines)
        self.wal_block_us = np.asarray(self.wal_block_us, dtype=float).copy()
        if self.lsm_params is None:
            self.lsm_params = np.zeros(1, dtype=lsm_rules.LSM_PARAMS)
        if self.lsm_state is None:
            self.lsm_state, self.lsm_jobs, self.lsm_machines = lsm_rules.new_state(
                n, self.machines, self.station_machine)
        for name in ("client_cpu_us", "txn_commit_us"):
            v = float(getattr(self, name))
            if not (v >= 0.0 and math.isfinite(v)):
                raise InputError(f"{name} must be a finite number >= 0, got {v}", field=name)
            setattr(self, name, v)
        if self.client_cores < 0:
            raise InputError(f"client_cores must be >= 0, got {self.client_cores}",
                             field="client_cores")
        self.client_cores = int(self.client_cores)
        if self.service_cv <= 0:
            raise InputError(f"service_cv must be > 0, got {self.service_cv}", field="service_cv")
        if self.n_clients == 0 and self.open_rate_per_us <= 0:
            raise InputError("an open network (no clients) needs open_rate_per_us > 0",
                             field="open_rate_per_us")

    @property
    def stations(self) -> int:
        return len(self.station_probs)

    @property
    def service_shape(self) -> float:
        return 1.0 / self.service_cv ** 2

    @property
    def service_fixed_us(self) -> float:
        """The fixed part of every service: the receive floor and the gap
        (only the rest is random and stretched, model.rack.service)."""
        return self.recv_floor_us + self.gap_us

    @property
    def client_cores_used(self) -> int:
        """Client cores that can ever be busy at once: ``client_cores``, at most
        one per client thread (0 when there are no clients)."""
        n = int(self.n_clients)
        return min(self.client_cores, n) if self.client_cores > 0 else n

    def queue_capacity(self) -> np.ndarray:
        """Ring size per station: the buffer, bounded by what can ever be queued.

        A client has one request outstanding and sends at most one packet per
        (send + timeout); a packet waits at most until it is served, so at
        most ``per`` of one client's packets can be queued at once.
        """
        if self.n_clients > 0:
            per = 2 + (0 if not math.isfinite(self.timeout_us)
                       else int(math.ceil(1e6 / max(self.timeout_us, 1.0))))
            bound = self.n_clients * min(per, 64) + 1024
        else:
            bound = self.queue_cap_limit
        if self.open_rate_per_us > 0 and self.n_clients > 0:
            bound += 1024
        return np.minimum(self.buffer_pkts, bound)


def storage_fields(lsm: lsm_mech.LsmSpec, machine_of, machines: int) -> dict[str, Any]:
    """The :class:`SimConfig` fields of RocksDB's write path compiled as
    ``lsm`` (:func:`model.rack.lsm.compile_lsm`, or an
    :class:`~model.rack.lsm.LsmSpec` made by hand for a test rack), one
    instance per station on machine ``machine_of[station]``: its rules'
    parameters and starting state (:func:`model.rack.lsm.initial_state`),
    its WAL syncs."""
    p, st, jobs, mach = lsm_mech.initial_state(lsm, machine_of, machines)
    return {"lsm": True, "lsm_params": np.asarray([p], dtype=lsm_rules.LSM_PARAMS),
            "lsm_state": st, "lsm_jobs": jobs, "lsm_machines": mach, "lsm_spec": lsm,
            "sync_bytes": lsm.sync_bytes, "sync_block_us": lsm.sync_block_us}


def rack_config(spec: RackSpec) -> SimConfig:
    """The compiled rack as an engine config (service means are set by the dynamics)."""
    pl, c, nw, sv = spec.placement, spec.clients, spec.network, spec.service
    n = pl.servers
    shares = np.asarray(pl.shares)
    miss = float(shares.sum())
    probs = shares / miss if miss > 0 else np.full(n, 1.0 / n)
    return SimConfig(
        n_clients=c.threads, station_probs=probs, service_mean_us=np.zeros(n),
        hit_ratio=pl.hit_ratio if miss > 0 else 1.0,
        send_us=c.send_us, hit_rtt_us=c.hit_rtt_us, miss_rtt_us=c.miss_rtt_us,
        timeout_us=c.timeout_us, retry=c.retry, loss_rate=nw.loss_rate,
        write_frac=np.asarray(pl.write_frac), service_cv=sv.cv,
        buffer_pkts=np.full(n, max(0, nw.buffer_pkts), dtype=np.int64),
        open_rate_per_us=pl.evict_per_us, open_probs=np.asarray(pl.evict_probs), open_write=True,
        **storage_fields(spec.lsm, pl.machine_of, pl.machines), queries=float(spec.queries),
        station_machine=np.asarray(pl.machine_of, dtype=np.int64), machines=pl.machines,
        cores=sv.cores, ctx_penalty=sv.ctx_penalty, bg_shares_cores=sv.bg_shares_cores,
        client_cpu_us=c.cpu_us, client_cores=c.cores, txn_commit_us=sv.txn_commit_us,
        start_spread_us=c.send_us + c.miss_rtt_us,
        recv_floor_us=sv.recv_floor_us, gap_us=sv.gap_us,
        # the scenario keys behind the config's sizes (sim.fast.check_memory's message)
        extra={"keys": {"stations": "servers.count", "clients": "clients.threads",
                        "buffer": "servers.rcvbuf_kb"}})
