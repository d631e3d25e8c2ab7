"""The reference engine: the rack as SimPy processes.

Readable rather than fast (tens of thousands of requests per wall-second).
It runs the same per-event rules as the compiled engine -- the mechanisms'
functions in :mod:`model.rack`, called here in plain Python -- with SimPy
doing the scheduling. Processes:

* ``_client``: one per client thread: draw a request, send, wait for a
  completing reply, the timer, or (``retry = farreach``) a stale reply that
  restarts the wait; resend on timeout. With client cores
  (``cfg.client_cpu_us`` > 0) ``_client_cores`` instead: before every send
  the thread holds one of the client cores (a FIFO
  :class:`simpy.Resource`) for an exponential time, then the packet leaves
  ``send_us`` later and its timer starts then (the rules of
  :mod:`sim.fast_kernel`'s docstring: a request starts when its thread asks
  for a core, and a request that completes while its thread waits for a
  core to resend it hands that core time to the next request);
* delivery callbacks: constant network delays;
* ``_worker``: one per worker slot, FCFS from its station's receive buffer
  (a :class:`simpy.Store`), with RocksDB's write path before a write
  (:func:`sim.write_path.write_start`: a stop, pacing, the memtable, a WAL
  switch or sync) and, with ``cfg.txn_commit_us`` > 0, the write's commit
  after its service through its machine's commit path (a FIFO
  :class:`simpy.Resource` of one, held for an exponential time);
* job events (flush and compaction jobs on the machines' disks) from
  :func:`sim.write_path.next_job`, rescheduled whenever the jobs change;
* ``_open_source``: Poisson write-backs of evicted keys (or the requests of
  an open network).

Keys: with a key sampler (``cfg.keyspace``, the compiled rack's
:class:`model.rack.placement.KeySampler`; the default when the config has
one), each request samples a key from the workload's own popularity and is
a cache hit when that key is cached, else goes to its partition's server --
against which the class probabilities the fast engine draws from are
checked. Without one it draws the class from the hit ratio and shares, like
the fast engine.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from model.rack import clients as cl_mech, lsm_rules, network as nw_mech, \
    placement as pl_mech, service as svc_mech

from . import counters, write_path
from .config import SimConfig

__all__ = ["SimpyEngine"]

KEY_BATCH = 8192


class _Packet:
    __slots__ = ("client", "att", "station", "write", "t_arr")

    def __init__(self, client, att, station, write, t_arr=0.0):
        self.client, self.att, self.station, self.write, self.t_arr = client, att, station, write, t_arr


#: _Client.first of a request none of whose attempts has left yet (client cores)
NO_ATT = 1 << 62
CS_OUT, CS_RESEND, CS_NEW = 0, 1, 2   # at the client cores: not; for a resend; for a new request


class _Client:
    __slots__ = ("att", "first", "start", "done", "rearm", "cs", "began")

    def __init__(self):
        self.att = 0          # attempts sent so far (the current one included)
        self.first = 0        # first attempt of the outstanding request
        self.start = 0.0
        self.done = None      # event: the outstanding request completed
        self.rearm = None     # event: a stale reply restarted the wait (retry = farreach)
        self.cs = CS_OUT      # at the client cores? (cfg.client_cpu_us > 0)
        self.began = 0.0      # when its time on a client core began (or the last chunk's end)


class _Slot:
    """What a worker slot holds, for the chunk boundaries (SimpyEngine.carry_over):
    busy since ``start``, at a write stop since ``since`` (else None), its
    block ending at ``bend``."""
    __slots__ = ("station", "on", "start", "since", "bend")

    def __init__(self, station: int):
        self.station = station
        self.on = False
        self.start = 0.0
        self.since = None
        self.bend = -math.inf


class SimpyEngine:
    """SimPy engine for one :class:`SimConfig` (interface as :class:`sim.fast.FastEngine`)."""

    def __init__(self, cfg: SimConfig, seed: int, keys: str | None = None):
        self.cfg = cfg
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(seed)
        np.random.seed(int(seed) & 0x7FFFFFFF)   # the mechanisms' draws (service times)
        n = cfg.stations
        self.G, self.C, self.hist = counters.new_chunk(n)
        ks = cfg.keyspace
        if keys is None:
            keys = "records" if ks is not None else "classes"
        if keys == "records" and ks is None:
            raise ValueError("keys='records' needs a config with a key sampler")
        self.keys = keys
        self._cls_buf = np.zeros(0, dtype=np.int64)
        self._cls_pos = 0
        self._st_table = pl_mech.station_table(cfg.station_probs)
        op = cfg.open_probs
        self._open_table = pl_mech.station_table(op) if op.sum() > 0 else self._st_table
        self.stores = [simpy.Store(self.env) for _ in range(n)]
        self.buf = np.minimum(cfg.buffer_pkts, cfg.queue_capacity())
        self.busy_slots = np.zeros(n, dtype=np.int64)
        self.m_busy = np.zeros(cfg.machines, dtype=np.int64)
        # RocksDB's state as the run starts (sim.config.rack_config), moved by
        # sim.write_path; the time the jobs were last advanced to
        lp, self.st, self.jobs, self.mach = (a.copy().view(np.recarray) for a in (
            cfg.lsm_params, cfg.lsm_state, cfg.lsm_jobs, cfg.lsm_machines))
        self.p = lp[0]
        self.synced = np.zeros(n)
        self.rack = write_path.new_rack()
        self.t_jobs = 0.0
        self.stop_cleared = [self.env.event() for _ in range(n)]
        self._bg_version = 0
        self._cap_left = math.inf               # requests the chunk may still complete
        self._cap = None                        # event: they have
        #: called with lsm() when RocksDB's state changed, at most every state_gap_us
        #: (as sim.fast.FastEngine.run_until)
        self.on_state = None
        self.state_gap_us = 0.0
        self._refresh_at = 0.0
        self._refresh_due = False
        self.in_flight = 0
        self.cores_on = cfg.client_cpu_us > 0 and cfg.n_clients > 0
        self.client_cores = simpy.Resource(self.env, capacity=max(1, cfg.client_cores_used))
        self.commit_paths = [simpy.Resource(self.env, capacity=1) for _ in range(cfg.machines)]
        self.clients = [_Client() for _ in range(cfg.n_clients)]
        self._holders: set[int] = set()          # clients holding a client core now
        self._slots: list[_Slot] = []
        self._block_carry = np.zeros(n)          # blocks' parts after the last chunk's end
        starts = np.sort(self.rng.random(cfg.n_clients) * cfg.start_spread_us)
        client = self._client_cores if self.cores_on else self._client
        for c, t0 in enumerate(starts):
            self.env.process(client(c, float(t0)))
        for s in range(n):
            for _ in range(int(cfg.station_servers[s])):
                self.env.process(self._worker(s))
        if cfg.open_rate_per_us > 0:
            self.env.process(self._open_source())

    # ---- random draws ----
    def _draw_class(self) -> int:
        if self.keys == "records":
            if self._cls_pos >= len(self._cls_buf):
                self._cls_buf = self.cfg.keyspace.sample(self.rng, KEY_BATCH)
                self._cls_pos = 0
            k = int(self._cls_buf[self._cls_pos])
            self._cls_pos += 1
            return k
        return pl_mech.draw_station(self.rng.random(), self.rng.random(), self.cfg.hit_ratio,
                                    *self._st_table)

    # ---- clients and the network ----
    def _client(self, c: int, t0: float):
        env, cfg, G = self.env, self.cfg, self.G
        cl = self.clients[c]
        yield env.timeout(t0)
        while True:
            cls = self._draw_class()
            write = 1 if cls >= 0 and self.rng.random() < cfg.write_frac[cls] else 0
            G[counters.G_ISSUED] += 1
            cl.start = env.now
            cl.first = cl.att + 1
            cl.done = env.event()
            resend = False
            while not cl.done.triggered:
                if resend:
                    G[counters.G_RESENDS] += 1
                cl.att += 1
                att = cl.att
                yield env.timeout(cfg.send_us)
                if cfg.loss_rate > 0 and self.rng.random() < cfg.loss_rate:
                    G[counters.G_WIRE] += 1
                elif cls < 0:
                    self._later(cfg.hit_rtt_us, self._reply, c, att, True)
                else:
                    self._later(cfg.miss_rtt_us / 2, self._arrive, _Packet(c, att, cls, write))
                # wait for the reply; a stale reply (retry = farreach) restarts the wait
                while not cl.done.triggered:
                    cl.rearm = env.event()
                    timer = env.timeout(cfg.timeout_us) if math.isfinite(cfg.timeout_us) else None
                    events = [cl.done, cl.rearm] + ([timer] if timer is not None else [])
                    yield env.any_of(events)
                    if cl.done.triggered or not cl.rearm.triggered:
                        break
                resend = True

    def _client_cores(self, c: int, t0: float):
        """A client thread that needs a client core before every send."""
        env, cfg, G = self.env, self.cfg, self.G
        cl = self.clients[c]
        finite = math.isfinite(cfg.timeout_us)
        yield env.timeout(t0)
        self._new_request(cl)
        cls = write = 0
        while True:
            asked = env.now
            with self.client_cores.request() as req:
                yield req
                cl.began = env.now
                self._holders.add(c)
                yield env.timeout(float(self.rng.exponential(cfg.client_cpu_us)))
            self._holders.discard(c)
            G[counters.G_CLIENT_BUSY] += env.now - cl.began
            G[counters.G_CLIENT_RES] += env.now - asked
            # what it sends is settled now: a request that completed while it
            # waited to resend it handed this core time to the next one
            if cl.cs == CS_NEW:
                cls = self._draw_class()
                write = 1 if cls >= 0 and self.rng.random() < cfg.write_frac[cls] else 0
                cl.att += 1
                cl.first = cl.att
            else:
                G[counters.G_RESENDS] += 1
                cl.att += 1
            cl.cs = CS_OUT
            self._later(cfg.send_us, self._leave, c, cl.att, cls, write)
            # the reply timer starts when the packet leaves
            timer = env.timeout(cfg.send_us + cfg.timeout_us) if finite else None
            while not cl.done.triggered:
                cl.rearm = env.event()
                yield env.any_of([cl.done, cl.rearm] + ([timer] if timer is not None else []))
                if cl.done.triggered or not cl.rearm.triggered:
                    break
                timer = env.timeout(cfg.timeout_us)      # a stale reply: the wait starts over
            cl.rearm = None
            if cl.done.triggered:
                self._new_request(cl)
            else:
                cl.cs = CS_RESEND

    def _new_request(self, cl: _Client):
        """A thread starts a request: it asks for a client core for its first send."""
        self.G[counters.G_ISSUED] += 1
        cl.start = self.env.now
        cl.first = NO_ATT
        cl.done = self.env.event()
        cl.cs = CS_NEW

    def _leave(self, c: int, att: int, cls: int, write: int):
        """A client's packet leaves (client cores): lost, or on its way."""
        cfg = self.cfg
        if cfg.loss_rate > 0 and self.rng.random() < cfg.loss_rate:
            self.G[counters.G_WIRE] += 1
        elif cls < 0:
            self._later(cfg.hit_rtt_us, self._reply, c, att, True)
        else:
            self._later(cfg.miss_rtt_us / 2, self._arrive, _Packet(c, att, cls, write))

    def _later(self, delay: float, fn, *args):
        self.in_flight += 1
        ev = self.env.timeout(delay)

        def fire(_e):
            self.in_flight -= 1
            fn(*args)
        ev.callbacks.append(fire)

    def _reply(self, c: int, att: int, hit: bool):
        cl = self.clients[c]
        G = self.G
        if cl.done is not None and not cl.done.triggered and att >= cl.first and \
                cl_mech.reply_completes(self.cfg.retry, att, cl.att, cl.first):
            lat = self.env.now - cl.start
            self._done_one()
            if hit:
                G[counters.G_HITS] += 1
            if att > cl.first:
                G[counters.G_RETRIED] += 1
            self._latency(lat)
            cl.done.succeed()
            if cl.cs == CS_RESEND:
                # at the client cores to resend it: that core time now serves
                # its next request, which starts here
                self._new_request(cl)
        else:
            G[counters.G_STALE] += 1
            if self.cfg.retry == cl_mech.RETRY_FARREACH and cl.rearm is not None \
                    and not cl.rearm.triggered and not cl.done.triggered:
                cl.rearm.succeed()

    def _done_one(self):
        """A request completed: the chunk ends when its cap is reached."""
        self.G[counters.G_DONE] += 1
        if self._cap is not None and self.G[counters.G_DONE] >= self._cap_left \
                and not self._cap.triggered:
            self._cap.succeed()

    def _latency(self, lat: float):
        self.G[counters.G_LAT] += lat
        self.G[counters.G_LAT2] += lat * lat
        self.hist[counters.hist_bin(lat)] += 1

    def _arrive(self, pkt: _Packet):
        s = pkt.station
        st = self.stores[s]
        self.C[s, counters.C_ARR] += 1
        pkt.t_arr = self.env.now
        idle = len(st.get_queue) > 0
        if not nw_mech.admits(idle, len(st.items), int(self.buf[s])):
            self.C[s, counters.C_DROP] += 1   # receive buffer full: the client finds out by timeout
            return
        st.put(pkt)

    def _open_source(self):
        env, cfg = self.env, self.cfg
        while True:
            yield env.timeout(float(self.rng.exponential(1.0 / cfg.open_rate_per_us)))
            s = pl_mech.draw_station(1.0, self.rng.random(), 0.0, *self._open_table)
            client = -1 if cfg.n_clients == 0 else -3
            self._arrive(_Packet(client, 0, s, int(cfg.open_write)))

    # ---- workers and RocksDB ----
    def _worker(self, s: int):
        env, cfg, C = self.env, self.cfg, self.C
        m = int(cfg.station_machine[s])
        slot = _Slot(s)
        self._slots.append(slot)
        while True:
            pkt = yield self.stores[s].get()
            self.busy_slots[s] += 1
            slot.on, slot.start, slot.bend = True, env.now, -math.inf
            extra = 0.0
            if cfg.lsm and pkt.write:
                while True:
                    status, extra, sealed = write_path.write_start(
                        self.st, s, self.p, self.jobs, self.mach, env.now, self.t_jobs,
                        float(cfg.wal_block_us[m]), cfg.sync_bytes, cfg.sync_block_us,
                        self.synced, self.rack)
                    if sealed:
                        self.G[counters.G_SWITCHES] += 1
                        self.t_jobs = env.now
                        self._bg_reschedule()
                        self._state_changed()
                    if status == write_path.GO:
                        break
                    # write stop: block until a job event of this instance clears it
                    slot.since = env.now
                    yield self.stop_cleared[s]
                    C[s, counters.C_STALL] += env.now - slot.since
                    slot.since = None
            work = svc_mech.draw_service(float(cfg.service_mean_us[s]), cfg.service_shape,
                                         cfg.service_fixed_us)
            self.m_busy[m] += 1
            if cfg.cores > 0:
                work = svc_mech.stretched(
                    work, cfg.service_fixed_us,
                    svc_mech.stretch(self.m_busy[m] + (lsm_rules.bg_running(self.mach, m)
                                                       if cfg.bg_shares_cores else 0),
                                     cfg.cores,
                                     cfg.ctx_penalty))
            C[s, counters.C_BLOCK] += extra
            slot.bend = env.now + extra
            yield env.timeout(extra + work)
            if pkt.write and cfg.txn_commit_us > 0:
                # the write commits through its machine's commit path (the
                # worker waits; its slot stays busy)
                since = env.now
                with self.commit_paths[m].request() as req:
                    yield req
                    yield env.timeout(float(self.rng.exponential(cfg.txn_commit_us)))
                C[s, counters.C_COMMIT] += env.now - since
            self.m_busy[m] -= 1
            self.busy_slots[s] -= 1
            C[s, counters.C_COMPL] += 1
            C[s, counters.C_BUSY] += env.now - slot.start
            slot.on = False
            if pkt.write:
                C[s, counters.C_WRITES] += 1
            if pkt.client >= 0:
                self._later(cfg.miss_rtt_us / 2, self._reply, pkt.client, pkt.att, False)
            else:                    # open packet: a write-back, or an open network's request
                r = env.now - pkt.t_arr
                self.G[counters.G_OPEN_DONE] += 1
                self.G[counters.G_OPEN_RESP] += r
                if cfg.n_clients == 0:
                    self._done_one()
                    self._latency(r)

    def _bg_reschedule(self):
        """(Re)schedule the next job event after the jobs changed."""
        self._bg_version += 1
        t, j = write_path.next_job(self.st, self.p, self.jobs, self.mach, self.env.now)
        if j < 0:
            return
        v = self._bg_version
        ev = self.env.timeout(max(0.0, t - self.env.now))
        ev.callbacks.append(lambda _e: self._bg_fire(v, j))

    def _bg_fire(self, version: int, j: int):
        if version != self._bg_version:
            return              # the jobs changed since this was scheduled
        kind, finished, release = write_path.job_fires(self.st, self.p, self.jobs, self.mach, j,
                                                       self.env.now, self.t_jobs, self.rack)
        self.t_jobs = self.env.now
        if finished:
            self.G[counters.G_FLUSHES if kind == lsm_rules.FLUSH else counters.G_COMPACTIONS] += 1
            self._state_changed()
        if release >= 0:
            done, self.stop_cleared[release] = self.stop_cleared[release], self.env.event()
            done.succeed()
        self._bg_reschedule()

    def _state_changed(self):
        """RocksDB's state changed: hand it to ``on_state`` now, or once
        ``state_gap_us`` has passed since the last time."""
        if self.on_state is None or self._refresh_due:
            return
        if self.env.now >= self._refresh_at:
            self._refresh()
            return
        self._refresh_due = True
        ev = self.env.timeout(self._refresh_at - self.env.now)
        ev.callbacks.append(lambda _e: self._refresh())

    def _refresh(self):
        self._refresh_due = False
        self.on_state(self.lsm())
        self._refresh_at = self.env.now + self.state_gap_us

    # ---- engine interface ----
    @property
    def now(self) -> float:
        return float(self.env.now)

    def lsm(self) -> tuple:
        """As :meth:`sim.fast.FastEngine.lsm`."""
        return self.p, self.st, self.jobs, self.mach, self.rack

    def run_until(self, t_us: float, done_cap: float = math.inf) -> dict:
        """As :meth:`sim.fast.FastEngine.run_until`."""
        self.G[:] = 0.0
        self.C[:] = 0.0
        self.hist[:] = 0
        if math.isfinite(done_cap):
            self._cap_left = done_cap
            self._cap = self.env.event()
            self.env.run(until=self.env.any_of([self.env.timeout(max(t_us - self.env.now, 0.0)),
                                                self._cap]))
            self._cap = None
        else:
            self.env.run(until=t_us)
        self.C[:, counters.C_BLOCK] += self._block_carry
        self._block_carry[:] = 0.0
        return counters.as_dict(self.G, self.C, self.hist)

    def carry_over(self, chunk: dict) -> None:
        """As :meth:`sim.fast.FastEngine.carry_over`: the run goes on, so the
        part up to now of the busy time, write stops and client core time in
        progress counts in ``chunk``, and a block's part after now in the next."""
        now = float(self.env.now)
        busy, stall, later = (np.zeros(self.cfg.stations) for _ in range(3))
        for sl in self._slots:
            if not sl.on:
                continue
            busy[sl.station] += now - sl.start
            sl.start = now
            if sl.since is not None:
                stall[sl.station] += now - sl.since
                sl.since = now
            if sl.bend > now:
                later[sl.station] += sl.bend - now
        chunk["busy"] = chunk["busy"] + busy
        chunk["stall"] = chunk["stall"] + stall
        chunk["block"] = chunk["block"] - later
        self._block_carry += later
        for c in self._holders:
            cl = self.clients[c]
            chunk["client_busy"] += now - cl.began
            cl.began = now

    def end_state(self) -> dict:
        return {"queued": np.array([len(st.items) for st in self.stores]),
                "in_service": self.busy_slots.copy(), "in_flight": int(self.in_flight)}
