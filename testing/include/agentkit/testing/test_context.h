#pragma once
// make_test_ctx: a ready RunContext for tests and examples.
#include <memory>
#include <optional>
#include <vector>

#include <agentkit/context.h>
#include <agentkit/invoker.h>

namespace agentkit::testing {

struct TestContextOptions {
  std::shared_ptr<Model> llm;                         // answers every model name
  Scope scope;
  Autonomy autonomy = Autonomy::automatic;
  std::optional<std::vector<Middleware>> tool_middleware;  // the whole chain; default_middleware() when unset
  BudgetLimits budget;
  std::shared_ptr<Executor> executor;                 // inline when null
  std::shared_ptr<Observer> observer;
  std::shared_ptr<state::Store> store;                // an InMemoryStore when null
  int max_depth = 5;
};

// Example:
//   auto llm = FakeLLM::script({...});
//   auto ctx = agentkit::testing::make_test_ctx({.llm = llm, .scope = {.org_id = 7, .domain_id = 1}});
RunContext make_test_ctx(TestContextOptions options = {});

// Approves `request` as it stands (call id, tool, arguments), as a human's
// Decision would, for tests that drive the invoker directly. A run mints its
// own approvals from decisions; nothing outside tests needs this.
void approve(ToolRequest& request);

}  // namespace agentkit::testing
