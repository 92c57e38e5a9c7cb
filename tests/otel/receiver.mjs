// An OTLP/HTTP receiver for agentkit's OTLP exporter tests. It decodes what
// it receives with the OpenTelemetry project's own generated OTLP protobuf
// definitions (@opentelemetry/otlp-transformer, built on protobufjs), so a
// test checks agentkit's hand-written encoders against the reference ones,
// not against a second reading of the spec by the same author.
//
//   node receiver.mjs <out.jsonl> [<install dir>]
//
// <install dir> holds the node_modules `npm ci` installed from this folder's
// lockfile (the otel.npm_ci test puts it in the build tree); default: the
// folder of this script.
// Listens on 127.0.0.1 (an ephemeral port, printed on stdout as the first
// line) for POST /v1/traces and /v1/metrics, in protobuf
// (application/x-protobuf) or OTLP/JSON (application/json). Each request is
// appended to <out.jsonl> as one JSON line, written before the answer is
// sent:
//   {"path": "/v1/traces", "encoding": "protobuf" | "json", "status": 200,
//    "headers": {...}, "request": <the decoded request>}
// The decoded request is the message as protobufjs's toObject() renders it
// (lowerCamelCase fields, 64-bit integers as strings, enums as numbers),
// with trace and span ids as lowercase hex: a JSON request goes through the
// same definitions (fromObject, then toObject), so both encodings come out
// alike. A JSON request with a field the definitions do not have, or an id
// that is not hex of the right length, is answered 400 (and recorded with
// "error").
//
// Faults, for the exporter's failure tests:
//   query ?status=<code>[&times=<n>][&retry_after=<s>]  answer <code> (with
//       Retry-After) to the first <n> requests with this path and query
//       (every one without times), then answer normally
//   query &echo_headers=1 (with status)  the answer's body echoes the request
//       headers, as {"error": {"message": ...}}: a server that repeats what
//       it was sent, for the tests that no header value reaches a log
//   query ?hang=1[&times=<n>]  never answer (the first <n> requests)
//   env AGENTKIT_OTLP_RECEIVER_FAULT=<code>|hang  the same for every request
// A fault is recorded as {"path", "encoding", "status", "headers"} (status
// "hang" for a hang).
//
// The receiver exits when its stdin closes, so a test that dies leaves no
// server behind.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const out = process.argv[2];
if (!out) {
  process.stderr.write('usage: node receiver.mjs <out.jsonl> [<install dir>]\n');
  process.exit(2);
}
const installDir = process.argv[3] ?? fileURLToPath(new URL('.', import.meta.url));
const require = createRequire(join(installDir, 'package.json'));
// The generated static module of the OTLP protos. Later versions of the
// package replaced it with hand-written serializers, hence the pinned version.
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const collector = root.opentelemetry.proto.collector;

const signals = {
  '/v1/traces': {
    request: collector.trace.v1.ExportTraceServiceRequest,
    response: collector.trace.v1.ExportTraceServiceResponse,
  },
  '/v1/metrics': {
    request: collector.metrics.v1.ExportMetricsServiceRequest,
    response: collector.metrics.v1.ExportMetricsServiceResponse,
  },
};

const idLengths = { traceId: 32, spanId: 16, parentSpanId: 16 };
const toObjectOptions = { longs: String, enums: Number, bytes: String, arrays: true };

// Rewrites trace/span ids in a toObject() rendering from base64 to hex.
function idsToHex(value) {
  if (Array.isArray(value)) return value.forEach(idsToHex);
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value)) {
    if (key in idLengths && typeof child === 'string') {
      value[key] = Buffer.from(child, 'base64').toString('hex');
    } else {
      idsToHex(child);
    }
  }
}

