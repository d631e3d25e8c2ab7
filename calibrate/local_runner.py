"""Run a plan's points on the native KV server and append the results.

:func:`native_run` runs one configuration: it starts a
:class:`native.Server` in a fresh data directory, warms it up with the same
workload, resets the statistics, runs the bounded closed-loop load generator
(``native.run_load``) and turns the stats dicts into a ``local_runs`` row
(see :mod:`runio.local_runs` for the columns).

:func:`run_plan` runs points that are not yet in the output CSV (keyed by
``config_hash``), one at a time by default because native runs on one
machine contend for its cores, and appends each row (flush + fsync) as soon
as its run ends, with a tqdm progress bar. Interrupting it (Ctrl-C or
SIGTERM) loses at most the run in progress, whose data directory is removed;
running it again resumes, and removes the data directories of a session that
was killed outright (SIGKILL). With a Dask cluster
(``--cluster``), points go to the cluster's workers (one machine each is the
sensible set-up) and rows are appended as they come back.
"""

from __future__ import annotations

import datetime as _dt
import os
import resource
import shutil
import sys
import time
from typing import Any, Callable, Iterable, Mapping

from runio.local_runs import COLUMNS, RESPONSE_PERCENTILES, WRITE_PATH_COLUMNS
from runio.safe_io import exit_on_sigterm, remove_stale_scratch, scratch_dir

from .plan import HASH_SKIPS_DEFAULT

#: columns a runs file written by an earlier version may lack: its new rows go
#: without them (the write-path keys are then at their defaults, as
#: config_hash assumes for the rows it holds)
NEWER_COLUMNS = (tuple(f"response_{q}_us" for q in RESPONSE_PERCENTILES) + HASH_SKIPS_DEFAULT
                 + ("per_second_kops",) + WRITE_PATH_COLUMNS + ("preload_s",))
from .runs_io import RunsWriter, existing_hashes

Runner = Callable[[Mapping[str, Any]], dict[str, Any]]

#: data directories of native runs: <tmp>/kvperf-run-<pid>-<random>
SCRATCH_PREFIX = "kvperf-run-"

BUILD_HINT = ("the native KV server is not built (native._core is missing). Build it with "
              "`pip install .` (or `pip install -e .`) from the repository root, which compiles "
              "native/kv with CMake and RocksDB; see docs/native.md")


class NativeUnavailable(RuntimeError):
    """The compiled native module cannot be imported."""


def require_native():
    try:
        import native
        native.Server  # noqa: B018  (raises ImportError when _core is missing)
        native.run_load  # noqa: B018
    except ImportError as exc:
        raise NativeUnavailable(f"{BUILD_HINT} ({exc})") from None
    return native


