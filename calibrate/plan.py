"""Experiment plans for local runs: a design of experiments over the native server.

A plan is a TOML file::

    name = "default"
    design = "oat"            # oat (one factor at a time), grid (all combinations) or points
    repeats = 1               # runs per configuration
    order = "random"          # run order: "listed" or "random" (against drift; seeded)
    seed = 1

    [base]                    # every point starts from these (defaults below otherwise)
    workers = 2
    clients = 8

    [factors]                 # values to sweep (oat: each alone around base; grid: product)
    clients = [1, 4, 16]
    memtable_mb = [1, 64]

    [[points]]                # explicit extra points (base values fill the rest)
    workers = 1
    read_ratio = 0.95

Every key is declared once in :data:`KEYS` with its type and range; an
invalid plan raises :class:`~model.errors.InputError` naming the key (for
example ``factors.clients[2]``). :func:`expand` turns a plan into points:
dicts of the configuration columns of :mod:`runio.local_runs`, each with
its ``config_hash`` and ``id``.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from model.errors import InputError
from runio.safe_io import load_toml
from model.toml_text import locate_in_toml

from .runs_io import config_hash


@dataclass(frozen=True)
class Key:
    kind: type                    # int, float, str or bool
    default: Any
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] | None = None
    unit: str = ""
    doc: str = ""
    #: smallest allowed value other than 0, where 0 means "off" or "RocksDB's default"
    nonzero_lo: float | None = None

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is bool:
            return "true or false"
        name = "an integer" if self.kind is int else "a number"
        rng = f" in [{self.lo}, {self.hi}]" if self.lo is not None and self.hi is not None else ""
        if self.nonzero_lo is not None:
            rng = f" of 0 or in [{self.nonzero_lo:g}, {self.hi}]"
        return f"{name}{rng}{' ' + self.unit if self.unit else ''}"


#: the plan's L0 trigger keys: RocksDB's option and its default, which 0 stands for
L0_TRIGGERS = {"l0_compaction_trigger": ("level0_file_num_compaction_trigger", 4),
               "l0_slowdown_trigger": ("level0_slowdown_writes_trigger", 20),
               "l0_stop_trigger": ("level0_stop_writes_trigger", 36)}

KEYS: dict[str, Key] = {
    "workers": Key(int, 2, 1, 256, unit="threads", doc="server worker threads"),
    "clients": Key(int, 8, 1, 4096, unit="threads", doc="closed-loop client threads"),
    "timeout_ms": Key(float, 20.0, 0.01, 60_000, unit="ms", doc="client resend timeout"),
    "memtable_mb": Key(int, 64, 1, 4096, unit="MiB", doc="write_buffer_size"),
    "flushnum": Key(int, 1, 1, 64, unit="memtables", doc="min_write_buffer_number_to_merge"),
    "maxnum": Key(int, 2, 2, 64, unit="memtables", doc="max_write_buffer_number"),
    "wal": Key(str, "on", choices=("on", "off"), doc="write-ahead log"),
    "db": Key(str, "normal", choices=("normal", "txn"), doc="plain DB or TransactionDB"),
    "seq_check": Key(str, "disk-get", choices=("disk-get", "none", "evicted-only"),
                     doc="sequence check before writes"),
    "pinned": Key(bool, False, doc="pin workers to cores"),
    "distribution": Key(str, "zipf", choices=("zipf", "uniform"), doc="key popularity"),
    "read_ratio": Key(float, 0.5, 0.0, 1.0, unit="fraction", doc="GET fraction"),
    "records": Key(int, 100_000, 1, 10**9, unit="keys", doc="key space"),
    "value_bytes": Key(int, 128, 0, 60_000, unit="B", doc="PUT value size"),
    "duration_s": Key(float, 2.0, 0.05, 3600, unit="s", doc="measured run length bound"),
    "warmup_s": Key(float, 0.5, 0.0, 600, unit="s", doc="warm-up before measuring"),
    "max_requests": Key(int, 400_000, 1, 10**10, unit="requests", doc="measured run count bound"),
    # --- the write path (issue 50); 0 = RocksDB's default where it says so ---
    "flush_threads": Key(int, 1, 1, 64, unit="threads",
                         doc="RocksDB HIGH pool = max_background_flushes (shared by the workers)"),
    "compaction_threads": Key(int, 1, 1, 64, unit="threads",
                              doc="RocksDB LOW pool = max_background_compactions (shared)"),
    "wal_bytes_per_sync_mb": Key(int, 0, 0, 1024, unit="MiB",
                                 doc="WAL writeback every this many MiB (wal_bytes_per_sync); 0 = off"),
    "delayed_write_rate_mbps": Key(float, 0.0, 0.0, 100_000, unit="MiB/s", nonzero_lo=1 / 64,
                                   doc="write rate while delayed (delayed_write_rate); 0 = "
                                       "RocksDB's: 16 MiB/s, or bg_write_mbps when that is set"),
    "bg_write_mbps": Key(float, 0.0, 0.0, 100_000, unit="MiB/s", nonzero_lo=1 / 16,
                         doc="flush + compaction write bandwidth, one rate limiter for all "
                             "workers (a disk's); 0 = unlimited"),
    **{key: Key(int, 0, 0, 1000, unit="files", doc=f"{option}; 0 = RocksDB's {default}")
       for key, (option, default) in L0_TRIGGERS.items()},
    "preload": Key(bool, False, doc="before the run, load `records` records of `value_bytes` "
                                    "into the workers' DBs, then close and reopen them"),
}
#: keys added after runs files were first written: left out of config_hash
#: while at their default, so the rows of earlier runs files still match
#: their points (a resumed plan skips them)
HASH_SKIPS_DEFAULT = ("flush_threads", "compaction_threads", "wal_bytes_per_sync_mb",
                      "delayed_write_rate_mbps", "bg_write_mbps", "l0_compaction_trigger",
                      "l0_slowdown_trigger", "l0_stop_trigger", "preload")

DESIGNS = ("oat", "grid", "points")
TOP = ("name", "design", "repeats", "order", "seed", "base", "factors", "points", "description")
ORDERS = ("listed", "random")


@dataclass(frozen=True)
class Plan:
    name: str
    design: str
    repeats: int
    base: dict[str, Any]
    factors: dict[str, list[Any]]
    points: list[dict[str, Any]]
    source: str
    order: str = "listed"
    seed: int = 1


def default_plan_path() -> Path:
    return Path(str(resources.files("calibrate").joinpath("plans", "default.toml")))


def load_plan(path: str | Path | None = None) -> Plan:
    """Read and validate a plan TOML file (the shipped default plan when None)."""
    p = Path(path) if path is not None else default_plan_path()
    data, text = load_toml(p, "plan file", field="--plan")
    try:
        return plan_from_mapping(data, str(p))
    except InputError as exc:
        m = re.match(r"points\[(\d+)\](?:\.(\w+))?$", exc.field or "")
        line = _point_line(text, int(m.group(1)), m.group(2)) if m else None
        raise locate_in_toml(exc.located(line=line) if line else exc, text, str(p)) from None


def _point_line(text: str, index: int, key: str | None) -> int | None:
    """The line of ``key`` in the index-th ``[[points]]`` table (its header without key)."""
    header, n_seen = None, -1
    for n, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("["):
            if header is not None:
                break                     # past the table: the key is not set in it
            if re.match(r"\[\[\s*points\s*\]\]", stripped):
                n_seen += 1
                if n_seen == index:
                    header = n
            continue
        if header is not None and key and re.match(rf"{re.escape(key)}\s*=", stripped):
            return n
    return header


def plan_from_mapping(data: Mapping[str, Any], source: str = "<plan>") -> Plan:
    for k in data:
        if k not in TOP:
            raise InputError(f"unknown key; allowed: {', '.join(TOP)}", source=source, field=k)
    name = data.get("name", "plan" if source.startswith("<") else Path(source).stem)
    if not isinstance(name, str) or not name:
        raise InputError("expected a non-empty string", source=source, field="name")
    design = data.get("design", "oat")
    if design not in DESIGNS:
        raise InputError(f"{design!r} is not allowed; allowed: {', '.join(DESIGNS)}",
                         source=source, field="design")
    repeats = data.get("repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
        raise InputError(f"expected an integer in [1, 100], got {repeats!r}",
                         source=source, field="repeats")
    order = data.get("order", "listed")
    if order not in ORDERS:
        raise InputError(f"{order!r} is not allowed; allowed: {', '.join(ORDERS)}",
                         source=source, field="order")
    seed = data.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"expected an integer, got {seed!r}", source=source, field="seed")
    base_raw = data.get("base", {})
    if not isinstance(base_raw, Mapping):
        raise InputError("expected a table", source=source, field="base")
    base = {k: v.default for k, v in KEYS.items()}
    for k, v in base_raw.items():
        base[k] = check_value(k, v, f"base.{k}", source)
    factors_raw = data.get("factors", {})
    if not isinstance(factors_raw, Mapping):
        raise InputError("expected a table", source=source, field="factors")
    factors: dict[str, list[Any]] = {}
    for k, vals in factors_raw.items():
        if k not in KEYS:
            raise InputError(f"unknown key; allowed: {', '.join(KEYS)}", source=source,
                             field=f"factors.{k}")
        if not isinstance(vals, list) or not vals:
            raise InputError("expected a non-empty list of values", source=source,
                             field=f"factors.{k}")
        factors[k] = [check_value(k, v, f"factors.{k}[{i}]", source) for i, v in enumerate(vals)]
    points_raw = data.get("points", [])
    if not isinstance(points_raw, list):
        raise InputError("expected an array of tables ([[points]])", source=source, field="points")
    points = []
    for i, pt in enumerate(points_raw):
        if not isinstance(pt, Mapping):
            raise InputError("expected a table", source=source, field=f"points[{i}]")
        points.append({k: check_value(k, v, f"points[{i}].{k}", source) for k, v in pt.items()})
    for i, pt in enumerate(points):
        where = {k: f"points[{i}].{k}" if k in pt else f"base.{k}" if k in base_raw else k
                 for k in KEYS}
        check_point({**base, **pt}, base, source, where)
    if design == "points" and not points:
        raise InputError("design 'points' needs at least one [[points]] table",
                         source=source, field="points")
    if design != "points" and not factors and not points:
        raise InputError("the plan has no factors and no points", source=source, field="factors")
    return Plan(name, design, repeats, base, factors, points, source, order, seed)


def check_value(key: str, value: Any, where: str, source: str) -> Any:
    spec = KEYS.get(key)
    if spec is None:
        raise InputError(f"unknown key; allowed: {', '.join(KEYS)}", source=source, field=where)

    def bad(why: str) -> InputError:
        return InputError(f"{why}; allowed: {spec.describe()}", source=source, field=where)

    if spec.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise bad(f"expected true or false, got {value!r}")
    if spec.kind is str:
        if not isinstance(value, str) or (spec.choices and value not in spec.choices):
            raise bad(f"{value!r} is not allowed")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(f"expected a number, got {value!r}")
    if spec.kind is int:
        if isinstance(value, float) and not value.is_integer():
            raise bad(f"expected an integer, got {value!r}")
        value = int(value)
    else:
        value = float(value)
    if value != value or (spec.lo is not None and value < spec.lo) or (
            spec.hi is not None and value > spec.hi):
        raise bad(f"{value!r} is out of range")
    if spec.nonzero_lo is not None and 0 < value < spec.nonzero_lo:
        raise bad(f"{value!r} is out of range")
    return value


def hash_view(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration as :func:`config_hash` sees it (see HASH_SKIPS_DEFAULT)."""
    return {k: v for k, v in config.items()
            if not (k in HASH_SKIPS_DEFAULT and v == KEYS[k].default)}


