#!/usr/bin/env bash
# Side-by-side bench: kalab's clients beside wrk, hey, vegeta and a bare net/http.Client
# against one nginx on loopback, as client CPU per request. Not part of CI (slow and noisy on
# a shared machine); run it by hand: bash examples/bench/bench.sh  (REQUESTS=100000
# SECONDS_EACH=5 ROUNDS_1MS=5 by default). It also runs kalab at 1, 50 and 150 ms RTT beside
# toxiproxy, the descriptor budget under the usual limit, and ends with its targets
# checked against the run's own figures.
# It installs what is missing: wrk and nginx from Debian, hey and vegeta from the Go module
# proxy. Every load is bounded: a request count for kalab and hey, a duration for wrk and
# vegeta. Every generator, kalab's clients included, is measured the same way: the whole
# process's CPU under /usr/bin/time. It prints the performance gate's table (TestPerfGate,
# engine/netsim/testdata/perfgate.json) and how long it took, with and without installing.
# See the README's performance section for its output and what it leaves out.
set -euo pipefail
started=$SECONDS

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
installed=$SECONDS

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

# kalab: the client benchmarks (engine/client/bench_test.go), 64 requests in flight on 64
# kept-alive connections, each binary timed as a whole process like the generators below
# (the benchmark's own warm-up of one request and its setup included).
(cd "$root" && go test -c -o "$work/client.test" ./engine/client)
export KALAB_CLIENT_BENCH_ADDR=127.0.0.1:$port
for b in ModelKeepAlive64 GoNetHTTPKeepAlive64 BareNetHTTPKeepAlive64; do
	c=$(cpu "$work/client.test" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime "${requests}x")
	name=kalab-${b%KeepAlive64}
	[[ $b == Bare* ]] && name=net/http-bare # a plain http.Client loop: no kalab code
	row "$name" "$requests" "$c"
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
# (reached through a kalab link of 0 ms: server.url always has one). At 1 ms the figures
# move with the machine from one second to the next, so that RTT runs ROUNDS_1MS rounds (5
# by default), each the link, no link and toxiproxy back to back, and a round's ratio is
# taken against its own no-link run; the table gives the medians.
rounds_1ms=${ROUNDS_1MS:-5}
(cd "$root" && go build -o "$work/kalab" ./cmd/kalab)
{
	echo "name: bench-rtt"
	echo "time_scale: 1"
	echo "variants:"
	for rtt in 1 50 150; do
		rounds=1
		case $rtt in
		1) reused="{requests: 10000, concurrency: 64}" new="{requests: 200, concurrency: 1}" rounds=$rounds_1ms ;;
		50) reused="{requests: 160, concurrency: 8}" new="{requests: 30, concurrency: 1}" ;;
		*) reused="{requests: 80, concurrency: 8}" new="{requests: 15, concurrency: 1}" ;;
		esac
		for r in $(seq "$rounds"); do
			for link in "$rtt" 0; do
				name=$rtt; [[ $link == 0 ]] && name=$rtt-nolink
				echo "  - {name: reused-$name-r$r, network: {rtt: ${link}ms}, load: $reused}"
				echo "  - {name: new-tcp-$name-r$r, network: {rtt: ${link}ms}, client: {keepalive: false}, load: $new}"
				echo "  - {name: new-tls-$name-r$r, network: {rtt: ${link}ms}, server: {tls: true}, client: {keepalive: false}, load: $new}"
			done
			if [[ -n ${tox_listen[$rtt]:-} ]]; then
				url_tox="http://127.0.0.1:${tox_listen[$rtt]}/"
				echo "  - {name: reused-$rtt-toxiproxy-r$r, network: {rtt: 0ms}, server: {url: \"$url_tox\"}, load: $reused}"
				echo "  - {name: new-tcp-$rtt-toxiproxy-r$r, network: {rtt: 0ms}, server: {url: \"$url_tox\"}, client: {keepalive: false}, load: $new}"
			fi
		done
	done
} >"$work/rtt.yaml"
"$work/kalab" run --parallel 1 --no-requests --time-scale 1 --out "$work/results" --log-level error "$work/rtt.yaml" >"$work/rtt.log" 2>&1 || true
rtt_table=$(python3 - "$work/results/latest/results.jsonl" "$work/rtt.vals" <<'PY'
import json, re, statistics, sys
p50 = {}  # case -> round -> median latency
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("record") == "run" and r.get("metrics"):
        case, rnd = re.fullmatch(r"(.*)-r(\d+)", r["variant"]).groups()
        p50.setdefault(case, {})[rnd] = r["metrics"]["latency_ms"]["p50"]
def med(case):
    v = p50.get(case)
    return statistics.median(v.values()) if v else None
def plus(case, floor, model):
    """Each round's median against the model plus the same round's no-link median."""
    got, base = p50.get(case, {}), p50.get(floor, {})
    return sorted(got[k] / (model + base[k]) for k in got if k in base)
def cell(case, floor, model):
    v = med(case)
    if v is None:
        return f"{'-':>9} {'-':>8} {'-':>8}"
    r = plus(case, floor, model)
    return f"{v:9.3f} {v / model:7.3f}x {statistics.median(r):7.3f}x" if r else f"{v:9.3f} {v / model:7.3f}x {'-':>8}"
rows = [f"{'case':<8} {'rtt':>6} {'model':>7} {'kalab p50':>9} {'ratio':>8} {'ratio+':>8} {'no link':>9} {'toxiproxy':>9} {'ratio':>8} {'ratio+':>8}"]
spread = []
for rtt in (1, 50, 150):
    for kind, k in (("reused", 1), ("new-tcp", 2), ("new-tls", 3)):
        model, case, floor = k * rtt, f"{kind}-{rtt}", f"{kind}-{rtt}-nolink"
        nolink = med(floor)
        rows.append(f"{kind:<8} {rtt:>4}ms {model:>5}ms {cell(case, floor, model)} {nolink if nolink is not None else float('nan'):9.3f} {cell(case + '-toxiproxy', floor, model)}")
        r = plus(case, floor, model)
        if len(r) > 1:
            spread.append(f"{kind} {rtt} ms: kalab ratio+ {statistics.median(r):.3f}x [{r[0]:.3f}..{r[-1]:.3f}] over {len(r)} rounds")
print("\n".join(rows + spread))
with open(sys.argv[2], "w") as out:
    for kind, k in (("reused", 1), ("new-tls", 3)):
        r = plus(f"{kind}-1", f"{kind}-1-nolink", k)
        if r:
            out.write(f"{kind} {statistics.median(r):.3f}\n")
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
# The performance gate's ratios and counts (issue 36), run where its testdata is.
gate_out=$(cd "$root/engine/netsim" && KALAB_PERFGATE=1 "$work/netsim.test" -test.run '^TestPerfGate$' -test.v 2>&1) || true
gate_table=$(sed -n '/performance gate/,/^--- /p' <<<"$gate_out" | grep -v '^--- ' || true)
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

# Descriptors under the usual limit of a shared machine, 1,024 soft and 20,000 hard, with no
# power to raise it (as root, CAP_SYS_RESOURCE is dropped): the kalab binary runs a
# 10,000-request HTTP/2 burst, which must run, and plans 10,000 held proxied HTTP/1.1
# connections, which must be refused before they start with the exact count they need. The
# Go benchmark (engine/runner BenchmarkDescriptorBudget) runs the same two under the same
# limit and adds the most descriptors the burst held at once.
cat >"$work/fd.yaml" <<'YAML'
name: bench-fds
time_scale: 1
network: {rtt: 2ms}
load: {requests: 10000, concurrency: 10000}
variants:
  - {name: h2-burst-10000, server: {http: "2"}}
  - {name: h1-held-10000}
YAML
limited=(prlimit --nofile=1024:20000)
if [[ $(id -u) == 0 ]]; then limited+=(setpriv --bounding-set=-sys_resource); fi
"${limited[@]}" "$work/kalab" run --parallel 1 --no-requests --out "$work/fd-results" --log-level error "$work/fd.yaml" >"$work/fd.log" 2>&1 || true
fd_table=$(python3 - "$work/fd-results/latest/results.jsonl" <<'PY'
import json, sys
print(f"{'run':<15} {'status':<6} {'requests':>8} {'errors':>6} {'conns':>5}  note")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("record") != "run":
        continue
    m = r.get("metrics") or {}
    note = (r.get("error") or "").split(": raise it")[0]
    print(f"{r['variant']:<15} {r['status']:<6} {m.get('requests', 0):>8} {m.get('errors', 0):>6} {m.get('connections', 0):>5}  {note}")
PY
) || fd_table="(the descriptor runs wrote no results: see $work/fd.log)"
(cd "$root" && go test -c -o "$work/runner.test" ./engine/runner)
"$work/runner.test" -test.run '^$' -test.bench '^BenchmarkDescriptorBudget$' -test.benchtime 1x >"$work/budget.out" 2>&1 || true
budget_line=$(awk '/^BenchmarkDescriptorBudget/ { out = ""; for (i = 3; i < NF; i += 2) out = out sprintf("%s %s  ", $(i+1), $i); print out }' "$work/budget.out")

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
echo "# median against the model plus the no-link median (what the endpoints cost by themselves);"
echo "# at 1 ms each figure is the median of $rounds_1ms rounds, a round's ratio+ against its own no-link run"
echo "$rtt_table"
echo
echo "# the same-run ratios of the Go benchmarks (median of 5 alternating rounds [min..max])"
echo "$go_ratios"
echo
echo "# memory per held idle connection (RSS growth)"
echo "kalab proxy   ${kalab_idle:-?} B"
echo "toxiproxy     ${tox_idle:-?} B"
echo
echo "# the performance gate (engine/netsim TestPerfGate: counts, and ratios from alternating rounds)"
echo "${gate_table:-(did not run)}"
echo
echo "# descriptors under the usual limit: 1,024 soft, 20,000 hard, not raisable"
echo "$fd_table"
echo "Go benchmark: ${budget_line:-(did not run: see its output)}"

# Issue 20's targets against this run's own figures.
val() { awk -v k="$1" '$1 == k { print $2 }' "$work/rtt.vals" 2>/dev/null; }
bench() { awk -v m="$2" '{ for (i = 1; i < NF; i++) if ($(i+1) == m) print $i }' "$1"; }
met() { awk -v v="$1" -v t="$2" 'BEGIN { if (v == "") print "-"; else print (v + 0 <= t + 0 ? "met" : "NOT met") }'; }
gonet=$(awk '$1 == "kalab-GoNetHTTP" { print $3 }' <<<"$(printf '%s\n' "${rows[@]}")")
bare=$(awk '$1 == "net/http-bare" { print $3 }' <<<"$(printf '%s\n' "${rows[@]}")")
burst=$(awk '$1 == "h2-burst-10000" { print $2 " " $3 " " $4 }' <<<"$fd_table")
held=$(awk '$1 == "h1-held-10000" { print $2 }' <<<"$fd_table")
need=$(grep -o 'needs [0-9]* file descriptors' <<<"$fd_table" | head -1)
echo
echo "# targets, from this run"
printf '%-58s %-34s %s\n' target measured verdict
printf '%-58s %-34s %s\n' "1 ms reused, 64 in flight: p50 <= 1.15x (model + no link)" "kalab run $(val reused)x" "$(met "$(val reused)" 1.15)"
printf '%-58s %-34s %s\n' "  the same, Go benchmark (median of 5 rounds)" "$(bench "$work/smallrtt.out" x-direct | head -1)x" "$(met "$(bench "$work/smallrtt.out" x-direct | head -1)" 1.15)"
printf '%-58s %-34s %s\n' "1 ms new TLS 1.3: p50 <= 1.10x (model + no link)" "kalab run $(val new-tls)x" "$(met "$(val new-tls)" 1.10)"
printf '%-58s %-34s %s\n' "10,000-request HTTP/2 burst runs under the usual limit" "status, requests, errors: ${burst:--}" \
	"$(awk -v b="$burst" 'BEGIN { split(b, f, " "); print (f[1] == "pass" && f[2] == 10000 && f[3] == 0 ? "met" : "NOT met") }')"
printf '%-58s %-34s %s\n' "10,000 held proxied HTTP/1.1: refused with the exact count" "${held:--}: ${need:--}" \
	"$([[ $held == error && -n $need ]] && echo met || echo "NOT met")"
printf '%-58s %-34s %s\n' "go-net-http <= 25 µs CPU per request (against nginx)" "${gonet:--} (bare net/http ${bare:--})" "$(met "$gonet" 25)"
printf '%-58s %-34s %s\n' "  what net/http costs by itself: go-net-http / bare client" "$(bench "$work/vsmodel.out" x-bare | head -1)x (Go benchmark, same run)" "(context)"
echo
echo "# took $((SECONDS - started)) s in all, $((installed - started)) s of it installing what was missing"
