// A scripted MCP server for agentkit's tests and benchmark: newline-delimited
// JSON-RPC on stdin/stdout, no dependencies. Each tool exercises one client
// behaviour (see TOOLS below).
//
//   node fake_server.mjs [--version <revision>] [--page-size <n>]
//                        [--ignore-stdin-eof] [--ignore-sigterm]
//
// --version answers initialize with that revision (default: the client's).
// --page-size splits tools/list into pages joined by nextCursor.
// --ignore-stdin-eof keeps running after stdin closes; --ignore-sigterm
// ignores SIGTERM (both exercise the client's shutdown escalation).
// The method fake/call_metas (not MCP) answers {metas: [...]}: the params._meta
// of every tools/call received so far, in order (null for a call without one).

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};

const pageSize = Number(option('--page-size', '1000'));
const forcedVersion = option('--version', '');
if (flag('--ignore-sigterm')) process.on('SIGTERM', () => {});
if (flag('--ignore-stdin-eof')) setInterval(() => {}, 1 << 30);

const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
const text = (t) => ({ type: 'text', text: t });
const object = (properties, required = []) => ({ type: 'object', properties, required });
const readOnly = { readOnlyHint: true, idempotentHint: true, destructiveHint: false };

let extraTool = false;
const cancelled = [];          // params of every notifications/cancelled received
const callMetas = [];          // the params._meta of every tools/call received (null when absent)
const serverPending = new Map(); // our requests to the client, by id
let nextServerId = 1;

function askClient(method, params, id) {
  const requestId = id ?? nextServerId++;
  send({ jsonrpc: '2.0', id: requestId, method, params });
  return new Promise((resolve) => serverPending.set(JSON.stringify(requestId), resolve));
}

const TOOLS = {
  echo: {
    description: 'Echoes the text back.',
    inputSchema: { ...object({ text: { type: 'string' } }, ['text']), additionalProperties: false },
    annotations: readOnly,
    run: (a) => ({ content: [text(a.text)] }),
  },
  timed_echo: {
    description: 'Echoes the text and reports its own processing time in microseconds.',
    inputSchema: object({ text: { type: 'string' } }, ['text']),
    annotations: readOnly,
    run: (a, ctx) => ({
      content: [text(a.text)],
      structuredContent: { text: a.text, server_us: Number(process.hrtime.bigint() - ctx.received) / 1000 },
    }),
  },
  all_content: {
    description: 'Returns one content block of every type.',
    inputSchema: object({}),
    annotations: readOnly,
    run: () => ({
      content: [
        text('first line'),
        { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUg==' },
        { type: 'audio', mimeType: 'audio/wav', data: 'UklGRiQAAABXQVZFZm10IBAAAAA=' },
        { type: 'resource_link', uri: 'file:///docs/a.txt', name: 'a.txt', mimeType: 'text/plain', description: 'the A file' },
        { type: 'resource', resource: { uri: 'file:///docs/b.txt', mimeType: 'text/plain', text: 'contents of b' } },
        { type: 'resource', resource: { uri: 'file:///docs/c.bin', mimeType: 'application/octet-stream', blob: 'AAECAw==' } },
      ],
    }),
  },
  weather: {
    description: 'Returns structured weather.',
    inputSchema: object({ city: { type: 'string' } }, ['city']),
    outputSchema: object({ temperature: { type: 'number' }, city: { type: 'string' } }),
    annotations: readOnly,
    run: (a) => ({
      content: [text(JSON.stringify({ temperature: 21.5, city: a.city }))],
      structuredContent: { temperature: 21.5, city: a.city },
    }),
  },
  fail: {
    description: 'Always reports a tool error.',
    inputSchema: object({}),
    run: () => ({ content: [text('disk is full')], isError: true }),
  },
  vanished: {
    description: 'Listed, but the server answers as if it did not exist (the isError shape).',
    inputSchema: object({}),
    run: () => ({ content: [text('MCP error -32602: Tool vanished not found')], isError: true }),
  },
  rpc_unknown: {
    description: 'Listed, but the server answers with the JSON-RPC unknown-tool error.',
    inputSchema: object({}),
    run: () => ({ rpcError: { code: -32602, message: 'Unknown tool: rpc_unknown' } }),
  },
  hang: {
    description: 'Never answers.',
    inputSchema: object({}),
    run: () => new Promise(() => {}),
  },
  slow: {
    description: 'Answers after `ms` milliseconds, cancelled or not.',
    inputSchema: object({ ms: { type: 'integer' } }, ['ms']),
    annotations: readOnly,
    run: (a) => new Promise((r) => setTimeout(() => r({ content: [text(`slept ${a.ms} ms`)] }), a.ms)),
  },
  cancellations: {
    description: 'Returns every notifications/cancelled received so far.',
    inputSchema: object({}),
    annotations: readOnly,
    run: () => ({ content: [text('see structured')], structuredContent: { cancelled } }),
  },
  die: {
    description: 'Exits with status 3 in the middle of the call.',
    inputSchema: object({}),
    run: () => {
      process.stderr.write('fake server: dying on purpose\n');
      process.exit(3);
    },
  },
  garbage: {
    description: 'Writes lines that are not JSON-RPC before answering.',
    inputSchema: object({}),
    run: () => {
      process.stdout.write('this is not json\n');
      process.stdout.write('{"broken": \n');
      process.stdout.write(Buffer.from([0xff, 0xfe, 0x7b, 0x0a]));
      process.stdout.write('[1, 2, 3]\n');
      process.stdout.write('"just a string"\n');
      process.stdout.write('{"jsonrpc":"2.0"}\n');
      process.stdout.write('{"jsonrpc":"2.0","id":987654,"result":{}}\n');
      process.stdout.write('['.repeat(100000) + '\n');
      process.stdout.write('\n\r\n');
      return { content: [text('answer after garbage')] };
    },
  },
  progress: {
    description: 'Reports three progress notifications, then answers.',
    inputSchema: object({}),
    annotations: readOnly,
    run: async (a, ctx) => {
      const token = ctx.meta?.progressToken;
      for (let i = 1; i <= 3; i++) {
        if (token !== undefined) {
          send({ jsonrpc: '2.0', method: 'notifications/progress',
                 params: { progressToken: token, progress: i, total: 3, message: `step ${i}` } });
        }
        await new Promise((r) => setTimeout(r, 5));
      }
      return { content: [text(`done; token type ${typeof token}`)] };
    },
  },
  ask_client: {
    description: 'Sends ping, roots/list, sampling and elicitation requests to the client; returns the replies.',
    inputSchema: object({}),
    run: async (a, ctx) => {
      // Request ids of both JSON types, one equal to the pending call's own id.
      const replies = await Promise.all([
        askClient('ping', {}, 'ping-1'),
        askClient('roots/list', {}, ctx.id),
        askClient('sampling/createMessage', { messages: [], maxTokens: 5 }, 4242),
        askClient('elicitation/create', { message: 'name?', requestedSchema: object({}) }, 'elicit-1'),
      ]);
      return { content: [text('asked')], structuredContent: { replies } };
    },
  },
  change_tools: {
    description: 'Adds a tool and sends notifications/tools/list_changed.',
    inputSchema: object({}),
    run: () => {
      extraTool = true;
      setTimeout(() => send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }), 1);
      return { content: [text('changed')] };
    },
  },
  env: {
    description: 'Returns the names of the environment variables it received.',
    inputSchema: object({}),
    annotations: readOnly,
    run: () => ({ content: [text('see structured')], structuredContent: { names: Object.keys(process.env).sort(), env: process.env } }),
  },
  pid: {
    description: 'Returns its process id.',
    inputSchema: object({}),
    annotations: readOnly,
    run: () => ({ content: [text(String(process.pid))] }),
  },
  'weird.name/v2': {
    description: 'A name outside what model APIs accept.',
    inputSchema: object({}),
    annotations: readOnly,
    run: () => ({ content: [text('weird ran')] }),
  },
  noisy: {
    description: 'Writes 2 MB to stderr, then answers.',
    inputSchema: object({}),
    run: () => {
      const line = 'x'.repeat(1023) + '\n';
      for (let i = 0; i < 2048; i++) process.stderr.write(line);
      return { content: [text('quiet again')] };
    },
  },
};

