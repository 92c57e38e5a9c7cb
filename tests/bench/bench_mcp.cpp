// Per-call overhead of an MCP tool over stdio, beyond the server's own time.
//
// Method: tests/mcp/fake_server.mjs runs under node; its timed_echo tool
// reports (in structuredContent.server_us) the time from the moment its
// stdin chunk arrived to the moment it built the result. Each call goes
// through the agentkit Tool from McpClient::tools() (argument check, JSON-RPC
// framing, pipe I/O both ways, response matching, result mapping); the
// client-side wall time minus server_us is the overhead. It therefore
// includes node's own JSON parse and stdout write of the answer, and both
// pipe hops. Calls run one at a time after a warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <agentkit/providers/mcp.h>
#include <agentkit/testing/test_context.h>

namespace {

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1));
  return values[index];
}

}  // namespace

int main() {
  using namespace agentkit::providers;
  constexpr int kWarmup = 300;
  constexpr int kCalls = 3000;
  const std::string script = (std::filesystem::path(__FILE__).parent_path().parent_path() / "mcp" / "fake_server.mjs").string();

  McpClient client(make_stdio_transport({.command = "node", .args = {script}}), {.server_name = "bench"});
  client.connect();
  agentkit::ToolPtr tool;
  for (const auto& t : client.tools()) {
    if (t->name() == "timed_echo") tool = t;
  }
  if (!tool) {
    std::fprintf(stderr, "bench_mcp: timed_echo not listed by %s\n", script.c_str());
    return 1;
  }
  auto ctx = agentkit::testing::make_test_ctx();
  const agentkit::Json args = {{"text", "a short payload, like most tool arguments"}};

  std::vector<double> round_trip;
  std::vector<double> server;
  std::vector<double> overhead;
  for (int i = 0; i < kWarmup + kCalls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const agentkit::Json result = tool->run(args, ctx);
    const double total_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (i < kWarmup) continue;
    const double server_us = result.at("server_us").get<double>();
    round_trip.push_back(total_us);
    server.push_back(server_us);
    overhead.push_back(total_us - server_us);
  }
  client.close();

  std::printf("MCP tool over stdio (node fake server, %d sequential calls after %d warm-up)\n", kCalls, kWarmup);
  std::printf("  round trip        p50 %8.1f us   p99 %8.1f us\n", percentile(round_trip, 0.5), percentile(round_trip, 0.99));
  std::printf("  server's own time p50 %8.1f us   p99 %8.1f us\n", percentile(server, 0.5), percentile(server, 0.99));
  std::printf("  overhead          p50 %8.1f us   p99 %8.1f us   (round trip - server time, per call)\n",
              percentile(overhead, 0.5), percentile(overhead, 0.99));
  return 0;
}
