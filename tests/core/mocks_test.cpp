// The trompeloeil mocks shipped in testing/ drive the engine like real
// implementations.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/invoker.h>
#include <agentkit/testing/mocks.h>
#include <agentkit/testing/test_context.h>

using trompeloeil::_;

TEST_CASE("MockModel answers an agent run", "[mocks]") {
  auto model = std::make_shared<agentkit::testing::MockModel>();
  REQUIRE_CALL(*model, complete(_, _))
      .WITH(_1.system == "Be brief." && _1.messages.size() == 1 && _1.messages[0].text() == "hi")
      .RETURN(agentkit::ModelResponse{agentkit::Message::assistant("hello"), {3, 1, 0}, "stop"});
  agentkit::Agent agent("greeter", "mock", "Be brief.");
  auto ctx = agentkit::testing::make_test_ctx({.llm = model});
  auto result = agent.run("hi", ctx);
  CHECK(result.output == "hello");
  CHECK(result.usage.input_tokens == 3);
}

TEST_CASE("MockTool is invoked through the invoker with the authorised arguments", "[mocks]") {
  auto tool = std::make_shared<agentkit::testing::MockTool>();
  agentkit::ToolSpec spec{.name = "probe", .description = "A probe tool for interaction tests."};
  spec.effects.side_effecting = false;
  ALLOW_CALL(*tool, spec()).LR_RETURN(spec);
  REQUIRE_CALL(*tool, run(_, _)).WITH(_1 == agentkit::Json{{"x", 1}}).RETURN(agentkit::Json("pong"));
  auto ctx = agentkit::testing::make_test_ctx();
  agentkit::ToolRequest request{.call_id = "c1", .name = "probe", .arguments = {{"x", 1}}, .tool = tool};
  auto result = ctx.invoker->invoke_tool(request, ctx);
  CHECK(result.is_ok());
  CHECK(result.value == "pong");
}

TEST_CASE("MockObserver sees the run's events in order", "[mocks]") {
  auto observer = std::make_shared<agentkit::testing::MockObserver>();
  trompeloeil::sequence seq;
  REQUIRE_CALL(*observer, on_event(_)).WITH(std::holds_alternative<agentkit::ModelCallStarted>(_1)).IN_SEQUENCE(seq);
  REQUIRE_CALL(*observer, on_event(_)).WITH(std::holds_alternative<agentkit::ModelCallFinished>(_1)).IN_SEQUENCE(seq);
  REQUIRE_CALL(*observer, on_event(_)).WITH(std::holds_alternative<agentkit::RunFinished>(_1)).IN_SEQUENCE(seq);
  auto model = std::make_shared<agentkit::testing::MockModel>();
  ALLOW_CALL(*model, complete(_, _)).RETURN(agentkit::ModelResponse{agentkit::Message::assistant("ok"), {}, "stop"});
  agentkit::Agent agent("a", "mock", "p");
  auto ctx = agentkit::testing::make_test_ctx({.llm = model, .observer = observer});
  agent.run("go", ctx);
}
