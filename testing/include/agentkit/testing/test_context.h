#pragma once
// make_test_ctx: a RunContext for tests and examples, with nothing ambient
// but what you pass.
#include <agentkit/context.h>

namespace agentkit::testing {

struct TestContextOptions {
  Scope scope;
};

// Example:
//   auto ctx = agentkit::testing::make_test_ctx({.scope = {.org_id = 7, .domain_id = 1}});
RunContext make_test_ctx(TestContextOptions options = {});

}  // namespace agentkit::testing
