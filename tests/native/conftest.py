"""Fixtures for the native KV server tests (everything on 127.0.0.1)."""

from __future__ import annotations

import pytest

native = pytest.importorskip("native")
try:
    from native import _core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the build
    pytest.skip(f"native._core not built ({exc}); see docs/native.md", allow_module_level=True)


@pytest.fixture
def server(tmp_path):
    """A 2-worker server on OS-chosen ports, stopped after the test."""
    srv = native.Server(datadir=str(tmp_path / "db"), workers=2)
    srv.start()
    yield srv
    srv.stop()
