# kalab adapter python-requests: one requests.Session (urllib3's pool), driving the plan of a
# run (kalab's exec protocol v1, docs/real-programs.md "Bring your own client").
import json
import os
import sys
import threading
import time

import requests
from requests.adapters import HTTPAdapter

plan = json.load(open(os.environ["KALAB_PLAN"]))
c = plan["client"]

session = requests.Session()
# Only what the scenario set is changed; otherwise requests' own defaults.
pool = {}
if c.get("max_conns", 0) > 0:
    pool = {"pool_maxsize": c["max_conns"], "pool_block": True}
elif c.get("max_idle", 0) > 0:
    pool = {"pool_maxsize": c["max_idle"]}
if pool:
    session.mount("https://", HTTPAdapter(**pool))
    session.mount("http://", HTTPAdapter(**pool))
headers = dict(plan["headers"])
if c.get("keepalive") is False:
    headers["Connection"] = "close"  # urllib3 then drops the connection after the response
timeout = c["timeout_ms"] / 1000 if c.get("timeout_ms", 0) > 0 else None
verify = plan["ca_file"] or True

lock = threading.Lock()


def emit(line):
    with lock:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def root_cause(e):
    """The innermost exception: requests wraps urllib3, which wraps http.client and OSError."""
    seen = set()
    while id(e) not in seen:
        seen.add(id(e))
        inner = getattr(e, "reason", None)
        if not isinstance(inner, BaseException):
            inner = next((a for a in getattr(e, "args", ()) if isinstance(a, BaseException)), None)
        if inner is None:
            inner = e.__cause__ or e.__context__
        if inner is None:
            break
        e = inner
    return e


def one(i, planned):
    """Runs request i; planned is when the schedule meant it to start (epoch seconds): the
    end of the pause before it, or the end of the request before it on the same worker.
    Returns when it ended."""
    h = dict(headers)
    h[plan["request_header"]] = str(i)
    line = {"index": i, "planned": planned * 1000, "start": time.time() * 1000}
    try:
        r = session.request(plan["method"], plan["url"], headers=h, verify=verify, timeout=timeout,
                            allow_redirects=False)  # kalab's clients follow no redirect
        body = r.content
        line.update(status=r.status_code, bytes=len(body),
                    conn=r.headers.get("Kalab-Conn"), conn_request=r.headers.get("Kalab-Conn-Request"))
    except Exception as e:  # every failure is data in the line
        cause = root_cause(e)
        line.update(status=0, error="%s: %s" % (type(e).__name__, e), code=type(cause).__name__)
    end = time.time()
    line["end"] = end * 1000
    emit(line)
    return end


n = plan["requests"]
burst = plan["burst"] if plan["burst"] > 0 else n
conc = max(plan["concurrency"], 1)
nxt = 0
b = 0
while nxt < n:
    ready = time.time()
    if b > 0:
        ready += plan["pauses_ms"][b - 1] / 1000
        time.sleep(plan["pauses_ms"][b - 1] / 1000)
    end = min(nxt + burst, n)
    if conc == 1:
        for i in range(nxt, end):
            ready = one(i, ready)
    else:
        todo = iter(range(nxt, end))
        todo_lock = threading.Lock()

        def worker(r=ready):
            while True:
                with todo_lock:
                    i = next(todo, None)
                if i is None:
                    return
                r = one(i, r)

        threads = [threading.Thread(target=worker) for _ in range(min(conc, end - nxt))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    nxt = end
    b += 1