// Rewrites OTLP/JSON's hex ids to the base64 fromObject() reads; throws on
// an id that is not hex of its length (empty means absent).
function idsFromHex(value, where = '') {
  if (Array.isArray(value)) return value.forEach((child, i) => idsFromHex(child, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return;
  for (const [key, child] of Object.entries(value)) {
    if (key in idLengths) {
      if (typeof child !== 'string' || (child !== '' && !new RegExp(`^[0-9a-fA-F]{${idLengths[key]}}$`).test(child))) {
        throw new Error(`${where}.${key} is not ${idLengths[key]} hex digits: ${JSON.stringify(child)}`);
      }
      value[key] = Buffer.from(child, 'hex').toString('base64');
    } else {
      idsFromHex(child, `${where}.${key}`);
    }
  }
}

// Throws when `raw` has a key the definitions do not know: `known` is the
// same message rendered back with every default, so it has every field.
function checkKnownFields(raw, known, where = '') {
  if (Array.isArray(raw)) {
    raw.forEach((child, i) => checkKnownFields(child, Array.isArray(known) ? known[i] : undefined, `${where}[${i}]`));
    return;
  }
  if (raw === null || typeof raw !== 'object') return;
  for (const [key, child] of Object.entries(raw)) {
    if (known === null || typeof known !== 'object' || !(key in known)) {
      throw new Error(`unknown field ${where}.${key}`);
    }
    checkKnownFields(child, known[key], `${where}.${key}`);
  }
}

function decode(signal, encoding, body) {
  if (encoding === 'protobuf') return signal.request.decode(body);
  const raw = JSON.parse(body.toString('utf8'));
  const copy = structuredClone(raw);
  idsFromHex(copy);
  const message = signal.request.fromObject(copy);
  checkKnownFields(raw, signal.request.toObject(message, { ...toObjectOptions, defaults: true }));
  return message;
}

function record(line) {
  appendFileSync(out, JSON.stringify(line) + '\n');
}

const faultCounts = new Map();  // path + query -> requests answered with its fault so far

// The fault this request gets, or null.
function faultFor(url) {
  const env = process.env.AGENTKIT_OTLP_RECEIVER_FAULT;
  if (env) return env === 'hang' ? { hang: true } : { status: Number(env) };
  const query = url.searchParams;
  if (!query.has('status') && !query.has('hang')) return null;
  const key = url.pathname + url.search;
  const seen = faultCounts.get(key) ?? 0;
  if (query.has('times') && seen >= Number(query.get('times'))) return null;
  faultCounts.set(key, seen + 1);
  if (query.get('hang') === '1') return { hang: true };
  return {
    status: Number(query.get('status')),
    retryAfter: query.get('retry_after'),
    echoHeaders: query.get('echo_headers') === '1',
  };
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const signal = signals[url.pathname];
    if (req.method !== 'POST' || !signal) {
      record({ path: url.pathname, status: 404 });
      res.writeHead(404).end();
      return;
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
    const encoding = type === 'application/x-protobuf' ? 'protobuf' : type === 'application/json' ? 'json' : null;
    const fault = faultFor(url);
    if (fault?.hang) {
      record({ path: url.pathname, encoding, status: 'hang', headers: req.headers });
      return;  // never answered; the client gives up
    }
    if (fault) {
      record({ path: url.pathname, encoding, status: fault.status, headers: req.headers });
      const headers = fault.retryAfter ? { 'retry-after': fault.retryAfter } : {};
      if (fault.echoHeaders) {
        headers['content-type'] = 'application/json';
        res.writeHead(fault.status, headers).end(JSON.stringify({ error: { message: `refused ${JSON.stringify(req.headers)}` } }));
        return;
      }
      res.writeHead(fault.status, headers).end();
      return;
    }
    if (!encoding) {
      record({ path: url.pathname, status: 415, error: `content-type ${type}` });
      res.writeHead(415).end();
      return;
    }
    let request;
    try {
      const message = decode(signal, encoding, Buffer.concat(chunks));
      request = signal.request.toObject(message, toObjectOptions);
      idsToHex(request);
    } catch (e) {
      record({ path: url.pathname, encoding, status: 400, error: String(e?.message ?? e) });
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: String(e) }));
      return;
    }
    record({ path: url.pathname, encoding, status: 200, headers: req.headers, request });
    const query = url.searchParams;
    if (query.get('html') === '1') {
      // A proxy or a web server on the wrong URL: 200, but no OTLP response.
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome</body></html>');
      return;
    }
    if (query.get('garbage') === '1') {
      // The right content type, a body that is no protobuf message.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from([0xff, 0xff, 0xff]));
      return;
    }
    // ?rejected=N&error=TEXT: a partial success, as OTLP/HTTP describes it.
    const reply = {};
    if (query.has('rejected')) {
      const rejected = Number(query.get('rejected'));
      reply.partialSuccess = {
        errorMessage: query.get('error') ?? '',
        ...(url.pathname === '/v1/traces' ? { rejectedSpans: rejected } : { rejectedDataPoints: rejected }),
      };
    }
    const response = signal.response.fromObject(reply);
    if (encoding === 'json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(signal.response.toObject(response, { longs: String })));
    } else {
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(signal.response.encode(response).finish()));
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
