// kalab's bundled Node.js server: a real http/https server whose keep-alive settings come
// from kalab's run configuration (argv[2], JSON). It answers every request the same way.
'use strict';
const fs = require('fs');
const crypto = require('crypto');

const cfg = JSON.parse(process.argv[2]);
const mod = cfg.tls ? require('https') : require('http');
const pattern = 'kalab-real-server-response-body.';
const body = Buffer.alloc(cfg.bodyBytes, pattern);

const options = {};
if (cfg.tls) {
  options.cert = fs.readFileSync(cfg.cert);
  options.key = fs.readFileSync(cfg.key);
  options.minVersion = options.maxVersion = cfg.tlsVersion;
  if (!cfg.sessionTickets) {
    options.secureOptions = crypto.constants.SSL_OP_NO_TICKET;
  }
}

function respond(req, res) {
  const headers = { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': body.length };
  // Node writes "Keep-Alive: timeout=floor(keepAliveTimeout/1000)[, max=N]" itself unless
  // the response sets Connection; hint null leaves that to Node.
  if (cfg.hint !== null && res.shouldKeepAlive) {
    headers.Connection = 'keep-alive';
    if (cfg.hint !== '') {
      headers['Keep-Alive'] = cfg.hint;
    }
  }
  res.writeHead(cfg.status, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

const server = mod.createServer(options, (req, res) => {
  req.resume();
  req.on('end', () => {
    if (cfg.delayMs > 0) {
      setTimeout(() => respond(req, res), cfg.delayMs);
    } else {
      respond(req, res);
    }
  });
});
// null leaves Node's own default (kalab sends null for a value equal to it).
if (cfg.keepAliveTimeout !== null) server.keepAliveTimeout = cfg.keepAliveTimeout;
server.headersTimeout = cfg.headersTimeout;
if (cfg.maxRequestsPerSocket !== null) server.maxRequestsPerSocket = cfg.maxRequestsPerSocket;

process.on('SIGTERM', () => process.exit(0));
server.listen(cfg.port, '127.0.0.1', () => {
  console.log(`node ${process.version} listening on 127.0.0.1:${cfg.port}: keepAliveTimeout ${server.keepAliveTimeout} ms, ` +
    `headersTimeout ${server.headersTimeout} ms, maxRequestsPerSocket ${server.maxRequestsPerSocket}`);
});
