"""Durability and error handling of the native server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import native
from model.errors import InputError
from native import protocol as P

pytestmark = pytest.mark.native
ROOT = Path(__file__).resolve().parents[2]


def spawn(datadir, *flags):
    proc = subprocess.Popen([sys.executable, "-m", "native.server", "--datadir", str(datadir), *flags],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # blocks until ready (or the process died)
    if not line:
        proc.wait(10)
        raise AssertionError(f"server did not start: {proc.stderr.read()}")
    return proc, json.loads(line)["ports"]


def test_acknowledged_writes_survive_sigkill(tmp_path):
    n = 300
    proc, ports = spawn(tmp_path, "--wal", "--sync", "--workers", "1")
    try:
        with P.Client(("127.0.0.1", ports[0])) as c:
            for i in range(n):
                assert c.request(P.PUT, native.record_key(i), f"value-{i}".encode(), seq=i + 1).status == P.OK
    finally:
        proc.send_signal(signal.SIGKILL)  # no chance to flush anything
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    with native.Server(datadir=str(tmp_path)) as srv, P.Client(srv.addresses()[0]) as c:
        for i in range(n):
            r = c.request(P.LOAD, native.record_key(i))
            assert (r.status, r.value, r.seq) == (P.OK, f"value-{i}".encode(), i + 1), i


def test_clean_shutdown_flushes_without_wal(tmp_path):
    # Without a WAL only the flush at stop() makes the writes durable.
    proc, ports = spawn(tmp_path, "--no-wal", "--workers", "1")
    with P.Client(("127.0.0.1", ports[0])) as c:
        for i in range(50):
            assert c.request(P.PUT, native.record_key(i), b"x%d" % i).status == P.OK
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["stats"]["op_put"] == 50
    with native.Server(datadir=str(tmp_path), wal=False) as srv, P.Client(srv.addresses()[0]) as c:
        assert all(c.request(P.GET, native.record_key(i)).value == b"x%d" % i for i in range(50))


def test_port_in_use_names_base_port(tmp_path):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    try:
        with pytest.raises(native.ServerError, match="base_port.*in use") as ei:
            native.Server(datadir=str(tmp_path), base_port=port)
        assert ei.value.option == "base_port"
    finally:
        s.close()
    srv = native.Server(datadir=str(tmp_path), base_port=port)  # the failed attempt left nothing behind
    srv.start()
    assert srv.addresses() == [("127.0.0.1", port)]
    srv.stop()


def test_bad_datadir_names_datadir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(native.ServerError, match="datadir"):
        native.Server(datadir=str(blocker / "db"))


def test_datadir_locked_by_running_server(tmp_path):
    with native.Server(datadir=str(tmp_path)):
        with pytest.raises(native.ServerError, match="datadir.*lock"):
            native.Server(datadir=str(tmp_path))


@pytest.mark.parametrize("overrides, field", [
    ({"workers": 0}, "workers"),
    ({"memtable_mb": 0}, "memtable_mb"),
    ({"flushnum": 3, "maxnum": 2}, "flushnum"),
    ({"maxnum": 1}, "maxnum"),
    ({"wal": False, "sync": True}, "sync"),
    ({"seq_check": "sometimes"}, "seq_check"),
    ({"max_value": 70000}, "max_value"),
    ({"base_port": 70000}, "base_port"),
    ({"bind_address": "localhost:1"}, "bind_address"),
    ({"pin_cpus": [100000]}, "pin_cpus"),
    ({"memtable_mb": "big"}, "memtable_mb"),
    ({"datadir": ""}, "datadir"),
    ({"colour": "red"}, "colour"),
])
def test_bad_options_raise_input_error_naming_field(tmp_path, overrides, field):
    opts = {"datadir": str(tmp_path), **overrides}
    with pytest.raises(InputError) as ei:
        native.Server(**opts)
    assert ei.value.field == field, str(ei.value)
    assert field in str(ei.value)


def test_cli_bad_option_exits_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "native.server", "--datadir", str(tmp_path), "--maxnum", "1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "maxnum" in r.stderr and "Traceback" not in r.stderr


def test_restart_reopens_data_in_process(tmp_path):
    key = native.record_key(77)
    with native.Server(datadir=str(tmp_path), workers=2) as srv:
        with P.Client(srv.addresses()[native.range_partition(key, 2)]) as c:
            c.request(P.PUT, key, b"persisted")
    with native.Server(datadir=str(tmp_path), workers=2) as srv:
        with P.Client(srv.addresses()[native.range_partition(key, 2)]) as c:
            assert c.request(P.GET, key).value == b"persisted"
    assert sorted(os.listdir(tmp_path)) == ["worker-0", "worker-1"]
