#!/usr/bin/env bash
# kalab adapter curl-loop: a new curl process per request, as a shell loop does; no
# connection is ever reused (kalab's exec protocol v1, docs/real-programs.md "Bring your own client").
set -uo pipefail

read -r -a pauses <<<"${KALAB_PAUSES_S:-}"
args=(-s -o /dev/null -H "@$KALAB_HEADERS_FILE")
[ -n "${KALAB_CA_FILE:-}" ] && args+=(--cacert "$KALAB_CA_FILE")
if [ "$KALAB_METHOD" = HEAD ]; then args+=(--head); else args+=(-X "$KALAB_METHOD"); fi
[ -n "${KALAB_CLIENT_TIMEOUT_MS:-}" ] && args+=(--max-time "$(awk "BEGIN{print $KALAB_CLIENT_TIMEOUT_MS/1000}")")
fmt='%{http_code}|%{exitcode}|%{size_download}|%header{kalab-conn}|%header{kalab-conn-request}|%{errormsg}'
ms() { local ns=$1; printf '%s.%s' "${ns:0:${#ns}-6}" "${ns: -6}"; } # epoch ns -> ms

# planned: when the schedule meant the request to start (the end of the pause before it, or
# the end of the request before it); kalab measures how late it began.
planned=$(date +%s%N)
for ((i = 0; i < KALAB_REQUESTS; i++)); do
  if ((KALAB_BURST > 0 && i > 0 && i % KALAB_BURST == 0)); then
    p=${pauses[i / KALAB_BURST - 1]}
    now=${EPOCHREALTIME//[!0-9]/} # microseconds without forking date (bash 5)
    if [ -n "$now" ]; then now=$((10#$now * 1000)); else now=$(date +%s%N); fi
    planned=$((now + 10#${p/./} * 1000)) # the pause: seconds with 6 decimals -> ns
    sleep "$p"
  fi
  start=$(date +%s%N)
  out=$(curl "${args[@]}" -H "$KALAB_REQUEST_HEADER: $i" -w "$fmt" "$KALAB_URL")
  end=$(date +%s%N)
  IFS='|' read -r status code bytes conn creq err <<<"$out"
  err=${err//\\/\\\\}
  printf '{"index":%d,"planned":%s,"start":%s,"end":%s,"status":%d,"code":"%s","error":"%s","bytes":%d,"conn":"%s","conn_request":"%s"}\n' \
    "$i" "$(ms "$planned")" "$(ms "$start")" "$(ms "$end")" "${status:-0}" "${code:-}" "${err//\"/\\\"}" "${bytes:-0}" "${conn:-}" "${creq:-}"
  planned=$end
done
