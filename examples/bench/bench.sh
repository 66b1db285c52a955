#!/usr/bin/env bash
# Side-by-side bench: kalab's clients beside wrk, hey, vegeta and a bare net/http.Client
# against one nginx on loopback, as client CPU per request. Not part of CI (slow and noisy on
# a shared machine); run it by hand: bash examples/bench/bench.sh  (REQUESTS=100000
# SECONDS_EACH=5 by default).
# It installs what is missing: wrk and nginx from Debian, hey and vegeta from the Go module
# proxy. Every load is bounded: a request count for kalab and hey, a duration for wrk and
# vegeta. See the README's performance section for its output and what it leaves out.
set -euo pipefail

requests=${REQUESTS:-100000}
secs=${SECONDS_EACH:-5}
conns=64
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
nginx_pid=""
cleanup() {
	if [[ -n $nginx_pid ]]; then kill "$nginx_pid" 2>/dev/null || true; fi
	if [[ -n ${tox_pid:-} ]]; then kill "$tox_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

need_deb() { # command package
	command -v "$1" >/dev/null 2>&1 || apt-get install -y "$2" >/dev/null
}
need_deb wrk wrk
need_deb nginx nginx
export GOBIN=$work/bin
mkdir -p "$GOBIN"
go install github.com/tsenart/vegeta/v12@v12.13.0 >/dev/null 2>&1 || echo "vegeta: could not be installed; skipped" >&2
go install github.com/rakyll/hey@v0.1.5 >/dev/null 2>&1 || echo "hey: could not be installed; skipped" >&2
go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0 >/dev/null 2>&1 || echo "toxiproxy: could not be installed; skipped" >&2

# One nginx worker answering 13 bytes on every request, kept alive.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
worker_rlimit_nofile 8192;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 100000000;
	server {
		listen 127.0.0.1:$port;
		location / { default_type text/plain; return 200 "hello, kalab\n"; }
	}
}
CONF
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
for _ in $(seq 50); do
	curl -sf "http://127.0.0.1:$port/" >/dev/null && break
	sleep 0.1
done
url="http://127.0.0.1:$port/"

# cpu CMD...: runs CMD and prints its user+system CPU seconds (children included).
cpu() {
	/usr/bin/time -f '%U %S' -o "$work/time" "$@" >"$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
	awk '{ printf "%.3f", $1 + $2 }' "$work/time"
}
rows=()
row() { # name requests cpu-seconds
	rows+=("$1 $2 $(awk -v c="$3" -v n="$2" 'BEGIN { printf "%.1f", c * 1e6 / n }')")
}

# kalab: the client benchmarks (engine/client/bench_test.go), which count the client's
# own CPU with getrusage; 64 requests in flight on 64 kept-alive connections.
(cd "$root" && go test -c -o "$work/client.test" ./engine/client)
for b in ModelKeepAlive64 GoNetHTTPKeepAlive64 BareNetHTTPKeepAlive64; do
	KALAB_CLIENT_BENCH_ADDR=127.0.0.1:$port "$work/client.test" -test.run '^$' -test.bench "^Benchmark$b\$" \
		-test.benchtime "${requests}x" >"$work/out"
	us=$(awk '/cpu-µs\/req/ { for (i = 1; i < NF; i++) if ($(i+1) == "cpu-µs/req") print $i }' "$work/out")
	name=kalab-${b%KeepAlive64}
	[[ $b == Bare* ]] && name=net/http-bare # a plain http.Client loop: no kalab code
	rows+=("$name $requests $us")
done

c=$(cpu wrk -t2 -c"$conns" -d"${secs}s" "$url")
n=$(awk '/requests in/ { print $1 }' "$work/out")
row wrk "$n" "$c"

if [[ -x $GOBIN/hey ]]; then
	c=$(cpu "$GOBIN/hey" -n "$requests" -c "$conns" "$url")
	row hey "$requests" "$c"
fi

