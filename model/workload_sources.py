"""Workload sources besides the stock generator (docs/workload.md, sections 4-5).

* :class:`WorkloadProfile`: a calibrated description of a lab's key
  popularity and key layout, a TOML file (embedded ones live in
  ``model/profiles/workloads/``). Separate from the machine profile.
* :class:`MeasuredWorkload`: what a run measured: per-server load ratios and
  the hit ratio (a TOML file, or FarReach's client statistics JSON with
  ``perserverOpsdone`` / ``perserverCachehits`` / ``totalOpsdone``).
* :class:`KeyTrace`: the keys of a run, one request per line (YCSB trace
  lines, bare key names, or ``key,count``).

:func:`load_source` reads any of them from a name or a path. Bad input raises
:class:`~model.errors.InputError` naming the file, the line and the user's own
key or column.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterable

import numpy as np

from . import keys
from .errors import InputError
from .toml_text import parse_toml
from .workload_blocks import blocks
from .workload_summary import summary
from .workload_types import RankSpec, WorkloadResult, stock_spec

PROFILE_DIR = "profiles/workloads"
ORDERS = ("rank", "scrambled")
PMFS = ("zipf", "ycsb")


def embedded_profiles() -> list[str]:
    return list(_embedded_names())


@functools.lru_cache(maxsize=1)
def _embedded_names() -> tuple[str, ...]:
    # the package's files do not change while it runs; every rack compile asks
    d = resources.files("model").joinpath(PROFILE_DIR)
    try:
        return tuple(sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".toml")))
    except (FileNotFoundError, NotADirectoryError):
        return ()


# ----------------------------------------------------------- locating keys
def _line_of(text: str, key: str) -> int | None:
    """Best-effort line number of a dotted TOML key (``section.key``)."""
    parts = key.split(".")
    name = parts[-1]
    section = ".".join(parts[:-1])
    cur = ""
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = re.match(r"^\[+\s*([^\]]+?)\s*\]+", s)
        if m:
            cur = m.group(1)
            if cur == key:
                return i
            continue
        if cur == section and re.match(rf"^{re.escape(name)}\s*=", s):
            return i
        if cur == "" and section and re.match(rf"^{re.escape(section)}\s*=", s):
            return i
    return None




class _Located:
    """Raise InputErrors located in one TOML file."""

    def __init__(self, path: str, text: str):
        self.path, self.text = path, text

    def error(self, key: str, msg: str) -> InputError:
        return InputError(msg, source=self.path, line=_line_of(self.text, key), field=key)

    def number(self, table: dict, key: str, dotted: str, *, lo=None, hi=None,
               required=True, integer=False):
        """A number given plainly or as ``{value, unit, source}``."""
        if key not in table:
            if required:
                raise self.error(dotted, "missing")
            return None
        v = table[key]
        if isinstance(v, dict):
            if "value" not in v:
                raise self.error(dotted, "a parameter table needs 'value' (and 'unit', 'source')")
            v = v["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise self.error(dotted, f"expected a number, got {v!r}")
        if integer:
            if abs(v - round(v)) > 1e-9 * max(1.0, abs(v)) and v < 1e15:
                v = round(v)
            v = int(round(v))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.error(dotted, f"{v!r} is out of range [{lo}, {hi}]")
        return v

    def choice(self, table: dict, key: str, dotted: str, choices, default=None):
        if key not in table:
            if default is None:
                raise self.error(dotted, f"missing; one of {', '.join(choices)}")
            return default
        v = table[key]
        if v not in choices:
            raise self.error(dotted, f"{v!r} is not allowed; one of {', '.join(choices)}")
        return v

    def numbers(self, table: dict, key: str, dotted: str, *, required=False):
        if key not in table:
            if required:
                raise self.error(dotted, "missing")
            return None
        v = table[key]
        if not isinstance(v, list) or not v:
            raise self.error(dotted, f"expected a list of numbers, got {v!r}")
        for i, x in enumerate(v):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
                raise self.error(dotted, f"entry {i} is {x!r}; expected a number >= 0")
        return np.asarray(v, dtype=float)


# ------------------------------------------------------- workload profiles
@dataclass(frozen=True)
class Param:
    value: float
    unit: str = ""
    source: str = ""


@dataclass(frozen=True, eq=False)
class WorkloadProfile:
    """A lab's key popularity and key layout (docs/workload.md, section 5).

    ``order = "rank"``: key number ``r - 1`` has popularity rank ``r``, with
    ``pmf`` ``zipf`` (``p(r) ∝ r^-theta``, ``r = 1..items``) or ``ycsb``
    (Gray et al.'s generator pmf over ``items``). ``order = "scrambled"``:
    YCSB's scrambled zipfian with the given ``theta`` and rank space
    ``items`` (or YCSB's 10^10 + 1), over the scenario's records. ``layout``
    is the key layout of :mod:`model.keys`.
    """
    name: str
    path: str
    order: str
    pmf: str
    theta: float
    items: int | None
    layout: str
    insertorder: str
    generator: str = "ycsb"
    params: tuple = ()          # (name, Param) pairs, for reports
    description: str = ""
    fitted_by: str = ""
    notes: tuple = ()

    @staticmethod
    def popularity_applies(workload) -> bool:
        """The profile's popularity describes zipf runs only. A uniform or
        sequential run has no popular keys; the profile's key layout still
        applies to it (the lab's F077, uniform-seq at 4 servers: no load
        imbalance, 2.5x the zipf run F057's throughput)."""
        return workload.distribution == "zipf"

    def label(self, workload) -> str:
        if self.popularity_applies(workload):
            return f"profile {self.name}"
        return f"profile {self.name} (its key layout; {workload.distribution} popularity)"

    def spec(self, workload):
        if not self.popularity_applies(workload):
            return stock_spec(workload, layout=self.layout, insertorder=self.insertorder)
        if self.order == "rank":
            return RankSpec(pmf=self.pmf, theta=self.theta, items=int(self.items),
                            layout=self.layout, insertorder=self.insertorder)
        return stock_spec(workload, theta=self.theta, items=self.items, generator=self.generator,
                          layout=self.layout, insertorder=self.insertorder)

    def param_dict(self) -> dict[str, Any]:
        return {k: {"value": p.value, "unit": p.unit, "source": p.source} for k, p in self.params}

    @classmethod
    def from_toml_text(cls, text: str, path: str, name: str | None = None) -> "WorkloadProfile":
        return cls.from_mapping(parse_toml(text, path), path, text, name)

    @classmethod
    def from_mapping(cls, data: dict, path: str, text: str = "", name: str | None = None):
        loc = _Located(path, text)
        known = {"kind", "name", "description", "fitted_by", "popularity", "layout", "fit", "checks"}
        for k in data:
            if k not in known:
                raise loc.error(k, f"unknown key; allowed: {', '.join(sorted(known))}")
        pop = data.get("popularity")
        if not isinstance(pop, dict):
            raise loc.error("popularity", "missing table [popularity]")
        lay = data.get("layout", {})
        if not isinstance(lay, dict):
            raise loc.error("layout", "expected a table [layout]")
        order = loc.choice(pop, "order", "popularity.order", ORDERS)
        pmf = loc.choice(pop, "pmf", "popularity.pmf", PMFS, default="zipf" if order == "rank" else "ycsb")
        if order == "scrambled" and pmf != "ycsb":
            raise loc.error("popularity.pmf", "a scrambled profile uses YCSB's generator pmf: 'ycsb'")
        theta_hi = 0.9999 if pmf == "ycsb" else 5.0
        theta = float(loc.number(pop, "theta", "popularity.theta", lo=0.0, hi=theta_hi))
        items = loc.number(pop, "items", "popularity.items", lo=3, hi=1e12, integer=True,
                           required=order == "rank")
        layout = loc.choice(lay, "keys", "layout.keys", keys.LAYOUTS,
                            default="synthetic" if order == "rank" else "farreach")
        insertorder = loc.choice(lay, "insertorder", "layout.insertorder", keys.INSERTORDERS,
                                 default="ordered" if order == "rank" else "hashed")
        generator = loc.choice(pop, "generator", "popularity.generator", ("ycsb", "kvperf"),
                               default="ycsb")
        if order == "rank" and layout == "farreach" and insertorder != "ordered":
            raise loc.error("layout.insertorder", "rank-ordered keys are not hashed: use 'ordered'")
        params = []
        for k in ("theta", "items"):
            v = pop.get(k)
            if isinstance(v, dict):
                params.append((k, Param(float(v.get("value")), str(v.get("unit", "")),
                                        str(v.get("source", "")))))
            elif v is not None:
                params.append((k, Param(float(v))))
        nm = data.get("name", name or os.path.splitext(os.path.basename(path))[0])
        return cls(name=str(nm), path=path, order=order, pmf=pmf, theta=theta, items=items,
                   layout=layout, insertorder=insertorder, generator=generator,
                   params=tuple(params), description=str(data.get("description", "")),
                   fitted_by=str(data.get("fitted_by", "")))


# ------------------------------------------------- measured descriptions
@dataclass(frozen=True, eq=False)
class MeasuredWorkload:
    """Per-server load ratios and hit ratio as a run measured them.

    ``load`` / ``load_nocache``: per-server fractions of the requests that
    reached servers, with the cache on / without it (None if not measured);
    ``hit_ratio``: fraction of all requests the switch answered.
    """
    path: str
    hit_ratio: float | None
    load: np.ndarray | None
    load_nocache: np.ndarray | None
    notes: tuple = ()

    @property
    def servers(self) -> int:
        a = self.load if self.load is not None else self.load_nocache
        return len(a)

    def result(self, workload, switch, n: int, *, hot_records: int = 10_000):
        if self.servers != n:
            raise InputError(f"describes {self.servers} servers but the scenario has {n}",
                             source=self.path, field="load_ratio")
        nan = np.full(n, math.nan)
        notes = list(self.notes)
        if switch.cache:
            if self.load is None or self.hit_ratio is None:
                raise InputError("the scenario has the cache on: the description needs the hit "
                                 "ratio and the per-server load with the cache (hit_ratio and "
                                 "load_ratio with cache = true, or FarReach's perserverOpsdone "
                                 "and perserverCachehits)", source=self.path, field="load_ratio")
            hit = float(self.hit_ratio)
            shares = (1.0 - hit) * self.load
            nocache = self.load_nocache if self.load_nocache is not None else nan
            if self.load_nocache is None:
                notes.append("no load without the cache was measured: shares_nocache and "
                             "normalized_x unknown")
        else:
            if self.load_nocache is None:
                raise InputError("the scenario has the cache off: the description needs the "
                                 "per-server load without the cache (load_ratio with cache = "
                                 "false, or FarReach's counters)", source=self.path,
                                 field="load_ratio")
            hit, shares, nocache = 0.0, self.load_nocache, self.load_nocache
        # Skew seen by each server: not measured. Stand-in: the scenario's stock
        # generator with the cache size that gives the measured hit ratio, hash
        # partitioned so that every server sees a typical slice (docs/workload.md 4).
        spec = stock_spec(workload)
        b = blocks(spec, n, "hash", int(switch.hash_buckets))
        cum = np.cumsum(b.mass)
        cnt = np.cumsum(b.count)
        i = int(np.searchsorted(cum, hit, side="left"))
        k = 0 if hit <= 0 else int(min(cnt[min(i, len(cnt) - 1)], spec.records))
        s = summary(spec, n, "hash", int(switch.hash_buckets), k, 1.0, int(hot_records))
        notes.append(f"per-server skew assumed: the stock {spec.generator} generator with "
                     f"{k:,} cached keys (the measured hit ratio), spread evenly")
        def typical(a):
            return np.broadcast_to(np.nanmean(a), (n,)).copy()
        def table(a):
            return np.broadcast_to(a.sum(axis=0) / n, a.shape).copy()
        mc = np.nanmax(shares)
        norm = float(np.nanmax(nocache) / mc) if (mc > 0 and np.all(np.isfinite(nocache))) else (
            1.0 / (1.0 - hit) if n == 1 and hit < 1 else math.nan)
        return WorkloadResult(
            hit_ratio=hit, shares=np.asarray(shares, float), shares_nocache=np.asarray(nocache, float),
            normalized_x=norm,
            server_hot_fraction=typical(s["server_hot_fraction"]),
            server_hot_fraction_nocache=typical(s["server_hot_fraction_nocache"]),
            hot_records=int(hot_records), cached_keys=int(switch.cache_keys) if switch.cache else 0,
            tail_mass=0.0, tolerance=0.0, source=f"measured {self.path}", partition=switch.partition,
            notes=tuple(notes),
            win_read_mass=table(s["win_read_mass"]), win_read_count=table(s["win_read_count"]),
            win_write_mass=table(s["win_write_mass"]), win_write_count=table(s["win_write_count"]))

    @classmethod
    def from_counts(cls, path, ops, hits, notes=()):
        ops, hits = np.asarray(ops, float), np.asarray(hits, float)
        total = float(ops.sum() + hits.sum())
        if total <= 0:
            raise InputError("no requests counted", source=path, field="perserverOpsdone")
        load = ops / ops.sum() if ops.sum() > 0 else np.zeros_like(ops)
        return cls(path, float(hits.sum() / total), load, (ops + hits) / total, tuple(notes))

    @classmethod
    def from_toml_text(cls, text: str, path: str) -> "MeasuredWorkload":
        data = parse_toml(text, path)
        loc = _Located(path, text)
        known = {"kind", "name", "servers", "hit_ratio", "load_ratio", "load_ratio_nocache", "cache",
                 "perserverOpsdone", "perserverCachehits", "totalOpsdone", "note"}
        for k in data:
            if k not in known:
                raise loc.error(k, f"unknown key; allowed: {', '.join(sorted(known))}")
        ops = loc.numbers(data, "perserverOpsdone", "perserverOpsdone")
        hits = loc.numbers(data, "perserverCachehits", "perserverCachehits")
        if ops is not None or hits is not None:
            if ops is None or hits is None:
                raise loc.error("perserverCachehits" if hits is None else "perserverOpsdone",
                                "FarReach's counters come in pairs: perserverOpsdone and "
                                "perserverCachehits")
            if len(ops) != len(hits):
                raise loc.error("perserverCachehits",
                                f"{len(hits)} entries, but perserverOpsdone has {len(ops)}")
            res = cls.from_counts(path, ops, hits)
        else:
            hit = loc.number(data, "hit_ratio", "hit_ratio", lo=0.0, hi=1.0, required=False)
            cache = data.get("cache", True)
            if not isinstance(cache, bool):
                raise loc.error("cache", f"expected true or false, got {cache!r}")
            lr = loc.numbers(data, "load_ratio", "load_ratio")
            lrn = loc.numbers(data, "load_ratio_nocache", "load_ratio_nocache")
            if lr is not None and not cache:
                if lrn is not None:
                    raise loc.error("load_ratio_nocache", "given twice: load_ratio with "
                                    "cache = false is already the load without the cache")
                lr, lrn = None, lr
            if lr is None and lrn is None:
                raise loc.error("load_ratio", "missing: per-server load ratios (or FarReach's "
                                "perserverOpsdone and perserverCachehits)")
            for key_, a in (("load_ratio", lr), ("load_ratio_nocache", lrn)):
                if a is not None and a.sum() <= 0:
                    raise loc.error(key_, "all zero")
            if lr is not None and lrn is not None and len(lr) != len(lrn):
                raise loc.error("load_ratio_nocache",
                                f"{len(lrn)} entries, but load_ratio has {len(lr)}")
            res = cls(path, hit if cache or hit is not None else None,
                      None if lr is None else lr / lr.sum(),
                      None if lrn is None else lrn / lrn.sum())
            if not cache and hit is None:
                res = cls(path, 0.0, None, res.load_nocache)
        if "servers" in data:
            n = loc.number(data, "servers", "servers", lo=1, integer=True)
            if n != res.servers:
                raise loc.error("servers", f"says {n} servers but the load ratios list {res.servers}")
        return res

    @classmethod
    def from_farreach_json_text(cls, text: str, path: str) -> "MeasuredWorkload":
        """FarReach's client statistics file: a JSON array of objects with
        ``perserverOpsdone`` (requests each server answered), ``perserverCachehits``
        (requests to each server's keys the switch answered) and ``totalOpsdone``;
        objects (rotations, seconds) are summed."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", source=path, line=exc.lineno) from None
        except (RecursionError, ValueError) as exc:    # nesting; an integer too long to read
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise InputError(f"not valid JSON here: {why}", source=path) from None
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list) or not data:
            raise InputError("expected FarReach's statistics: a list of objects with "
                             "perserverOpsdone and perserverCachehits", source=path)
        ops = hits = None
        for i, obj in enumerate(data):
            where = f"[{i}]"
            if not isinstance(obj, dict):
                raise InputError("expected an object", source=path, field=where)
            for key_ in ("perserverOpsdone", "perserverCachehits"):
                v = obj.get(key_)
                if not isinstance(v, list) or not all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in v):
                    raise InputError("expected a list of counts >= 0", source=path,
                                     field=f"{where}.{key_}")
            o, h = np.asarray(obj["perserverOpsdone"], float), np.asarray(obj["perserverCachehits"], float)
            if len(o) != len(h) or (ops is not None and len(o) != len(ops)):
                raise InputError("server lists of different lengths", source=path,
                                 field=f"{where}.perserverCachehits")
            ops = o if ops is None else ops + o
            hits = h if hits is None else hits + h
        return cls.from_counts(path, ops, hits, notes=(f"summed over {len(data)} statistics objects",))


# ------------------------------------------------------------ key traces
_OPS = ("READ", "UPDATE", "INSERT", "SCAN", "DELETE", "READMODIFYWRITE", "WARMUP")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")


@dataclass(frozen=True, eq=False)
class KeyTrace:
    """Distinct keys of a trace with their request counts.

    Each key is a YCSB name (``user<number>``: FarReach's ``Key.fromString``
    gives the key number), a bare decimal key number, or a 32-hex-digit wire
    key. ``layout`` says how key numbers become wire keys (docs/workload.md 2).
    """
    path: str
    layout: str
    values: np.ndarray          # uint64 key numbers (names and numbers)
    wires: np.ndarray           # (m, 16) uint8 wire keys given as hex
    counts: np.ndarray          # requests per key: values first, then wires
    notes: tuple = ()

    @property
    def records(self) -> int:
        return len(self.counts)

    def servers(self, n: int, partition: str, buckets: int) -> np.ndarray:
        a = np.zeros(0, np.int64)
        if len(self.values):
            recs = self.values.view(np.int64)
            # kvperf keys are made from record numbers (docs/protocol.md)
            kv = keys.key_values(recs, "kvperf") if self.layout == "kvperf" else self.values
            a = keys.servers_of_values(kv, self.layout, n, partition, buckets, recs=recs)
        if len(self.wires):
            b = np.array([keys.server_of_wire(bytes(w), self.layout, n, partition, buckets)
                          for w in self.wires], dtype=np.int64)
            a = np.concatenate([a, b])
        return a

    @classmethod
    def from_lines(cls, text_lines: Iterable[str], path: str,
                   layout: str = "farreach") -> "KeyTrace":
        """A trace from its lines (:func:`runio.workload_files.read_trace` reads a file)."""
        counts: dict = {}
        hexes: dict = {}
        lines = 0
        try:
            for lineno, line in enumerate(text_lines, 1):
                s = line.strip()
                if not s:
                    continue
                if s.startswith("#"):
                    m = re.match(r"#\s*layout\s*[:=]\s*(\S+)", s)
                    if m:
                        layout = m.group(1)
                        if layout not in keys.LAYOUTS:
                            raise InputError(f"unknown layout {layout!r}; one of "
                                             f"{', '.join(keys.LAYOUTS)}", source=path,
                                             line=lineno, field="layout")
                    continue
                tok, cnt = _trace_line(s, path, lineno)
                lines += 1
                if _HEX32.fullmatch(tok):
                    hexes[tok.lower()] = hexes.get(tok.lower(), 0) + cnt
                    continue
                try:
                    if tok.startswith("user"):
                        v = keys.farreach_key_value(tok)
                    else:
                        if not re.fullmatch(r"[0-9]+", tok) or int(tok) >= 1 << 64:
                            raise ValueError("not a key")
                        v = int(tok)
                except ValueError as exc:
                    raise InputError(
                        f"{tok!r} is not a key: expected a YCSB key name (user<number>), a "
                        f"decimal key number or a 32-hex-digit wire key ({exc})",
                        source=path, line=lineno, field=tok[:40]) from None
                counts[v] = counts.get(v, 0) + cnt
        except UnicodeDecodeError:
            raise InputError("not a text file (UTF-8)", source=path) from None
        if not counts and not hexes:
            raise InputError("no keys in the trace", source=path)
        vals = np.fromiter(counts.keys(), dtype=np.uint64, count=len(counts))
        c1 = np.fromiter(counts.values(), dtype=float, count=len(counts))
        wires = np.array([np.frombuffer(bytes.fromhex(h), dtype=np.uint8) for h in hexes],
                         dtype=np.uint8).reshape(len(hexes), 16)
        c2 = np.fromiter(hexes.values(), dtype=float, count=len(hexes))
        return cls(path, layout, vals, wires, np.concatenate([c1, c2]),
                   notes=(f"{lines:,} requests over {len(c1) + len(c2):,} distinct keys",))


def _trace_line(s: str, path: str, lineno: int) -> tuple[str, int]:
    """(key token, count) of one trace line."""
    parts = s.replace(",", " ").split()
    if parts[0].upper() in _OPS:
        # YCSB's trace: OP TABLE KEY [ fields ]
        if len(parts) < 3:
            raise InputError(f"{parts[0]} without a key", source=path, line=lineno, field=parts[0])
        return parts[2], 1
    if len(parts) == 1:
        return parts[0], 1
    if len(parts) == 2:
        try:
            c = int(parts[1])
        except ValueError:
            c = -1
        if c < 1:
            raise InputError(f"count {parts[1]!r} is not a whole number >= 1", source=path,
                             line=lineno, field=parts[1][:40])
        return parts[0], c
    raise InputError("expected a key, 'key,count' or a YCSB trace line (OP TABLE KEY ...)",
                     source=path, line=lineno, field=parts[0][:40])


# ------------------------------------------------------------- loading
def load_source(spec: str, *, layout: str = "farreach"):
    """A workload source from a name or path: an embedded profile name, or a
    file read by the file reader the toolkit's entry points install
    (:func:`set_file_reader`; :mod:`runio.workload_files`): a ``.toml``
    (profile or measured description), a ``.json`` (FarReach client
    statistics) or a key trace."""
    if spec is None or spec == "":
        return None
    if spec in embedded_profiles():            # file stems: never a path
        return _embedded(spec)
    return _read_file(spec, layout)


def _no_file_reader(spec: str, layout: str):
    raise InputError("no such embedded workload profile, and no file reader installed to read "
                     "it as a file (import runio and call runio.install())",
                     source=spec, field="workload.profile")


#: reads a workload file: ``(spec, layout) -> source`` (the domain reads no file)
_read_file = _no_file_reader


def set_file_reader(reader) -> None:
    """Install how workload files are read (:func:`runio.workload_files.load_file`)."""
    global _read_file
    _read_file = reader


def source_from_file(shown: str, read_text, read_lines, layout: str):
    """A file's workload source, told apart by its extension and kind:
    ``read_text(what)`` gives the file's text (``what`` names it in errors),
    ``read_lines()`` its lines (a key trace is streamed)."""
    ext = os.path.splitext(shown)[1].lower()
    if ext == ".json":
        return MeasuredWorkload.from_farreach_json_text(read_text("statistics file"), shown)
    if ext == ".toml":
        text = read_text("workload profile")
        data = parse_toml(text, shown)
        kind = data.get("kind")
        if kind is None:
            kind = "workload-profile" if "popularity" in data else "measured"
        if kind == "workload-profile":
            return WorkloadProfile.from_mapping(data, shown, text)
        if kind == "measured":
            return MeasuredWorkload.from_toml_text(text, shown)
        raise InputError(f"unknown kind {kind!r}; one of 'workload-profile', 'measured'",
                         source=shown, line=_line_of(text, "kind"), field="kind")
    return KeyTrace.from_lines(read_lines(), shown, layout)


@functools.lru_cache(maxsize=16)
def _embedded(name: str) -> WorkloadProfile:
    text = resources.files("model").joinpath(PROFILE_DIR, f"{name}.toml").read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=f"<embedded {name}>") from None
    return WorkloadProfile.from_mapping(data, f"<embedded {name}>", text, name)
