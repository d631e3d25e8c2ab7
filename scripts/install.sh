#!/usr/bin/env bash
# Install everything the toolkit needs on a fresh Debian machine:
# system packages (RocksDB, pybind11, compilers, headless Chromium for the
# report tests) and the project itself with its Python dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="librocksdb-dev pybind11-dev cmake g++ clang libclang-rt-14-dev chromium"
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  missing=""
  for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "installing system packages:$missing" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  fi
else
  echo "warning: no apt-get; install these yourself: $APT_PACKAGES" >&2
fi

PY="${PYTHON:-python}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -m pip install -q --upgrade pip
# Editable install: the C++ parts are built once by scikit-build-core into
# build/, the Python packages are used from this checkout.
"$PY" -m pip install -q -e ".[dev,distributed]"
echo "installed: python -m sim predict" >&2