def check_point(cfg: Mapping[str, Any], base: Mapping[str, Any], source: str,
                where: Mapping[str, str] | None = None) -> None:
    """Checks that involve several keys of one point; the error names the key to
    change (``where`` maps a key to where the plan sets it, e.g. ``points[2].maxnum``)."""
    where = where or {}
    if cfg["flushnum"] >= cfg["maxnum"]:
        raise InputError(f"flushnum ({cfg['flushnum']}) must be less than maxnum "
                         f"({cfg['maxnum']}) in point {_short(cfg, base)}",
                         source=source, field=where.get("flushnum", "flushnum"))
    l0 = {k: cfg[k] or default for k, (_, default) in L0_TRIGGERS.items()}
    names = list(L0_TRIGGERS)
    for lower, upper in zip(names, names[1:]):
        if l0[upper] < l0[lower]:
            raise InputError(f"{upper} ({l0[upper]}) must be at least {lower} ({l0[lower]}; "
                             f"0 stands for RocksDB's default) in point {_short(cfg, base)}",
                             source=source, field=where.get(upper, upper))


def expand_all(plans: list[Plan], cores: int | None = None) -> list[dict[str, Any]]:
    """Points of several plans in one run order.

    If any plan asks for ``order = "random"``, the union is shuffled (seeded
    by the first such plan), so drift of the machine over the session hits
    every plan alike, e.g. a training plan and its holdout plan.
    """
    import random
    points: list[dict[str, Any]] = []
    seen: set[str] = set()
    for plan in plans:
        for p in expand(plan, cores, shuffle=False):
            if p["config_hash"] not in seen:
                seen.add(p["config_hash"])
                points.append(p)
    rnd = [p for p in plans if p.order == "random"]
    if rnd:
        random.Random(rnd[0].seed).shuffle(points)
    return points


