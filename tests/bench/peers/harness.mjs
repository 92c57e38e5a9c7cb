// The measurement loop every peer script shares: parse K, time the agent's
// construction (startup), run the workload repeatedly, check each run did
// exactly K add calls and answered "done", and print one JSON line.
//
//   node peer_<name>.mjs K                      a scripted model in-process (bench_peers)
//   node peer_<name>.mjs K ORIGIN [stream]      the SDK's real OpenAI Chat Completions
//                                               client against bench_peers_http's server
//                                               at ORIGIN (http://127.0.0.1:PORT)
//
// In HTTP mode the server answers the add workload of n iterations at
// ORIGIN/k/<n>/v1 (chatBaseUrl); "stream" asks for a streamed reply.
//
// us_per_iteration is the median wall time of one run divided by K, and
// cpu_us_per_iteration the same for the process's CPU time (all threads; it
// shows how much of the wall time a loaded machine took away).
// startup_ms is the time from process start to "agent constructed": from the
// parent's spawn time when AGENTKIT_BENCH_SPAWN_EPOCH_MS is set (bench_peers
// sets it, so every runtime is measured from the same point), otherwise from
// performance.timeOrigin. Both are read with performance.timeOrigin/now().
import { readFileSync } from 'node:fs';

// Repetition policy, the same in peer_process.h for agentkit and the floors:
// warm-up runs of min(K, kWarmupIterations) iterations, at least kWarmupRuns
// of them and kWarmupIterations iterations in all; then timed runs of K until
// kMinReps runs and kMinTimedIterations iterations are timed, or kBudgetMs of
// timed runs are spent (at least one run, at most kMaxReps).
const kWarmupIterations = 100;
const kWarmupRuns = 5;
const kMinReps = 25;
const kMinTimedIterations = 1000;
const kMaxReps = 1000;
const kBudgetMs = 3000;

export function parseK(argv = process.argv) {
  const k = Number(argv[2]);
  const origin = argv[3];
  const extra = argv[4];
  if (!Number.isInteger(k) || k < 1 || (origin !== undefined && !/^https?:\/\//.test(origin)) ||
      (extra !== undefined && extra !== 'stream') || argv.length > 5) {
    process.stderr.write(`usage: node ${argv[1]} K [ORIGIN [stream]]   (K = number of add calls, a positive integer)\n`);
    process.exit(2);
  }
  return k;
}

// HTTP mode's server and whether to stream, or null for the scripted model.
export function parseHttp(argv = process.argv) {
  return argv[3] === undefined ? null : { origin: argv[3].replace(/\/+$/, ''), stream: argv[4] === 'stream' };
}

// The OpenAI base URL whose server answers the add workload of n iterations.
export function chatBaseUrl(http, n) {
  return `${http.origin}/k/${n}/v1`;
}

// The value of make(n), made once per n: a client (and its connections)
// lives as long as the process.
export function perN(make) {
  const made = new Map();
  return (n) => {
    if (!made.has(n)) made.set(n, make(n));
    return made.get(n);
  };
}

// The fields HTTP mode adds to the JSON line: the mode and the provider package.
export function httpFields(http, providerPackage) {
  if (!http) return {};
  return { mode: http.stream ? 'http-stream' : 'http', provider: `${providerPackage} ${packageVersion(providerPackage)}` };
}

export function packageVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

function nowEpochMs() {
  return performance.timeOrigin + performance.now();
}

function startupMs() {
  const spawn = Number(process.env.AGENTKIT_BENCH_SPAWN_EPOCH_MS);
  return Number.isFinite(spawn) && spawn > 0 ? nowEpochMs() - spawn : performance.now();
}

function median(values) {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}

// A counting add(a, b): every peer registers this function through its own
// tool API, with a schema requiring two integers.
export function countingAdd() {
  const add = ({ a, b }) => {
    add.calls += 1;
    return a + b;
  };
  add.calls = 0;
  return add;
}

// runOnce(n) runs the workload once with n add calls and returns the final
// answer text; it must leave add.calls at n and the answer at "done", or the
// benchmark fails.
// `extra` goes into the JSON line as it is (httpFields).
export async function measure({ peer, version, k, add, runOnce, extra = {} }) {
  const startup = startupMs();
  const check = async (n) => {
    add.calls = 0;
    const answer = await runOnce(n);
    if (add.calls !== n || answer !== 'done') {
      throw new Error(`${peer}: expected ${n} add calls and the answer "done", got ${add.calls} calls and ${JSON.stringify(answer)}`);
    }
  };
  const warmup = Math.min(k, kWarmupIterations);
  for (let runs = 0, done = 0; runs < kWarmupRuns || done < kWarmupIterations; ++runs, done += warmup) {
    await check(warmup);
  }
  const perIteration = [];
  const cpuPerIteration = [];
  let spent = 0;
  const more = () => {
    const reps = perIteration.length;
    if (reps === 0) return true;
    return reps < kMaxReps && (reps < kMinReps || reps * k < kMinTimedIterations) && spent < kBudgetMs;
  };
  while (more()) {
    const cpuStart = process.cpuUsage();
    const start = performance.now();
    await check(k);
    const elapsed = performance.now() - start;
    const cpu = process.cpuUsage(cpuStart);
    spent += elapsed;
    perIteration.push((elapsed * 1000) / k);
    cpuPerIteration.push((cpu.user + cpu.system) / k);
  }
  const line = {
    peer,
    version,
    k,
    us_per_iteration: median(perIteration),
    cpu_us_per_iteration: median(cpuPerIteration),
    reps: perIteration.length,
    startup_ms: startup,
    peak_rss_kb: process.resourceUsage().maxRSS,
    ...extra,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
}

// Runs main() and turns any failure into a message and exit status 1.
export function runMain(main) {
  main().catch((error) => {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(1);
  });
}
