// 14 — record and replay: a run is recorded into a cassette (every model
// request and response, every tool result), saved, and replayed offline. On
// replay the read-only lookup runs again, the refund's recorded result is
// injected (it never runs twice), and a changed prompt is caught at the step
// where it differs. Then the run is forked after its first step with another
// tool result and another model, and the two runs are diffed.
//
// The model is a FakeLLM playing a script, so this runs offline.
// Run: ./build/examples/example_14_replay
#include <atomic>
#include <filesystem>
#include <iostream>
#include <string>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/replay.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/replay.h>
#include <agentkit/testing/test_context.h>

namespace {

using agentkit::testing::Turn;

std::atomic<int> refunds_issued{0};

agentkit::Agent make_agent(const std::string& prompt) {
  auto order = agentkit::tool("order_status")
                   .doc("Look up an order's delivery status by its order id.")
                   .side_effecting(false)
                   .params("order_id")
                   .fn([](const std::string& id) { return id + ": arrived damaged"; });
  auto refund = agentkit::tool("refund")
                    .doc("Issue a full refund for an order and return the refund id.")
                    .side_effecting(true)
                    .params("order_id")
                    .fn([](const std::string& id) {
                      ++refunds_issued;
                      return "refund R-" + id;
                    });
  return agentkit::Agent("support", "fake", prompt, agentkit::cognition::react({order, refund}));
}

}  // namespace

int main() {
  const std::string task = "Order A-1 arrived damaged; please refund it.";
  const std::string path = (std::filesystem::temp_directory_path() / "example_14.cassette.json").string();

  // 1. Record a run and save its cassette.
  {
    auto ctx = agentkit::testing::make_test_ctx({.llm = agentkit::testing::FakeLLM::script({
        Turn{.tool_calls = {{"c1", "order_status", {{"order_id", "A-1"}}, {}}}},
        Turn{.tool_calls = {{"c2", "refund", {{"order_id", "A-1"}}, {}}}},
        Turn{.content = "Refunded: R-A-1."}})});
    agentkit::Recorder recorder;
    recorder.attach(ctx);
    auto result = make_agent("You handle refunds.").run(task, ctx);
    recorder.cassette().save(path);
    std::cout << "recorded: " << result.output << " (" << recorder.cassette().model_steps.size()
              << " model steps, refunds issued: " << refunds_issued << ")\n";
  }

  // 2. Replay it offline: no model, the refund is not issued again.
  const auto cassette = agentkit::Cassette::load(path);
  {
    auto ctx = agentkit::testing::make_test_ctx();
    auto replayer = agentkit::testing::replay(ctx, cassette);
    auto result = make_agent("You handle refunds.").run(task, ctx);
    std::cout << "replayed: " << result.output << " (tools run again: " << replayer.ran()
              << ", injected: " << replayer.injected() << ", refunds issued: " << refunds_issued << ")\n";
  }

  // 3. A changed prompt fails the replay at the first step, typed.
  {
    auto ctx = agentkit::testing::make_test_ctx();
    agentkit::testing::replay(ctx, cassette);
    auto result = make_agent("You handle refunds politely.").run(task, ctx);
    std::cout << "changed prompt: " << agentkit::to_string(result.stop_reason) << ": " << result.failure->message << "\n";
  }

  // 4. Fork after step 1: the order lookup says something else, another model answers.
  agentkit::Recorder fork_recorder;
  {
    auto other = agentkit::testing::FakeLLM::script({Turn{.content = "The order is fine; no refund."}});
    auto ctx = agentkit::testing::make_test_ctx();
    agentkit::Replayer replayer(agentkit::fork(cassette, 1),
                                {.tool_overrides = {{"c1", agentkit::ToolResult::ok("A-1: delivered intact")}},
                                 .after = other});
    ctx.models = replayer.models();
    fork_recorder.attach(ctx, {replayer.middleware(), agentkit::error_boundary(), agentkit::metering()});
    std::cout << "forked: " << make_agent("You handle refunds.").run(task, ctx).output << "\n";
  }

  // 5. What changed between the two runs.
  std::cout << "diff:\n" << agentkit::render(agentkit::diff(cassette, fork_recorder.cassette()));
  std::filesystem::remove(path);
  return refunds_issued == 1 ? 0 : 1;
}