def expand(plan: Plan, cores: int | None = None, shuffle: bool = True) -> list[dict[str, Any]]:
    """The plan's points in run order, each a full configuration with id and config_hash.

    Duplicate configurations (e.g. the base point reached by several
    factors) are run once per repeat. Ids follow the listed order; with
    ``order = "random"`` the run order is shuffled (seeded).
    """
    cores = cores or os.cpu_count() or 1
    configs: list[dict[str, Any]] = []
    if plan.design == "grid" and plan.factors:
        names = list(plan.factors)
        for combo in itertools.product(*(plan.factors[n] for n in names)):
            configs.append({**plan.base, **dict(zip(names, combo))})
    elif plan.design == "oat":
        configs.append(dict(plan.base))
        for name, vals in plan.factors.items():
            for v in vals:
                configs.append({**plan.base, name: v})
    for pt in plan.points:
        configs.append({**plan.base, **pt})
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for cfg in configs:
        check_point(cfg, plan.base, plan.source)
        for rep in range(plan.repeats):
            full = {**cfg, "cores": cores, "repeat": rep}
            full["pinned"] = int(bool(full["pinned"]))
            full["preload"] = int(bool(full["preload"]))
            h = config_hash(hash_view(full))
            if h in seen:
                continue
            seen.add(h)
            full["config_hash"] = h
            full["plan"] = plan.name
            full["id"] = f"{plan.name}-{len(out) + 1:03d}"
            out.append(full)
    if shuffle and plan.order == "random":
        import random
        random.Random(plan.seed).shuffle(out)
    return out


def _short(cfg: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    diff = {k: v for k, v in cfg.items() if base.get(k) != v}
    return "{" + ", ".join(f"{k}={v}" for k, v in diff.items()) + "}" if diff else "{base}"