if [[ -x $GOBIN/vegeta ]]; then
	echo "GET $url" >"$work/targets"
	c=$(cpu "$GOBIN/vegeta" attack -targets="$work/targets" -rate=0 -max-workers="$conns" -workers="$conns" \
		-duration="${secs}s" -output="$work/vegeta.bin")
	n=$("$GOBIN/vegeta" report -type=json <"$work/vegeta.bin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
	row vegeta "$n" "$c"
fi

# toxiproxy in front of the same nginx, one proxy per RTT: its latency toxic delays the
# response stream (whole milliseconds), so a reused request waits one RTT; it does not delay
# the TCP handshake, which it answers itself.
tox_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tox_pid=""
declare -A tox_listen=()
if [[ -x $GOBIN/server ]]; then
	"$GOBIN/server" -host 127.0.0.1 -port "$tox_port" >"$work/toxiproxy.log" 2>&1 &
	tox_pid=$!
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:$tox_port/version" >/dev/null && break
		sleep 0.1
	done
	for rtt in 1 50 150; do
		lp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
		curl -sf -X POST "http://127.0.0.1:$tox_port/proxies" \
			-d "{\"name\":\"rtt$rtt\",\"listen\":\"127.0.0.1:$lp\",\"upstream\":\"127.0.0.1:$port\",\"enabled\":true}" >/dev/null
		curl -sf -X POST "http://127.0.0.1:$tox_port/proxies/rtt$rtt/toxics" \
			-d "{\"type\":\"latency\",\"stream\":\"downstream\",\"attributes\":{\"latency\":$rtt,\"jitter\":0}}" >/dev/null
		tox_listen[$rtt]=$lp
	done
fi

# RTT error: kalab's median latency against the model (1 RTT reused, 2 new TCP, 3 new TLS
# 1.3), beside the same load with no link (client and server alone) and through toxiproxy
# (reached through a kalab link of 0 ms: server.url always has one).
(cd "$root" && go build -o "$work/kalab" ./cmd/kalab)
{
	echo "name: bench-rtt"
	echo "time_scale: 1"
	echo "variants:"
	for rtt in 1 50 150; do
		case $rtt in
		1) reused="{requests: 3000, concurrency: 64}" new="{requests: 200, concurrency: 1}" ;;
		50) reused="{requests: 160, concurrency: 8}" new="{requests: 30, concurrency: 1}" ;;
		*) reused="{requests: 80, concurrency: 8}" new="{requests: 15, concurrency: 1}" ;;
		esac
		for link in "$rtt" 0; do
			name=$rtt; [[ $link == 0 ]] && name=$rtt-nolink
			echo "  - {name: reused-$name, network: {rtt: ${link}ms}, load: $reused}"
			echo "  - {name: new-tcp-$name, network: {rtt: ${link}ms}, client: {keepalive: false}, load: $new}"
			echo "  - {name: new-tls-$name, network: {rtt: ${link}ms}, server: {tls: true}, client: {keepalive: false}, load: $new}"
		done
		if [[ -n ${tox_listen[$rtt]:-} ]]; then
			url_tox="http://127.0.0.1:${tox_listen[$rtt]}/"
			echo "  - {name: reused-$rtt-toxiproxy, network: {rtt: 0ms}, server: {url: \"$url_tox\"}, load: $reused}"
			echo "  - {name: new-tcp-$rtt-toxiproxy, network: {rtt: 0ms}, server: {url: \"$url_tox\"}, client: {keepalive: false}, load: $new}"
		fi
	done
} >"$work/rtt.yaml"
"$work/kalab" run --parallel 1 --no-requests --time-scale 1 --out "$work/results" --log-level error "$work/rtt.yaml" >"$work/rtt.log" 2>&1 || true
rtt_table=$(python3 - "$work"/results/*/results.jsonl <<'PY'
import json, sys
p50 = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("record") == "run" and r.get("metrics"):
        p50[r["variant"]] = r["metrics"]["latency_ms"]["p50"]
def cell(v, model, floor):
    if v is None:
        return f"{'-':>9} {'-':>8} {'-':>8}"
    plus = f"{v / (model + floor):7.3f}x" if floor is not None else f"{'-':>8}"
    return f"{v:9.3f} {v / model:7.3f}x {plus}"
rows = [f"{'case':<8} {'rtt':>6} {'model':>7} {'kalab p50':>9} {'ratio':>8} {'ratio+':>8} {'no link':>9} {'toxiproxy':>9} {'ratio':>8} {'ratio+':>8}"]
for rtt in (1, 50, 150):
    for kind, k in (("reused", 1), ("new-tcp", 2), ("new-tls", 3)):
        model = k * rtt
        got = p50.get(f"{kind}-{rtt}")
        floor = p50.get(f"{kind}-{rtt}-nolink")
        tox = p50.get(f"{kind}-{rtt}-toxiproxy")
        rows.append(f"{kind:<8} {rtt:>4}ms {model:>5}ms {cell(got, model, floor)} {floor if floor is not None else float('nan'):9.3f} {cell(tox, model, floor)}")
print("\n".join(rows))
PY
)

# Same-run ratios from the Go benchmarks: netsim at 1 ms RTT (through the proxy against the
# same load straight to the server, alternating rounds) and go-net-http against the model
# client (alternating rounds against one server).
ratio_of() { # file metric: "median [min..max]"
	awk -v m="$2" '{ for (i = 1; i < NF; i++) { if ($(i+1) == m) v = $i; if ($(i+1) == m "-min") lo = $i; if ($(i+1) == m "-max") hi = $i } }
		END { if (v != "") printf "%s [%s..%s]", v, lo, hi }' "$1"
}
(cd "$root" && go test -c -o "$work/netsim-rtt.test" ./engine/netsim)
"$work/netsim-rtt.test" -test.run '^$' -test.bench '^BenchmarkSmallRTT$' -test.benchtime 1x >"$work/smallrtt.out" 2>&1 || true
"$work/client.test" -test.run '^$' -test.bench '^BenchmarkGoNetHTTPVsModel$' -test.benchtime 1x >"$work/vsmodel.out" 2>&1 || true
go_ratios=""
for sub in reused/inflight=64 reused/inflight=8 new-tls; do
	grep -F "BenchmarkSmallRTT/$sub-" "$work/smallrtt.out" >"$work/sub.out" || true
	go_ratios+=$(printf '1 ms %-18s p50/model %s  p50/(model+direct) %s  cpu µs/req %s (direct %s)' "$sub" \
		"$(ratio_of "$work/sub.out" x-model)" "$(ratio_of "$work/sub.out" x-direct)" \
		"$(ratio_of "$work/sub.out" cpu-us/req)" "$(ratio_of "$work/sub.out" direct-cpu-us/req)")$'\n'
done
go_ratios+=$(printf 'go-net-http vs model client: %s; go-net-http cpu µs/req %s' \
	"$(ratio_of "$work/vsmodel.out" x-model)" "$(ratio_of "$work/vsmodel.out" go-net-http-cpu-µs/req)")$'\n'
go_ratios+=$(printf 'go-net-http vs bare net/http.Client: %s (vs bare Transport.RoundTrip %s); bare cpu µs/req %s' \
	"$(ratio_of "$work/vsmodel.out" x-bare)" "$(ratio_of "$work/vsmodel.out" x-bare-rt)" "$(ratio_of "$work/vsmodel.out" bare-net-http-cpu-µs/req)")

# Memory per held connection: kalab's proxy (engine/netsim BenchmarkIdleConns: 5,000 idle
# connections, client and server in another process) and toxiproxy's (2,000 idle
# connections to nginx through it, its RSS before and after).
(cd "$root" && go test -c -o "$work/netsim.test" ./engine/netsim)
"$work/netsim.test" -test.run '^$' -test.bench '^BenchmarkIdleConns$' -test.benchtime 1x >"$work/idle.out" 2>&1 || true
kalab_idle=$(awk '{ for (i = 1; i < NF; i++) if ($(i+1) == "idle-B/conn") print $i }' "$work/idle.out")
tox_idle=""
if [[ -n $tox_pid && -n ${tox_listen[1]:-} ]]; then
	tox_idle=$(python3 - "$tox_pid" "${tox_listen[1]}" <<'PY'
import socket, sys, time
pid, port, n = sys.argv[1], int(sys.argv[2]), 2000
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
before = rss()
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: b\r\n\r\n")
    socks.append(s)
for s in socks:
    s.settimeout(10)
    s.recv(4096)  # the answer came back: both of toxiproxy's sockets are up
time.sleep(0.5)
print(f"{(rss() - before) / n:.0f}")
for s in socks:
    s.close()
PY
) || tox_idle=""
fi

echo "# kalab bench: client CPU per request against one nginx worker, $conns connections"
echo "# $(date -u +%Y-%m-%dT%H:%MZ); $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(awk '{ print $3 }' <<<"${rows[0]}")
printf '%-14s %10s %12s %10s\n' generator requests "cpu µs/req" "vs model"
for r in "${rows[@]}"; do
	read -r name n us <<<"$r"
	printf '%-14s %10s %12s %9.2fx\n' "$name" "$n" "$us" "$(awk -v a="$us" -v b="$base" 'BEGIN { print a / b }')"
done
echo
echo "# RTT error: median latency (ms) against the model; reused at 64 in flight (1 ms) or 8,"
echo "# new connections one at a time; 'no link' is the same load with RTT 0; ratio+ is the"
echo "# median against the model plus the no-link median (what the endpoints cost by themselves)"
echo "$rtt_table"
echo
echo "# the same-run ratios of the Go benchmarks (median of 5 alternating rounds [min..max])"
echo "$go_ratios"
echo
echo "# memory per held idle connection (RSS growth)"
echo "kalab proxy   ${kalab_idle:-?} B"
echo "toxiproxy     ${tox_idle:-?} B"
