"""Session-wide test settings."""

import os
import tempfile

# Keep the workload model's on-disk cache out of the user's home during tests.
os.environ.setdefault("KVPERF_CACHE_DIR", tempfile.mkdtemp(prefix="kvperf-cache-"))