function listedTools() {
  const names = Object.keys(TOOLS);
  if (extraTool) names.push('added_tool');
  return names.map((name) => {
    if (name === 'added_tool') return { name, description: 'Appears after change_tools.', inputSchema: object({}) };
    const { run, ...spec } = TOOLS[name];
    return { name, ...spec };
  });
}

async function handleRequest(message, received) {
  const { id, method, params = {} } = message;
  const reply = (result) => send({ jsonrpc: '2.0', id, result });
  const fail = (code, msg) => send({ jsonrpc: '2.0', id, error: { code, message: msg } });
  switch (method) {
    case 'initialize':
      return reply({
        protocolVersion: forcedVersion || params.protocolVersion,
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fake', version: '1.0.0' },
        instructions: 'a scripted server',
      });
    case 'ping':
      return reply({});
    case 'tools/list': {
      const all = listedTools();
      const start = params.cursor ? Number(params.cursor) : 0;
      const page = all.slice(start, start + pageSize);
      const result = { tools: page };
      if (start + pageSize < all.length) result.nextCursor = String(start + pageSize);
      return reply(result);
    }
    case 'fake/call_metas':  // not MCP: how tests see what a tools/call carried in _meta
      return reply({ metas: callMetas });
    case 'tools/call': {
      callMetas.push(params._meta ?? null);
      const tool = TOOLS[params.name];
      if (!tool && !(params.name === 'added_tool' && extraTool)) return fail(-32602, `Unknown tool: ${params.name}`);
      if (!tool) return reply({ content: [text('added tool ran')] });
      const result = await tool.run(params.arguments ?? {}, { id, meta: params._meta, received });
      if (result.rpcError) return fail(result.rpcError.code, result.rpcError.message);
      return reply(result);
    }
    default:
      return fail(-32601, `Method not found: ${method}`);
  }
}

function handleLine(line, received) {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.method === undefined) {
    const resolve = serverPending.get(JSON.stringify(message.id));
    if (resolve) {
      serverPending.delete(JSON.stringify(message.id));
      resolve(message);
    }
    return;
  }
  if (message.id === undefined) {
    if (message.method === 'notifications/cancelled') cancelled.push(message.params);
    return;
  }
  handleRequest(message, received).catch((e) => send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: String(e) } }));
}

// Split on "\n" only: U+2028 and U+2029 are ordinary characters inside a line.
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const received = process.hrtime.bigint();
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    handleLine(line, received);
  }
});
process.stdin.on('end', () => {
  if (!flag('--ignore-stdin-eof')) process.exit(0);
});
