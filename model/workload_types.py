"""The workload model's vocabulary: the sources it evaluates and the answer it gives.

A leaf of the workload model (numpy and the standard library only):
:mod:`model.workload`, its block builders (:mod:`model.workload_blocks`),
summaries (:mod:`model.workload_summary`) and the other sources
(:mod:`model.workload_sources`) all import these names, and this module
imports none of them. docs/workload.md explains every rule.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEFAULT_HEAD = 1 << 20       # stock generator: ranks folded onto records exactly (~0.3 s first time)
DEFAULT_HOT_RECORDS = 10_000  # hot fractions: each server's this many most popular keys
RANK_HEAD = 1 << 20          # rank-ordered profiles: ranks enumerated exactly


# ---------------------------------------------------------------- sources
@dataclass(frozen=True)
class StockSpec:
    """A generator as the public code runs it (docs/workload.md, sections 1-2)."""
    distribution: str = "zipf"
    theta: float = 0.99
    records: int = 100_000_000
    generator: str = "ycsb"         # ycsb | kvperf
    layout: str = "farreach"        # farreach | synthetic | kvperf
    insertorder: str = "hashed"
    items: int | None = None        # zipf ranks; None = YCSB's 10^10 + 1
    head: int = DEFAULT_HEAD        # ranks folded onto records exactly

    @property
    def label(self) -> str:
        return f"{self.generator} {self.distribution}"


@dataclass(frozen=True)
class RankSpec:
    """Rank-ordered keys: key number ``r - 1`` has popularity rank ``r``
    (docs/workload.md, section 5)."""
    pmf: str                        # zipf (p ∝ r^-theta) | ycsb (Gray et al.'s)
    theta: float
    items: int
    layout: str = "synthetic"
    insertorder: str = "ordered"
    head: int = RANK_HEAD

    @property
    def label(self) -> str:
        return f"rank-ordered {self.pmf} {self.theta} over {self.items:.4g} keys"


# ----------------------------------------------------------- the result
@dataclass(frozen=True)
class WorkloadResult:
    """Workload-determined load split, all as fractions of ALL requests.

    - ``hit_ratio``: requests answered by the switch cache.
    - ``shares`` / ``shares_nocache``: per-server fraction with / without the
      cache (sum to ``1 - hit_ratio`` / 1).
    - ``normalized_x``: ``max(shares_nocache) / max(shares)``.
    - ``server_hot_fraction`` (with the cache) and ``..._nocache``: per
      server, the fraction of that server's requests that go to its
      ``hot_records`` most popular keys (the cache removes the head, so
      servers behind it see flatter traffic).
    - ``cached_keys``: keys the switch holds (0 with the cache off).
    - ``tail_mass``: mass not computed key by key; ``tolerance``: absolute
      error bound on every share and on the hit ratio (docs/workload.md,
      section 6). NaN entries mean "not known" (measured descriptions that
      lack a quantity).
    - ``source``: what described the workload; ``notes``: assumptions made.
    """
    hit_ratio: float
    shares: np.ndarray
    shares_nocache: np.ndarray
    normalized_x: float
    server_hot_fraction: np.ndarray
    server_hot_fraction_nocache: np.ndarray
    hot_records: int
    cached_keys: int
    tail_mass: float
    tolerance: float
    source: str = "ycsb"
    partition: str = "range"
    notes: tuple = ()
    # Che tables for window_hit_fraction: per server and per-record-mass bin,
    # request mass and record count of read lookups and of written keys.
    win_read_mass: np.ndarray | None = field(default=None, repr=False)
    win_read_count: np.ndarray | None = field(default=None, repr=False)
    win_write_mass: np.ndarray | None = field(default=None, repr=False)
    win_write_count: np.ndarray | None = field(default=None, repr=False)

    @property
    def servers(self) -> int:
        return len(self.shares)

    @property
    def bottleneck(self) -> int:
        return int(np.nanargmax(self.shares))

    def restricted(self, servers) -> "WorkloadResult":
        """The workload seen when clients send only the requests of ``servers``
        (FarReach's server rotation runs a few partitions and skips the rest,
        :mod:`model.rotation`): those servers, in that order, with every
        fraction renormalised to the requests they receive (cache hits
        included). Per-server quantities (hot fractions, popularity tables)
        are each server's own and stay as they are."""
        idx = np.asarray(list(servers), dtype=np.int64)
        nocache = np.asarray(self.shares_nocache, dtype=float)[idx]
        shares = np.asarray(self.shares, dtype=float)[idx]
        total = float(np.nansum(nocache))
        if not total > 0:
            raise ValueError("these servers receive no requests")
        shares, nocache = shares / total, nocache / total
        with np.errstate(invalid="ignore", divide="ignore"):
            nx = float(np.nanmax(nocache) / np.nanmax(shares))
        pick = (lambda a: None if a is None else np.asarray(a)[idx])
        return dataclasses.replace(
            self, hit_ratio=float(1.0 - np.nansum(shares)), shares=shares,
            shares_nocache=nocache, normalized_x=nx,
            server_hot_fraction=np.asarray(self.server_hot_fraction)[idx],
            server_hot_fraction_nocache=np.asarray(self.server_hot_fraction_nocache)[idx],
            win_read_mass=pick(self.win_read_mass), win_read_count=pick(self.win_read_count),
            win_write_mass=pick(self.win_write_mass), win_write_count=pick(self.win_write_count),
            notes=self.notes + (f"restricted to servers {idx.tolist()} of {self.servers}",))

    def to_dict(self) -> dict[str, Any]:
        """The ``sim workload --json`` object (non-finite numbers -> None)."""
        def num(x):
            x = float(x)
            return x if math.isfinite(x) else None
        return {
            "source": self.source,
            "partition": self.partition,
            "servers": self.servers,
            "hit_ratio": num(self.hit_ratio),
            "shares": [num(v) for v in self.shares],
            "shares_nocache": [num(v) for v in self.shares_nocache],
            "normalized_x": num(self.normalized_x),
            "max_share": num(np.nanmax(self.shares)) if np.any(np.isfinite(self.shares)) else None,
            "max_share_nocache": (num(np.nanmax(self.shares_nocache))
                                  if np.any(np.isfinite(self.shares_nocache)) else None),
            "idle_servers": int(np.sum(np.asarray(self.shares_nocache) == 0)),
            "server_hot_fraction": [num(v) for v in self.server_hot_fraction],
            "server_hot_fraction_nocache": [num(v) for v in self.server_hot_fraction_nocache],
            "hot_records": int(self.hot_records),
            "cached_keys": int(self.cached_keys),
            "tail_mass": num(self.tail_mass),
            "tolerance": num(self.tolerance),
            "notes": list(self.notes),
        }


def stock_spec(workload, **override) -> StockSpec:
    """The public generator a scenario's ``[workload]`` section names."""
    d = dict(distribution=workload.distribution, theta=float(workload.zipf_theta),
             records=int(workload.records), generator=getattr(workload, "generator", "ycsb"),
             insertorder=getattr(workload, "insertorder", "hashed"))
    d["layout"] = "kvperf" if d["generator"] == "kvperf" else "farreach"
    d.update(override)
    return StockSpec(**d)
