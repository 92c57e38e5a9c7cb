// The OTLP receiver the tests send to: tests/otel/receiver.mjs in a child
// process, decoding with the OpenTelemetry project's own OTLP definitions
// (installed by the otel.npm_ci fixture; see tests/otel/otel.cmake).
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <agentkit/json.h>

#include "paths.h"
#include "files.h"

namespace agentkit_test {

using agentkit::Json;

// True once `done()` is, polling every 10 ms up to `limit`.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(8)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// tests/otel/receiver.mjs in a child process. Its stdin is a pipe this
// process holds, so it exits with the test even if the test dies.
class Receiver {
 public:
  // `fault`: AGENTKIT_OTLP_RECEIVER_FAULT for every request ("hang", "503").
  explicit Receiver(std::string fault = {}) {
    const std::string modules =
        std::string(AGENTKIT_OTEL_RECEIVER_DIR) + "/node_modules/@opentelemetry/otlp-transformer";
    if (!std::filesystem::exists(modules)) {
      FAIL("the OTLP receiver's packages are not installed in "
           << AGENTKIT_OTEL_RECEIVER_DIR << ": run `ctest -R otel.npm_ci` (npm ci from tests/otel/package-lock.json)");
    }
    static std::atomic<int> counter{0};
    out_ = (std::filesystem::temp_directory_path() /
            ("agentkit-otlp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".jsonl"))
               .string();
    std::filesystem::remove(out_);
    int in[2];
    int out[2];
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    std::vector<std::string> args{AGENTKIT_NODE, AGENTKIT_OTEL_RECEIVER, out_, AGENTKIT_OTEL_RECEIVER_DIR};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string path_var = std::string("PATH=") + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    std::string fault_var = "AGENTKIT_OTLP_RECEIVER_FAULT=" + fault;
    std::vector<char*> envp{path_var.data()};
    if (!fault.empty()) envp.push_back(fault_var.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    REQUIRE(rc == 0);
    // The first line of its stdout is the port.
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[64];
      const auto n = ::read(stdout_, buffer, sizeof buffer);
      if (n <= 0) break;
      line.append(buffer, static_cast<std::size_t>(n));
    }
    REQUIRE(line.find('\n') != std::string::npos);
    port_ = std::stoi(line);
  }
  ~Receiver() {
    stop();
    std::filesystem::remove(out_);
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  void stop() {
    if (pid_ <= 0) return;
    ::close(stdin_);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    ::close(stdout_);
    pid_ = -1;
  }

  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Every request recorded so far, one JSON object each.
  std::vector<Json> lines() const {
    std::vector<Json> out;
    std::istringstream in(read_file(out_));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(Json::parse(line));
    }
    return out;
  }
  // The requests to `path` (any status).
  std::vector<Json> requests(std::string_view path) const {
    std::vector<Json> out;
    for (auto& line : lines()) {
      if (line.value("path", "") == path) out.push_back(std::move(line));
    }
    return out;
  }
  // The decoded spans of every accepted traces request, in arrival order.
  std::vector<Json> spans() const {
    std::vector<Json> out;
    for (const auto& r : requests("/v1/traces")) {
      if (r["status"] != 200) continue;
      for (const auto& rs : r["request"]["resourceSpans"]) {
        for (const auto& ss : rs["scopeSpans"]) {
          for (const auto& s : ss["spans"]) out.push_back(s);
        }
      }
    }
    return out;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string out_;
};

// The item of `array` whose `key` is `value`, or null.
inline const Json* find_by(const Json& array, std::string_view key, std::string_view value) {
  for (const auto& item : array) {
    if (item.contains(key) && item[std::string(key)] == Json(value)) return &item;
  }
  return nullptr;
}

// The decoded AnyValue of attribute `key` in an OTLP attribute list.
inline Json attribute(const Json& attributes, std::string_view key) {
  const Json* kv = find_by(attributes, "key", key);
  return kv ? (*kv)["value"] : Json();
}

}  // namespace agentkit_test
