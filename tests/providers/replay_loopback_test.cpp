// Record a run over the OpenAI adapter on loopback, stop the server, and
// replay the run offline from the cassette.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/replay.h>
#include <agentkit/testing/replay.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/wire_replies.h"

using agentkit::testing::WireServer;
using agentkit_test::openai_call;
using agentkit_test::openai_text;

namespace {

agentkit::ToolPtr notify(std::atomic<int>& sent) {
  return agentkit::tool("notify")
      .doc("Send a notification message to the customer's phone.")
      .side_effecting(true)
      .params("text")
      .fn([&sent](const std::string& text) {
        ++sent;
        return "sent: " + text;
      });
}

}  // namespace

TEST_CASE("a run over the OpenAI adapter is recorded, then replayed with the server stopped",
          "[replay][loopback][openai]") {
  std::atomic<int> sent{0};
  {
    auto server = std::make_unique<WireServer>();
    server->enqueue(openai_call("call_1", "notify", {{"text", "your parcel is out"}}));
    server->enqueue(openai_text("Sent the notification."));
    const std::string model = "openai/gpt-4o-mini@" + server->base_url() + "/v1";
    agentkit::Agent agent("courier", model, "You notify customers.", agentkit::cognition::react({notify(sent)}));
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-secret-test-key", .stream = false});
    agentkit::Recorder recorder;
    recorder.attach(ctx);
    auto recorded = agent.run("Tell the customer the parcel is out.", ctx);
    REQUIRE(recorded.stop_reason == agentkit::StopReason::answered);
    REQUIRE(sent == 1);
    server.reset();  // nothing listens any more

    const agentkit::Cassette cassette = recorder.cassette();
    REQUIRE(cassette.model_steps.size() == 2);
    const std::string text = cassette.to_json().dump();
    CHECK(text.find("sk-secret-test-key") == std::string::npos);
    CHECK(text.find("Bearer") == std::string::npos);

    auto replay_ctx = agentkit::testing::make_test_ctx();
    agentkit::testing::replay(replay_ctx, cassette);
    auto replayed = agent.run("Tell the customer the parcel is out.", replay_ctx);
    CHECK(replayed.stop_reason == agentkit::StopReason::answered);
    CHECK(replayed.output == "Sent the notification.");
    CHECK(replayed.state.history == recorded.state.history);
    CHECK(sent == 1);  // never sent again
  }
}
