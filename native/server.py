"""Run the native KV server as its own process: `python -m native.server`.

Every ServerOptions field is a flag (`--memtable-mb 16`, `--no-wal`,
`--pin-cpus 0,1`). Once listening it prints one JSON line
`{"ready": true, "ports": [...]}` on stdout; on SIGTERM/SIGINT it stops
cleanly (flushing RocksDB) and prints `{"stats": {...}}`. Exit code 2 on bad
options or when a port/data dir is unusable, with the message on stderr.
Used by the crash-consistency test (SIGKILL + restart) and for manual runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import threading

from model.errors import InputError

from .options import ServerOptions


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m native.server", description=__doc__.splitlines()[0])
    for f in dataclasses.fields(ServerOptions):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None)
        elif f.name == "pin_cpus":
            p.add_argument(flag, dest=f.name, default=None, help="comma-separated CPU list")
        else:
            typ = int if f.type in ("int", int) else str
            p.add_argument(flag, dest=f.name, type=typ, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = vars(build_parser().parse_args(argv))
    overrides = {k: v for k, v in args.items() if v is not None}
    if "pin_cpus" in overrides:
        try:
            overrides["pin_cpus"] = [int(c) for c in overrides["pin_cpus"].split(",") if c]
        except ValueError:
            print("error: pin_cpus: expected a comma-separated list of integers", file=sys.stderr)
            return 2
    from .api import Server, ServerError  # needs the compiled module
    try:
        srv = Server(ServerOptions(**overrides))
    except (InputError, ServerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    srv.start()
    print(json.dumps({"ready": True, "ports": [p for _, p in srv.addresses()]}), flush=True)
    while not done.wait(0.2):
        pass
    stats = srv.stop()
    print(json.dumps({"stats": stats["total"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
