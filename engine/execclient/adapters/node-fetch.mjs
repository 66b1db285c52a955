// kalab adapter node-fetch: Node's global fetch (the undici bundled with Node, or the undici
// release client.exec's version names), driving the plan of a run (kalab's exec protocol
// v1, docs/real-programs.md "Bring your own client"). The CA comes from
// NODE_EXTRA_CA_CERTS, which kalab sets.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises';

const plan = JSON.parse(fs.readFileSync(process.env.KALAB_PLAN, 'utf8'));
const c = plan.client;

// Node exposes no undici API, but the bundled undici installs its global Agent under this
// symbol when fetch is first used (undici lib/global.js); a new Agent of the same class
// replaces it. Only what the scenario set is changed: otherwise fetch runs as shipped.
const opts = {};
if (c.keepalive === false) opts.pipelining = 0; // undici docs: 0 disables keep-alive
if (c.idle_timeout_ms !== undefined) opts.keepAliveTimeout = c.idle_timeout_ms;
if (c.hint_buffer_ms !== undefined) opts.keepAliveTimeoutThreshold = c.hint_buffer_ms;
if (c.hint_max_ms !== undefined) opts.keepAliveMaxTimeout = c.hint_max_ms;
if (c.max_conns > 0) opts.connections = c.max_conns;
if (c.session_resumption === false) opts.connect = { maxCachedSessions: 0 };
// KALAB_UNDICI: client.exec's version named an undici release, found in this package
// directory. Its own fetch runs over its own Agent, set as its global dispatcher with the
// scenario's options (none: undici's defaults); Node's bundled undici is not used.
let fetchFn = globalThis.fetch;
if (process.env.KALAB_UNDICI) {
  const undici = createRequire(import.meta.url)(process.env.KALAB_UNDICI);
  undici.setGlobalDispatcher(new undici.Agent(opts));
  fetchFn = undici.fetch;
} else if (Object.keys(opts).length > 0) {
  const sym = Symbol.for('undici.globalDispatcher.1');
  await fetch('data:,').then((r) => r.arrayBuffer());
  const Agent = globalThis[sym]?.constructor;
  if (!Agent) {
    console.error('kalab node-fetch: the bundled undici installed no global dispatcher; cannot apply', Object.keys(opts));
    process.exit(3);
  }
  globalThis[sym] = new Agent(opts);
}

const now = () => performance.timeOrigin + performance.now();
const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');

// planned is when the schedule meant the request to start: the end of the pause before it,
// or the end of the request before it on the same worker (kalab measures how late it began).
async function one(i, planned) {
  const line = { index: i, planned, start: now() };
  // redirect: 'manual': kalab's clients follow no redirect (docs/security.md).
  const init = { method: plan.method, headers: { ...plan.headers, [plan.request_header]: String(i) }, redirect: 'manual' };
  if (c.timeout_ms > 0) init.signal = AbortSignal.timeout(c.timeout_ms);
  try {
    const res = await fetchFn(plan.url, init);
    const body = await res.arrayBuffer();
    Object.assign(line, {
      status: res.status, bytes: body.byteLength,
      conn: res.headers.get('kalab-conn'), conn_request: res.headers.get('kalab-conn-request'),
    });
  } catch (err) {
    // fetch rejects with TypeError('fetch failed'); the socket's error is its cause.
    const cause = err.cause;
    line.status = 0;
    line.error = cause ? `${err.message}: ${cause.message}` : err.message;
    // AbortSignal.timeout rejects with a DOMException whose code is the number 23: its
    // name (TimeoutError) is the runtime's word for it.
    line.code = cause?.code ?? (typeof err.code === 'string' ? err.code : err.name);
  }
  line.end = now();
  emit(line);
  return line.end;
}

let next = 0;
const n = plan.requests;
const burst = plan.burst > 0 ? plan.burst : n;
for (let b = 0; next < n; b++) {
  let ready = now();
  if (b > 0) {
    ready += plan.pauses_ms[b - 1];
    await sleep(plan.pauses_ms[b - 1]);
  }
  const end = Math.min(next + burst, n);
  const workers = [];
  for (let w = 0; w < Math.min(Math.max(plan.concurrency, 1), end - next); w++) {
    // client.caller_yields: one event-loop tick between a response and the next request,
    // so undici's client is free again (its drain comes by setImmediate, client-h1.js).
    workers.push((async () => {
      let r = ready;
      for (let first = true; next < end; first = false) {
        if (c.caller_yields && !first) await tick();
        r = await one(next++, r);
      }
    })());
  }
  await Promise.all(workers);
}
process.exit(0);
