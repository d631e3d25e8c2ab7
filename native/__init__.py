"""Compiled parts of the toolkit (package `native`).

The KV part (C++ in native/kv/, module native._core): a UDP key-value server
over RocksDB with one worker thread, socket and RocksDB instance per
partition, and a closed-loop YCSB load generator. See docs/native.md.

`import native` is light and works without the compiled modules; the KV
names are loaded on first use, and raise ImportError explaining how to
build them if they are missing.
"""

from __future__ import annotations

import importlib

__all__ = [
    "Server", "ServerError", "ServerOptions", "LoadOptions", "run_load", "Client",
    "fnvhash64", "record_key", "zipf_ranks", "ycsb_ranks", "key_stream",
    "range_partition", "hash_partition", "parse_request", "OptionError",
]

_CORE = {"OptionError", "fnvhash64", "hash_partition", "key_stream", "parse_request",
         "range_partition", "record_key", "ycsb_ranks", "zipf_ranks"}
_API = {"Server", "ServerError", "run_load"}
# pure Python, loaded on first use too (most commands need none of them)
_PURE = {"LoadOptions": "options", "ServerOptions": "options", "Client": "protocol"}


def __getattr__(name: str):
    if name in _PURE:
        value = getattr(importlib.import_module(f".{_PURE[name]}", __name__), name)
        globals()[name] = value
        return value
    # The KV module links RocksDB and takes a while to load: it is imported on
    # first use only.
    if name in _CORE or name in _API:
        try:
            from . import _core, api
        except ImportError as exc:  # not built: fail on use, not on import
            raise ImportError(
                f"native.{name} needs the compiled module native._core ({exc}); "
                "build it with `pip install .` or see docs/native.md") from exc
        value = getattr(_core, name) if name in _CORE else getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(name)
