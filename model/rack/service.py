"""A worker's time per request: RocksDB work, and the CPU it runs on.

What it means (docs/model.md):

* **Storage cost.** A worker spends ``process`` between receiving a request
  and sending its reply. It is built from the op mix the worker sees (after
  the switch cache), the fraction of its keys found in the memtables
  (``p_mem``: the cache removes the hottest keys, so servers behind it see
  flatter traffic and miss more), the seq-check mode, the WAL, TransactionDB
  and the skiplist depth (memtable size). It also depends on the instance's
  state at the moment, which RocksDB's rules move over the run
  (:mod:`model.rack.lsm_rules`): a lookup searches the active memtable and
  every immutable one (``memtable_probe_us`` each), and one that misses them
  checks every L0 file and every non-empty level before the one holding its
  key (``sst_probe_us`` each beyond the first: RocksDB's read
  amplification). Unpinned workers pay ``unpinned_factor``.
  (This replaced, in 2026-12, a run average that grew with the doublings of
  the instance's data and a per-write compaction charge: the trajectory of
  the run now says how many files and memtables a lookup meets and when.)
* **Background jobs beside the worker.** With RocksDB's background threads
  on the workers' cores (``servers.bg_on_worker_cores``), each flush or
  compaction running on the machine slows its workers by ``bg_penalty``
  (they share cores, caches and memory bandwidth; the lab: "with RocksDB's
  background threads on the workers' cores they lengthen process time").
* **Load.** A worker that idles between requests runs colder:
  ``x (1 + idle_penalty (1 - U))``. Unpinned workers that are busy on the
  same machine slow each other down (the scheduler moves them between cores,
  so they lose their caches and run beside each other's interrupts):
  ``x (1 + share_penalty * busy peers)``. Pinned workers do not, because
  the notes show their process time flat as workers are added (B12 14 us at
  one server; B07, B08 14-15 us at four), while unpinned ones slow down
  (F061 16.3 us at one server; F062 21 us at four). A pinned rack's process
  time grows only from the named causes: more threads than cores (below),
  compaction beside the worker and a growing database (above), WAL blocks
  (:mod:`model.rack.lsm`). Until 2026-11-26 the penalty applied to pinned
  workers too and stood in for the 16-server tuning rows' shortfall, at
  22.6 us of process for the default rack's workers (docs/accuracy.md). In
  the simulators both factors are re-evaluated every simulated second at the
  utilisations just measured.
* **Cores.** With ``servers.cores > 0`` per machine, a service that starts
  while more threads are runnable on its machine (busy workers and running
  RocksDB background jobs) than there are cores has its process part
  stretched by ``runnable / cores x (1 + context_switch_penalty)``
  (:func:`stretched`; the receive floor and gap are not).
* **TransactionDB's commit** (``storage.db = "txn"``). Each write ends with
  a commit that goes through a path the machine's instances share (the lab:
  "its commit, for serializability, limits write speed"; a plain DB removed
  that cap, T17 -> T18: x1.41): the worker waits for the machine's commit
  path, held ``txn_commit_us`` (exponential) by one commit at a time, first
  come first served. At one worker it is a few microseconds per write; with
  eight busy workers on a machine it caps the machine's write rate at
  ``1 / txn_commit_us``. A plain DB has no such path.
* Each service also includes the receive call (``recv_floor_us``, reported as
  wait) and ``server_gap_us`` (neither wait nor process). Those two are fixed;
  the process part is gamma distributed with coefficient of variation
  ``service_cv``. (Until 2026-11-24 the whole service was one gamma draw, so a
  draw could be shorter than the receive call alone, and a simulated worker
  with few completions reported a negative mean process time; the simulator
  soak, ``python -m tests.robustness.soak simulator``, found it.) The squared
  coefficient of variation of the whole service is then
  ``service_cv^2 (process / service)^2``.

Mean-value forms: :func:`cost_in_state`, :func:`load_factor`, :func:`commit_wait`,
:func:`service_scv`, :func:`residual_us`
(the analytic solver's mean CPU stretch is its own: threads runnable beside a
worker as a Poisson count, :func:`model.solvers.stations._mean_stretch`).
Per-event forms: :func:`cost_in_state` (per simulated second), :func:`load_factor`,
:func:`stretch`, :func:`stretched`, :func:`draw_service`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import workload
from .arrays import per_worker
from .param_decl import ParamDecl

SCENARIO_KEYS = (
    "servers.seq_check", "servers.pinned", "servers.cores", "servers.bg_on_worker_cores",
    "storage.db", "storage.wal", "workload.queries_m",
)

PARAMS = (
    ParamDecl("base_us", "us", "per-request work besides RocksDB (parse, reply, bookkeeping)"),
    ParamDecl("get_mem_us", "us", "a GET found in the memtables"),
    ParamDecl("get_sst_us", "us", "extra for a GET that probes SST files"),
    ParamDecl("put_us", "us", "a PUT into the memtable"),
    ParamDecl("skiplist_us_per_log2", "us/doubling", "extra per doubling of the memtable's "
              "entries beyond 2^18 (skiplist depth)"),
    ParamDecl("wal_us", "us/write", "appending a write to the WAL"),
    ParamDecl("txn_commit_us", "us/write", "TransactionDB's commit, through a path the "
              "machine's instances share (one commit at a time)", lo=0.0),
    ParamDecl("seqget_sst_us", "us/write", "a seq-number GET before a write that probes SST files"),
    ParamDecl("seqcache_us", "us/write", "the in-memory seq cache before a write"),
    ParamDecl("sst_probe_us", "us/probe", "a lookup's check of one more SST place (an L0 "
              "file or a level) before the one holding its key"),
    ParamDecl("memtable_probe_us", "us/memtable", "a lookup's search of one immutable memtable"),
    ParamDecl("bg_penalty", "x/job", "process-time factor per background job running on the "
              "machine, when RocksDB's threads share the workers' cores"),
    ParamDecl("unpinned_factor", "x", "process-time factor of workers not pinned to cores", lo=0.0,
              lo_open=True),
    ParamDecl("recv_floor_us", "us", "the receive call of a busy worker (part of measured wait)"),
    ParamDecl("server_gap_us", "us", "per-request worker time in neither wait nor process"),
    ParamDecl("idle_penalty", "x", "slowdown of a worker that idles between requests, at U = 0"),
    ParamDecl("share_penalty", "x/busy peer", "slowdown of an unpinned worker per busy peer "
              "on its machine (pinned workers: none)"),
    ParamDecl("context_switch_penalty", "x", "extra cost of time-slicing when threads outnumber cores"),
    ParamDecl("service_cv", "x", "coefficient of variation of a worker's service time", lo=0.0,
              lo_open=True, default=1.0),
)


@dataclass(frozen=True)
class ServiceSpec:
    flat_us: tuple[float, ...]       # per worker: process time in the run's first state
    #                                  (no immutable memtable, the loaded levels, no job)
    probe_us: tuple[float, ...]      # per worker: per SST place checked beyond the first
    memprobe_us: tuple[float, ...]   # per worker: per immutable memtable searched
    first_probes: tuple[float, ...]  # per worker: SST places checked in the first state
    p_mem: tuple[float, ...]         # per worker: GETs whose key is in the memtables
    bg_penalty: float                # per background job on the machine (0: kept apart)
    bg_shares_cores: bool            # background jobs run on the workers' cores
    writes_per_run: tuple[float, ...]  # per worker: writes over the whole run
    recv_floor_us: float
    gap_us: float
    cv: float
    idle_penalty: float
    share_penalty: float
    cores: int                       # per machine; 0 = enough for every thread
    ctx_penalty: float
    txn_commit_us: float = 0.0       # a write's commit on the machine's shared path (0: plain DB)

    @property
    def servers(self) -> int:
        return len(self.flat_us)


def compile_service(scenario, pr, placement, lsm, wres, first_probes=None) -> ServiceSpec:
    """Per-worker costs at the op mix and locality each worker sees.
    ``first_probes``: per worker, the SST places a lookup checks in the run's
    first state (:func:`model.rack.lsm_rules.probes`)."""
    sv, st, w = scenario.servers, scenario.storage, scenario.workload
    # every parameter is read (and so checked) whatever the scenario uses
    P = {d.name: pr[d.name] for d in PARAMS}
    entries = lsm.memtable_bytes / lsm.entry_bytes
    depth = max(0.0, math.log2(max(entries, 2.0)) - 18.0)
    skip = P["skiplist_us_per_log2"] * depth
    unpinned = 1.0 if sv.pinned else P["unpinned_factor"]
    queries = w.queries_m * 1e6
    write_base = P["put_us"] + skip + (P["wal_us"] if st.wal else 0.0)
    # writes resident in the memtables (time-averaged; a short run holds half
    # of its own): the active memtable and about flushnum immutables
    window_cap = lsm.flushnum * entries
    writes_run = queries * np.asarray(placement.shares) * np.asarray(placement.write_frac)
    window = np.minimum(window_cap, 0.5 * writes_run)
    if w.read_ratio < 1.0 and wres.win_read_mass is not None:
        p_read = workload.window_hit_fraction(wres, window, lookups="reads")
        p_write = workload.window_hit_fraction(wres, window, lookups="writes")
    else:                    # no writes (nothing in the memtables), or no popularity known
        p_read = p_write = np.zeros(len(placement.shares))
    wf = np.asarray(placement.write_frac, dtype=float)
    r = 1.0 - wf
    miss = 1.0 - np.asarray(p_read, dtype=float)
    miss_w = 1.0 - np.asarray(p_write, dtype=float)
    read_flat = P["get_mem_us"] + skip
    seq_flat, seq_sst, seq_lookups = 0.0, 0.0, 0.0
    if sv.seq_check == "disk-get":
        # a GET of the stored seq before each write: cheap in the memtable,
        # expensive when it has to go to SST files
        seq_flat, seq_sst, seq_lookups = P["get_mem_us"] + skip, miss_w, 1.0
    elif sv.seq_check == "seq-cache":
        seq_flat = P["seqcache_us"]
    sst_lookups = r * miss + wf * seq_sst        # lookups per request that reach the SSTs
    flat = unpinned * (P["base_us"] + r * read_flat + wf * (write_base + seq_flat)
                       + r * miss * P["get_sst_us"] + wf * seq_sst * P["seqget_sst_us"])
    n = len(placement.shares)
    first = np.ones(n) if first_probes is None else np.asarray(first_probes, dtype=float)
    probe = unpinned * sst_lookups * P["sst_probe_us"]
    memprobe = unpinned * (r + wf * seq_lookups) * P["memtable_probe_us"]
    flat = flat + probe * np.maximum(first - 1.0, 0.0)
    pmem = np.asarray(p_read, dtype=float)
    wrun = np.asarray(writes_run, dtype=float)
    return ServiceSpec(
        flat_us=tuple(flat.tolist()), probe_us=tuple(probe.tolist()),
        memprobe_us=tuple(memprobe.tolist()), first_probes=tuple(first.tolist()),
        p_mem=tuple(pmem.tolist()),
        bg_penalty=P["bg_penalty"] if sv.bg_on_worker_cores else 0.0,
        bg_shares_cores=bool(sv.bg_on_worker_cores),
        writes_per_run=tuple(wrun.tolist()), recv_floor_us=P["recv_floor_us"],
        gap_us=P["server_gap_us"],
        cv=P["service_cv"], idle_penalty=P["idle_penalty"],
        # pinned workers keep their cores: no busy-peer slowdown (module docstring)
        share_penalty=0.0 if sv.pinned else P["share_penalty"],
        cores=int(sv.cores), ctx_penalty=P["context_switch_penalty"],
        txn_commit_us=P["txn_commit_us"] if st.db == "txn" else 0.0)


# Mechanism switches for ``python -m sim explain`` (model/explain.py): the same
# worker with one effect removed. Solvers see an ordinary ServiceSpec.
def without_contention(s: ServiceSpec) -> ServiceSpec:
    """No load-dependent speed: idle workers run as fast as busy ones, and busy
    peers on a machine do not slow each other."""
    return replace(s, idle_penalty=0.0, share_penalty=0.0)


def without_commit_path(s: ServiceSpec) -> ServiceSpec:
    """No TransactionDB commit path: writes commit as in a plain DB."""
    return replace(s, txn_commit_us=0.0)


def without_oversubscription(s: ServiceSpec) -> ServiceSpec:
    """A core for every worker and background thread (no CPU stretch)."""
    return replace(s, cores=0)


def with_uniform_cost(s: ServiceSpec, cost_us: float) -> ServiceSpec:
    """Every worker's storage cost set to ``cost_us`` in every state (no
    memtable locality, write-mix or read-amplification differences between
    workers or between the cached and the uncached rack)."""
    n = s.servers
    return replace(s, flat_us=(float(cost_us),) * n, probe_us=(0.0,) * n,
                   memprobe_us=(0.0,) * n, bg_penalty=0.0)


# ---------------------------------------------------------------- storage cost
def state_cost(flat, first, probe, memprobe, bg_penalty, immutables, probes, bg_jobs):
    """A worker's process time (us) in its instance's state: ``flat`` in the
    run's first state (``first`` SST places), plus ``memprobe`` per immutable
    memtable and ``probe`` per SST place beyond, times ``1 + bg_penalty`` per
    background job on its cores. Scalars or arrays alike; compiled into the
    trajectory's kernel as it is."""
    cost = flat + probe * (probes - first) + memprobe * immutables
    return np.maximum(cost, 0.0) * (1.0 + bg_penalty * bg_jobs)


