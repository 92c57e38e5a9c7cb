#include <agentkit/testing/test_context.h>

#include <agentkit/state/store.h>

namespace agentkit::testing {

RunContext make_test_ctx(TestContextOptions options) {
  RunContext ctx(std::move(options.scope));
  ctx.autonomy = options.autonomy;
  ctx.budget = std::make_shared<Budget>(options.budget);
  ctx.executor = std::move(options.executor);
  ctx.observer = std::move(options.observer);
  ctx.max_depth = options.max_depth;
  ctx.store = options.store ? std::move(options.store) : std::make_shared<state::InMemoryStore>();
  ctx.invoker = std::make_shared<const Invoker>(options.tool_middleware ? std::move(*options.tool_middleware)
                                                                        : default_middleware());
  if (auto llm = std::move(options.llm)) {
    ctx.models = [llm](std::string_view) { return llm; };
  }
  return ctx;
}

namespace {

// The test seam ApprovalIssuer documents: an issuer with nothing else.
struct TestIssuer : ApprovalIssuer {
  using ApprovalIssuer::issue;
};

}  // namespace

void approve(ToolRequest& request) { request.approval = TestIssuer::issue(request); }

}  // namespace agentkit::testing
