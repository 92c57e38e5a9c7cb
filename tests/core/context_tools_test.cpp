// Tools and prompts that depend on the run's context (seed 003): a tool
// offered only while its predicate holds, re-checked before every model
// call, and a call to it on a turn it was not offered refused with a repair
// message; descriptions computed per turn; a prompt that is a function of
// the context, evaluated before each model call. Failing predicates withhold
// the tool; a failing prompt fails the run, typed.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/errors.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

#include "../helpers/tool_calls.h"

using agentkit::Agent;
using agentkit::RunContext;
using agentkit::StopReason;
using agentkit::ToolPtr;
using agentkit::cognition::react;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;
using agentkit_test::call;

namespace {

// A bank session: `login` opens it; `transfer` is offered only while it is open.
struct Bank {
  std::shared_ptr<std::atomic<bool>> logged_in = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<std::atomic<int>> transfers = std::make_shared<std::atomic<int>>(0);
  ToolPtr login, transfer;

  Bank() {
    login = agentkit::tool("login")
                .doc("Open the customer's online banking session.")
                .side_effecting(true)
                .fn([flag = logged_in] {
                  flag->store(true);
                  return std::string("logged in");
                });
    transfer = agentkit::tool("transfer")
                   .doc("Move money between the customer's own accounts.")
                   .side_effecting(true)
                   .available_if([flag = logged_in](const RunContext&) { return flag->load(); })
                   .params("amount")
                   .fn([count = transfers](double) {
                     ++*count;
                     return std::string("moved");
                   });
  }
};

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("a tool is offered only on turns its availability holds, and a call on another turn is refused",
          "[agent][available]") {
  Bank bank;
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("t1", "transfer", {{"amount", 10}})}},  // not offered yet
      Turn{.tool_calls = {call("l1", "login")}},
      Turn{.tool_calls = {call("t2", "transfer", {{"amount", 10}})}},  // offered now
      Turn{.content = "Moved $10."},
  });
  Agent agent("banker", "fake", "You move money.", react({bank.login, bank.transfer}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("Move $10 to savings", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(*bank.transfers == 1);  // only t2 ran

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 4);
  CHECK_FALSE(has(requests[0].tools, "transfer"));
  CHECK(has(requests[0].tools, "login"));
  CHECK_FALSE(has(requests[1].tools, "transfer"));
  CHECK(has(requests[2].tools, "transfer"));
  // The refusal of t1 is what the model read on its second turn.
  const auto& refused = requests[1].messages.back();
  CHECK(refused.tool_call_id == "t1");
  CHECK_THAT(refused.text(), Catch::Contains("tool 'transfer' is not available now") &&
                                 Catch::Contains("Available tools: ['login']"));
}

TEST_CASE("an availability check that throws withholds the tool, the run goes on", "[agent][available]") {
  auto flaky = agentkit::tool("flaky")
                   .doc("A tool whose availability check always fails.")
                   .side_effecting(false)
                   .available_if([](const RunContext&) -> bool { throw std::runtime_error("feature flags down"); })
                   .fn([] { return 1; });
  auto llm = FakeLLM::script({Turn{.tool_calls = {call("c1", "flaky")}}, Turn{.content = "ok"}});
  Agent agent("a", "fake", "p", react({flaky}));
  auto ctx = make_test_ctx({.llm = llm});
  auto result = agent.run("go", ctx);
  CHECK(result.stop_reason == StopReason::answered);
  CHECK(llm->requests().at(0).tools.empty());
  CHECK_THAT(llm->requests().at(1).messages.back().text(), Catch::Contains("not available now"));
}

TEST_CASE("a description computed per turn reaches the model each turn, a failing one keeps the fixed text",
          "[agent][describe]") {
  auto turn = std::make_shared<std::atomic<int>>(0);
  auto weather = agentkit::tool("weather")
                     .doc("Today's weather for a city, in words.")
                     .side_effecting(false)
                     .describe([turn](const RunContext&) {
                       if (*turn == 2) throw std::runtime_error("no clock");
                       return "Today's weather for a city (forecast run " + std::to_string(++*turn) + ").";
                     })
                     .params("city")
                     .fn([](const std::string&) { return std::string("sunny"); });
  // The FakeLLM records names only; a recording model keeps the descriptions.
  struct Recorder final : agentkit::Model {
    std::shared_ptr<FakeLLM> inner;
    std::vector<std::string> descriptions;
    agentkit::ModelResponse complete(const agentkit::ModelRequest& r, RunContext& ctx) override {
      descriptions.push_back(r.tools.empty() ? "" : r.tools[0]->description);
      return inner->complete(r, ctx);
    }
  };
  auto recorder = std::make_shared<Recorder>();
  recorder->inner = FakeLLM::script({
      Turn{.tool_calls = {call("w1", "weather", {{"city", "Lisbon"}})}},
      Turn{.tool_calls = {call("w2", "weather", {{"city", "Porto"}})}},
      Turn{.content = "Sunny in both."},
  });
  Agent agent("forecaster", "fake", "p", react({weather}));
  auto ctx = make_test_ctx({.llm = recorder});
  REQUIRE(agent.run("Weather?", ctx).stop_reason == StopReason::answered);
  CHECK(recorder->descriptions == std::vector<std::string>{"Today's weather for a city (forecast run 1).",
                                                           "Today's weather for a city (forecast run 2).",
                                                           "Today's weather for a city, in words."});
  CHECK(weather->description() == "Today's weather for a city, in words.");  // the tool itself is unchanged
}

TEST_CASE("instructions: the prompt is a function of the context, evaluated before each model call",
          "[agent][instructions]") {
  auto skills = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"pdf"});
  auto add_skill = agentkit::tool("install_skill")
                       .doc("Install a skill by name so it is listed from the next turn on.")
                       .side_effecting(true)
                       .params("name")
                       .fn([skills](const std::string& name) {
                         skills->push_back(name);
                         return std::string("installed");
                       });
  agentkit::AgentOptions options;
  options.instructions = [skills](const RunContext& ctx) {
    std::string prompt = "You help " + ctx.agent_path + ". Skills:";
    for (const auto& s : *skills) prompt += " " + s;
    return prompt;
  };
  auto llm = FakeLLM::script({
      Turn{.tool_calls = {call("c1", "install_skill", {{"name", "xlsx"}})}},
      Turn{.content = "Installed."},
  });
  Agent agent("helper", "fake", "You help.", react({add_skill}), options);
  auto ctx = make_test_ctx({.llm = llm});
  REQUIRE(agent.run("Install xlsx", ctx).stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].system == "You help helper. Skills: pdf");
  CHECK(requests[1].system == "You help helper. Skills: pdf xlsx");  // the refreshed listing

  SECTION("instructions that throw fail the run with the error's code, before the model is asked") {
    agentkit::AgentOptions failing;
    failing.instructions = [](const RunContext&) -> std::string {
      throw agentkit::Error(agentkit::ErrorCode::unavailable, "the profile service is down");
    };
    auto untouched = FakeLLM::script({Turn{.content = "never"}});
    Agent broken("helper", "fake", "You help.", react({}), failing);
    auto ctx2 = make_test_ctx({.llm = untouched});
    auto result = broken.run("Hi", ctx2);
    CHECK(result.stop_reason == StopReason::failed);
    REQUIRE(result.failure);
    CHECK(result.failure->code == agentkit::ErrorCode::unavailable);
    CHECK_THAT(result.failure->message, Catch::Contains("the agent's instructions failed: the profile service is down"));
    CHECK(untouched->requests().empty());
  }
}
