// The ReAct loop through the OpenAI adapter over real HTTP on loopback:
// libcurl + SSE decoding + the adapter + the loop, against WireServer
// streaming scripted Chat Completions turns. Prints µs per iteration.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

namespace {

using Clock = std::chrono::steady_clock;
using agentkit::testing::WireServer;

constexpr int kIterations = 200;

WireServer::Response turn(int n) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  agentkit::Json delta;
  std::string finish;
  if (n < kIterations) {
    delta = {{"tool_calls", {{{"index", 0}, {"id", "call_" + std::to_string(n)}, {"type", "function"},
                              {"function", {{"name", "add"}, {"arguments", "{\"a\":" + std::to_string(n) + ",\"b\":1}"}}}}}}};
    finish = "tool_calls";
  } else {
    delta = {{"content", "done"}};
    finish = "stop";
  }
  const agentkit::Json chunk = {{"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
  r.chunks = {"data: " + chunk.dump() + "\n\n",
              "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n"};
  return r;
}

}  // namespace

int main() {
  auto add = agentkit::tool("add")
                 .doc("Add two integers and return their sum to the caller.")
                 .side_effecting(false)
                 .idempotent()
                 .params("a", "b")
                 .fn([](std::int64_t a, std::int64_t b) { return a + b; });
  std::vector<double> per_iteration;
  for (int rep = 0; rep < 5; ++rep) {
    WireServer server;
    auto served = std::make_shared<std::atomic<int>>(0);
    server.set_handler([served](const WireServer::Request&) { return turn((*served)++); });
    agentkit::Agent agent("adder", "openai/m@" + server.base_url() + "/v1", "You add numbers.",
                          agentkit::cognition::react({add}), {.max_iterations = kIterations + 1});
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.models = agentkit::providers::model_resolver({});
    const auto start = Clock::now();
    auto result = agent.run("add", ctx);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (result.stop_reason != agentkit::StopReason::answered) {
      std::printf("run failed: %s\n", (result.failure ? result.failure->message : std::string()).c_str());
      return 1;
    }
    per_iteration.push_back(us / (kIterations + 1));
  }
  std::sort(per_iteration.begin(), per_iteration.end());
  std::printf("%-58s %10s\n", "benchmark (ReAct through the OpenAI adapter, loopback)", "value");
  std::printf("%-58s %10.1f\n", "µs per iteration, server included (median of 5 runs)", per_iteration[2]);
  return 0;
}
