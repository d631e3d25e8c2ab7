"""A small UDP key-value server for tests: docs/protocol.md over 127.0.0.1.

One socket and thread per worker (worker i owns partition i), each backed by
the reference :class:`model.switch.ServerModel` (seq-checked store). Used
where a real server is not needed or not built: the control-plane test, and
the end-to-end switch test when the native server is unavailable.
"""

from __future__ import annotations

import socket
import threading

from model.switch import Packet, ServerModel


class StandInServer:
    def __init__(self, n_workers: int, seq_check: str = "disk-get", host: str = "127.0.0.1",
                 base_port: int = 0):
        self.models = [ServerModel(seq_check=seq_check) for _ in range(n_workers)]
        self.locks = [threading.Lock() for _ in range(n_workers)]
        self.socks = []
        for i in range(n_workers):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((host, base_port + i if base_port else 0))
            s.settimeout(0.05)
            self.socks.append(s)
        self.ports = [s.getsockname()[1] for s in self.socks]
        self.malformed = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(n_workers)]

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2)
        for s in self.socks:
            s.close()

    def _run(self, i: int) -> None:
        sock = self.socks[i]
        while not self._stop.is_set():
            try:
                data, addr = sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            p = Packet.decode(data)
            if p is None or p.is_reply:
                self.malformed += 1
                continue
            with self.locks[i]:
                rep = self.models[i].handle(p)
            sock.sendto(rep.encode(), addr)

    def value(self, worker: int, key: bytes):
        with self.locks[worker]:
            return self.models[worker].store.get(key, (0, None))
