"""A lossy, reordering network around the switch model, for property tests.

Every link is an explicit list of frames; a test (or hypothesis) decides
which frame is delivered, dropped or duplicated next, so any interleaving of
client traffic, population and eviction can be produced. Clients behave like
the closed-loop clients of the real system: one outstanding request each,
resent on demand with the same req_id, late replies filtered by req_id.

The checker records what an observer may rely on:

* writes to one key are never concurrent (a client only issues a write for a
  key when no other write to it is outstanding), so "the latest acknowledged
  write" of a key is well defined;
* a GET must return the value of the latest write acknowledged before the GET
  was issued, or of a later write (one still in flight);
* the final value on the server after draining and evicting everything is
  the value of the last (acknowledged) write.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.switch import (DEL, GET, NOT_FOUND, OK, PUT, REPORT_HOT,
                          REPORT_UNCACHEABLE, ControlPlane, Frame, Packet,
                          ServerModel, SwitchModel)

LINKS = ("c2s", "s2srv", "srv2s", "s2c", "cp2srv", "srv2cp")


class Violation(AssertionError):
    pass


@dataclass
class Outstanding:
    packet: Packet
    floor: int          # GET: index of the last acked write at issue time
    write_index: int    # writes: index in the key's history


class Harness:
    def __init__(self, keys, n_servers=2, partition="range", seq_check="disk-get",
                 n_clients=3, fifo_data=False, cp_on_data_path=True, switch_cls=SwitchModel):
        self.keys = list(keys)
        self.sw = switch_cls(n_servers, partition)
        self.cp = ControlPlane(self.sw)
        self.servers = [ServerModel(seq_check=seq_check) for _ in range(n_servers)]
        self.fifo_data = fifo_data
        # With an ordered data link, the control plane's LOADs and write-backs
        # travel it too (they leave through the switch like any frame to a
        # server), unless a test asks for a separate control path.
        self.cp_path = "s2srv" if fifo_data and cp_on_data_path else "cp2srv"
        self.links = {name: [] for name in LINKS}
        self.n_clients = n_clients
        self.out: dict[int, Outstanding] = {}
        self.history = {}       # key -> list of values (None = deleted)
        self.acked = {}         # key -> index of last acked write
        self.writing = set()    # keys with an outstanding write
        self.next_req = 1
        self.next_val = 1
        self.reads_checked = 0
        for k in self.keys:
            v0 = b"init" + k[:4]
            self.servers[self.sw.server_for(k)].preload([(k, v0)])
            self.history[k] = [v0]
            self.acked[k] = 0

    # -- clients -----------------------------------------------------------
    def issue(self, client: int, key: bytes, kind: int) -> None:
        if client in self.out:
            return
        rid = self.next_req
        self.next_req += 1
        if kind != GET and key in self.writing:
            kind = GET
        if kind == GET:
            pkt = Packet(op=GET, key=key, req_id=rid)
            self.out[client] = Outstanding(pkt, self.acked[key], -1)
        else:
            if kind == DEL:
                pkt, value = Packet(op=DEL, key=key, req_id=rid), None
            else:
                n = self.next_val
                self.next_val += 1
                # every 5th value has an unaligned length (uncacheable path)
                value = n.to_bytes(8, "big") + (b"xy" if n % 5 == 0 else b"")
                pkt = Packet(op=PUT, key=key, value=value, req_id=rid)
            self.history[key].append(value)
            self.writing.add(key)
            self.out[client] = Outstanding(pkt, -1, len(self.history[key]) - 1)
        self.links["c2s"].append(Frame(pkt, ("client", client), ("switch", 0)))

    def retry(self, client: int) -> None:
        o = self.out.get(client)
        if o is not None:
            self.links["c2s"].append(Frame(o.packet, ("client", client), ("switch", 0)))

    def _client_receive(self, f: Frame) -> None:
        client = f.dst[1]
        o = self.out.get(client)
        p = f.packet
        if o is None or o.packet.req_id != p.req_id:
            return                                  # late / duplicate reply
        key = o.packet.key
        if o.packet.op == GET:
            if p.status not in (OK, NOT_FOUND):
                return
            got = p.value if p.status == OK else None
            hist = self.history[key]
            if got not in hist[o.floor:]:
                raise Violation(
                    f"GET {key.hex()} returned {got!r}; acked floor {hist[o.floor]!r}, "
                    f"history {hist}")
            self.reads_checked += 1
        else:
            if p.status != OK:
                return                              # STALE copy: keep waiting
            self.acked[key] = o.write_index
            self.writing.discard(key)
            self.links["c2s"] = [x for x in self.links["c2s"]
                                 if x.packet.req_id != p.req_id]
        del self.out[client]

    # -- links -------------------------------------------------------------
    def _fifo(self, link: str) -> bool:
        return self.fifo_data and link == "s2srv"

    def deliver(self, link: str, i: int = 0) -> None:
        q = self.links[link]
        if not q:
            return
        f = q.pop(0 if self._fifo(link) else i % len(q))
        if link in ("c2s", "srv2s"):
            for g in self.sw.process(f):
                self.links["s2srv" if g.dst[0] == "server" else "s2c"].append(g)
        elif link in ("s2srv", "cp2srv"):
            rep = self.servers[f.dst[1]].handle(f.packet)
            back = "srv2cp" if f.src[0] == "cpu" else "srv2s"
            self.links[back].append(Frame(rep, f.dst, f.src))
        elif link == "s2c":
            self._client_receive(f)
        else:
            self._send_cp(self.cp.on_reply(f.packet))

    def drop(self, link: str, i: int = 0) -> None:
        q = self.links[link]
        if q:
            q.pop(i % len(q))

    def dup(self, link: str, i: int = 0) -> None:
        q = self.links[link]
        if q:
            j = i % len(q)
            # On a FIFO link a duplicate can only follow its original.
            q.insert(j + 1 if self._fifo(link) else len(q), q[j])

    # -- control plane -----------------------------------------------------
    def _send_cp(self, frames) -> None:
        self.links[self.cp_path].extend(frames)

    def populate(self, key: bytes) -> None:
        self._send_cp(self.cp.populate(key))

    def evict(self, key: bytes) -> None:
        self._send_cp(self.cp.evict(key))

    def tick(self) -> None:
        self._send_cp(self.cp.tick())

    def reports(self, act_on_hot: bool = True) -> None:
        for key, reason in self.cp.poll_reports():
            if reason == REPORT_UNCACHEABLE:
                self.evict(key)
            elif reason == REPORT_HOT and act_on_hot:
                self.populate(key)

    # -- end of run ----------------------------------------------------------
    def drain(self, max_rounds: int = 200) -> None:
        """Deliver everything in order, resend, until all requests finish."""
        for _ in range(max_rounds):
            for _ in range(10_000):
                busy = [l for l in LINKS if self.links[l]]
                if not busy:
                    break
                for l in busy:
                    self.deliver(l, 0)
            if not self.out and not self.cp.pending:
                return
            self.reports(act_on_hot=False)
            for c in list(self.out):
                self.retry(c)
            self.tick()
        raise Violation(f"no progress: outstanding {self.out}, cp {self.cp.pending}")

    def finish_and_check(self) -> None:
        self.drain()
        for k in self.cp.cached():
            self.evict(k)
        self.drain()
        # every write was acknowledged; nothing is cached any more
        assert not self.writing and not self.cp.cached()
        for k in self.keys:
            srv = self.servers[self.sw.server_for(k)]
            seq, val = srv.store[k]
            want = self.history[k][-1]
            if val != want:
                raise Violation(f"server holds {val!r} for {k.hex()}, last acked write {want!r}")
            self.issue(0, k, GET)
            self.drain()
        self.check_server_order()

    def check_server_order(self) -> None:
        strict = self.servers[0].seq_check == "disk-get"
        for s in self.servers:
            last = {}
            for key, seq in s.applied:
                prev = last.get(key, 0)
                if seq < prev or (strict and seq == prev):
                    raise Violation(f"server applied seq {seq} after {prev} for {key.hex()}")
                last[key] = seq
