#!/usr/bin/env bash
# Regenerates examples/report-stale-race.png, the README's picture of the HTML report: the
# bundled stale-race scenario's node-agent run, zoomed to its first three bursts.
# Needs Go and Chromium (Debian: apt-get install chromium). Run from the repository root.
set -euo pipefail
out=$(mktemp -d)
profile=$(mktemp -d)
trap 'rm -rf "$out" "$profile"' EXIT
# Exit 1 (a check failed) still writes the report, and the picture shows why.
go build -o "$out/kalab" ./cmd/kalab
code=0
"$out/kalab" run scenarios/04-stale-race.yaml --filter '/node-agent$' --out "$out" \
  --html "$out/report.html" --log-level warn || code=$?
[ "$code" -le 1 ] || exit "$code"
# #RUN-ID@FROM-TO shows one run alone, zoomed to FROM-TO ms of scenario time.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" --window-size=1280,860 --virtual-time-budget=3000 \
  --screenshot=examples/report-stale-race.png \
  "file://$out/report.html#run-stale-race--node-agent@3000-12000" 2>/dev/null
ls -l examples/report-stale-race.png
