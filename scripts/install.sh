#!/usr/bin/env bash
# Install everything the toolkit needs on a fresh Debian machine:
# system packages (RocksDB, pybind11, compilers, python3-venv, headless
# Chromium for the report tests), then the project with its Python
# dependencies into a virtual environment, never into the system Python
# (Debian's is "externally managed": pip refuses to touch it, rightly).
#
# Which environment:
#   * the one already active ($VIRTUAL_ENV), if any;
#   * else .venv in this checkout, created with $PYTHON (default: the first
#     python3 on PATH, e.g. Debian's /usr/bin/python3 or a pyenv one).
# Either way .venv/bin/python is afterwards the interpreter the project is
# installed in (for an active environment, .venv is a link to it), so the
# README's commands can name it without knowing which case applied.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "install: $*" >&2; }
die() { say "error: $*"; exit 1; }

APT_PACKAGES="librocksdb-dev pybind11-dev cmake g++ clang libclang-rt-14-dev chromium python3-venv"
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  missing=""
  for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    say "installing system packages:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  fi
else
  say "warning: no apt-get; install these yourself: $APT_PACKAGES"
fi

VENV=.venv
if [ -n "${VIRTUAL_ENV:-}" ]; then
  [ -x "$VIRTUAL_ENV/bin/python" ] || die "VIRTUAL_ENV=$VIRTUAL_ENV has no bin/python"
  if [ "$(cd "$VIRTUAL_ENV" && pwd -P)" != "$(cd "$VENV" 2>/dev/null && pwd -P)" ]; then
    if [ -e "$VENV" ] && [ ! -L "$VENV" ]; then
      die "a virtual environment is active ($VIRTUAL_ENV) but $PWD/$VENV is another one;" \
          "deactivate it to install into $VENV, or remove $VENV"
    fi
    ln -sfn "$VIRTUAL_ENV" "$VENV"
  fi
  say "using the active virtual environment $VIRTUAL_ENV"
elif [ ! -x "$VENV/bin/python" ]; then
  BASE="${PYTHON:-python3}"
  command -v "$BASE" >/dev/null 2>&1 || die "no $BASE on PATH (set PYTHON=/path/to/python3.10+)"
  "$BASE" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "$BASE is Python $("$BASE" -V 2>&1); kvperf needs 3.10 or newer (set PYTHON=...)"
  say "creating $PWD/$VENV with $(command -v "$BASE") ($("$BASE" -V 2>&1))"
  rm -rf "$VENV"       # a half-made one from an interrupted run
  "$BASE" -m venv "$VENV" || die "'$BASE -m venv' failed (on Debian: apt-get install python3-venv)"
fi
PY="$VENV/bin/python"

# The install is editable: the Python packages are used from this checkout,
# so pip has work to do only when the interpreter, the checkout or the build
# inputs (pyproject.toml, CMake files, C++ sources) changed. Without this the
# README's commands would spend minutes re-resolving and rebuilding each time.
STAMP="$VENV/.kvperf-install"
fingerprint() {
  {
    "$PY" -VV
    pwd -P
    find pyproject.toml CMakeLists.txt native -type f \( -name pyproject.toml -o \
      -name CMakeLists.txt -o -name '*.cmake' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) \
      -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(fingerprint)" ] \
    && "$PY" -c 'import native._core, sim, reports' 2>/dev/null; then
  say "up to date in $VENV (delete $STAMP to force a reinstall)"
  exit 0
fi

say "installing kvperf and its Python packages (builds the C++ extension; a few minutes)"
rm -f "$STAMP"
"$PY" -m pip install -q --disable-pip-version-check --upgrade pip
# Editable install: the C++ parts are built once by scikit-build-core into
# build/, the Python packages are used from this checkout.
"$PY" -m pip install -q --disable-pip-version-check -e ".[dev,distributed]"
fingerprint > "$STAMP"
say "installed into $(cd "$VENV" && pwd -P); try: .venv/bin/python -m sim predict"
