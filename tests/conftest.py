"""Session-wide test settings."""

import atexit
import os
import shutil
import tempfile

# Keep the workload model's on-disk cache out of the user's home during tests,
# in a directory of this session's own that goes when the session ends (one
# was left behind per run, and hundreds piled up in /tmp).
if "KVPERF_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="kvperf-cache-")
    os.environ["KVPERF_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)

# The domain reads no file and keeps no cache: the toolkit's edge does, once
# connected (every command and the kvperf API connect it; so do the tests)
import runio  # noqa: E402

runio.install()
