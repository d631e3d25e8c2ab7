#!/usr/bin/env bash
# Fetch plotly.js's cartesian partial bundle from npm and pack it as the
# reports carry it (reports/assets.py): gzip -9, no name or time in the header,
# so the same version gives the same bytes. Needs npm (Debian: apt-get install npm).
set -euo pipefail
VERSION="${1:-3.1.0}"            # keep in step with reports/assets.py PLOTLY_VERSION
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "plotly.js-cartesian-dist-min@${VERSION}" >/dev/null && tar xzf ./*.tgz)
gzip -9 -n -c "$tmp/package/plotly-cartesian.min.js" > "$here/reports/static/plotly-cartesian.min.js.gz"
cp "$tmp/package/LICENSE" "$here/reports/static/plotly-LICENSE.txt"
echo "reports/static/plotly-cartesian.min.js.gz: plotly.js cartesian ${VERSION}"
