# Builds examples/replay/access.log from each client's idle gaps (response -> next request).
RTT, IDLE = 150, 5000
clients = {
  "203.0.113.7":  ("poller/1.0",  [1000, 4920, 2000, 3000, 4920, 2000, 6000]),
  "198.51.100.23": ("api-sdk/2.3", [200, 200, 500, 3800, 4700, 300, 4930, 1000, 500]),
  "192.0.2.140":  ("Mozilla/5.0 (X11; Linux x86_64)", [8000, 12000, 3000, 4500, 4750]),
}
base = 1796180400000  # 2026-12-02T03:00:00Z
reqs = []; races = 0; conns = 0
for i, (addr, (ua, gaps)) in enumerate(clients.items()):
    t = 40 * i; live = False
    starts = []
    for g in [None] + gaps:
        if g is not None:
            t = end + g
        if not live or g >= IDLE:
            kind, lat, live = "new", 2 * RTT, True; conns += 1
        elif g <= IDLE - RTT:
            kind, lat = "reuse", RTT
        else:
            kind, lat, live = "race", RTT, False; races += 1
        end = t + lat
        reqs.append((t, addr, ua, lat, kind))
reqs.sort(key=lambda r: (r[0] + r[3], r[0]))  # nginx writes a line when the request ends
import time
lines = []
for n, (t, addr, ua, lat, kind) in enumerate(reqs):
    done = base + t + lat
    local = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(done // 1000))
    lines.append('%s - - [%s] "GET /api/items HTTP/1.1" 200 200 "-" "%s" %.3f %d.%03d' % (addr, local, ua, lat / 1000, done // 1000, done % 1000))
    if n == 6:
        lines.append('198.51.100.23 - - [02/Dec/2026:03:00:0')  # a line cut off by a log rotation
open("access.log", "w").write("\n".join(lines) + "\n")
c4 = sum(1 for a,(u,g) in clients.items() for x in [None]+g if x is None or x >= 4000)
print("idle-4s connections", c4)
print("requests", len(reqs), "races", races, "connections", conns, "span_ms", reqs[-1][0])