def cost_in_state(s: ServiceSpec, immutables, probes, bg_jobs) -> np.ndarray:
    """:func:`state_cost` of every worker (arrays, per worker): the form both
    solvers use, the analytic one per phase of the run, the simulators per
    simulated second."""
    return state_cost(per_worker(s, "flat_us"), per_worker(s, "first_probes"),
                      per_worker(s, "probe_us"), per_worker(s, "memprobe_us"), s.bg_penalty,
                      np.asarray(immutables, dtype=float), np.asarray(probes, dtype=float),
                      np.asarray(bg_jobs, dtype=float))


def first_cost(s: ServiceSpec) -> np.ndarray:
    """Per-worker process time (us) in the run's first state: no immutable
    memtable, the loaded levels, no background job."""
    return per_worker(s, "flat_us").copy()


# ---------------------------------------------------------------- load and cores
def busy_peers(util: np.ndarray, machine_of: np.ndarray) -> np.ndarray:
    """Per worker: the summed utilisation of the other workers on its machine."""
    per_machine = np.bincount(machine_of, weights=util)
    return per_machine[machine_of] - util


def load_factor(util, peers, idle_penalty, share_penalty):
    """Process-time factor of workers at utilisations ``util`` with ``peers`` busy
    peers on their machine (idle slowdown, busy peers); arrays broadcast. The
    same function serves the analytic solver and, once per simulated second,
    the simulators."""
    u = np.clip(util, 0.0, 1.0)
    return (1.0 + idle_penalty * (1.0 - u)) * (1.0 + share_penalty * peers)


