"""Compiled parts of the toolkit (package `native`).

The KV part (C++ in native/kv/, module native._core): a UDP key-value server
over RocksDB with one worker thread, socket and RocksDB instance per
partition, and a closed-loop YCSB load generator. See docs/native.md.

`import native` works without the compiled module (other compiled components
may live here too); using a KV name then raises ImportError explaining how
to build it.
"""

from __future__ import annotations

from .options import LoadOptions, ServerOptions
from .protocol import Client

__all__ = [
    "Server", "ServerError", "ServerOptions", "LoadOptions", "run_load", "Client",
    "fnvhash64", "record_key", "zipf_ranks", "ycsb_ranks", "key_stream",
    "range_partition", "hash_partition", "parse_request", "OptionError",
]

try:
    from ._core import (OptionError, fnvhash64, hash_partition, key_stream, parse_request,
                        range_partition, record_key, ycsb_ranks, zipf_ranks)
    from .api import Server, ServerError, run_load
except ImportError as _exc:  # not built: fail on use, not on import
    _IMPORT_ERROR = _exc

    def __getattr__(name: str):
        if name in __all__:
            raise ImportError(
                f"native.{name} needs the compiled module native._core ({_IMPORT_ERROR}); "
                "build it with `pip install .` or see docs/native.md") from _IMPORT_ERROR
        raise AttributeError(name)
