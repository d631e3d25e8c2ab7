"""The reference engine: the rack as SimPy processes.

Readable rather than fast (tens of thousands of requests per wall-second).
It defines what the compiled engine (:mod:`sim.fast_kernel`) must do; the
model itself is described in :mod:`sim.run`. Processes:

* ``_client``: one per client thread, closed loop: draw a request, send
  (``send_us``), wait for the reply or the timer, resend on timeout;
* ``_deliver`` callbacks: constant network delays, wire loss;
* ``_worker``: one per server slot, FCFS from its station's receive buffer
  (a :class:`simpy.Store`; a packet that finds ``buffer_pkts`` waiting and
  no idle worker is dropped), with RocksDB write stop / slowdown / memtable
  switch before each write;
* ``_flush``: per worker, flush jobs on the machine's processor-shared disk
  (:class:`_DiskPS`);
* ``_open_source``: Poisson write-backs of evicted keys (or the arrivals of
  an open queue when there are no clients).

Keys: with ``keys="records"`` (default when the config carries a
:class:`RecordKeys`), each request samples an actual YCSB record
(:func:`model.workload.sample_records`), which is a cache hit when it is
among the switch's cached records and otherwise goes to its partition's
server -- the exact workload, against which the class probabilities that
the fast engine uses are checked. ``keys="classes"`` draws the class from
the hit ratio and shares, like the fast engine.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from model import workload
from .run import HIST_BINS, HIST_LO_DECADE, HIST_PER_DECADE, SimConfig

__all__ = ["SimpyEngine", "RecordKeys"]


class RecordKeys:
    """Exact key classes: sampled records, the cached set and partitioning.

    The switch caches the ``round(cache_keys * cache_scale)`` most popular
    records (as :func:`model.workload.shares` assumes): for zipf the heaviest
    folded head records; for uniform/sequential an evenly spaced set.
    """

    BATCH = 8192

    def __init__(self, scenario, profile):
        w, sw, sv = scenario.workload, scenario.switch, scenario.servers
        self.records = int(w.records)
        self.theta = float(w.zipf_theta)
        self.distribution = w.distribution
        self.n = sv.count
        self.partition = sw.partition
        self.buckets = sw.hash_buckets
        k = int(round(sw.cache_keys * profile.get("cache_scale", 1.0))) if sw.cache else 0
        k = min(k, self.records)
        if k == 0:
            cached = np.zeros(0, dtype=np.int64)
        elif self.distribution == "zipf":
            # _fold is the workload model's exact head (shared lru_cache); its
            # first k records are what shares() treats as cached.
            fold = workload._fold(self.records, self.theta, None, workload.DEFAULT_HEAD)
            cached = np.asarray(fold.recs[:k], dtype=np.int64)
            if len(cached) < k:
                # cache slots beyond the distinct head records: arbitrary tail records
                extra = np.setdiff1d(np.arange(min(self.records, 2 * k + len(cached))), cached)
                cached = np.concatenate([cached, extra[:k - len(cached)]])
        else:
            cached = (np.arange(k, dtype=np.int64) * (self.records // k)) % self.records
        self.cached = np.sort(cached)
        self._seq = 0
        # A read-only cache (NetCache) answers only the reads of cached keys.
        self.hit_prob = w.read_ratio if sw.mode == "read-only" else 1.0
        # Hot-set placement (workload.shares' hot_colocation): that fraction of
        # the hot set's requests goes to server 0.
        self.colocation = float(profile.get("hot_colocation", 0.0))
        self.hot = np.zeros(0, dtype=np.int64)
        self.hot_server = 0
        kh = min(int(round(sw.cache_keys * profile.get("cache_scale", 1.0))), self.records)
        if self.colocation > 0 and kh > 0 and self.distribution == "zipf":
            fold = workload._fold(self.records, self.theta, None, workload.DEFAULT_HEAD)
            head = np.asarray(fold.recs[:kh], dtype=np.int64)
            self.hot = np.sort(head)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Classes of n requests: -1 for a cache hit, else the server index."""
        if self.distribution == "sequential":
            recs = (self._seq + np.arange(n, dtype=np.int64)) % self.records
            self._seq = int((self._seq + n) % self.records)
        else:
            recs = workload.sample_records(n, self.records, self.theta, rng, self.distribution)
        recs = np.asarray(recs, dtype=np.int64)
        srv = workload._servers_of(recs, None, self.n, self.partition, self.buckets)
        if len(self.hot):
            pos = np.searchsorted(self.hot, recs)
            in_hot = (pos < len(self.hot)) & (self.hot[np.minimum(pos, len(self.hot) - 1)] == recs)
            moved = in_hot & (rng.random(len(recs)) < self.colocation)
            srv = np.where(moved, self.hot_server, srv)
        if len(self.cached):
            pos = np.searchsorted(self.cached, recs)
            hit = (pos < len(self.cached)) & (self.cached[np.minimum(pos, len(self.cached) - 1)] == recs)
            if self.hit_prob < 1.0:
                hit &= rng.random(len(recs)) < self.hit_prob
            srv = np.where(hit, -1, srv)
        return srv.astype(np.int64)


