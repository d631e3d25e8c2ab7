"""Who gets which requests: key popularity, key layout, partitioning, switch cache.

The entry point is :func:`evaluate`. From the scenario's ``[workload]`` and
``[switch]`` sections, the server count and an optional *workload source* it
returns a :class:`WorkloadResult`: the cache hit ratio, each server's share of
all requests with and without the cache, the normalized throughput, the skew
each server sees (hot fractions, and :func:`window_hit_fraction` for
memtable hits) and a stated tolerance. docs/workload.md explains every rule;
its section numbers are cited below.

Workload sources (docs/workload.md, section 4):

* none: the generator the scenario names, exactly as the public code runs it
  (``generator = "ycsb"``: YCSB 0.17 CoreWorkload + FarReach's wire key;
  ``"kvperf"``: this repository's load generator and wire key);
* a :class:`~model.workload_sources.WorkloadProfile`: a calibrated description
  of a lab's key popularity and key layout (``model/profiles/workloads/``);
* a :class:`~model.workload_sources.MeasuredWorkload`: per-server load ratios
  and hit ratio as FarReach's client statistics report them;
* a :class:`~model.workload_sources.KeyTrace`: the keys of a run.

One popularity model
--------------------
Every source is turned into the same representation, *blocks* of records:
each block has a total request mass, a record count and a server, and all
records of a block are equally popular. Exactly computed records are blocks
of one; the long tail of a key space is a few flat blocks per server. Shares,
cache selection, hot fractions and memtable (window) hits are all computed
from these blocks, so the storage model and the load split see the same
popularity.

The modules, each importing only those before it:
:mod:`model.workload_types` (sources and the result),
:mod:`model.workload_store` (where results are kept beyond memory: nowhere
unless an entry point calls :func:`set_store`; ``runio.workload_cache``
keeps them on disk), :mod:`model.workload_blocks` (sources to blocks),
:mod:`model.workload_summary` (blocks to shares), :mod:`model.workload_sources`
(profiles, measured descriptions, traces) and this one.
"""

from __future__ import annotations

import math

import numpy as np

from . import keys
from . import workload_sources as ws
from .errors import InputError
from .workload_blocks import blocks, stock_fold
from .workload_store import set_store  # noqa: F401  (the entry points' hook)
from .workload_summary import cached_hit_fraction, select, summarize, summary, to_result
from .workload_types import (DEFAULT_HOT_RECORDS, RankSpec, StockSpec,  # noqa: F401
                             WorkloadResult, stock_spec)

# Names other modules still reach through this one (model/workload_fit.py,
# tests/model/test_workload_ycsb.py); their homes are workload_blocks and
# workload_summary.
_blocks, _summarize, _stock_fold = blocks, summarize, stock_fold


# ----------------------------------------------------------- entry point
def evaluate(workload, switch, servers: int, source=None, *,
             hot_records: int = DEFAULT_HOT_RECORDS,
             update_window: float = 0.0) -> WorkloadResult:
    """Shares, hit ratio, normalized throughput and skew for one configuration.

    ``workload`` and ``switch`` are the scenario's sections
    (:class:`model.scenario.Workload`, :class:`model.scenario.Switch`; used:
    ``distribution``, ``zipf_theta``, ``records``, ``read_ratio``,
    ``generator``, ``insertorder``, ``profile``; ``cache``, ``mode``,
    ``cache_keys``, ``partition``, ``hash_buckets``). ``source`` overrides
    ``workload.profile``: None (the scenario's generator, or the profile it
    names), a profile name or path, or a loaded
    :class:`~model.workload_sources.WorkloadProfile`,
    :class:`~model.workload_sources.MeasuredWorkload` or
    :class:`~model.workload_sources.KeyTrace`.

    A read-only cache (``switch.mode = "read-only"``, NetCache) answers only
    the reads of cached keys, and only while their entry is valid: their
    writes stay in ``shares``, and so do the reads that find the entry
    invalidated by a write whose value update has not come back
    (``update_window``: that window in the rack's requests, 0 = always
    valid; :func:`update_window_requests` gives a scenario's;
    :func:`model.workload_summary.cached_hit_fraction`). A value larger
    than the switch's registers (``workload.value_bytes`` >
    ``switch.max_value_bytes``) is never cached (:func:`cacheable`). The
    result already includes all of this.
    """
    n = int(servers)
    if n < 1:
        raise InputError(f"servers must be a positive integer, got {servers!r}", field="servers.count")
    partition = switch.partition
    keys.check_partition(partition)
    buckets = int(switch.hash_buckets)
    if source is None:
        source = getattr(workload, "profile", "") or None
    if isinstance(source, str):
        source = ws.load_source(source, layout=stock_spec(workload).layout)
    hit_prob = float(workload.read_ratio) if switch.mode == "read-only" else 1.0
    if isinstance(source, ws.MeasuredWorkload):
        return source.result(workload, switch, n, hot_records=hot_records)
    if source is None:
        spec = stock_spec(workload)
        label = spec.generator
    elif isinstance(source, ws.WorkloadProfile):
        spec = source.spec(workload)
        label = source.label(workload)
    elif isinstance(source, ws.KeyTrace):
        spec = source
        label = f"trace {source.path}"
    elif isinstance(source, (StockSpec, RankSpec)):
        spec = source
        label = source.label
    else:
        raise TypeError(f"not a workload source: {source!r}")
    total = spec.records if isinstance(spec, StockSpec) else (
        spec.items if isinstance(spec, RankSpec) else len(spec.counts))
    k = min(int(switch.cache_keys), int(total)) if cacheable(workload, switch) else 0
    window = float(update_window) if hit_prob < 1.0 and k > 0 else 0.0
    summ = summary(spec, n, partition, buckets, k, hit_prob, int(hot_records), window)
    notes = tuple(getattr(source, "notes", ()) or ()) + cache_notes(workload, switch, window)
    return to_result(summ, k, int(hot_records), label, partition, notes)


