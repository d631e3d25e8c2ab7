"""Hot-key detection of the switch model: count-min sketch + threshold.

Checks the sketch's defining guarantee (never underestimates), that a key is
reported exactly once per epoch when its estimate reaches HOT_THRESHOLD,
that cached keys are not counted, and that the CMS row hashes are distinct
CRC-32 variants (row 0 equals zlib's CRC-32, as the P4 Hash extern computes).
"""

from __future__ import annotations

import zlib
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from model.switch import (CMS_POLYS, GET, HOT_THRESHOLD, PUT, REPORT_HOT,
                          ControlPlane, Frame, Packet, SwitchModel, cms_indices,
                          crc32_poly)


def _send(sw, key, op=GET, value=b""):
    return sw.process(Frame(Packet(op=op, key=key, value=value), ("client", 0), ("switch", 0)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=400))
def test_count_min_never_underestimates(stream):
    sw = SwitchModel(4, "hash")
    keys = [i.to_bytes(16, "big") for i in range(41)]
    for i in stream:
        _send(sw, keys[i])
    truth = Counter(stream)
    for i, n in truth.items():
        assert sw.estimate(keys[i]) >= n


def test_hot_key_reported_once_per_epoch_and_not_when_cached():
    sw = SwitchModel(2, "range")
    cp = ControlPlane(sw)
    hot, cold = b"H" * 16, b"c" * 16
    for n in range(1, 3 * HOT_THRESHOLD):
        _send(sw, hot, PUT, b"abcd")
        if n % 4 == 0:
            _send(sw, cold)
        reports = cp.poll_reports()
        if n == HOT_THRESHOLD:
            assert reports == [(hot, REPORT_HOT)]
        else:
            assert reports == []
    sw.reset_sketch()
    assert sw.estimate(hot) == 0
    cp.populate(hot)                 # entry installed: no more counting
    for _ in range(2 * HOT_THRESHOLD):
        _send(sw, hot)
    assert sw.estimate(hot) == 0 and cp.poll_reports() == []


def test_crc_variants():
    data = bytes(range(16))
    assert crc32_poly(data, CMS_POLYS[0]) == zlib.crc32(data)
    # CRC-32C check value of "123456789" is 0xE3069283
    assert crc32_poly(b"123456789", 0x1EDC6F41) == 0xE3069283
    assert len({tuple(cms_indices(bytes([i]) * 16)) for i in range(64)}) == 64
    assert len(set(crc32_poly(data, p) for p in CMS_POLYS)) == len(CMS_POLYS)