class _Counters:
    def __init__(self, n: int):
        self.n = n
        self.reset()

    def reset(self):
        n = self.n
        self.g = dict(done=0.0, lat=0.0, lat2=0.0, hits=0.0, fp=0.0, resends=0.0, wire=0.0,
                      issued=0.0, switches=0.0, flushes=0.0, open_done=0.0, open_resp=0.0)
        self.arr = np.zeros(n)
        self.drop = np.zeros(n)
        self.compl = np.zeros(n)
        self.busy = np.zeros(n)
        self.block = np.zeros(n)
        self.stall = np.zeros(n)
        self.writes = np.zeros(n)
        self.hist = np.zeros(HIST_BINS, dtype=np.int64)

    def latency(self, lat: float):
        self.g["lat"] += lat
        self.g["lat2"] += lat * lat
        if lat <= 0:
            b = 0
        else:
            b = int(math.floor(math.log10(lat) * HIST_PER_DECADE)) - HIST_LO_DECADE * HIST_PER_DECADE
            b = min(max(b, 0), HIST_BINS - 1)
        self.hist[b] += 1


class _Packet:
    __slots__ = ("client", "att", "station", "write", "t_arr")

    def __init__(self, client, att, station, write, t_arr=0.0):
        self.client, self.att, self.station, self.write, self.t_arr = client, att, station, write, t_arr


class _Client:
    __slots__ = ("att", "waiting", "start")

    def __init__(self):
        self.att = 0
        self.waiting = None   # (attempt, event) while a reply is awaited
        self.start = 0.0


class _DiskPS:
    """A machine's disk, processor-shared by the flush jobs writing to it."""

    def __init__(self, env: simpy.Environment, bytes_per_us: float):
        self.env = env
        self.rate = bytes_per_us
        self.jobs: dict[_Job, float] = {}
        self.last = 0.0
        self.version = 0

    def _advance(self):
        now = self.env.now
        if self.jobs:
            done = (now - self.last) * self.rate / len(self.jobs)
            for j in self.jobs:
                self.jobs[j] -= done
        self.last = now

    def _reschedule(self):
        self.version += 1
        if not self.jobs:
            return
        job = min(self.jobs, key=lambda j: (self.jobs[j], j.seq))
        delay = max(0.0, self.jobs[job]) * len(self.jobs) / self.rate
        v = self.version
        ev = self.env.timeout(delay)
        ev.callbacks.append(lambda _e: self._finish(job, v))

    def _finish(self, job, version):
        if version != self.version:
            return            # the set of jobs changed since this was scheduled
        self._advance()
        del self.jobs[job]
        self._reschedule()
        job.done.succeed()

    def write(self, nbytes: float, seq: int) -> simpy.Event:
        self._advance()
        job = _Job(self.env.event(), seq)
        self.jobs[job] = nbytes
        self._reschedule()
        return job.done


class _Job:
    __slots__ = ("done", "seq")

    def __init__(self, done, seq):
        self.done, self.seq = done, seq


