// An agent's ReAct loop using MCP tools: results, server errors and bad
// arguments all reach the model as tool messages, with is_error set right.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "mcp_support.h"

using namespace agentkit;
using agentkit::testing::FakeLLM;
using agentkit::testing::Turn;

TEST_CASE("agent: MCP results and MCP errors reach the model as tool messages") {
  auto client = mcp_test::connect(mcp_test::fake_server(), {.server_name = "fake"});
  ToolRegistry tools;
  tools.add_plugin("fake", *client);

  auto llm = FakeLLM::script({
      Turn{.tool_calls = {{"c1", "fake_echo", {{"text", "hello \u2028 mcp"}}},
                          {"c2", "fake_fail", Json::object()},
                          {"c3", "fake_echo", {{"txt", 1}}},
                          {"c4", "fake_vanished", Json::object()}}},
      Turn{.content = "done"},
  });
  Agent agent("mcp-user", "fake", "Use the tools.", std::make_shared<const cognition::ReActCognition>(tools));
  auto ctx = agentkit::testing::make_test_ctx({.llm = llm});
  const auto result = agent.run("go", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  std::vector<Message> replies;
  for (const auto& m : requests[1].messages) {
    if (m.role == Role::tool) replies.push_back(m);
  }
  REQUIRE(replies.size() == 4);
  CHECK(replies[0].tool_call_id == "c1");
  CHECK_FALSE(replies[0].is_error);
  CHECK(replies[0].text() == "hello \u2028 mcp");
  CHECK(replies[1].is_error);
  CHECK(replies[1].text() == "Tool failed: disk is full");
  CHECK(replies[2].is_error);
  CHECK_THAT(replies[2].text(), Catch::Contains("missing required argument(s) ['text']") &&
                                     Catch::Contains("unexpected argument(s) ['txt']"));
  CHECK(replies[3].is_error);
  CHECK_THAT(replies[3].text(), Catch::Contains("Tool vanished not found"));

  const auto& advertised = requests[0].tools;
  CHECK(std::find(advertised.begin(), advertised.end(), "fake_echo") != advertised.end());
}
