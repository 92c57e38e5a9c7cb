#include <agentkit/testing/test_context.h>

namespace agentkit::testing {

RunContext make_test_ctx(TestContextOptions options) { return RunContext(std::move(options.scope)); }

}  // namespace agentkit::testing
