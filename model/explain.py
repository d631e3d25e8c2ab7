"""Why the cache's runtime gain falls short of its normalized gain: a waterfall.

The *normalized* gain (docs/domain.md section 2) is what the workload alone
allows the cache: ``max(NoCache share) / max(cached share)``. The *runtime*
gain is what the rack model predicts: cached throughput over NoCache
throughput at the same configuration. The gap between the two is made of
mechanisms of the rack model (:mod:`model.rack`), each of which can be
switched off in the compiled :class:`~model.rack.RackSpec` (the switches
live beside their mechanisms: ``without_*`` in ``model/rack/*.py``):

=============  ==============================================================
``loss``       timeouts and loss: receive-buffer overflow, wire loss, resends
``clients``    the client machines' cores: threads wait for a core to send
``commit``     TransactionDB's commit path shared by a machine's instances
``stalls``     storage stalls: WAL switches, WAL syncs, write slowdown and stops
``cores``      threads outnumber cores (CPU stretch)
``contention`` load-dependent speed: idle workers run cold, busy peers on a
               machine slow each other
``storage``    per-request storage cost differs between workers and between
               the cached and the uncached rack (the cache's flatter traffic
               misses the memtables more; write mix; data growth)
``writebacks`` the control plane's write-backs of evicted dirty keys
=============  ==============================================================

With every one of them off, each rack is a closed network of equal,
load-independent workers, and its throughput approaches ``1 / (max share x
cost)`` as clients are added: the runtime gain approaches the normalized
gain. So the gap splits exactly into

* each mechanism's share, **switched off alone** (gain recovered when only
  that mechanism is off, everything else on),
* the **interactions**: what switching them all off recovers beyond the sum
  of the alone parts (positive when mechanisms amplify each other),
* **closed loop** (too few clients): with everything off, the gain still
  grows from the scenario's client threads to enough threads to saturate
  every worker (``ideal_threads``); more clients with the other mechanisms on
  would overflow receive buffers, so this part is measured last,
* the **remainder**: normalized gain minus that saturated gain (numerical;
  tiny).

Alternatives, both also adding up to the gap: the **cumulative** steps
(mechanisms switched off one after another in the order above) and, with
``shapley=True``, **Shapley values** (each mechanism's average step over
every order; interactions shared out).

A mechanism that is absent in the scenario (its switch leaves the compiled
rack unchanged, e.g. ``cores`` with ``servers.cores = 0``) has exactly zero
share. Every configuration is solved in one batch of the analytic solver.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import InputError
from .profile import Profile
from .rack import RackSpec, clients, compile_rack, lsm, network, placement, service
from .scenario import Scenario

__all__ = ["Mechanism", "MECHANISMS", "Part", "Explanation", "explain", "explain_many",
           "ideal_threads"]


@dataclass(frozen=True)
class Mechanism:
    key: str
    label: str
    off_means: str                                   # what the rack is like without it
    switch: Callable[[RackSpec, RackSpec], RackSpec]  # (rack, its NoCache twin) -> rack without it


def _loss_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, clients=clients.without_timeouts(spec.clients),
                   network=network.without_loss(spec.network, spec.clients.threads))


def _clients_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, clients=clients.without_client_limit(spec.clients))


def _commit_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, service=service.without_commit_path(spec.service))


def _stalls_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, lsm=lsm.without_stalls(spec.lsm))


def _cores_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, service=service.without_oversubscription(spec.service))


def _contention_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, service=service.without_contention(spec.service))


def reference_cost_us(ref: RackSpec) -> float:
    """The NoCache rack's request-weighted storage cost in its first state (us): the one
    cost every worker of both racks gets with ``storage`` off."""
    cost = service.first_cost(ref.service)
    w = np.asarray(ref.placement.shares_nocache, dtype=float)
    return float(np.sum(w * cost) / np.sum(w)) if np.sum(w) > 0 else float(np.mean(cost))


def _storage_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, service=service.with_uniform_cost(spec.service, reference_cost_us(ref)))


def _writebacks_off(spec: RackSpec, ref: RackSpec) -> RackSpec:
    return replace(spec, placement=placement.without_writebacks(spec.placement))


#: The mechanisms, in the order of the cumulative waterfall.
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("loss", "timeouts and loss",
              "receive buffers hold every client's packet, no wire loss, no timeout", _loss_off),
    Mechanism("clients", "client machines' cores",
              "a client core for every thread", _clients_off),
    Mechanism("commit", "TransactionDB commit path",
              "writes commit as in a plain DB", _commit_off),
    Mechanism("stalls", "storage stalls (WAL switch and sync, slowdown, stop)",
              "WAL switches and syncs cost nothing, immutables never reach maxnum", _stalls_off),
    Mechanism("cores", "oversubscribed cores",
              "a core for every worker and background thread", _cores_off),
    Mechanism("contention", "CPU contention and idle slowdown",
              "no idle penalty, no slowdown from busy peers on a machine", _contention_off),
    Mechanism("storage", "storage cost differences (memtable locality, write mix, data growth)",
              "every worker of both racks at the NoCache rack's mean storage cost", _storage_off),
    Mechanism("writebacks", "write-backs of evicted keys",
              "no write-backs from the control plane", _writebacks_off),
)
_BY_KEY = {m.key: m for m in MECHANISMS}

#: Client threads per worker that saturate a rack of equal workers to within
#: about 0.1 % (mean-value analysis: X(N) ~ bound x N / (N + M - 1)).
IDEAL_THREADS_PER_WORKER = 1000


def ideal_threads(spec: RackSpec) -> int:
    """Client threads enough to saturate every worker (the closed-loop reference)."""
    return max(int(spec.clients.threads), IDEAL_THREADS_PER_WORKER * max(spec.servers, 1))


@dataclass
class Part:
    """One mechanism's share of the gap, in gain units (x over NoCache); positive =
    the mechanism costs the cache that much of its gain."""
    key: str
    label: str
    off_means: str
    present: bool               # False: switching it off leaves the rack unchanged
    alone_x: float              # gain recovered when only this mechanism is off
    cumulative_x: float         # step when switched off after those before it
    shapley_x: float | None = None


@dataclass
class Explanation:
    """The gap between normalized and runtime gain, mechanism by mechanism."""
    scenario: str
    normalized_x: float         # what the workload allows (max NoCache share / max cached share)
    runtime_x: float            # cached / NoCache throughput, everything on
    cache_mops: float
    nocache_mops: float
    parts: list[Part]
    interactions_x: float       # all off, beyond the sum of the alone parts
    closed_loop_x: float        # everything off: scenario's threads -> ideal_threads
    remainder_x: float          # normalized gain - saturated gain with everything off
    threads: int
    ideal_threads: int
    all_off_x: float            # gain with every mechanism off, scenario's threads
    saturated_x: float          # ... and ideal_threads
    shapley: bool = False
    bottleneck: str = ""        # the cached rack's bottleneck text
    nocache_bottleneck: str = ""
    configurations: int = 0     # racks solved
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def gap_x(self) -> float:
        return self.normalized_x - self.runtime_x

    @property
    def gap_mops(self) -> float:
        """The gap as cached throughput at today's NoCache throughput."""
        return self.gap_x * self.nocache_mops

    def waterfall(self, method: str = "alone") -> list[tuple[str, float]]:
        """Bars (label, x) from the runtime gain up to the normalized gain; they add
        up to :attr:`gap_x`. ``method``: ``alone`` (with the interactions as their
        own bar), ``cumulative`` or ``shapley``."""
        return [(lbl, v) for _, lbl, v in self.bars(method)]

    def bars(self, method: str = "alone") -> list[tuple[str, str, float]]:
        """:meth:`waterfall` with each bar's key first: (key, label, x)."""
        if method == "alone":
            bars = [(p.key, p.label, p.alone_x) for p in self.parts]
            bars.append(("interactions",
                         "interactions (all off beyond the sum of the alone parts)",
                         self.interactions_x))
        elif method == "cumulative":
            bars = [(p.key, p.label, p.cumulative_x) for p in self.parts]
        elif method == "shapley":
            if not self.shapley:
                raise InputError("Shapley values were not computed (explain(..., shapley=True))",
                                 field="method")
            bars = [(p.key, p.label, float(p.shapley_x or 0.0)) for p in self.parts]
        else:
            raise InputError(f"unknown method {method!r}; allowed: alone, cumulative, shapley",
                             field="method")
        bars.append(("clients", f"closed loop: too few clients ({self.threads:,} of "
                     f"{self.ideal_threads:,} threads that saturate every worker)",
                     self.closed_loop_x))
        bars.append(("remainder", "remainder (numerical)", self.remainder_x))
        return bars

    def sentences(self) -> list[str]:
        """A few sentences for people."""
        out = [f"The workload allows the cache {self.normalized_x:.3f}x over NoCache; the rack "
               f"delivers {self.runtime_x:.3f}x ({self.cache_mops:.4f} MOPS vs "
               f"{self.nocache_mops:.4f} MOPS without the cache), a gap of {self.gap_x:.3f}x "
               f"(about {self.gap_mops:.4f} MOPS at today's NoCache throughput)."]
        bars = [(lbl, v) for lbl, v in self.waterfall("shapley" if self.shapley else "alone")
                if abs(v) >= 0.005 * max(abs(self.gap_x), 1e-9)
                and not lbl.startswith(("remainder", "interactions"))]
        bars.sort(key=lambda t: -abs(t[1]))
        for lbl, v in bars[:3]:
            name = "too few clients" if lbl.startswith("closed loop") else lbl.split(" (")[0]
            share = f" ({100 * v / self.gap_x:.0f} % of the gap)" if self.gap_x > 0 else ""
            if v > 0:
                out.append(f"{name[0].upper() + name[1:]}: the cache loses {v:.3f}x of its "
                           f"gain{share}.")
            else:
                out.append(f"{name[0].upper() + name[1:]}: hurts NoCache more than the cache "
                           f"and adds {-v:.3f}x to the runtime gain.")
        absent = [p.key for p in self.parts if not p.present]
        if absent:
            out.append("Absent in this configuration (exactly zero): " + ", ".join(absent) + ".")
        if abs(self.interactions_x) >= 0.05 * max(abs(self.gap_x), 1e-9) and not self.shapley:
            out.append(f"Mechanisms interact: switching them all off recovers "
                       f"{self.interactions_x:+.3f}x beyond the sum of their alone parts "
                       "(run with --shapley to share it out).")
        return out

    def to_frame(self, method: str | None = None):
        """The waterfall as a pandas DataFrame indexed by part key: one row per bar
        (``x`` in gain units, ``share_pct`` of the gap), then the gap itself."""
        import pandas as pd
        method = method or ("shapley" if self.shapley else "alone")
        rows = [{"part": key, "label": lbl, "x": v,
                 "share_pct": 100 * v / self.gap_x if self.gap_x else math.nan}
                for key, lbl, v in self.bars(method)]
        rows.append({"part": "gap", "label": "gap (normalized - runtime gain)", "x": self.gap_x,
                     "share_pct": 100.0})
        return pd.DataFrame(rows).set_index("part")

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "normalized_x": self.normalized_x,
            "runtime_x": self.runtime_x, "gap_x": self.gap_x, "gap_mops": self.gap_mops,
            "cache_mops": self.cache_mops, "nocache_mops": self.nocache_mops,
            "parts": [dict(vars(p)) for p in self.parts],
            "interactions_x": self.interactions_x, "closed_loop_x": self.closed_loop_x,
            "remainder_x": self.remainder_x, "threads": self.threads,
            "ideal_threads": self.ideal_threads, "all_off_x": self.all_off_x,
            "saturated_x": self.saturated_x, "shapley": self.shapley,
            "bottleneck": self.bottleneck, "nocache_bottleneck": self.nocache_bottleneck,
            "configurations": self.configurations,
            "waterfall": [{"part": lbl, "x": v} for lbl, v in
                          self.waterfall("shapley" if self.shapley else "alone")],
            "sentences": self.sentences(),
        }


