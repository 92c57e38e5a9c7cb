// Tool results with content parts, and FakeLLM turns that script and record parts.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using namespace agentkit;
using namespace agentkit::testing;

namespace {

const std::string kFrame("\xff\xd8\xff\xe0 not UTF-8 \x80\x81", 16);

ToolPtr camera(std::vector<ContentPart> parts) {
  return tool("camera_frame")
      .doc("Grab the current camera frame.")
      .side_effecting(false)
      .fn([parts](RunContext&) { return ToolOutput{"frame 7", parts}; });
}

Agent agent_with(ToolPtr t, AgentOptions options = {}) {
  return Agent("robot", "fake", "You look around.",
               std::make_shared<cognition::ReActCognition>(std::vector<ToolPtr>{std::move(t)}), options);
}

}  // namespace

TEST_CASE("an image a tool returns reaches the model as an image part of the tool message", "[parts][tools]") {
  auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}}, Turn{.content = "A red door."}});
  auto ctx = make_test_ctx({.llm = llm});
  const Agent agent = agent_with(camera({ImagePart{"image/jpeg", kFrame, ""}}));
  const RunResult result = agent.run("What do you see?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  REQUIRE(requests[1].images().size() == 1);
  CHECK(requests[1].images()[0].data == kFrame);  // bit-exact, not sanitized
  const Message& tool_message = requests[1].messages.back();
  CHECK(tool_message.role == Role::tool);
  CHECK(tool_message.text() == "frame 7");
  CHECK(requests[0].images().empty());
}

TEST_CASE("a tool's part over the per-part cap or malformed is a model-visible error, not a crash", "[parts][tools][limits]") {
  auto llm = FakeLLM::script({Turn{.tool_calls = {{"c1", "camera_frame", Json::object()}}}, Turn{.content = "ok"}});
  auto ctx = make_test_ctx({.llm = llm});
  SECTION("over the cap") {
    const Agent agent = agent_with(camera({ImagePart{"image/png", std::string(2048, 'x'), ""}}),
                                   {.content_limits = {.max_part_bytes = 1024}});
    const RunResult result = agent.run("look", ctx);
    CHECK(result.stop_reason == StopReason::answered);
    const auto requests = llm->requests();
    const Message& seen = requests.at(1).messages.back();
    CHECK(seen.is_error);
    CHECK(requests.at(1).images().empty());
    CHECK_THAT(seen.text(), Catch::Contains("image image/png, 2048 bytes") && Catch::Contains("per-part cap of 1024"));
  }
  SECTION("an image with neither data nor url") {
    const Agent agent = agent_with(camera({ImagePart{}}));
    const RunResult result = agent.run("look", ctx);
    CHECK(result.stop_reason == StopReason::answered);
    const auto requests = llm->requests();
    const Message& seen = requests.at(1).messages.back();
    CHECK(seen.is_error);
    CHECK_THAT(seen.text(), Catch::Contains("exactly one of data and url"));
  }
}

TEST_CASE("FakeLLM scripts replies with reasoning and refusals", "[parts][fake_llm]") {
  const ReasoningPart thinking{.text = "6 * 7", .signature = "sig-1", .provider = "anthropic"};
  auto llm = FakeLLM::script({Turn{.content = "42", .parts = {thinking}}, Turn{.parts = {RefusalPart{"I can't."}}}});
  auto ctx = make_test_ctx({.llm = llm});
  const Agent agent("a", "fake", "Answer.");
  const RunResult first = agent.run("What is 6 * 7?", ctx);
  CHECK(first.output == "42");  // reasoning is not the answer
  const Message& reply = first.state.history.back();
  REQUIRE(reply.content.size() == 2);
  CHECK(std::get<ReasoningPart>(reply.content[0]) == thinking);
  CHECK(std::get<TextPart>(reply.content[1]).text == "42");

  const RunResult second = agent.run("Something bad", ctx);
  REQUIRE(second.state.history.back().content.size() == 1);
  CHECK(std::get<RefusalPart>(second.state.history.back().content[0]).text == "I can't.");
}

TEST_CASE("FakeLLM records the parts of a user message it was sent", "[parts][fake_llm]") {
  auto llm = FakeLLM::script({Turn{.content = "a cat"}});
  auto ctx = make_test_ctx({.llm = llm});
  std::vector<Message> history{Message::user({TextPart{"What is this?"}, ImagePart{"image/png", kFrame, ""}})};
  const ModelRequest request{.model = "fake", .system = "", .messages = history};
  llm->complete(request, ctx);
  REQUIRE(llm->requests().at(0).images().size() == 1);
  CHECK(llm->requests().at(0).images()[0].data == kFrame);
  CHECK(llm->requests().at(0).parts<TextPart>().at(0).text == "What is this?");
}
