#!/usr/bin/env bash
# Compile farreach.p4 for Tofino with the Intel/Barefoot SDE's bf-p4c.
#
# Needs an installed SDE: $SDE (source tree) and $SDE_INSTALL (install
# prefix, usually $SDE/install), as set by the SDE's set_sde.bash. Without
# them there is nothing here that can compile TNA P4, so the script says
# what is missing and fails rather than pretending to build.
#
# Usage: p4/build.sh [--target tofino|tofino2] [extra bf-p4c args...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prog="farreach"
target="tofino"
if [[ "${1:-}" == "--target" ]]; then
    target="$2"; shift 2
fi
case "$target" in
    tofino) arch="tna" ;;
    tofino2) arch="t2na" ;;
    *) echo "build.sh: unknown target '$target' (tofino or tofino2)" >&2; exit 2 ;;
esac

missing=()
[[ -n "${SDE:-}" ]] || missing+=("SDE (the SDE source/top directory)")
[[ -n "${SDE_INSTALL:-}" ]] || missing+=("SDE_INSTALL (the SDE install prefix, usually \$SDE/install)")
if ((${#missing[@]})); then
    {
        echo "build.sh: cannot compile $prog.p4: the Tofino SDE is not set up here."
        for m in "${missing[@]}"; do echo "  missing environment variable: $m"; done
        echo "  Install the Intel Tofino SDE (or open-p4studio), then run:"
        echo "    source \$SDE/set_sde.bash   # sets SDE and SDE_INSTALL"
        echo "    p4/build.sh"
        echo "  The behavioural model of this program (model/switch.py) and the"
        echo "  software switch (native/switch, target kvswitch) run without it."
    } >&2
    exit 1
fi

compiler="$SDE_INSTALL/bin/bf-p4c"
if [[ ! -x "$compiler" ]]; then
    echo "build.sh: $compiler not found or not executable; is SDE_INSTALL=$SDE_INSTALL right and the p4c package built?" >&2
    exit 1
fi

out="${P4_BUILD_DIR:-$here/build}/$prog/$target"
mkdir -p "$out"
echo "build.sh: $compiler --target $target --arch $arch -> $out"
"$compiler" --std p4-16 --target "$target" --arch "$arch" \
    -I "$here" -o "$out" --bf-rt-schema "$out/bf-rt.json" \
    -g --verbose 1 "$@" "$here/$prog.p4"

# Install the conf file so bf_switchd can load the program by name.
conf="$out/$prog.conf"
if [[ -f "$conf" ]]; then
    mkdir -p "$SDE_INSTALL/share/p4/targets/$target"
    cp "$conf" "$SDE_INSTALL/share/p4/targets/$target/$prog.conf"
    echo "build.sh: installed $conf; run: \$SDE/run_switchd.sh -p $prog"
fi