def commit_wait(commits_per_us: float, commit_us: float, writers: float) -> float:
    """Mean time a write spends on the machine's commit path, waiting and
    committing, when the machine's ``writers`` workers commit at
    ``commits_per_us`` in all: Schweitzer's form of the finite-source queue
    (an arriving commit finds ``(n - 1) / n`` of the path's mean queue;
    M/M/1 for many writers, no wait for one); infinite at or past its
    capacity."""
    if commit_us <= 0.0:
        return 0.0
    rho = commits_per_us * commit_us
    if rho >= 1.0:
        return math.inf
    f = (writers - 1.0) / writers if writers > 1.0 else 0.0
    return commit_us * (1.0 + f * rho / (1.0 - f * rho))


def stretch(runnable: float, cores: float, ctx_penalty: float) -> float:
    """Per event: the process part of a service starting with ``runnable``
    threads (itself included) on a machine of ``cores`` cores runs this many
    times slower (:func:`stretched`)."""
    if cores <= 0.0 or runnable <= cores:
        return 1.0
    return runnable / cores * (1.0 + ctx_penalty)


def stretched(work: float, fixed: float, factor: float) -> float:
    """A drawn service ``work`` under a CPU stretch ``factor``: its process part
    (what exceeds the ``fixed`` receive floor and gap) runs ``factor`` times
    slower. The fixed part is not stretched, as in the mean-value form (the
    cost, not the floor, is multiplied): stretching the whole service in the
    analytic solver as well was tried on 2026-11-24 and, refitted, put this
    machine's held-out runs further off (medians of repeats 10.9 / 18.4 / 11.9 %
    -> 11.7 / 19.2 / 15.8 % on throughput, process, wait)."""
    rest = work - fixed
    if rest <= 0.0:
        return work
    return fixed + rest * factor


# ---------------------------------------------------------------- service variability
def service_scv(S, fixed, cv2):
    """Squared coefficient of variation of a whole service of mean ``S`` whose
    ``fixed`` part (receive floor and gap) is constant and whose rest is
    gamma with squared CV ``cv2``: ``cv2 ((S - fixed) / S)^2``."""
    if S <= 0.0:
        return 0.0
    return cv2 * ((S - fixed) / S) ** 2


def residual_us(S, scv):
    """Mean time left of a service in progress, for an arrival at a random
    moment (``E[S^2] / 2 E[S]``): ``S (1 + scv) / 2``."""
    return S * (1.0 + scv) / 2.0


# ---------------------------------------------------------------- per-event draw
def draw_service(mean: float, shape: float, fixed: float = 0.0) -> float:
    """A service time of the given mean: ``fixed`` (the receive floor and the
    gap) plus a gamma draw of the rest, shape = 1 / cv^2."""
    rest = mean - fixed
    if rest <= 0.0:
        return mean if mean > 0.0 else 0.0
    if shape == 1.0:
        return fixed + np.random.exponential(rest)
    return fixed + np.random.gamma(shape, rest / shape)
