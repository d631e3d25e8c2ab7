"""Every run kind, loaded: what callers use to find a kind or detect one from a header.

Importing this module imports every module that registers kinds (the
FarReach rack's, the native server's local runs, the YCSB and db_bench runs,
the other reference systems) into :mod:`model.registry`.
"""

from __future__ import annotations

from . import bench_runs, farreach_kinds, local_runs, systems  # noqa: F401  (they register)
from .errors import InputError
from .registry import KINDS, SYSTEMS, RunKind

__all__ = ["KINDS", "SYSTEMS", "RunKind", "detect", "get"]


def detect(header: list[str], source: str | None = None) -> RunKind:
    """The kind whose signature columns are all in the header (most specific wins)."""
    cols = set(h.strip() for h in header)
    matches = [k for k in KINDS.values() if k.signature <= cols]
    if not matches:
        raise InputError(
            "cannot tell what kind of runs this is from its header; known kinds and "
            "their key columns: " + "; ".join(
                f"{k.name} ({', '.join(sorted(k.signature))})" for k in KINDS.values()),
            source=source, line=1)
    return max(matches, key=lambda k: len(k.signature))


def get(name: str) -> RunKind:
    if name not in KINDS:
        raise InputError(f"unknown run kind {name!r}; known: {', '.join(sorted(KINDS))}",
                         field="--kind")
    return KINDS[name]
