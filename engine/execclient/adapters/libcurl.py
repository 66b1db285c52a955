# kalab adapter libcurl: libcurl itself (the library the curl command is built on, here
# through Python's ctypes) driving the plan of a run with its pauses (kalab's exec protocol
# v1, docs/real-programs.md "Bring your own client"). It does what one curl process given
# every URL does (curl's src/tool_operate.c: a share handle with CURL_LOCK_DATA_CONNECT,
# SSL_SESSION and DNS; serial_transfers runs curl_easy_perform on a new easy handle per
# URL), so its requests share one connection cache and one TLS session cache; unlike that
# process it waits the plan's pauses between bursts, so a stale connection can race the
# server's idle close. Requests run one at a time.
#
# libcurl re-sends on its own a request whose reused connection died before any byte of a
# response came (lib/transfer.c Curl_retry_request: "Connection died, retrying a fresh
# connect", up to 5 times); the application never hears of it. The library's informational
# text (what `curl -v` prints as "* " lines: CURLINFO_TEXT through CURLOPT_DEBUGFUNCTION)
# goes to stderr, which kalab keeps beside the run, so those re-sends can be counted there.
#
# Which libcurl: the first that loads of the files KALAB_LIBCURL lists (colon-separated)
# and the system's. When client.exec.version names a release, the first that reports it
# (curl_version()) among those files, the private copies under /opt/kalab/libcurl-VERSION/
# (.ci/preamble unpacks Debian's there) and the system's. `--probe [VERSION]` prints what would run, or
# fails naming what it found, before any plan exists.
import ctypes
import ctypes.util
import glob
import json
import os
import sys
import time


def candidates(want):
    listed = [p for p in os.environ.get("KALAB_LIBCURL", "").split(":") if p]
    private = sorted(glob.glob("/opt/kalab/libcurl-%s/usr/lib/*/libcurl.so.4" % want)) if want else []
    return listed + private + [ctypes.util.find_library("curl") or "libcurl.so.4"]


def load(want):
    """The libcurl to drive and its curl_version() line; exits when none is version want."""
    seen = []
    for path in candidates(want):
        try:
            found = ctypes.CDLL(path)
        except OSError as e:
            seen.append("%s: %s" % (path, e))
            continue
        found.curl_version.restype = ctypes.c_char_p
        line = found.curl_version().decode()
        if not want or line.split()[0] == "libcurl/" + want:
            return found, line, path
        seen.append("%s: %s" % (path, line.split()[0]))
    sys.exit("no libcurl %s here (%s)" % (want, "; ".join(seen)))


if sys.argv[1:2] == ["--probe"]:
    _, line, path = load(sys.argv[2] if len(sys.argv) > 2 else "")
    print("python", sys.version.split()[0], line, "(%s)" % path)
    sys.exit(0)

plan = json.load(open(os.environ["KALAB_PLAN"]))
c = plan["client"]

lib, _, _ = load(os.environ.get("KALAB_LIBCURL_VERSION", ""))
lib.curl_easy_init.restype = ctypes.c_void_p
lib.curl_easy_setopt.restype = ctypes.c_int
lib.curl_easy_perform.restype = ctypes.c_int
lib.curl_easy_perform.argtypes = [ctypes.c_void_p]
lib.curl_easy_getinfo.restype = ctypes.c_int
lib.curl_easy_strerror.restype = ctypes.c_char_p
lib.curl_easy_strerror.argtypes = [ctypes.c_int]
lib.curl_slist_append.restype = ctypes.c_void_p
lib.curl_slist_append.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
lib.curl_slist_free_all.argtypes = [ctypes.c_void_p]

lib.curl_share_init.restype = ctypes.c_void_p
lib.curl_easy_cleanup.argtypes = [ctypes.c_void_p]

# Option and info numbers from include/curl/curl.h (stable ABI).
OPT_URL, OPT_HTTPHEADER, OPT_CAINFO, OPT_CUSTOMREQUEST, OPT_ERRORBUFFER, OPT_SHARE = 10002, 10023, 10065, 10036, 10010, 10100
OPT_WRITEFUNCTION, OPT_HEADERFUNCTION, OPT_DEBUGFUNCTION = 20011, 20079, 20094
OPT_VERBOSE, OPT_NOBODY, OPT_TIMEOUT_MS, OPT_SSL_SESSIONID_CACHE, OPT_MAXAGE_CONN = 41, 44, 155, 150, 288
INFO_RESPONSE_CODE = 0x200000 + 2
SHOPT_SHARE, LOCK_DATA_DNS, LOCK_DATA_SSL_SESSION, LOCK_DATA_CONNECT = 1, 3, 4, 5

