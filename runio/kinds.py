"""Every run kind, loaded: what callers use to find a kind or detect one from a header.

Importing this module imports every module that registers kinds (the
FarReach rack's, the native server's local runs, the YCSB and db_bench runs,
the other reference systems) into :mod:`model.registry`.
"""

from __future__ import annotations

from . import bench_runs, farreach_kinds, local_runs  # noqa: F401  (they register)
from model import systems  # noqa: F401  (they register)
from model.errors import InputError
from model.registry import KINDS, SYSTEMS, RunKind

__all__ = ["KINDS", "SYSTEMS", "RunKind", "detect", "get"]


def detect(header: list[str], source: str | None = None) -> RunKind:
    """The kind whose signature columns are all in the header (most specific wins)."""
    cols = set(h.strip() for h in header)
    matches = [k for k in KINDS.values() if k.signature <= cols]
    if not matches:
        raise InputError(_unknown_kind(cols), source=source, line=1)
    return max(matches, key=lambda k: len(k.signature))


def _unknown_kind(cols: set[str]) -> str:
    """What a header that fits no kind lacks: the columns of the kind it comes
    closest to (most of whose key columns it has), else where the kinds are listed."""
    def share(k: RunKind) -> float:
        return len(k.signature & cols) / len(k.signature)
    near = max(KINDS.values(), key=lambda k: (share(k), len(k.signature)))
    if share(near) >= 0.5:
        missing = sorted(near.signature - cols)
        return (f"missing column{'s' * (len(missing) > 1)} {', '.join(missing)} "
                f"(the header looks like a {near.name} file otherwise)")
    return (f"cannot tell what kind of runs this is from its header: it has the key columns "
            f"of none of the {len(KINDS)} kinds (list them: python -m calibrate kinds)")


def get(name: str) -> RunKind:
    if name not in KINDS:
        raise InputError(f"unknown run kind {name!r}; known: {', '.join(sorted(KINDS))}",
                         field="--kind")
    return KINDS[name]
