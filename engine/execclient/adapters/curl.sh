#!/usr/bin/env bash
# kalab adapter curl: one curl process, every request of the plan as one URL, in order, as
# `curl URL URL ...` does; curl keeps its connections between them (kalab's exec protocol
# v1, docs/real-programs.md "Bring your own client"). One process cannot pause or run requests side by
# side, so kalab refuses plans that need either.
set -euo pipefail

# Beside the plan, in the directory kalab removes (even when kalab itself is killed).
cfg="${KALAB_PLAN%/*}/curl.cfg"
: >"$cfg"
q() { local s=${1//\\/\\\\}; printf '"%s"' "${s//\"/\\\"}"; } # a curl config string
for ((i = 0; i < KALAB_REQUESTS; i++)); do
  {
    echo "url = $(q "$KALAB_URL")"
    echo "output = /dev/null"
    echo "silent"
    [ -n "${KALAB_CA_FILE:-}" ] && echo "cacert = $(q "$KALAB_CA_FILE")"
    if [ "$KALAB_METHOD" = HEAD ]; then echo "head"; else echo "request = $KALAB_METHOD"; fi
    echo "header = @$KALAB_HEADERS_FILE"
    echo "header = $(q "$KALAB_REQUEST_HEADER: $i")"
    [ "${KALAB_CLIENT_KEEPALIVE:-true}" = false ] && echo 'header = "Connection: close"'
    [ -n "${KALAB_CLIENT_TIMEOUT_MS:-}" ] && echo "max-time = $(awk "BEGIN{print $KALAB_CLIENT_TIMEOUT_MS/1000}")"
    [ "${KALAB_CLIENT_SESSION_RESUMPTION:-true}" = false ] && echo "no-sessionid"
    # The \n stays literal: curl's config parser turns it into the newline.
    # shellcheck disable=SC2028
    echo "write-out = \"{\\\"index\\\":$i,\\\"status\\\":%{http_code},\\\"code\\\":\\\"%{exitcode}\\\",\\\"error\\\":\\\"%{errormsg}\\\",\\\"bytes\\\":%{size_download},\\\"conn\\\":\\\"%header{kalab-conn}\\\",\\\"conn_request\\\":\\\"%header{kalab-conn-request}\\\",\\\"time_total\\\":%{time_total}}\\n\""
    if ((i + 1 < KALAB_REQUESTS)); then echo "next"; fi
  } >>"$cfg"
done
# curl's -w output goes through stdio: stdbuf makes it line-buffered, so each line reaches
# kalab as its transfer ends, and awk turns curl's seconds into the protocol's latency_ms.
# A failed transfer still writes its line; curl's exit status is that of the last one.
stdbuf -oL curl -K "$cfg" | awk '{
  sub(/"status":000/, "\"status\":0") # no response: curl writes 000, JSON wants 0
  if (match($0, /"time_total":[0-9.]+/)) {
    t = substr($0, RSTART + 13, RLENGTH - 13)
    $0 = substr($0, 1, RSTART - 1) "\"latency_ms\":" sprintf("%.3f", t * 1000) substr($0, RSTART + RLENGTH)
  }
  print; fflush()
}' || true
