// The measurement loop every peer script shares: parse K, time the agent's
// construction (startup), run the workload repeatedly, check each run did
// exactly K add calls and answered "done", and print one JSON line.
//
//   node peer_<name>.mjs K
//
// us_per_iteration is the median wall time of one run divided by K, and
// cpu_us_per_iteration the same for the process's CPU time (all threads; it
// shows how much of the wall time a loaded machine took away).
// startup_ms is the time from process start to "agent constructed": from the
// parent's spawn time when AGENTKIT_BENCH_SPAWN_EPOCH_MS is set (bench_peers
// sets it, so every runtime is measured from the same point), otherwise from
// performance.timeOrigin. Both are read with performance.timeOrigin/now().
import { readFileSync } from 'node:fs';

// Repetition policy, the same in bench_peers.cpp for agentkit: one warm-up
// run of min(K, kWarmupIterations) iterations, then 1 to kMaxReps timed runs
// of K, stopping once kBudgetMs of timed runs have been spent.
const kWarmupIterations = 100;
const kMaxReps = 25;
const kBudgetMs = 3000;

export function parseK(argv = process.argv) {
  const k = Number(argv[2]);
  if (!Number.isInteger(k) || k < 1) {
    process.stderr.write(`usage: node ${argv[1]} K   (K = number of add calls, a positive integer)\n`);
    process.exit(2);
  }
  return k;
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
export async function measure({ peer, version, k, add, runOnce }) {
  const startup = startupMs();
  const check = async (n) => {
    add.calls = 0;
    const answer = await runOnce(n);
    if (add.calls !== n || answer !== 'done') {
      throw new Error(`${peer}: expected ${n} add calls and the answer "done", got ${add.calls} calls and ${JSON.stringify(answer)}`);
    }
  };
  await check(Math.min(k, kWarmupIterations));
  const perIteration = [];
  const cpuPerIteration = [];
  let spent = 0;
  while (perIteration.length < kMaxReps && (perIteration.length === 0 || spent < kBudgetMs)) {
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
