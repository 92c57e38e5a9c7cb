// Running the `agentkit` CLI from tests (AGENTKIT_CLI names the executable): a scratch directory, the child
// process with a minimal environment and a deadline, and the loopback
// model's OpenAI Chat Completions stream replies. Shared by cli_test.cpp and
// cli_show_test.cpp.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <agentkit/json.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/paths.h"
#include "../helpers/files.h"

namespace agentkit_test::cli {

using agentkit::Json;
using agentkit::testing::WireServer;
namespace fs = std::filesystem;

inline constexpr auto kProcessDeadline = std::chrono::seconds(90);
inline const std::string kApiKey = "sk-cli-secret-4242";  // what AGENTKIT_TEST_KEY holds

// A scratch directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() / ("agentkit_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return path / name;
  }
  std::string store() const { return (path / "state.db").string(); }
};

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A minimal environment: no proxies, HOME in the scratch directory, the test
// key, the sanitizer settings of this process, and `extra`.
inline std::vector<std::string> child_environment(const TempDir& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + dir.path.string(), "AGENTKIT_TEST_KEY=" + kApiKey,
                                  "AGENTKIT_LOG=off"};
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  for (const auto& setting : extra) {  // replaces a default of the same name
    const std::string name = setting.substr(0, setting.find('=') + 1);
    std::erase_if(env, [&](const std::string& s) { return s.rfind(name, 0) == 0; });
    env.push_back(setting);
  }
  return env;
}

inline std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Waits for `pid` up to the deadline (then kills it); its exit code, or -1.
inline int wait_for(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + kProcessDeadline;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("process " << pid << " did not finish within the deadline");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts `program args...` with stdin from /dev/null and stdout/stderr to
// files in `dir` named after `tag`.
inline pid_t spawn_program(const TempDir& dir, const std::string& program, std::vector<std::string> args,
                           const std::vector<std::string>& env_extra, const std::string& tag) {
  args.insert(args.begin(), program);
  auto env = child_environment(dir, env_extra);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const std::string out = (dir.path / (tag + ".out")).string(), err = (dir.path / (tag + ".err")).string();
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, c_strings(args).data(), c_strings(env).data());
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

// Starts `agentkit args...` (see spawn_program).
inline pid_t spawn_cli(const TempDir& dir, std::vector<std::string> args, const std::vector<std::string>& env_extra,
                       const std::string& tag) {
  return spawn_program(dir, AGENTKIT_CLI, std::move(args), env_extra, tag);
}

// Runs `program args...` to its end (or the deadline): exit code, stdout, stderr.
inline Outcome run_program(const TempDir& dir, const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& env = {}) {
  static std::atomic<int> counter{0};
  const std::string tag = "process" + std::to_string(counter++);
  Outcome outcome;
  outcome.exit_code = wait_for(spawn_program(dir, program, args, env, tag));
  outcome.out = read_file(dir.path / (tag + ".out"));
  outcome.err = read_file(dir.path / (tag + ".err"));
  INFO("stdout: " << outcome.out << "\nstderr: " << outcome.err);
  return outcome;
}

inline Outcome run_cli(const TempDir& dir, const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {}) {
  return run_program(dir, AGENTKIT_CLI, args, env);
}

inline WireServer::Response sse(const std::vector<Json>& deltas, const std::string& finish_reason) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    Json choice = {{"index", 0}, {"delta", deltas[i]}};
    if (i + 1 == deltas.size()) choice["finish_reason"] = finish_reason;
    r.chunks.push_back("data: " + Json{{"choices", {choice}}}.dump() + "\n\n");
  }
  r.chunks.push_back(R"(data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":9}})"
                     "\n\n");
  r.chunks.push_back("data: [DONE]\n\n");
  return r;
}

// An answer streamed in `pieces`.
inline WireServer::Response answer(const std::vector<std::string>& pieces) {
  std::vector<Json> deltas;
  for (const auto& piece : pieces) deltas.push_back({{"content", piece}});
  return sse(deltas, "stop");
}

// One turn calling tools: (id, name, arguments).
inline WireServer::Response calls(const std::vector<std::tuple<std::string, std::string, Json>>& tool_calls) {
  Json list = Json::array();
  int index = 0;
  for (const auto& [id, name, arguments] : tool_calls) {
    list.push_back({{"index", index++},
                    {"id", id},
                    {"type", "function"},
                    {"function", {{"name", name}, {"arguments", arguments.dump()}}}});
  }
  return sse({{{"tool_calls", list}}}, "tool_calls");
}

// The definition's head: the agent talks to `model` with the key from
// AGENTKIT_TEST_KEY. `rest` is appended as is (tools, limits, ...).
inline std::string agent_yaml(const WireServer& model, const std::string& rest = {}) {
  return "name: atlas\n"
         "model: openai/gpt-test\n"
         "base_url: " +
         model.base_url() +
         "/v1\n"
         "api_key_env: AGENTKIT_TEST_KEY\n"
         "prompt: You answer questions about cities.\n" +
         rest;
}

// A REST tool that refunds an order on `server`, behind approval.
inline std::string refund_tool(const WireServer& server) {
  return "  - rest:\n"
         "      name: refund\n"
         "      description: Refund a damaged customer order in full and return the refund record.\n"
         "      method: POST\n"
         "      url: " +
         server.base_url() +
         "/orders/{order_id}/refund\n"
         "      side_effecting: true\n"
         "      requires_approval: true\n"
         "      params:\n"
         "        - {name: order_id, description: The order to refund}\n";
}

inline std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));  // throws if a line is not JSON
  return lines;
}

inline std::string run_id_in(const std::string& text) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex("Run (run-[^ ]+) is waiting for approval")));
  return m[1];
}

}  // namespace agentkit_test::cli
