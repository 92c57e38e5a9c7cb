// Peer comparison: one workload (a scripted model asks for add(a, b) K times,
// then answers "done") in agentkit and in three JS agent SDKs: LangGraph.js
// createReactAgent, the Vercel AI SDK generateText and the OpenAI Agents SDK
// run(). Every runtime runs in its own process, measured the same way:
//   - µs per iteration: median wall time of one run / K (one warm-up run of
//     min(K, 100) iterations first; then 1 to 25 timed runs, stopping once
//     3 s of timed runs are spent); the same for the process's CPU time
//     (all threads), which shows what a loaded machine took away;
//   - startup: from this process spawning it to its agent being constructed
//     (after one unreported K=1 pass of every runtime, so the file cache is warm);
//   - peak RSS: the process's maxrss at the end.
// Each run must make exactly K add calls and answer "done", or the runtime's
// row fails. The JS SDKs are pinned in tests/bench/peers/package-lock.json;
// `make bench` installs them with npm ci before running this.
//
//   bench_peers                 the comparison table for K = 10, 100, 1000
//   bench_peers --agentkit K    agentkit's side alone, one JSON line like the peer scripts
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/json.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "add_script.h"
#include "peer_process.h"
#include "quickest_cpu.h"

namespace {

using agentkit::Json;
using agentkit::testing::FakeLLM;
using namespace peer_bench;

constexpr const char* kWho = "bench_peers";
const std::vector<int> kIterationCounts = {10, 100, 1000};

struct Runtime {
  std::string name;
  std::string script;  // a peer script under the peers folder; empty for agentkit
};

const std::vector<Runtime> kRuntimes = {{"agentkit", ""},
                                        {"langgraph", "peer_langgraph.mjs"},
                                        {"ai-sdk", "peer_ai_sdk.mjs"},
                                        {"openai-agents", "peer_openai_agents.mjs"}};

// --- agentkit's side (the child process) ---

int run_agentkit(int k, double process_origin_ms) {
  int calls = 0;
  auto add = agentkit::tool("add")
                 .doc("Add two integers and return their sum to the caller.")
                 .side_effecting(false)
                 .idempotent()
                 .params("a", "b")
                 .fn([&calls](std::int64_t a, std::int64_t b) {
                   ++calls;
                   return a + b;
                 });
  const agentkit::Agent agent("adder", "fake", "You add numbers.", agentkit::cognition::react({add}),
                              {.max_iterations = k + 1});
  const double startup_ms = epoch_ms() - process_origin_ms;

  // One run of n iterations; its wall and CPU time (context creation
  // included), or nullopt after printing why the run went wrong.
  const auto run_once = [&](int n) -> std::optional<Elapsed> {
    auto llm = std::make_shared<FakeLLM>(add_script(n));
    llm->record_requests(false);
    calls = 0;
    const double cpu_start = cpu_ms();
    const auto start = Clock::now();
    auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
    ctx.store = nullptr;
    const auto result = agent.run("add", ctx);
    const Elapsed elapsed{std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                          cpu_ms() - cpu_start};
    if (result.stop_reason != agentkit::StopReason::answered || result.output != "done" || calls != n) {
      std::fprintf(stderr, "agentkit: expected %d add calls and the answer \"done\", got %d calls, stop %s, output \"%s\"\n",
                   n, calls, std::string(to_string(result.stop_reason)).c_str(), result.output.c_str());
      return std::nullopt;
    }
    return elapsed;
  };

  const auto timings = repeat(k, run_once);
  if (!timings) return 1;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const Json line = {{"peer", "agentkit"},
                     {"version", AGENTKIT_BENCH_VERSION},
                     {"k", k},
                     {"us_per_iteration", median(timings->per_iteration)},
                     {"cpu_us_per_iteration", median(timings->cpu_per_iteration)},
                     {"reps", timings->per_iteration.size()},
                     {"startup_ms", startup_ms},
                     {"peak_rss_kb", usage.ru_maxrss}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

// --- the comparison (the parent process) ---

// `cpu`: where agentkit's process runs (the JS peers, whose runtimes keep
// helper threads, keep every CPU).
std::optional<Figures> measure(const Runtime& runtime, int k, const std::filesystem::path& peers, int cpu) {
  const std::string ks = std::to_string(k);
  const std::vector<std::string> argv = runtime.script.empty()
                                            ? std::vector<std::string>{"/proc/self/exe", "--agentkit", ks}
                                            : std::vector<std::string>{"node", (peers / runtime.script).string(), ks};
  const auto output = bench::on_cpu(runtime.script.empty() ? cpu : -1, [&] { return run_child(kWho, argv); });
  return output ? parse_figures(kWho, *output, runtime.name, k) : std::nullopt;
}

// "peer / agentkit" as "12.3x"; "-" when agentkit has no figure.
std::string ratio(double peer, const std::optional<Figures>& agentkit, double Figures::*field) {
  return peer_bench::ratio(peer, agentkit ? std::optional<double>((*agentkit).*field) : std::nullopt);
}

// A Markdown table, readable as is and pasteable into the README.
void print_table(const std::map<std::pair<int, std::string>, std::optional<Figures>>& results) {
  // The µ headers are one byte wider than they look, hence %12s.
  std::printf("\n| %5s | %-13s | %-8s | %12s | %12s | %4s | %10s | %11s | %7s | %7s | %10s | %7s |\n", "K",
              "runtime", "version", "wall µs/it", "CPU µs/it", "reps", "startup ms", "peak RSS MB", "wall/ak", "CPU/ak",
              "startup/ak", "RSS/ak");
  std::printf("| ----: | :------------ | :------- | ----------: | ----------: | ---: | ---------: | ----------: | "
              "------: | ------: | ---------: | ------: |\n");
  for (const int k : kIterationCounts) {
    const auto& ak = results.at({k, "agentkit"});
    for (const auto& runtime : kRuntimes) {
      const auto& f = results.at({k, runtime.name});
      if (!f) {
        std::printf("| %5d | %-13s | FAILED (see above) |\n", k, runtime.name.c_str());
        continue;
      }
      const bool peer = !runtime.script.empty();
      std::printf("| %5d | %-13s | %-8s | %11.2f | %11.2f | %4d | %10.1f | %11.1f | %7s | %7s | %10s | %7s |\n", k,
                  runtime.name.c_str(), f->version.c_str(), f->us_per_iteration, f->cpu_us_per_iteration, f->reps,
                  f->startup_ms, f->peak_rss_kb / 1024.0,
                  peer ? ratio(f->us_per_iteration, ak, &Figures::us_per_iteration).c_str() : "-",
                  peer ? ratio(f->cpu_us_per_iteration, ak, &Figures::cpu_us_per_iteration).c_str() : "-",
                  peer ? ratio(f->startup_ms, ak, &Figures::startup_ms).c_str() : "-",
                  peer ? ratio(f->peak_rss_kb, ak, &Figures::peak_rss_kb).c_str() : "-");
    }
  }
  std::printf("\nx/ak: the runtime's figure divided by agentkit's (above 1x: agentkit is faster or smaller).\n"
              "On a loaded machine CPU/ak is the steadier ratio: long runs lose wall time to preemption, short ones "
              "rarely do.\n");
}

int compare() {
  const std::filesystem::path peers = AGENTKIT_BENCH_PEERS_DIR;
  if (!std::filesystem::is_directory(peers / "node_modules")) {
    std::fprintf(stderr,
                 "bench_peers: the JS peers are not installed (no %s).\n"
                 "Install them from the committed lockfile with `make bench`, or: npm ci --prefix %s\n",
                 (peers / "node_modules").c_str(), peers.c_str());
    return 1;
  }
  std::printf("Peer comparison: a scripted model asks for add(a, b) K times, then answers; each row is one process.\n");
  const std::string load_before = load_average();
  std::map<std::pair<int, std::string>, std::optional<Figures>> results;
  bool ok = true;
  // One unreported K=1 pass first, so no row pays for a cold file cache.
  for (const auto& runtime : kRuntimes) {
    std::printf("warming up %s\n", runtime.name.c_str());
    std::fflush(stdout);
    ok = measure(runtime, 1, peers, -1).has_value() && ok;
  }
  // Which CPU is quicker changes within minutes: found again for each K.
  std::vector<std::string> cpus;
  for (const int k : kIterationCounts) {
    const bench::Calibration calibration = bench::calibrate_cpus();
    cpus.push_back("K=" + std::to_string(k) + ": " + (calibration.cpu < 0 ? "any CPU" : calibration.summary));
    for (const auto& runtime : kRuntimes) {
      std::printf("running %s, K=%d\n", runtime.name.c_str(), k);
      std::fflush(stdout);
      auto& figures = results[{k, runtime.name}] = measure(runtime, k, peers, calibration.cpu);
      ok = ok && figures.has_value();
    }
  }
  print_table(results);
  std::printf("%ld cores; 1-minute load average %s before, %s after.\n", sysconf(_SC_NPROCESSORS_ONLN),
              load_before.c_str(), load_average().c_str());
  std::printf("agentkit on\n");
  for (const auto& line : cpus) std::printf("  %s\n", line.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const double main_ms = epoch_ms();
  if (argc == 3 && std::strcmp(argv[1], "--agentkit") == 0) {
    const int k = std::atoi(argv[2]);
    if (k < 1) {
      std::fprintf(stderr, "usage: %s --agentkit K   (K = number of add calls, a positive integer)\n", argv[0]);
      return 2;
    }
    // Startup counts from the parent's spawn when it says when that was.
    const char* spawn = std::getenv(kSpawnEnv);
    const double origin = spawn != nullptr && std::atof(spawn) > 0 ? std::atof(spawn) : main_ms;
    return run_agentkit(k, origin);
  }
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--agentkit K]\n", argv[0]);
    return 2;
  }
  return compare();
}