def cacheable(workload, switch) -> bool:
    """Whether the switch caches anything: the cache is on and the values fit
    its registers. A Tofino register array holds a fixed number of value
    bytes per entry (the public code's ``switch_max_vallen`` = 128 B, in
    every system's ``config.ini``); a larger value travels as
    PUTREQ_LARGEVALUE, which the switch forwards and never caches (and a
    population of such a key loads nothing cacheable), so the rack runs as
    NoCache does (FarReach's published value-size experiment: normalized
    throughput 11.0 at 256 B, NoCache's 11.0; docs/switch.md)."""
    if not switch.cache:
        return False
    limit = getattr(switch, "max_value_bytes", None)
    return limit is None or int(getattr(workload, "value_bytes", 0)) <= int(limit)


def cache_notes(workload, switch, window: float) -> tuple:
    """What :func:`evaluate` assumed about the switch, for the result's notes."""
    if switch.cache and not cacheable(workload, switch):
        return (f"values of {workload.value_bytes} B exceed the switch's "
                f"{switch.max_value_bytes}-byte value registers: nothing is cached",)
    if window > 0:
        return (f"read-only cache: a written key's entry is invalid until its value update "
                f"comes back (update window {window:,.0f} requests of the rack)",)
    return ()


def update_window_requests(scenario) -> float:
    """A read-only cache's update window in the rack's requests (:func:`evaluate`).

    The public NetCache (``netcache/server_impl.h``): a write of a cached key
    invalidates the entry as it passes the switch; its server's worker, when
    it takes the write from its socket, queues a NETCACHE_VALUEUPDATE before
    its RocksDB put, and the server's value-update thread sends it back
    through the switch, which re-validates the entry. The window ``W`` is
    thus the write's stay at its server plus two network crossings: about
    the response time ``R_b`` of the requests of its server. In a closed
    loop of ``C`` client threads the rack serves ``X = C / R`` requests per
    unit time (Little), ``R`` the mean response time over all requests, so
    ``X W = C R_b / R``. The bottleneck server's requests (the ones the
    normalized throughput is about) wait at least as long as the mean
    request (cache hits are the fastest), so ``X W >= C``; we take ``C``,
    the client threads. What it moves is small: the hot keys that matter
    are written many times per window and sit at the limit of 1/2 valid
    (docs/workload.md, section 4, has the figures).

    ``C`` is rounded to the nearest power of 2 (128 and 1024 stay as they
    are): a bound good to a factor of a few needs no more, and the rows of
    a plan over many client counts then share a few workload evaluations
    (each is a summary of 10^6 blocks, about 0.5 s) instead of one each."""
    if not (scenario.switch.cache and scenario.switch.mode == "read-only"):
        return 0.0
    return float(2.0 ** round(math.log2(max(1, int(scenario.clients.threads)))))


def evaluate_scenario(scenario, source=None, **kw) -> WorkloadResult:
    """:func:`evaluate` for a whole :class:`model.scenario.Scenario` (a read-only
    cache's update window from its clients, :func:`update_window_requests`)."""
    kw.setdefault("update_window", update_window_requests(scenario))
    return evaluate(scenario.workload, scenario.switch, scenario.servers.count, source, **kw)


# ------------------------------------------------------------ memtable hits
#: (id(popularity table), window bytes, lookups) -> (table, fractions): compiling a
#: rack under many profiles (fits, interval sigma points), and the rows of a plan
#: that share a workload and server count, ask the same question. Keyed on the
#: table, which the summary cache keeps alive, not on the result object, which
#: each compile builds anew (keying on it missed every time across rows).
_WINDOW_CACHE: dict = {}
_WINDOW_CACHE_MAX = 8192


