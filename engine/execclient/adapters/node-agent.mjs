// kalab adapter node-agent: Node's http(s).request through one http(s).Agent, driving the
// plan of a run (kalab's exec protocol v1, docs/real-programs.md "Bring your own client").
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const plan = JSON.parse(fs.readFileSync(process.env.KALAB_PLAN, 'utf8'));
const c = plan.client;
const url = new URL(plan.url);
const mod = url.protocol === 'https:' ? https : http;

// Only what the scenario set reaches the agent; everything else is Node's own default.
const opts = { keepAlive: c.keepalive };
if (c.idle_timeout_ms > 0) opts.timeout = c.idle_timeout_ms; // a free socket idle this long is destroyed
if (c.max_conns > 0) opts.maxSockets = c.max_conns;
if (c.max_idle > 0) opts.maxFreeSockets = c.max_idle;
if (c.scheduling) opts.scheduling = c.scheduling;
if (c.session_resumption === false) opts.maxCachedSessions = 0;
if (plan.ca_file) opts.ca = fs.readFileSync(plan.ca_file);
const agent = new mod.Agent(opts);

const now = () => performance.timeOrigin + performance.now();
const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');

// planned is when the schedule meant the request to start: the end of the pause before it,
// or the end of the request before it on the same worker (kalab measures how late it began).
function one(i, planned) {
  return new Promise((resolve) => {
    const line = { index: i, planned, start: now() };
    let timer;
    const done = (extra) => {
      clearTimeout(timer);
      Object.assign(line, extra, { end: now() });
      emit(line);
      resolve(line.end);
    };
    const headers = { ...plan.headers, [plan.request_header]: String(i) };
    const req = mod.request(url, { agent, method: plan.method, headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk) => { bytes += chunk.length; });
      res.on('end', () => done({
        status: res.statusCode, bytes,
        conn: res.headers['kalab-conn'], conn_request: res.headers['kalab-conn-request'],
      }));
      res.on('error', (err) => done({ status: res.statusCode, bytes, error: err.message, code: err.code }));
    });
    req.on('error', (err) => done({ status: 0, error: err.message, code: err.code }));
    if (c.timeout_ms > 0) {
      timer = setTimeout(() => {
        const err = new Error(`request timed out after ${c.timeout_ms} ms`);
        err.code = 'ETIMEDOUT';
        req.destroy(err);
      }, c.timeout_ms);
    }
    req.end();
  });
}

// The closed schedule: bursts of plan.burst requests (all of them when 0), up to
// plan.concurrency in flight; after a burst's last response, the next pause.
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
    workers.push((async () => { let r = ready; while (next < end) r = await one(next++, r); })());
  }
  await Promise.all(workers);
}
agent.destroy();
process.exit(0);