# ---------------------------------------------------------------- computing it
def _configure(spec: RackSpec, ref: RackSpec, off: Iterable[str], threads: int | None) -> RackSpec:
    if threads is not None:
        spec = replace(spec, clients=clients.with_threads(spec.clients, threads))
    off = set(off)
    for m in MECHANISMS:                 # a fixed order: loss-off sizes buffers to the threads
        if m.key in off:
            spec = m.switch(spec, ref)
    return spec


def _check_mechanisms(keys: Sequence[str] | None) -> list[Mechanism]:
    if keys is None:
        return list(MECHANISMS)
    out = []
    for k in keys:
        if k not in _BY_KEY:
            raise InputError(f"unknown mechanism {k!r}; allowed: {', '.join(_BY_KEY)}",
                             field="--mechanism")
        out.append(_BY_KEY[k])
    return [m for m in MECHANISMS if m in out]


@dataclass
class _Plan:
    """The configurations one explanation needs, as (cached, NoCache) rack pairs."""
    spec_c: RackSpec
    spec_n: RackSpec
    mechs: list[Mechanism]
    present: list[str]
    shapley: bool
    keys: list[tuple[frozenset, bool]] = field(default_factory=list)   # (off set, saturated?)

    def racks(self) -> list[RackSpec]:
        out = []
        for off, sat in self.keys:
            for spec in (self.spec_c, self.spec_n):
                n = ideal_threads(spec) if sat else None
                out.append(_configure(spec, self.spec_n, off, n))
        return out


