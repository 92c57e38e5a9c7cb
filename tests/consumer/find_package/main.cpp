#include <iostream>
#include <memory>
#include <agentkit/function_tool.h>
#include <agentkit/registry.h>
#include <agentkit/run_state.h>
#include <agentkit/state/checkpoint.h>
#include <agentkit/state/keys.h>
#include <agentkit/testing/test_context.h>
int main() {
  auto echo = agentkit::tool("echo").doc("Echo the given text back to the caller unchanged.")
                  .side_effecting(false).params("text")
                  .fn([](const std::string& text) { return text; });
  auto registry = agentkit::ToolRegistry::from_tools({echo});
  auto ctx = agentkit::testing::make_test_ctx();
  // The installed state headers: a run saved and loaded without an Agent.
  auto store = std::make_shared<agentkit::state::InMemoryStore>();
  agentkit::RunState run;
  run.run_id = "r1";
  run.history.push_back(agentkit::Message::user("hi"));
  if (!agentkit::state::Checkpoint(store, {}, run.run_id, 0).save(run) ||
      !store->get(agentkit::state::keys::run({}, run.run_id)) || !agentkit::state::load_run(*store, {}, run.run_id)) {
    return 1;
  }
  std::cout << registry.find("echo")->run({{"text", "consumer ok"}}, ctx).get<std::string>() << "\n";
}
