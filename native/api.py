"""Python face of the native KV server and load generator.

    from native import Server, ServerOptions, LoadOptions, run_load
    with Server(ServerOptions(datadir=tmp, workers=2)) as srv:
        res = run_load(LoadOptions(targets=srv.addresses(), threads=4,
                                   duration_s=2, max_requests=50_000))
        stats = srv.stats()

Everything returned is plain data (dicts, lists, numbers). Times carry their
unit in the key name (`_us`, `_s`, `_ns`). Bad options raise
model.errors.InputError naming the option; failures to bind a port or open
a data directory raise ServerError naming the option (`base_port`,
`datadir`).
"""

from __future__ import annotations

from . import _core
from .options import LoadOptions, ServerOptions, _with_overrides, as_input_error


class ServerError(RuntimeError):
    """The server could not start (port in use, data dir unusable, ...)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.option = message.partition(": ")[0] if ": " in message else None


def _derive(worker: dict) -> dict:
    """Add per-worker rates: throughput (replies/s) and busy fraction (1 - idle)."""
    active = worker["active_s"]
    worker["throughput_ops_s"] = worker["tx_packets"] / active if active > 0 else 0.0
    worker["busy_fraction"] = 1.0 - worker["idle_s"] / active if active > 0 else 0.0
    return worker


class Server:
    """A running native KV server (context manager: start on enter, stop on exit)."""

    def __init__(self, options: ServerOptions | None = None, **overrides):
        self.options = _with_overrides(ServerOptions, options, overrides)
        try:
            self._srv = _core.Server(self.options.to_dict())
        except _core.OptionError as exc:
            raise as_input_error(exc, "ServerOptions") from None
        except RuntimeError as exc:
            raise ServerError(str(exc)) from None
        self.final_stats: dict | None = None

    def start(self) -> "Server":
        self._srv.start()
        return self

    def addresses(self) -> list[tuple[str, int]]:
        """(host, port) of every worker, in worker order."""
        return [(self.options.bind_address, p) for p in self._srv.ports()]

    @property
    def running(self) -> bool:
        return self._srv.running

    def stats(self, reset: bool = False) -> dict:
        """Per-worker and merged stats plus RocksDB statistics per instance.

        While running, `reset=True` starts a new measurement window (use it
        after a warm-up), for the workers and the RocksDB counters alike.
        After stop(), returns the final stats.
        """
        s = self._srv.collect(reset)
        for w in s["workers"]:
            _derive(w)
        _derive(s["total"])
        s["total"]["throughput_ops_s"] = sum(w["throughput_ops_s"] for w in s["workers"])
        s["rocksdb"] = self._srv.rocksdb_stats(reset)
        return s

    @property
    def preload_s(self) -> float:
        """Wall time of the preload (load, close, reopen), s; 0 without one."""
        return self._srv.preload_s

    def preloaded(self) -> list[int]:
        """Records each instance received in the preload (empty without one)."""
        return self._srv.preloaded()

    def stop(self) -> dict:
        """Stop workers, flush and close RocksDB; return the final stats."""
        if self.final_stats is None:
            rocks = self._srv.rocksdb_stats() if self._srv.running else []
            self._srv.stop()
            self.final_stats = self.stats()
            self.final_stats["rocksdb"] = rocks
        return self.final_stats

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_load(options: LoadOptions | None = None, **overrides) -> dict:
    """Run the closed-loop load generator (bounded in time AND count); return its stats."""
    opts = _with_overrides(LoadOptions, options, overrides)
    try:
        res = _core.run_load(opts.to_dict())
    except _core.OptionError as exc:
        raise as_input_error(exc, "LoadOptions") from None
    el = res["elapsed_s"]
    res["throughput_ops_s"] = res["completed"] / el if el > 0 else 0.0
    return res
