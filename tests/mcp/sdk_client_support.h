#pragma once
// Running sdk_client.mjs, the harness over the official TypeScript SDK client
// (@modelcontextprotocol/sdk from tests/mcp/package-lock.json): a JSON script
// of steps in, one JSON line per step (and per connect or elicitation) out.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../helpers/paths.h"
#include "mcp_support.h"

namespace mcp_test {

// sdk_client.mjs sits next to fake_server.mjs.
inline std::string sdk_client_script() {
  return (std::filesystem::path(fake_server_script()).parent_path() / "sdk_client.mjs").string();
}

// node and the SDK installed by the mcp.npm_ci fixture; a clear message when not.
inline bool sdk_available() {
  namespace fs = std::filesystem;
  const std::string n = node();
  const fs::path sdk = fs::path(AGENTKIT_MCP_SERVERS_DIR) / "node_modules" / "@modelcontextprotocol" / "sdk";
  if (n.empty() || n.find("NOTFOUND") != std::string::npos || !fs::exists(n)) {
    WARN("SKIPPED: node is not installed; the TypeScript SDK client tests need node >= 20");
    return false;
  }
  if (!fs::exists(sdk)) {
    WARN("SKIPPED: @modelcontextprotocol/sdk is not installed in " << AGENTKIT_MCP_SERVERS_DIR
                                                                    << " (run the mcp.npm_ci fixture: ctest -R mcp)");
    return false;
  }
  return true;
}

// `s` as one single-quoted sh word.
inline std::string sh_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What one run of the harness printed. step() and op() return copies: bind
// them to a name before iterating a member (`for (x : run.step(3)["tools"])`
// iterates a destroyed temporary).
struct SdkRun {
  int exit_code = -1;
  std::vector<nlohmann::json> lines;
  std::string err;
  // The line printed for step `i`.
  nlohmann::json step(int i) const {
    for (const auto& l : lines)
      if (l.contains("step") && l["step"] == i) return l;
    return nlohmann::json();
  }
  // The first line of an event `name` (connect, elicitation) not tied to a step.
  nlohmann::json op(const std::string& name) const {
    const auto every = all(name);
    return every.empty() ? nlohmann::json() : every.front();
  }
  std::vector<nlohmann::json> all(const std::string& name) const {
    std::vector<nlohmann::json> out;
    for (const auto& l : lines)
      if (l.value("op", "") == name && !l.contains("step")) out.push_back(l);
    return out;
  }
};

// Runs the harness with `steps` and `transport` args (--stdio CMD ARGS... or
// --http URL [--header H]); stdout parsed per line, stderr kept.
inline SdkRun run_sdk_client(const nlohmann::json& steps, const std::vector<std::string>& transport) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const fs::path script = fs::temp_directory_path() / ("agentkit_sdk_steps_" + tag + ".json");
  const fs::path err = fs::temp_directory_path() / ("agentkit_sdk_err_" + tag + ".txt");
  std::ofstream(script) << steps.dump();
  std::string cmd = sh_quoted(node()) + " " + sh_quoted(sdk_client_script()) + " --modules " +
                    sh_quoted(AGENTKIT_MCP_SERVERS_DIR) + " --script " + sh_quoted(script.string());
  for (const auto& a : transport) cmd += " " + sh_quoted(a);
  cmd += " 2>" + sh_quoted(err.string());
  SdkRun run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  std::stringstream text;
  text << std::ifstream(err).rdbuf();
  run.err = text.str();
  fs::remove(script);
  fs::remove(err);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) run.lines.push_back(nlohmann::json::parse(line));
  return run;
}

}  // namespace mcp_test