lib.curl_global_init(ctypes.c_long(3))
share = ctypes.c_void_p(lib.curl_share_init())
for what in [LOCK_DATA_DNS, LOCK_DATA_CONNECT] + ([] if c.get("session_resumption") is False else [LOCK_DATA_SSL_SESSION]):
    lib.curl_share_setopt(share, ctypes.c_int(SHOPT_SHARE), ctypes.c_int(what))


def setopt(h, opt, value):
    if isinstance(value, int):
        value = ctypes.c_long(value)
    rc = lib.curl_easy_setopt(h, ctypes.c_int(opt), value)
    if rc != 0:
        sys.exit("curl_easy_setopt(%d): %s" % (opt, lib.curl_easy_strerror(rc).decode()))


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p)
got = {"bytes": 0, "headers": {}}


def on_body(ptr, size, n, _):
    got["bytes"] += size * n
    return size * n


def on_header(ptr, size, n, _):
    line = ctypes.string_at(ptr, size * n).decode("latin-1")
    if ":" in line:
        k, v = line.split(":", 1)
        got["headers"][k.strip().lower()] = v.strip()
    return size * n


def on_debug(_h, kind, ptr, size, _):
    if kind == 0:  # CURLINFO_TEXT
        sys.stderr.write("* " + ctypes.string_at(ptr, size).decode("latin-1"))
        sys.stderr.flush()
    return 0


on_body_cb, on_header_cb = CALLBACK(on_body), CALLBACK(on_header)
on_debug_cb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.c_void_p)(on_debug)
errbuf = ctypes.create_string_buffer(256)
base = ["%s: %s" % kv for kv in sorted(plan["headers"].items())]
if c.get("keepalive") is False:
    base.append("Connection: close")


def transfer(hdrs):
    """A new easy handle for one request, on the shared caches."""
    h = ctypes.c_void_p(lib.curl_easy_init())
    setopt(h, OPT_SHARE, share)
    setopt(h, OPT_WRITEFUNCTION, on_body_cb)
    setopt(h, OPT_HEADERFUNCTION, on_header_cb)
    setopt(h, OPT_DEBUGFUNCTION, on_debug_cb)
    setopt(h, OPT_VERBOSE, 1)  # the debug function sees nothing without it
    setopt(h, OPT_ERRORBUFFER, errbuf)
    setopt(h, OPT_URL, plan["url"].encode())
    setopt(h, OPT_HTTPHEADER, ctypes.c_void_p(hdrs))
    if plan["ca_file"]:
        setopt(h, OPT_CAINFO, plan["ca_file"].encode())
    if plan["method"] == "HEAD":
        setopt(h, OPT_NOBODY, 1)
    elif plan["method"] != "GET":
        setopt(h, OPT_CUSTOMREQUEST, plan["method"].encode())
    if c.get("timeout_ms", 0) > 0:
        setopt(h, OPT_TIMEOUT_MS, int(c["timeout_ms"]))
    if c.get("session_resumption") is False:
        setopt(h, OPT_SSL_SESSIONID_CACHE, 0)
    if c.get("idle_timeout_ms", 0) > 0:
        setopt(h, OPT_MAXAGE_CONN, max(1, round(c["idle_timeout_ms"] / 1000)))  # whole seconds
    return h

def one(i, planned):
    """Runs request i; planned is when the schedule meant it to start (epoch seconds).
    Returns when it ended."""
    hdrs = None
    for s in base + ["%s: %d" % (plan["request_header"], i)]:
        hdrs = lib.curl_slist_append(hdrs, s.encode())
    h = transfer(hdrs)
    got["bytes"], got["headers"] = 0, {}
    errbuf.value = b""
    line = {"index": i, "planned": planned * 1000, "start": time.time() * 1000}
    rc = lib.curl_easy_perform(h)
    end = time.time()
    status = ctypes.c_long(0)
    lib.curl_easy_getinfo(h, ctypes.c_int(INFO_RESPONSE_CODE), ctypes.byref(status))
    lib.curl_easy_cleanup(h)
    lib.curl_slist_free_all(hdrs)
    line.update(status=status.value if rc == 0 else 0, bytes=got["bytes"], end=end * 1000,
                conn=got["headers"].get("kalab-conn"), conn_request=got["headers"].get("kalab-conn-request"))
    if rc != 0:
        line.update(code=str(rc), error=(errbuf.value or lib.curl_easy_strerror(rc)).decode(errors="replace"))
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    return end


n = plan["requests"]
burst = plan["burst"] if plan["burst"] > 0 else n
nxt, b = 0, 0
while nxt < n:
    ready = time.time()
    if b > 0:
        ready += plan["pauses_ms"][b - 1] / 1000
        time.sleep(plan["pauses_ms"][b - 1] / 1000)
    for i in range(nxt, min(nxt + burst, n)):
        ready = one(i, ready)
    nxt = min(nxt + burst, n)
    b += 1