def _cpu_snapshot() -> tuple[float, float, float]:
    """(machine busy CPU s, this process's CPU s, wall s); busy is NaN without /proc/stat."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/stat") as fh:
            f = [float(x) for x in fh.readline().split()[1:]]
        # user + nice + system (+ steal); idle, iowait, irq and softirq are left out:
        # loopback packet processing of our own runs shows up as softirq.
        busy = (f[0] + f[1] + f[2] + (f[7] if len(f) > 7 else 0.0)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    return busy, ru.ru_utime + ru.ru_stime, time.monotonic()


def external_cores(before: tuple, after: tuple) -> float:
    """Cores kept busy by *other* processes between two snapshots."""
    wall = after[2] - before[2]
    if wall <= 0:
        return float("nan")
    return max(0.0, ((after[0] - before[0]) - (after[1] - before[1])) / wall)


def wait_quiet(below: float = 0.5, timeout_s: float = 30.0, window_s: float = 0.5,
               say: Callable[[str], None] | None = None) -> float:
    """Wait (up to timeout_s) until other processes use fewer than ``below`` cores.

    ``say`` is told once when the machine is not quiet at the first look, so
    a wait of many seconds is not silent."""
    deadline = time.monotonic() + timeout_s
    told = False
    while True:
        a = _cpu_snapshot()
        time.sleep(window_s)
        ext = external_cores(a, _cpu_snapshot())
        if not ext >= below or time.monotonic() > deadline:   # NaN (no /proc) counts as quiet
            return ext
        if say is not None and not told:
            told = True
            say(f"waiting for a quiet machine: other processes use {ext:.1f} cores, a run "
                f"starts below {below:g} (or after {timeout_s:g} s; --quiet-below, "
                "--quiet-timeout)")


def native_run(config: Mapping[str, Any], quiet_below: float | None = 0.5,
               quiet_timeout_s: float = 30.0) -> dict[str, Any]:
    """Run one configuration on the native server; return the measured columns.

    Other processes on the machine distort the run (it measures their
    contention too), so it first waits up to ``quiet_timeout_s`` for them to
    use fewer than ``quiet_below`` cores, and records in ``external_cores``
    how many cores they kept busy during the measured run.
    """
    native = require_native()
    if quiet_below is not None:
        wait_quiet(quiet_below, quiet_timeout_s,
                   say=lambda text: print(text, file=sys.stderr, flush=True))
    datadir = scratch_dir(SCRATCH_PREFIX)
    try:
        sopts = server_options(native, config, datadir)
        dist = "zipfian" if config["distribution"] == "zipf" else str(config["distribution"])
        with native.Server(sopts) as srv:
            common = dict(targets=srv.addresses(), partition="hash",
                          threads=int(config["clients"]), read_ratio=float(config["read_ratio"]),
                          distribution=dist, records=int(config["records"]),
                          value_size=int(config["value_bytes"]),
                          timeout_ms=float(config["timeout_ms"]))
            if float(config.get("warmup_s", 0)) > 0:
                native.run_load(native.LoadOptions(duration_s=float(config["warmup_s"]),
                                                   max_requests=int(config["max_requests"]),
                                                   seed=1000 + int(config.get("repeat", 0)),
                                                   **common))
            start = srv.stats(reset=True)    # the DB's state as the run starts
            before = _cpu_snapshot()
            load = native.run_load(native.LoadOptions(
                duration_s=float(config["duration_s"]), max_requests=int(config["max_requests"]),
                seed=1 + int(config.get("repeat", 0)), **common))
            ext = external_cores(before, _cpu_snapshot())
            stats = srv.stats()
            preload_s = srv.preload_s
        out = measured_from_native(load, stats)
        out.update(write_path_columns(start["rocksdb"], stats["rocksdb"]))
        out["preload_s"] = preload_s
        out["external_cores"] = ext
        return out
    finally:
        shutil.rmtree(datadir, ignore_errors=True)


def server_options(native, config: Mapping[str, Any], datadir: str):
    """native.ServerOptions of a plan point (see runio.local_runs for the columns)."""
    mib = 1 << 20
    get = config.get
    return native.ServerOptions(
        datadir=datadir, workers=int(config["workers"]),
        pin_cpus=list(range(int(get("cores", 1)))) if int(get("pinned", 0)) else [],
        max_value=max(128, int(config["value_bytes"])),
        memtable_mb=int(config["memtable_mb"]), flushnum=int(config["flushnum"]),
        maxnum=int(config["maxnum"]), wal=config["wal"] == "on",
        transaction_db=config["db"] == "txn", seq_check=str(config["seq_check"]),
        flush_threads=int(get("flush_threads", 1)),
        compaction_threads=int(get("compaction_threads", 1)),
        wal_bytes_per_sync=int(get("wal_bytes_per_sync_mb", 0)) * mib,
        delayed_write_rate=round(float(get("delayed_write_rate_mbps", 0)) * mib),
        bg_write_rate=round(float(get("bg_write_mbps", 0)) * mib),
        level0_file_num_compaction_trigger=int(get("l0_compaction_trigger", 0)),
        level0_slowdown_writes_trigger=int(get("l0_slowdown_trigger", 0)),
        level0_stop_writes_trigger=int(get("l0_stop_trigger", 0)),
        # the load generator's key layout and partitioning (hash, as below)
        preload_records=int(config["records"]) if int(get("preload", 0)) else 0,
        preload_value_bytes=int(config["value_bytes"]), preload_partition="hash")


#: per-worker write-path columns: (column, the listener/property key, scale)
_PER_WORKER = (
    ("memtables", "memtables_sealed", 1), ("flushes", "flushes_completed", 1),
    ("compactions", "compactions_completed", 1), ("stop_s", "stop_s", 1),
    ("slow_s", "slow_s", 1), ("stops", "stops", 1), ("slows", "slows", 1),
    ("stall_s", "stall_micros", 1e-6), ("l0_files", "l0_files", 1),
    ("pending_compaction_mb", "pending_compaction_bytes", 1e-6),
    ("flush_mb", "flush_bytes", 1e-6), ("compaction_mb", "compaction_bytes", 1e-6),
    ("flush_s", "flush_time_us_sum", 1e-6), ("compaction_s", "compaction_time_us_sum", 1e-6),
)
_AT_START = (("l0_files_start", "l0_files", 1),
             ("pending_compaction_mb_start", "pending_compaction_bytes", 1e-6),
             ("sst_mb_start", "sst_bytes", 1e-6))


def write_path_columns(start: list[Mapping[str, Any]], end: list[Mapping[str, Any]]
                       ) -> dict[str, str]:
    """The per-worker write-path columns from the RocksDB stats at the run's start and end."""
    def joined(stats, key, scale):
        return "|".join(f"{float(r.get(key, 0.0)) * scale:.4g}" for r in stats)
    out = {col: joined(end, key, scale) for col, key, scale in _PER_WORKER}
    out.update({col: joined(start, key, scale) for col, key, scale in _AT_START})
    return out


