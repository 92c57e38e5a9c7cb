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
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using agentkit::Json;
using agentkit::testing::FakeLLM;

// The repetition policy; tests/bench/peers/harness.mjs uses the same numbers.
constexpr int kWarmupIterations = 100;
constexpr int kMaxReps = 25;
constexpr double kBudgetMs = 3000;
constexpr auto kChildTimeout = std::chrono::minutes(10);
constexpr const char* kSpawnEnv = "AGENTKIT_BENCH_SPAWN_EPOCH_MS";
const std::vector<int> kIterationCounts = {10, 100, 1000};

struct Runtime {
  std::string name;
  std::string script;  // a peer script under the peers folder; empty for agentkit
};

const std::vector<Runtime> kRuntimes = {{"agentkit", ""},
                                        {"langgraph", "peer_langgraph.mjs"},
                                        {"ai-sdk", "peer_ai_sdk.mjs"},
                                        {"openai-agents", "peer_openai_agents.mjs"}};

struct Figures {
  std::string version;
  double us_per_iteration = 0;
  double cpu_us_per_iteration = 0;
  int reps = 0;
  double startup_ms = 0;
  double peak_rss_kb = 0;
};

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, pattern, args...);
  return buf;
}

double epoch_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

  struct Elapsed {
    double wall_ms, cpu_ms;
  };
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

  if (!run_once(std::min(k, kWarmupIterations))) return 1;
  std::vector<double> per_iteration, cpu_per_iteration;
  for (double spent = 0; per_iteration.size() < kMaxReps && (per_iteration.empty() || spent < kBudgetMs);) {
    const auto elapsed = run_once(k);
    if (!elapsed) return 1;
    spent += elapsed->wall_ms;
    per_iteration.push_back(elapsed->wall_ms * 1000.0 / k);
    cpu_per_iteration.push_back(elapsed->cpu_ms * 1000.0 / k);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const Json line = {{"peer", "agentkit"},
                     {"version", AGENTKIT_BENCH_VERSION},
                     {"k", k},
                     {"us_per_iteration", median(per_iteration)},
                     {"cpu_us_per_iteration", median(cpu_per_iteration)},
                     {"reps", per_iteration.size()},
                     {"startup_ms", startup_ms},
                     {"peak_rss_kb", usage.ru_maxrss}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}

// --- the comparison (the parent process) ---

// This process's environment with kSpawnEnv set to now.
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  const std::string prefix = std::string(kSpawnEnv) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  }
  env.push_back(prefix + format("%.3f", epoch_ms()));
  return env;
}

// Appends what fd delivers until EOF; false when the deadline passes first.
bool read_until_eof(int fd, std::string& out, Clock::time_point deadline) {
  for (char buf[4096];;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{fd, POLLIN, 0};
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0) return false;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// Runs argv with stdout captured and kSpawnEnv set to the spawn time; stderr
// passes through. Returns stdout of a zero exit, or nullopt after printing why not.
std::optional<std::string> run_child(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "bench_peers: pipe: %s\n", std::strerror(errno));
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto env_storage = child_environment();
  for (auto& e : env_storage) env.push_back(e.data());
  env.push_back(nullptr);

  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    std::fprintf(stderr, "bench_peers: cannot start `%s`: %s\n", command.c_str(), std::strerror(rc));
    return std::nullopt;
  }
  std::string output;
  const bool finished = read_until_eof(out[0], output, Clock::now() + kChildTimeout);
  if (!finished) kill(pid, SIGKILL);
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished) {
    std::fprintf(stderr, "bench_peers: `%s` timed out after %lld s\n", command.c_str(),
                 static_cast<long long>(std::chrono::seconds(kChildTimeout).count()));
  } else if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "bench_peers: `%s` was killed by signal %d\n", command.c_str(), WTERMSIG(status));
  } else if (WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_peers: `%s` exited with status %d\n", command.c_str(), WEXITSTATUS(status));
  } else {
    return output;
  }
  return std::nullopt;
}

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto newline = text.rfind('\n', end);
  const auto begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

// The figures in the last line of a runtime's output, checked against what
// was asked for; nullopt after printing why the output is unusable.
std::optional<Figures> parse_figures(const std::string& output, const std::string& runtime, int k) {
  const std::string line = last_line(output);
  try {
    const Json j = Json::parse(line);
    if (j.at("peer").get<std::string>() != runtime || j.at("k").get<int>() != k) {
      throw std::runtime_error("peer or k differs from the one asked for");
    }
    return Figures{.version = j.at("version").get<std::string>(),
                   .us_per_iteration = j.at("us_per_iteration").get<double>(),
                   .cpu_us_per_iteration = j.at("cpu_us_per_iteration").get<double>(),
                   .reps = j.at("reps").get<int>(),
                   .startup_ms = j.at("startup_ms").get<double>(),
                   .peak_rss_kb = j.at("peak_rss_kb").get<double>()};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_peers: unusable output from %s (K=%d): %s\n  line: %s\n", runtime.c_str(), k, e.what(),
                 line.c_str());
    return std::nullopt;
  }
}

std::optional<Figures> measure(const Runtime& runtime, int k, const std::filesystem::path& peers) {
  const std::string ks = std::to_string(k);
  const std::vector<std::string> argv = runtime.script.empty()
                                            ? std::vector<std::string>{"/proc/self/exe", "--agentkit", ks}
                                            : std::vector<std::string>{"node", (peers / runtime.script).string(), ks};
  const auto output = run_child(argv);
  return output ? parse_figures(*output, runtime.name, k) : std::nullopt;
}

// "peer / agentkit" as "12.3x" (or "1234x"); "-" when agentkit has no figure.
std::string ratio(double peer, const std::optional<Figures>& agentkit, double Figures::*field) {
  if (!agentkit || (*agentkit).*field <= 0) return "-";
  const double r = peer / ((*agentkit).*field);
  return format(r < 100 ? "%.1fx" : "%.0fx", r);
}

std::string load_average() {
  double one_minute = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &one_minute) != 1) one_minute = -1;
    std::fclose(f);
  }
  return one_minute < 0 ? "unknown" : format("%.1f", one_minute);
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
    ok = measure(runtime, 1, peers).has_value() && ok;
  }
  for (const int k : kIterationCounts) {
    for (const auto& runtime : kRuntimes) {
      std::printf("running %s, K=%d\n", runtime.name.c_str(), k);
      std::fflush(stdout);
      auto& figures = results[{k, runtime.name}] = measure(runtime, k, peers);
      ok = ok && figures.has_value();
    }
  }
  print_table(results);
  std::printf("%ld cores; 1-minute load average %s before, %s after.\n", sysconf(_SC_NPROCESSORS_ONLN),
              load_before.c_str(), load_average().c_str());
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
