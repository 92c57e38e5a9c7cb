// An MCP client built on the official TypeScript SDK, for testing agentkit's
// MCP server against the reference implementation.
//
//   node sdk_client.mjs [--modules DIR] [--script FILE | --steps JSON] --http URL [--header K:V]...
//   node sdk_client.mjs [--modules DIR] [--script FILE | --steps JSON] --stdio CMD ARG...
//
// --stdio takes the rest of the command line. --modules is the directory whose
// node_modules holds @modelcontextprotocol/sdk (default: $AGENTKIT_MCP_SERVERS_DIR,
// then this script's directory). A scenario is a JSON list of steps:
//   {"op": "list_tools"}
//   {"op": "call_tool", "name": "x", "arguments": {...}, "progress": true, "cancel_after_ms": 100, "timeout_ms": 60000}
//   {"op": "expect_elicitation", "action": "accept", "content": {...}}   queues the answer to the next elicitation
//   {"op": "wait_list_changed", "timeout_ms": 5000}                       until a tools/list_changed arrives
//   {"op": "ping"}
//   {"op": "sleep", "ms": 100}
// Output: one JSON line per step ({"step": i, "op": ..., ...result or "error": {code, message}}),
// after a first {"op": "connect", ...} line; an elicitation request prints an
// {"op": "elicitation", ...} line when it arrives. Exit status: 0 when every
// step ran (a step may still report an error), 1 for bad usage, 2 when the
// connection fails or closes before the scenario ends.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function usage(message) {
  process.stderr.write(`sdk_client: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = { headers: {}, steps: null, modules: process.env.AGENTKIT_MCP_SERVERS_DIR };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${arg} needs a value`));
    if (arg === "--stdio") {
      opts.stdio = argv.slice(i + 1);
      if (opts.stdio.length === 0) usage("--stdio needs a command");
      break;
    } else if (arg === "--http") opts.http = value();
    else if (arg === "--header") {
      const h = value();
      const colon = h.indexOf(":");
      if (colon <= 0) usage(`--header wants K:V, got ${h}`);
      opts.headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
    } else if (arg === "--script") opts.steps = JSON.parse(readFileSync(value(), "utf8"));
    else if (arg === "--steps") opts.steps = JSON.parse(value());
    else if (arg === "--modules") opts.modules = value();
    else usage(`unknown argument ${arg}`);
  }
  if (!opts.stdio === !opts.http) usage("give exactly one of --stdio CMD... or --http URL");
  if (!Array.isArray(opts.steps)) usage("give a scenario: --script FILE or --steps JSON (a list of steps)");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const require = createRequire(join(opts.modules || dirname(fileURLToPath(import.meta.url)), "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const types = require("@modelcontextprotocol/sdk/types.js");

const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const errorOf = (e) => ({ code: e?.code ?? null, name: e?.name ?? "Error", message: String(e?.message ?? e) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const client = new Client({ name: "agentkit-sdk-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });

// Elicitation answers queued by expect_elicitation; none queued declines.
const answers = [];
client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
  const answer = answers.shift() ?? { action: "decline" };
  print({ op: "elicitation", params: request.params, answered: answer.action });
  return answer;
});

let listChanged = 0;
let listChangedSeen = 0;
client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
  ++listChanged;
});

let connected = false;
let finished = false;
client.onclose = () => {
  if (finished || !connected) return;
  print({ op: "transport_closed" });
  process.exit(2);
};

const transport = opts.stdio
  ? new StdioClientTransport({ command: opts.stdio[0], args: opts.stdio.slice(1), stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(opts.http), { requestInit: { headers: opts.headers } });
let protocolVersion = null;
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  protocolVersion = v;
  setVersion?.(v);
};

try {
  await client.connect(transport);
  connected = true;
} catch (e) {
  print({ op: "connect", error: errorOf(e) });
  process.exit(2);
}
print({
  op: "connect",
  protocolVersion,
  serverInfo: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  sessionId: transport.sessionId ?? null,
});

async function callTool(step) {
  const progress = [];
  const controller = new AbortController();
  const options = { signal: controller.signal, timeout: step.timeout_ms ?? 60_000 };
  if (step.progress) {
    options.onprogress = (p) => progress.push(p);
    options.resetTimeoutOnProgress = true;
  }
  const timer = step.cancel_after_ms !== undefined ? setTimeout(() => controller.abort("cancelled by the scenario"), step.cancel_after_ms) : null;
  try {
    const result = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, options);
    return { name: step.name, result, progress };
  } catch (e) {
    return { name: step.name, error: errorOf(e), progress, cancelled: controller.signal.aborted };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

async function runStep(step) {
  switch (step.op) {
    case "list_tools": {
      const { tools } = await client.listTools();
      return { tools };
    }
    case "call_tool":
      return await callTool(step);
    case "expect_elicitation":
      answers.push(step.content === undefined ? { action: step.action } : { action: step.action, content: step.content });
      return { queued: answers.length };
    case "wait_list_changed": {
      const deadline = Date.now() + (step.timeout_ms ?? 5000);
      while (listChanged <= listChangedSeen && Date.now() < deadline) await sleep(10);
      if (listChanged <= listChangedSeen) return { error: { code: null, name: "Timeout", message: "no tools/list_changed" } };
      listChangedSeen = listChanged;
      return { received: true };
    }
    case "ping":
      await client.ping();
      return { ok: true };
    case "sleep":
      await sleep(step.ms ?? 0);
      return {};
    default:
      return { error: { code: null, name: "UsageError", message: `unknown op ${step.op}` } };
  }
}

for (const [i, step] of opts.steps.entries()) {
  let out;
  try {
    out = await runStep(step);
  } catch (e) {
    out = { error: errorOf(e) };
  }
  print({ step: i, op: step.op, ...out });
}
finished = true;
await client.close();
process.exit(0);
