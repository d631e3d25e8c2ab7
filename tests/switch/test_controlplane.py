"""The bfrt_python control-plane script against the behavioural model.

p4/controlplane/farreach_cp.py touches the switch only through a data-plane
adapter; here the adapter is backed by model.switch.SwitchModel's tables and
registers (same names as the P4), and servers are real UDP sockets on
127.0.0.1, so population (LOAD) and eviction with write-back (WB_PUT/WB_DEL,
seq-checked by the server) run exactly as they would on the switch CPU.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from model.switch import (EVICTING, GET, HOT_THRESHOLD, OK, PUT, DEL, STALE, VALID,
                          Frame, Packet, SwitchModel)

from .udp_server import StandInServer

CP_PATH = Path(__file__).resolve().parents[2] / "p4" / "controlplane" / "farreach_cp.py"


def load_cp():
    spec = importlib.util.spec_from_file_location("farreach_cp", CP_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class ModelDataPlane:
    def __init__(self, sw: SwitchModel):
        self.sw = sw
        self.regs = {r.name: r for r in [sw.state_reg, sw.dirty_reg, sw.seq_reg,
                                         sw.vallen_reg, sw.bucket_seq_reg, sw.bloom_reg,
                                         *sw.val_regs, *sw.cms_regs]}

    def reg_read(self, name, index):
        return self.regs[name].read(index)

    def reg_write(self, name, index, value):
        self.regs[name].write(index, value)

    def reg_clear(self, name):
        self.regs[name].clear()

    def cache_add(self, key, idx):
        self.sw.cache_tbl.add(key, idx)

    def cache_delete(self, key):
        self.sw.cache_tbl.delete(key)


def client(sw, servers, pkt):
    """One request through the model switch; forwarded ones go to the server."""
    out = sw.process(Frame(pkt, ("client", 0), ("switch", 0)))
    assert len(out) <= 1
    if not out:
        return None
    f = out[0]
    if f.dst[0] == "server":
        w = f.dst[1]
        with servers.locks[w]:
            rep = servers.models[w].handle(f.packet)
        back = sw.process(Frame(rep, f.dst, f.src))
        return back[0].packet if back else None
    return f.packet


def test_populate_write_evict_writeback():
    cp = load_cp()
    assert cp.C["CACHE_SIZE"] == 16384 and cp.partition_entries(2, "hash")[-1][1] == 32767
    sw = SwitchModel(2, "hash")
    key = bytes(range(16))
    with StandInServer(2) as srv:
        owner = sw.server_for(key)
        srv.models[owner].preload([(key, b"v0v0v0v0")])
        servers = cp.UdpServers([("127.0.0.1", p) for p in srv.ports], timeout_s=0.2, retries=20,
                                 bind="127.0.0.1")
        ctl = cp.FarReachController(ModelDataPlane(sw), servers, 2, "hash", capacity=4)
        assert ctl.server_of(key) == owner

        # hot-key report -> population over UDP
        for _ in range(HOT_THRESHOLD):
            client(sw, srv, Packet(op=GET, key=key, req_id=1))
        reports = sw.digests
        sw.digests = []
        for k, reason in reports:
            ctl.on_report(k, reason)
        assert ctl.process_reports() == 1
        idx = sw.cache_tbl.lookup(key)
        assert sw.state_reg.read(idx) == VALID
        rep = client(sw, srv, Packet(op=GET, key=key, req_id=2))
        assert rep.value == b"v0v0v0v0" and sw.counters.hits == 1

        # write hits: dirty in the switch only
        rep = client(sw, srv, Packet(op=PUT, key=key, value=b"NEWVALUE" * 4, req_id=3))
        assert rep.status == OK and sw.dirty_reg.read(idx) == 1
        assert srv.value(owner, key)[1] == b"v0v0v0v0"
        seq = sw.seq_reg.read(idx)

        # eviction writes back WB_PUT with the cached seq
        assert ctl.evict(key)
        assert sw.cache_tbl.lookup(key) is None and sw.state_reg.read(idx) == 0
        assert srv.value(owner, key) == (seq, b"NEWVALUE" * 4)
        # a duplicate of that write-back is refused by the seq check
        rid = 99
        dup = servers.call(owner, cp.encode(cp.C["OP_WB_PUT"], key, b"OLDOLDOL", seq=seq, req_id=rid), rid)
        assert dup["status"] == STALE

        # deleted while cached -> WB_DEL on eviction
        assert ctl.populate(key)
        client(sw, srv, Packet(op=DEL, key=key, req_id=4))
        rep = client(sw, srv, Packet(op=GET, key=key, req_id=5))
        assert rep.status == 1          # NOT_FOUND from the cache
        ctl.evict_all()
        assert srv.value(owner, key)[1] is None and ctl.stats["writebacks"] == 2

        # capacity: populating a 5th key evicts the oldest
        keys = [bytes([i]) * 16 for i in range(1, 6)]
        for k in keys:
            assert ctl.populate(k)
        assert len(sw.cache_tbl.entries) == 4 and keys[0] not in sw.cache_tbl.entries
        ctl.new_epoch()
        assert sw.estimate(key) == 0
        servers.close()


def test_eviction_blocks_writes_until_written_back():
    cp = load_cp()
    sw = SwitchModel(1, "range")
    key = b"K" * 16
    with StandInServer(1) as srv:
        servers = cp.UdpServers([("127.0.0.1", srv.ports[0])], timeout_s=0.1, retries=3,
                                 bind="127.0.0.1")
        ctl = cp.FarReachController(ModelDataPlane(sw), servers, 1, "range")
        assert ctl.populate(key)        # NOT_FOUND on the server: cached as absent
        client(sw, srv, Packet(op=PUT, key=key, value=b"abcd", req_id=1))
        idx = ctl.cached[key]
        srv.stop()                      # server unreachable: write-back cannot finish
        assert not ctl.evict(key)
        assert sw.state_reg.read(idx) == EVICTING and sw.cache_tbl.lookup(key) == idx
        assert client(sw, srv, Packet(op=PUT, key=key, value=b"efgh", req_id=2)) is None
        assert client(sw, srv, Packet(op=GET, key=key, req_id=3)).value == b"abcd"
        servers.close()