def _plan(scenario: Scenario, profile: Profile, mechanisms, shapley: bool) -> _Plan:
    if not scenario.switch.cache:
        raise InputError("explain compares the rack with its cache against NoCache; this "
                         "scenario has the cache off (set switch.cache=true)", field="switch.cache")
    mechs = _check_mechanisms(mechanisms)
    spec_c = compile_rack(scenario, profile)
    spec_n = compile_rack(scenario.updated({"switch.cache": False}), profile)
    present = [m.key for m in mechs
               if m.switch(spec_c, spec_n) != spec_c or m.switch(spec_n, spec_n) != spec_n]
    plan = _Plan(spec_c, spec_n, mechs, present, shapley)
    keys: list[frozenset] = [frozenset()]
    keys += [frozenset([k]) for k in present]
    keys += [frozenset(present[:i]) for i in range(2, len(present) + 1)]
    if shapley:
        keys += [frozenset(s) for r in range(len(present) + 1)
                 for s in itertools.combinations(present, r)]
    seen = set()
    for k in keys:
        if k not in seen:
            seen.add(k)
            plan.keys.append((k, False))
    plan.keys.append((frozenset(present), True))
    return plan


def _assemble(scenario: Scenario, plan: _Plan, preds) -> Explanation:
    v: dict[tuple[frozenset, bool], float] = {}
    base = None
    for i, key in enumerate(plan.keys):
        pc, pn = preds[2 * i], preds[2 * i + 1]
        v[key] = pc.throughput_mops / pn.throughput_mops if pn.throughput_mops > 0 else math.nan
        if i == 0:
            base = (pc, pn)
    none = frozenset()
    allp = frozenset(plan.present)
    v0 = v[(none, False)]
    parts = []
    prefix: list[str] = []
    for m in plan.mechs:
        if m.key not in plan.present:
            parts.append(Part(m.key, m.label, m.off_means, False, 0.0, 0.0,
                              0.0 if plan.shapley else None))
            continue
        alone = v[(frozenset([m.key]), False)] - v0
        before = v[(frozenset(prefix), False)]
        prefix.append(m.key)
        step = v[(frozenset(prefix), False)] - before
        phi = None
        if plan.shapley:
            others = [k for k in plan.present if k != m.key]
            k = len(plan.present)
            phi = 0.0
            for r in range(len(others) + 1):
                wgt = math.factorial(r) * math.factorial(k - r - 1) / math.factorial(k)
                for s in itertools.combinations(others, r):
                    phi += wgt * (v[(frozenset(s) | {m.key}, False)] - v[(frozenset(s), False)])
        parts.append(Part(m.key, m.label, m.off_means, True, alone, step, phi))
    all_off = v[(allp, False)]
    saturated = v[(allp, True)]
    pc, pn = base
    return Explanation(
        scenario=scenario.name, normalized_x=float(plan.spec_c.placement.normalized_x),
        runtime_x=v0, cache_mops=pc.throughput_mops, nocache_mops=pn.throughput_mops,
        parts=parts, interactions_x=(all_off - v0) - sum(p.alone_x for p in parts),
        closed_loop_x=saturated - all_off,
        remainder_x=float(plan.spec_c.placement.normalized_x) - saturated,
        threads=int(plan.spec_c.clients.threads), ideal_threads=ideal_threads(plan.spec_c),
        all_off_x=all_off, saturated_x=saturated, shapley=plan.shapley,
        bottleneck=pc.bottleneck.text(), nocache_bottleneck=pn.bottleneck.text(),
        configurations=2 * len(plan.keys))


def explain_many(scenarios: Sequence[Scenario], profile: Profile, *,
                 mechanisms: Sequence[str] | None = None,
                 shapley: bool = False) -> list[Explanation]:
    """:func:`explain` for several scenarios, every configuration in one batch."""
    from .solvers.analytic import solve_many
    plans = [_plan(sc, profile, mechanisms, shapley) for sc in scenarios]
    racks = [r for p in plans for r in p.racks()]
    preds = solve_many(racks)
    out, at = [], 0
    for sc, p in zip(scenarios, plans):
        n = 2 * len(p.keys)
        out.append(_assemble(sc, p, preds[at:at + n]))
        at += n
    return out


def explain(scenario: Scenario, profile: Profile, *, mechanisms: Sequence[str] | None = None,
            shapley: bool = False) -> Explanation:
    """The gap between normalized and runtime gain of ``scenario`` (cache on),
    mechanism by mechanism (module docstring)."""
    return explain_many([scenario], profile, mechanisms=mechanisms, shapley=shapley)[0]