def window_hit_fraction(result: WorkloadResult, window_writes, *, server: int | None = None,
                        lookups: str = "reads"):
    n = None if result.win_read_mass is None else result.win_read_mass.shape[0]
    if n is None or lookups not in ("reads", "writes"):
        return _window_hit_fraction(result, window_writes, server=server, lookups=lookups)
    w = np.ascontiguousarray(np.broadcast_to(np.asarray(window_writes, dtype=float), (n,)))
    table = result.win_read_mass if lookups == "reads" else result.win_write_mass
    key = (id(table), id(result.win_write_mass), w.tobytes(), lookups)
    hit = _WINDOW_CACHE.get(key)
    if hit is None or hit[0] is not table or hit[1] is not result.win_write_mass:
        if len(_WINDOW_CACHE) >= _WINDOW_CACHE_MAX:
            _WINDOW_CACHE.clear()
        hit = (table, result.win_write_mass, _window_hit_fraction(result, w, lookups=lookups))
        _WINDOW_CACHE[key] = hit
    out = hit[2]
    return float(out[server]) if server is not None else out.copy()


def _window_hit_fraction(result: WorkloadResult, window_writes, *, server: int | None = None,
                         lookups: str = "reads"):
    """Fraction of a server's lookups whose key was written within the last
    ``window_writes`` writes to that server (docs/workload.md, section 7).

    Che's approximation over the same per-key popularity as the shares, after
    the cache removes its keys: a key with fraction ``p`` of the server's
    writes is among the last W writes with probability ``1 - exp(-W p)``
    (memtables hold every write, duplicates included, so the window is W
    writes; keys are written with the popularity they are read with). A
    lookup of that key then finds it in the memtable.

    ``lookups="reads"``: GETs that reach the server (cached keys' reads are
    answered by the switch); ``"writes"``: lookups made for the server's
    writes (a GET of the stored sequence number before a PUT), whose keys
    follow the write stream (under a read-only cache this includes cached
    keys). ``window_writes`` is a number or one per server; the result is
    one number (``server`` given) or an array per server. Binning per-key
    popularity into 16 bins per octave costs < 0.1 % relative.
    """
    if result.win_read_mass is None:
        raise ValueError("this result has no popularity tables (a measured description "
                         "without a stand-in popularity)")
    if lookups not in ("reads", "writes"):
        raise ValueError(f"lookups must be 'reads' or 'writes', got {lookups!r}")
    lm, lc = ((result.win_read_mass, result.win_read_count) if lookups == "reads"
              else (result.win_write_mass, result.win_write_count))
    wm, wc = result.win_write_mass, result.win_write_count
    n = lm.shape[0]
    w = np.broadcast_to(np.asarray(window_writes, dtype=float), (n,))
    wtot = wm.sum(axis=1)                               # mass of this server's written keys
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(lc > 0, lm / np.maximum(lc, 1e-300), 0.0)   # per-key mass in each bin
        pw = q / wtot[:, None]                          # per-key share of the server's writes
        hit = (lm * -np.expm1(-np.maximum(w, 0.0)[:, None] * pw)).sum(axis=1)
        out = np.where(lm.sum(axis=1) > 0, hit / lm.sum(axis=1), 0.0)
    out = np.clip(np.nan_to_num(out), 0.0, 1.0)
    return float(out[server]) if server is not None else out


# ------------------------------------------------------------ sampling
def sample_classes(workload, switch, servers: int, n: int, rng: np.random.Generator,
                   source=None, update_window: float = 0.0) -> np.ndarray:
    """Draw ``n`` requests from the same popularity :func:`evaluate` uses:
    -1 for a switch-cache hit, else the server index. A read-only cache
    answers only reads (each cached-key request is a hit with probability
    ``read_ratio`` times its entry's valid odds under ``update_window``, as in
    :func:`evaluate`). For the simulator: it samples the blocks :func:`evaluate`
    computes from (flat within a tail block). For the generator's exact key
    stream use :func:`model.ycsb.sample_keynums` and :func:`model.keys.servers_of`."""
    if source is None:
        source = getattr(workload, "profile", "") or None
    if isinstance(source, str):
        source = ws.load_source(source, layout=stock_spec(workload).layout)
    hit_prob = float(workload.read_ratio) if switch.mode == "read-only" else 1.0
    if isinstance(source, ws.MeasuredWorkload):
        res = source.result(workload, switch, servers)
        p = np.concatenate([[res.hit_ratio], res.shares])
        return rng.choice(np.arange(-1, servers), size=n, p=p / p.sum())
    if source is None:
        spec = stock_spec(workload)
    elif isinstance(source, ws.WorkloadProfile):
        spec = source.spec(workload)
    else:
        spec = source                      # StockSpec, RankSpec or KeyTrace
    b = blocks(spec, int(servers), switch.partition, int(switch.hash_buckets))
    total = spec.records if isinstance(spec, StockSpec) else (
        spec.items if isinstance(spec, RankSpec) else len(spec.counts))
    k = min(int(switch.cache_keys), int(total)) if cacheable(workload, switch) else 0
    mass, count, server, cached = select(b, k)
    cum = np.cumsum(mass)
    idx = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), len(mass) - 1)
    out = server[idx].copy()
    hit = cached[idx]
    if hit_prob < 1.0:
        q = mass[idx] / np.maximum(count[idx], 1e-300)
        hit &= rng.random(n) < cached_hit_fraction(q, hit_prob, float(update_window))
    out[hit] = -1
    return out