def measured_from_native(load: Mapping[str, Any], stats: Mapping[str, Any]) -> dict[str, Any]:
    """Measured local_runs columns from run_load() and Server.stats() dicts."""
    elapsed = float(load["elapsed_s"])
    completed = int(load["completed"])
    workers = stats["workers"]
    total_rx = sum(w["rx_packets"] for w in workers) or 1
    busy = [w for w in workers if w["process"]["count"] > 0]
    wait = [w["wait"]["mean_us"] for w in busy]
    proc = [w["process"]["mean_us"] for w in busy]
    return {
        "mops": completed / elapsed / 1e6 if elapsed > 0 else 0.0,
        "wait_us": sum(wait) / len(wait) if wait else None,
        "process_us": sum(proc) / len(proc) if proc else None,
        "wait_stat": "avg",
        "send_us": load["send"]["mean_us"],
        "response_us": load["response"]["mean_us"],
        **{f"response_{q}_us": load["response"].get(f"{q}_us") for q in RESPONSE_PERCENTILES},
        "pktloss": int(load["timeouts"]),
        "false_pos": int(load["false_positives"]),
        "completed": completed,
        "elapsed_s": elapsed,
        "worker_share": "|".join(f"{w['rx_packets'] / total_rx:.4f}" for w in workers),
        # whole seconds only: completions after the last one (a part second) are left out
        "per_second_kops": "|".join(f"{n / 1e3:.3f}"
                                    for n in load["per_second"][:max(1, int(elapsed))]),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def pending_points(points: list[dict[str, Any]], out: str) -> list[dict[str, Any]]:
    done = existing_hashes(out)
    return [p for p in points if p["config_hash"] not in done]


def run_plan(points: list[dict[str, Any]], out: str, runner: Runner = native_run, *,
             cluster: Any = None, progress: bool = True,
             on_row: Callable[[dict[str, Any]], None] | None = None) -> dict[str, int]:
    """Run the points not yet in ``out``; append each finished run; return counts.

    ``runner(config) -> measured`` is :func:`native_run` unless a test or a
    different testbed passes its own. A runner exception other than
    KeyboardInterrupt is recorded nowhere and re-raised after the rows
    already finished are safely on disk.
    """
    todo = pending_points(points, out)
    counts = {"planned": len(points), "skipped": len(points) - len(todo), "ran": 0}
    remove_stale_scratch(SCRATCH_PREFIX)         # left by a run that was SIGKILLed
    bar = None
    if progress:
        from runio.progress import bar as progress_bar
        bar = progress_bar(len(points), "local runs", "run", True, initial=counts["skipped"])
    try:
        # SIGTERM ends the session like Ctrl-C: the run in progress removes its
        # data directory, the rows already written stay
        with exit_on_sigterm(), RunsWriter(out, COLUMNS, optional=NEWER_COLUMNS) as writer:
            if writer.dropped and todo:
                print(f"note: {out} was written before columns {', '.join(writer.dropped)} "
                      "existed; its new rows go without them (--out NEW.csv keeps them)",
                      file=sys.stderr)
            for cfg, measured in _execute(todo, runner, cluster):
                row = {**{k: v for k, v in cfg.items() if k in COLUMNS}, **measured}
                writer.append(row)
                counts["ran"] += 1
                if on_row:
                    on_row(row)
                if bar:
                    mops = measured.get("mops")
                    bar.set_postfix_str(f"{cfg['id']}: {mops:.4f} MOPS" if mops else cfg["id"])
                    bar.update(1)
    finally:
        if bar:
            bar.close()
    return counts


def _execute(todo: list[dict[str, Any]], runner: Runner, cluster: Any
             ) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    if cluster is None:
        for cfg in todo:
            yield cfg, runner(cfg)
        return
    from .parallel import as_done, dask_client
    client, owned = dask_client(cluster)
    try:
        futures = [client.submit(runner, cfg, pure=False) for cfg in todo]
        cfg_of = {f.key: cfg for f, cfg in zip(futures, todo)}
        for fut in as_done(futures):
            yield cfg_of[fut.key], fut.result()
    finally:
        if owned:
            client.close()

