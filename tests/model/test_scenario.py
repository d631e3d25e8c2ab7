"""Scenario language: defaults, TOML round trip, --set overrides, validation errors."""

import pytest

from model.errors import InputError
from model.scenario import Scenario, all_keys, resolve_key
from runio.inputs import load_scenario


def test_default_is_the_farreach_rack():
    s = Scenario.default()
    assert (s.servers.count, s.clients.threads) == (16, 1024)
    assert s.workload.distribution == "zipf" and s.workload.zipf_theta == 0.99
    assert s.workload.records == 100_000_000 and s.workload.read_ratio == 0.5
    assert (s.workload.key_bytes, s.workload.value_bytes) == (16, 128)
    # FarReach's default build partitions by hash (RANGE_SUPPORT is off in its P4)
    assert s.switch.cache and s.switch.cache_keys == 10_000 and s.switch.partition == "hash"
    assert (s.storage.memtable_mb, s.storage.flushnum, s.storage.maxnum) == (64, 4, 5)
    assert s.storage.wal and s.clients.timeout_ms == 1000
    assert s.servers.seq_check == "evicted-only" and s.servers.pinned


def test_toml_round_trip(tmp_path):
    s = Scenario.default().with_overrides(["servers=32", "storage.memtable_mb=16", "name='x y'"])
    p = tmp_path / "s.toml"
    p.write_text(s.to_toml())
    assert load_scenario(str(p)) == s
    odd = s.updated({"name": 'rack "b"\nsecond line \\ end'})
    p.write_text(odd.to_toml())
    assert load_scenario(str(p)) == odd


def test_overrides_by_alias_bare_and_dotted():
    s = Scenario.default().with_overrides(["servers=32", "clients=512", "flushnum=2",
                                           "switch.partition=hash", "cache=false"])
    assert s.servers.count == 32 and s.clients.threads == 512
    assert s.storage.flushnum == 2 and s.switch.partition == "hash" and not s.switch.cache
    assert resolve_key("memtable_mb") == "storage.memtable_mb"
    assert len(all_keys()) == len(set(all_keys()))


@pytest.mark.parametrize("assignment, key, words", [
    ("servers.cnt=3", "servers.cnt", "did you mean servers.count"),
    ("bogus=1", "bogus", "python -m sim scenario show"),
    ("servers=0", "servers.count", "1 <= value <= 4096"),
    ("servers=2.5", "servers.count", "expected an integer"),
    ("clients=abc", "clients.threads", "expected an integer"),
    ("workload=pareto", "workload.distribution", "'zipf', 'uniform', 'sequential'"),
    ("wal=1", "storage.wal", "true or false"),
    ("flushnum=5", "storage.flushnum", "less than storage.maxnum"),
    ("noequals", None, "key=value"),
])
def test_validation_errors_name_key_and_allowed(assignment, key, words):
    with pytest.raises(InputError) as err:
        Scenario.default().with_overrides([assignment])
    msg = str(err.value)
    if key:
        assert key in msg
    assert words in msg


def test_toml_errors_name_file_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[servers]\ncount = 4\ncolour = 'red'\n")
    with pytest.raises(InputError) as err:
        load_scenario(str(p))
    assert "bad.toml" in str(err.value) and "servers.colour" in str(err.value)
    p.write_text("[servers\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_scenario(str(p))
    with pytest.raises(InputError, match="not found"):
        load_scenario(str(tmp_path / "missing.toml"))