class SimpyEngine:
    """SimPy engine for one :class:`SimConfig` (interface as :class:`sim.fast.FastEngine`)."""

    def __init__(self, cfg: SimConfig, seed: int, keys: str | None = None):
        self.cfg = cfg
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(seed)
        n = cfg.stations
        self.cnt = _Counters(n)
        ks = getattr(cfg, "keyspace", None)
        if keys is None:
            keys = "records" if ks is not None else "classes"
        if keys == "records" and ks is None:
            raise ValueError("keys='records' needs a config built from a scenario")
        self.keys = keys
        self._cls_buf = np.zeros(0, dtype=np.int64)
        self._cls_pos = 0
        self._st_cum = np.cumsum(cfg.station_probs / cfg.station_probs.sum())
        op = cfg.open_probs
        self._open_cum = np.cumsum(op / op.sum()) if op.sum() > 0 else self._st_cum
        self.stores = [simpy.Store(self.env) for _ in range(n)]
        self.buf = np.minimum(cfg.buffer_pkts, cfg.queue_capacity())
        self.busy_slots = np.zeros(n, dtype=np.int64)
        # LSM state per station, machine counters
        self.active = np.zeros(n)
        self.imm = np.zeros(n, dtype=np.int64)
        self.flushing = np.zeros(n, dtype=bool)
        self.flush_done = [self.env.event() for _ in range(n)]
        self.slow_next = np.zeros(n)
        self.m_busy = np.zeros(cfg.machines, dtype=np.int64)
        self.m_flush = np.zeros(cfg.machines, dtype=np.int64)
        self.disks = [_DiskPS(self.env, cfg.disk_bytes_per_us) for _ in range(cfg.machines)]
        self._flush_seq = 0
        self.in_flight = 0
        self.shape = 1.0 / cfg.service_cv ** 2
        self.clients = [_Client() for _ in range(cfg.n_clients)]
        starts = np.sort(self.rng.random(cfg.n_clients) * cfg.start_spread_us)
        for c, t0 in enumerate(starts):
            self.env.process(self._client(c, float(t0)))
        for s in range(n):
            for _ in range(int(cfg.station_servers[s])):
                self.env.process(self._worker(s))
        if cfg.open_rate_per_us > 0:
            self.env.process(self._open_source())

    # ---- random draws ----
    def _draw_class(self) -> int:
        cfg = self.cfg
        if self.keys == "records":
            if self._cls_pos >= len(self._cls_buf):
                self._cls_buf = cfg.keyspace.sample(self.rng, RecordKeys.BATCH)
                self._cls_pos = 0
            k = int(self._cls_buf[self._cls_pos])
            self._cls_pos += 1
            return k
        if self.rng.random() < cfg.hit_ratio:
            return -1
        return int(np.searchsorted(self._st_cum, self.rng.random(), side="right").clip(
            0, cfg.stations - 1))

    def _service(self, s: int) -> float:
        mean = float(self.cfg.service_mean_us[s])
        if mean <= 0:
            return 0.0
        if self.shape == 1.0:
            return float(self.rng.exponential(mean))
        return float(self.rng.gamma(self.shape, mean / self.shape))

    # ---- clients and the network ----
    def _client(self, c: int, t0: float):
        env, cfg, cnt = self.env, self.cfg, self.cnt
        cl = self.clients[c]
        yield env.timeout(t0)
        while True:
            cls = self._draw_class()
            write = 1 if self.rng.random() < cfg.write_frac else 0
            cnt.g["issued"] += 1
            cl.start = env.now
            first = True
            while True:
                if not first:
                    cnt.g["resends"] += 1
                first = False
                yield env.timeout(cfg.send_us)
                cl.att += 1
                reply = env.event()
                cl.waiting = (cl.att, reply)
                if cfg.loss_rate > 0 and self.rng.random() < cfg.loss_rate:
                    cnt.g["wire"] += 1
                elif cls < 0:
                    self._later(cfg.hit_rtt_us, self._reply, c, cl.att, True)
                else:
                    self._later(cfg.miss_rtt_us / 2, self._arrive,
                                _Packet(c, cl.att, cls, write))
                timer = env.timeout(cfg.timeout_us) if math.isfinite(cfg.timeout_us) else None
                if timer is None:
                    yield reply
                else:
                    yield reply | timer
                if reply.triggered:
                    break            # done; a timeout at the same instant is moot
                cl.waiting = None    # given up: a late reply is now a false positive
            cl.waiting = None

    def _later(self, delay: float, fn, *args):
        self.in_flight += 1
        ev = self.env.timeout(delay)

        def fire(_e):
            self.in_flight -= 1
            fn(*args)
        ev.callbacks.append(fire)

    def _reply(self, c: int, att: int, hit: bool):
        cl = self.clients[c]
        cnt = self.cnt
        if cl.waiting is not None and cl.waiting[0] == att and not cl.waiting[1].triggered:
            cnt.g["done"] += 1
            if hit:
                cnt.g["hits"] += 1
            cnt.latency(self.env.now - cl.start)
            cl.waiting[1].succeed()
        else:
            cnt.g["fp"] += 1         # a reply to an attempt already given up on

    def _arrive(self, pkt: _Packet):
        s = pkt.station
        st = self.stores[s]
        self.cnt.arr[s] += 1
        pkt.t_arr = self.env.now
        if len(st.get_queue) == 0 and len(st.items) >= self.buf[s]:
            self.cnt.drop[s] += 1    # receive buffer full: the client finds out by timeout
            return
        st.put(pkt)

    def _open_source(self):
        env, cfg = self.env, self.cfg
        while True:
            yield env.timeout(float(self.rng.exponential(1.0 / cfg.open_rate_per_us)))
            s = int(np.searchsorted(self._open_cum, self.rng.random(), side="right").clip(
                0, cfg.stations - 1))
            client = -1 if cfg.n_clients == 0 else -3
            self._arrive(_Packet(client, 0, s, int(cfg.open_write)))

    # ---- workers and RocksDB ----
    def _worker(self, s: int):
        env, cfg, cnt = self.env, self.cfg, self.cnt
        m = int(cfg.station_machine[s])
        while True:
            pkt = yield self.stores[s].get()
            self.busy_slots[s] += 1
            start = env.now
            extra = 0.0
            if cfg.lsm and pkt.write:
                while self.imm[s] >= cfg.maxnum:
                    # write stop: maxnum immutables wait for flush; the worker blocks
                    since = env.now
                    yield self.flush_done[s]
                    cnt.stall[s] += env.now - since
                if self.active[s] + cfg.entry_bytes > cfg.memtable_bytes:
                    # memtable full: switch (a new WAL file blocks the worker)
                    self.imm[s] += 1
                    self.active[s] = 0.0
                    cnt.g["switches"] += 1
                    if cfg.wal:
                        extra += float(cfg.wal_block_us[m])
                    self._maybe_flush(s)
                if (cfg.maxnum > 3 and self.imm[s] >= cfg.maxnum - 1
                        and self.imm[s] - 1 >= cfg.flushnum):
                    # write slowdown to the delayed-write rate
                    st = max(env.now + extra, self.slow_next[s])
                    extra = st - env.now
                    self.slow_next[s] = st + cfg.entry_bytes / cfg.slowdown_bytes_per_us
            work = self._service(s)
            self.m_busy[m] += 1
            if cfg.cores > 0:
                run = self.m_busy[m] + min(self.m_flush[m], cfg.bg_cap)
                if run > cfg.cores:
                    work *= run / cfg.cores * (1.0 + cfg.ctx_penalty)
            cnt.block[s] += extra
            yield env.timeout(extra + work)
            self.m_busy[m] -= 1
            self.busy_slots[s] -= 1
            cnt.compl[s] += 1
            cnt.busy[s] += env.now - start
            if pkt.write:
                cnt.writes[s] += 1
                if cfg.lsm:
                    self.active[s] += cfg.entry_bytes
            if pkt.client >= 0:
                self._later(cfg.miss_rtt_us / 2, self._reply, pkt.client, pkt.att, False)
            else:                    # open packet: eviction write-back, or open-queue mode
                r = env.now - pkt.t_arr
                cnt.g["open_done"] += 1
                cnt.g["open_resp"] += r
                if cfg.n_clients == 0:   # open network: its packets are the requests
                    cnt.g["done"] += 1
                    cnt.latency(r)

    def _maybe_flush(self, s: int):
        if not self.flushing[s] and self.imm[s] >= self.cfg.flushnum:
            self.flushing[s] = True
            self.env.process(self._flush(s))

    def _flush(self, s: int):
        cfg, cnt = self.cfg, self.cnt
        m = int(cfg.station_machine[s])
        taken = int(self.imm[s])          # a flush job takes every immutable present
        self.m_flush[m] += 1
        yield self.env.timeout(cfg.flush_fixed_us)
        self._flush_seq += 1
        yield self.disks[m].write(taken * cfg.memtable_bytes * float(cfg.wamp[s]), self._flush_seq)
        self.imm[s] -= taken
        self.m_flush[m] -= 1
        cnt.g["flushes"] += 1
        self.flushing[s] = False
        done, self.flush_done[s] = self.flush_done[s], self.env.event()
        done.succeed()
        self._maybe_flush(s)

    # ---- engine interface ----
    def run_until(self, t_us: float) -> dict:
        self.cnt.reset()
        self.env.run(until=t_us)
        c = self.cnt
        out = dict(c.g)
        out.update(arr=c.arr.copy(), drop=c.drop.copy(), compl=c.compl.copy(),
                   busy=c.busy.copy(), block=c.block.copy(), stall=c.stall.copy(),
                   writes=c.writes.copy(), hist=c.hist.copy())
        return out

    def refresh(self) -> None:
        """Dynamics changed cfg arrays in place; services read them when they start."""

    def end_state(self) -> dict:
        return {"queued": np.array([len(st.items) for st in self.stores]),
                "in_service": self.busy_slots.copy(), "in_flight": int(self.in_flight)}
