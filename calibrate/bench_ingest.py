"""``calibrate ingest --format ycsb|dbbench``: benchmark tools' output -> runs rows.

Each YCSB output file becomes one ``ycsb_runs`` row (or, with ``one_run``,
the files are the physical clients of one run and become one row); each
benchmark result of a db_bench output becomes one ``dbbench_runs`` row
(:mod:`runio.bench_runs` says what the columns mean). The configuration the
files do not tell (servers, a system, storage settings...) comes from
``--set COLUMN=VALUE``; what they tell (YCSB's ``-threads``, db_bench's key
and value sizes) is used unless ``--set`` says otherwise. Every row is
checked by building its scenario before anything is written, so a bad
``--set`` value is reported (naming the column) instead of appended.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from runio import bench_runs
from model.errors import InputError
from model.registry import RunKind


@dataclass(frozen=True)
class Format:
    kind: RunKind
    columns: tuple[str, ...]
    config: tuple[str, ...]                  # what --set may give
    scenario: Callable[[Mapping[str, Any]], Any]
    required: tuple[str, ...] = ()           # configuration the files never tell


FORMATS = {
    "ycsb": Format(bench_runs.YCSB_KIND, bench_runs.YCSB_COLUMNS, bench_runs.YCSB_CONFIG,
                   bench_runs.ycsb_scenario, required=("servers", "clients")),
    "dbbench": Format(bench_runs.DBBENCH_KIND, bench_runs.DBBENCH_COLUMNS,
                      bench_runs.DBBENCH_CONFIG, bench_runs.dbbench_scenario),
}


def _parsed(fmt: str, files: Sequence[str], one_run: bool) -> list[tuple[str, dict, dict]]:
    """(source, configuration the file tells, measured columns) per row."""
    out = []
    if fmt == "ycsb":
        from .ycsb_output import combine, read_ycsb
        runs = [read_ycsb(f) for f in files]
        if one_run and len(runs) > 1:
            runs = [combine(runs)]
        for r in runs:
            m = r.measured()
            out.append((r.source, m["config"], m["measured"]))
        return out
    from .dbbench_output import read_dbbench
    for f in files:
        for row in read_dbbench(f).rows():
            config = {k: row.pop(k) for k in list(row) if k in FORMATS[fmt].config}
            out.append((f, config, row))
    return out


def ingest_files(fmt: str, files: Sequence[str], config: Mapping[str, Any], *,
                 one_run: bool = False) -> tuple[Format, list[dict[str, Any]]]:
    """Rows of the format's kind from its output ``files`` and ``--set`` ``config``."""
    if fmt not in FORMATS:
        raise InputError(f"{fmt!r} is not allowed; allowed: {', '.join(FORMATS)}",
                         field="--format")
    spec = FORMATS[fmt]
    if not files:
        raise InputError(f"give the {fmt} output files to read", field="FILE")
    unknown = [k for k in config if k not in spec.config]
    if unknown:
        raise InputError(f"unknown column; allowed: {', '.join(spec.config)}",
                         source="--set", field=unknown[0])
    parsed = _parsed(fmt, files, one_run)
    if "id" in config and len(parsed) > 1:
        raise InputError(f"--set id names one row, but {len(parsed)} were read; leave it out "
                         "(ids are made from the file names)", source="--set", field="id")
    rows = []
    seen: dict[str, int] = {}
    for source, told, measured in parsed:
        row: dict[str, Any] = {c: None for c in spec.columns}
        row.update({k: v for k, v in told.items() if v is not None})
        row.update(config)
        row.update(measured)
        row["source"] = source
        row["block"] = row.get("block") or "ingested"
        if fmt == "dbbench" and row.get("threads") is None:
            row["threads"] = 1                 # db_bench's default --threads
        if not row.get("id"):
            stem = Path(source.split(" + ")[0]).stem
            base = f"{stem}-{row['benchmark']}" if fmt == "dbbench" else stem
            seen[base] = seen.get(base, 0) + 1
            row["id"] = base if seen[base] == 1 else f"{base}-{seen[base]}"
        _check(spec, row, config, source)
        rows.append(row)
    return spec, rows


def _check(spec: Format, row: dict[str, Any], config: Mapping[str, Any], source: str) -> None:
    """The row's configuration must make a scenario (and name what is missing)."""
    for col in spec.required:
        if row.get(col) in (None, ""):
            raise InputError(f"the file does not say; give --set {col}=N", source=source,
                             field=col)
    cells = {k: ("" if v is None else str(v)) for k, v in row.items()}
    try:
        spec.scenario(cells)
    except InputError as exc:
        raise exc.located(source="--set" if exc.field in config else source) from None


def summary(spec: Format, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per appended row: its id and the columns the model predicts."""
    from model.units import unit_of
    out = []
    for r in rows:
        shown = ", ".join(f"{c}={r[c]:.4g} {unit_of(c)}" for c in spec.kind.measured
                          if isinstance(r.get(c), (int, float)))
        out.append(f"  {r['id']}: {shown}")
    return out
