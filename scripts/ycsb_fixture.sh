#!/usr/bin/env bash
# Draw keys with YCSB 0.17's own jar (Maven site.ycsb:core:0.17.0) and write the
# small count fixtures that tests/model/test_workload_ycsb.py compares the model with.
#
#   bash scripts/ycsb_fixture.sh            # all three fixtures (~2 min, ~1 GB heap)
#   OUT=/tmp/fx bash scripts/ycsb_fixture.sh
#
# Needs Java >= 11 and Maven (`apt-get install default-jdk maven`). What is drawn and
# counted, and why, is in docs/workload.md ("Checking against the YCSB jar").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out="${OUT:-$repo/tests/model/fixtures}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

mvn -q -B -f "$here/ycsb_fixture/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$work/jars"
javac -d "$work/classes" -cp "$work/jars/*" "$here/ycsb_fixture/YcsbKeyCounts.java"
run() { java -Xmx3g -cp "$work/classes:$work/jars/*" site.ycsb.workloads.YcsbKeyCounts "$@"; }

# RECORDS DRAWS DISTRIBUTION TOP SERVERS OUT
run 100000000 100000000 zipfian 12000 1,4,16,32 "$out/ycsb_zipfian_100M.json"
run 1000      10000000  zipfian 1000  4         "$out/ycsb_zipfian_1000.json"
run 100000000 10000000  uniform 0     4,16,32   "$out/ycsb_uniform_100M.json"
echo "fixtures written to $out" >&2
