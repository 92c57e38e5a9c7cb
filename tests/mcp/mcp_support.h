#pragma once
// Shared helpers for the MCP tests: where node, the reference servers and the
// fake server are, a client factory, a log capture and a bounded wait.
#include "../helpers/paths.h"
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <agentkit/providers/mcp.h>

namespace mcp_test {

using agentkit::providers::McpClient;
using agentkit::providers::McpClientOptions;
using agentkit::providers::McpStdioServer;

inline std::string node() { return AGENTKIT_NODE; }
inline std::string fake_server_script() { return AGENTKIT_MCP_FAKE_SERVER; }
inline std::string loopback_preload() { return AGENTKIT_MCP_LOOPBACK_PRELOAD; }
// The entry point of @modelcontextprotocol/server-<name> installed by mcp.npm_ci.
inline std::string reference_server(const std::string& name) {
  return std::string(AGENTKIT_MCP_SERVERS_DIR) + "/node_modules/@modelcontextprotocol/server-" + name + "/dist/index.js";
}

inline McpStdioServer fake_server(std::vector<std::string> flags = {}) {
  McpStdioServer server{.command = node(), .args = {fake_server_script()}};
  server.args.insert(server.args.end(), flags.begin(), flags.end());
  return server;
}

// Log lines written through a logger, for asserting what was logged.
class LogCapture {
 public:
  LogCapture() {
    sink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
    logger_ = std::make_shared<spdlog::logger>("mcp-test", sink_);
    logger_->set_level(spdlog::level::debug);
    logger_->set_pattern("%l %v");
  }
  std::shared_ptr<spdlog::logger> logger() const { return logger_; }
  // Every line logged so far, newline-separated.
  std::string text() const {
    std::string out;
    for (const auto& line : sink_->last_formatted()) out += line;
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

inline std::unique_ptr<McpClient> connect(McpStdioServer server, McpClientOptions options = {}) {
  auto logger = options.logger;
  auto client = std::make_unique<McpClient>(agentkit::providers::make_stdio_transport(std::move(server), logger),
                                            std::move(options));
  client->connect();
  return client;
}

// Polls `done` until it holds or `limit` passes (generous: sanitizer builds are slow).
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(10'000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// The URL `agentkit serve --http` prints on its stderr ("serving MCP on URL"),
// read from `err_file` for up to 30 s; empty when it never came.
inline std::string served_url(const std::string& err_file) {
  std::string url;
  eventually([&] {
    std::stringstream text;
    text << std::ifstream(err_file).rdbuf();
    const std::string s = text.str();
    const auto at = s.find("serving MCP on ");
    const auto end = at == std::string::npos ? at : s.find('\n', at);
    if (end == std::string::npos) return false;
    url = s.substr(at + 15, end - at - 15);
    return true;
  }, std::chrono::seconds(30));
  return url;
}

// SIGINT to a served child, then its wait status; nullopt when it did not
// exit within 10 s (it is then killed and reaped).
inline std::optional<int> interrupt_and_reap(pid_t pid) {
  ::kill(pid, SIGINT);
  int status = -1;
  if (eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; })) return status;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return std::nullopt;
}

}  // namespace mcp_test
