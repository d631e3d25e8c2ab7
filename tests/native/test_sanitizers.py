"""ASan+UBSan self-test and a bounded fuzz run of the packet parser/handler.

Builds native/kv standalone with KV_SANITIZE (g++) or KV_LIBFUZZER (clang++
with libFuzzer, when installed) into a temp dir keyed by a hash of the
sources, so reruns reuse the build. Runs:
  * kv_selftest: parser, handler, the real server loop with garbage datagrams
    and a short load run, under ASan+UBSan;
  * kv_fuzz_parser for 8 s: libFuzzer, or our own mutation driver.
Skips (with the reason) only if no compiler can build with sanitizers.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.native, pytest.mark.slow]
SRC = Path(__file__).resolve().parents[2] / "native" / "kv"
FUZZ_SECONDS = 8


def _libfuzzer_available() -> bool:
    if not shutil.which("clang++"):
        return False
    probe = subprocess.run(["clang++", "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
                           capture_output=True, text=True)
    return probe.returncode == 0 and Path(probe.stdout.strip()).is_file()


@pytest.fixture(scope="module")
def sanitized_build():
    h = hashlib.sha256()
    for f in sorted(SRC.iterdir()):
        if f.suffix in (".cpp", ".hpp") or f.name == "CMakeLists.txt":
            h.update(f.name.encode() + f.read_bytes())
    libfuzzer = _libfuzzer_available()
    build = Path(tempfile.gettempdir()) / f"kvperf-kv-sanitize-{h.hexdigest()[:12]}-{int(libfuzzer)}"
    if not (build / "kv_selftest").exists() or not (build / "kv_fuzz_parser").exists():
        flags = ["-DKV_LIBFUZZER=ON", "-DCMAKE_CXX_COMPILER=clang++"] if libfuzzer else ["-DKV_SANITIZE=ON"]
        cfg = subprocess.run(["cmake", "-S", str(SRC), "-B", str(build), "-DCMAKE_BUILD_TYPE=Debug", *flags],
                             capture_output=True, text=True, timeout=120)
        if cfg.returncode != 0:
            pytest.skip(f"cannot configure the sanitizer build: {cfg.stderr[-500:]}")
        b = subprocess.run(["cmake", "--build", str(build), "-j2"], capture_output=True, text=True, timeout=600)
        if b.returncode != 0:
            if "sanitize" in (b.stdout + b.stderr) and "unrecognized" in (b.stdout + b.stderr):
                pytest.skip("compiler lacks -fsanitize=address,undefined")
            raise AssertionError(f"sanitizer build failed:\n{b.stdout[-3000:]}\n{b.stderr[-3000:]}")
    return build, libfuzzer


def test_selftest_under_asan_ubsan(sanitized_build, tmp_path):
    build, _ = sanitized_build
    r = subprocess.run([str(build / "kv_selftest"), str(tmp_path / "st")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "selftest ok" in r.stdout
    assert "runtime error" not in r.stderr  # UBSan reports


def test_fuzz_parser_bounded(sanitized_build, tmp_path):
    build, libfuzzer = sanitized_build
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    args = [str(build / "kv_fuzz_parser"), f"-max_total_time={FUZZ_SECONDS}", "-seed=1"]
    if libfuzzer:
        args += ["-rss_limit_mb=4096", str(corpus)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=FUZZ_SECONDS + 60, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    out = r.stdout + r.stderr
    assert ("Done" in out and "runs" in out) or "no invariant violated" in out
