#pragma once
// What bench_peers and bench_peers_http share: the repetition policy (the
// same numbers as tests/bench/peers/harness.mjs), clocks, running a child
// process with its stdout captured, and reading the JSON line each runtime's
// child prints.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/json.h>

extern char** environ;

namespace peer_bench {

using Clock = std::chrono::steady_clock;

// The repetition policy; tests/bench/peers/harness.mjs uses the same numbers:
// warm-up runs of min(K, kWarmupIterations) iterations, at least
// kWarmupRuns of them and kWarmupIterations iterations in all; then timed
// runs of K until kMinReps runs and kMinTimedIterations iterations are
// timed, or kBudgetMs of timed runs are spent (at least one run, at most
// kMaxReps). A short run (K = 10 is a few tens of µs in agentkit) is timed
// many times, so its median is not one cold run's.
constexpr int kWarmupIterations = 100;
constexpr int kWarmupRuns = 5;
constexpr int kMinReps = 25;
constexpr int kMinTimedIterations = 1000;
constexpr int kMaxReps = 1000;
constexpr double kBudgetMs = 3000;
constexpr auto kChildTimeout = std::chrono::minutes(10);
constexpr const char* kSpawnEnv = "AGENTKIT_BENCH_SPAWN_EPOCH_MS";

struct Figures {
  std::string version;
  double us_per_iteration = 0;
  double cpu_us_per_iteration = 0;
  int reps = 0;
  double startup_ms = 0;
  double peak_rss_kb = 0;
  agentkit::Json line;  // the whole JSON line, for fields only one bench reads
};

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, pattern, args...);
  return buf;
}

inline double epoch_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The process's CPU time (all threads).
inline double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Elapsed {
  double wall_ms, cpu_ms;
};

struct Timings {
  std::vector<double> per_iteration, cpu_per_iteration;  // µs
};

// The repetition policy over run_once(n) -> std::optional<Elapsed> (nullopt:
// the run went wrong, and run_once said why). nullopt when any run failed.
template <typename RunOnce>
std::optional<Timings> repeat(int k, RunOnce&& run_once) {
  const int warmup = std::min(k, kWarmupIterations);
  for (int runs = 0, done = 0; runs < kWarmupRuns || done < kWarmupIterations; ++runs, done += warmup) {
    if (!run_once(warmup)) return std::nullopt;
  }
  Timings t;
  const auto more = [&](double spent) {
    const auto reps = static_cast<int>(t.per_iteration.size());
    if (reps == 0) return true;
    return reps < kMaxReps && (reps < kMinReps || reps * k < kMinTimedIterations) && spent < kBudgetMs;
  };
  for (double spent = 0; more(spent);) {
    const std::optional<Elapsed> elapsed = run_once(k);
    if (!elapsed) return std::nullopt;
    spent += elapsed->wall_ms;
    t.per_iteration.push_back(elapsed->wall_ms * 1000.0 / k);
    t.cpu_per_iteration.push_back(elapsed->cpu_ms * 1000.0 / k);
  }
  return t;
}

// This process's environment with kSpawnEnv set to now.
inline std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  const std::string prefix = std::string(kSpawnEnv) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  }
  env.push_back(prefix + format("%.3f", epoch_ms()));
  return env;
}

// Appends what fd delivers until EOF; false when the deadline passes first.
inline bool read_until_eof(int fd, std::string& out, Clock::time_point deadline) {
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

// A child started with stdout (and, when asked, stdin) on pipes; stderr
// passes through. kSpawnEnv is set to the spawn time.
struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stdin_fd = -1;  // -1 unless asked for
};

inline std::string command_line(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  return command;
}

// nullopt after printing why the child could not be started.
inline std::optional<Child> spawn_child(const char* who, const std::vector<std::string>& argv, bool with_stdin = false) {
  int out[2];
  int in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || (with_stdin && pipe2(in, O_CLOEXEC) != 0)) {
    std::fprintf(stderr, "%s: pipe: %s\n", who, std::strerror(errno));
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  if (with_stdin) posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
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
  if (with_stdin) close(in[0]);
  if (rc != 0) {
    close(out[0]);
    if (with_stdin) close(in[1]);
    std::fprintf(stderr, "%s: cannot start `%s`: %s\n", who, command_line(argv).c_str(), std::strerror(rc));
    return std::nullopt;
  }
  return Child{pid, out[0], with_stdin ? in[1] : -1};
}

// Waits for the child; true for a zero exit, else false after printing why.
inline bool reap(const char* who, const std::string& command, pid_t pid, bool timed_out) {
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    std::fprintf(stderr, "%s: `%s` timed out after %lld s\n", who, command.c_str(),
                 static_cast<long long>(std::chrono::seconds(kChildTimeout).count()));
  } else if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "%s: `%s` was killed by signal %d\n", who, command.c_str(), WTERMSIG(status));
  } else if (WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s: `%s` exited with status %d\n", who, command.c_str(), WEXITSTATUS(status));
  } else {
    return true;
  }
  return false;
}

// Runs argv to its end with stdout captured. Returns stdout of a zero exit,
// or nullopt after printing why not.
inline std::optional<std::string> run_child(const char* who, const std::vector<std::string>& argv) {
  const auto child = spawn_child(who, argv);
  if (!child) return std::nullopt;
  std::string output;
  const bool finished = read_until_eof(child->stdout_fd, output, Clock::now() + kChildTimeout);
  close(child->stdout_fd);
  if (!reap(who, command_line(argv), child->pid, !finished)) return std::nullopt;
  return output;
}

inline std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const auto newline = text.rfind('\n', end);
  const auto begin = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(begin, end + 1 - begin);
}

// The figures in the last line of a runtime's output, checked against what
// was asked for; nullopt after printing why the output is unusable.
inline std::optional<Figures> parse_figures(const char* who, const std::string& output, const std::string& runtime,
                                            int k) {
  const std::string line = last_line(output);
  try {
    agentkit::Json j = agentkit::Json::parse(line);
    if (j.at("peer").get<std::string>() != runtime || j.at("k").get<int>() != k) {
      throw std::runtime_error("peer or k differs from the one asked for");
    }
    return Figures{.version = j.at("version").get<std::string>(),
                   .us_per_iteration = j.at("us_per_iteration").get<double>(),
                   .cpu_us_per_iteration = j.at("cpu_us_per_iteration").get<double>(),
                   .reps = j.at("reps").get<int>(),
                   .startup_ms = j.at("startup_ms").get<double>(),
                   .peak_rss_kb = j.at("peak_rss_kb").get<double>(),
                   .line = std::move(j)};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: unusable output from %s (K=%d): %s\n  line: %s\n", who, runtime.c_str(), k, e.what(),
                 line.c_str());
    return std::nullopt;
  }
}

// "a / b" as "12.3x" (or "1234x"); "-" when b is missing or not positive.
inline std::string ratio(double a, std::optional<double> b) {
  if (!b || *b <= 0) return "-";
  const double r = a / *b;
  return format(r < 100 ? "%.1fx" : "%.0fx", r);
}

inline std::string load_average() {
  double one_minute = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &one_minute) != 1) one_minute = -1;
    std::fclose(f);
  }
  return one_minute < 0 ? "unknown" : format("%.1f", one_minute);
}

}  // namespace peer_bench
