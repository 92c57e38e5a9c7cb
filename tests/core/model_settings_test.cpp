// ModelSettings: field-wise merging, validation of hostile values, the JSON
// form, and how the run engine hands an agent's and a run's settings to the
// model (also across a suspension).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::Decision;
using agentkit::Json;
using agentkit::ModelSettings;
using agentkit::ModelSettingsError;
using agentkit::ReasoningEffort;
using agentkit::RunOptions;
using agentkit::StopReason;
using agentkit::ToolCall;
using agentkit::ToolChoice;
using agentkit::testing::FakeLLM;
using agentkit::testing::make_test_ctx;
using agentkit::testing::Turn;

namespace {

agentkit::ToolPtr lookup_tool() {
  return agentkit::tool("lookup")
      .doc("Look up a fact in the reference table by its key.")
      .side_effecting(false)
      .params("key")
      .fn([](const std::string& key) { return "value of " + key; });
}

agentkit::ToolPtr refund_tool() {
  return agentkit::tool("refund")
      .doc("Refund a customer order; a human approves every refund.")
      .side_effecting(true)
      .requires_approval()
      .params("order_id")
      .fn([](const std::string& id) { return "refunded " + id; });
}

std::string setting_of(const ModelSettings& s) {
  try {
    s.validate();
  } catch (const ModelSettingsError& e) {
    return e.setting();
  }
  return "";
}

}  // namespace

TEST_CASE("ModelSettings::merged: the run's fields override the agent's one by one, extra deep-merges",
          "[settings]") {
  ModelSettings agent;
  agent.temperature = 0.2;
  agent.max_output_tokens = 500;
  agent.stop = std::vector<std::string>{"END"};
  agent.extra = {{"metadata", {{"team", "ops"}, {"tier", "a"}}}, {"service_tier", "flex"}};
  ModelSettings run;
  run.temperature = 0.9;
  run.tool_choice = ToolChoice::required();
  run.extra = {{"metadata", {{"tier", "b"}}}};

  const ModelSettings m = agent.merged(run);
  CHECK(m.temperature == 0.9);
  CHECK(m.max_output_tokens == 500);
  CHECK(m.stop == std::vector<std::string>{"END"});
  CHECK(m.tool_choice == ToolChoice::required());
  CHECK(m.extra == Json({{"metadata", {{"team", "ops"}, {"tier", "b"}}}, {"service_tier", "flex"}}));
  CHECK(agent.merged(ModelSettings{}) == agent);
  CHECK(ModelSettings{}.empty());
  CHECK_FALSE(m.empty());
  // An empty stop list set on the run clears the agent's.
  ModelSettings clear;
  clear.stop = std::vector<std::string>{};
  CHECK(agent.merged(clear).stop == std::vector<std::string>{});
}

TEST_CASE("ModelSettings::validate refuses hostile values, naming the setting", "[settings]") {
  ModelSettings s;
  s.temperature = std::nan("");
  CHECK(setting_of(s) == "temperature");
  s.temperature = -0.1;
  CHECK(setting_of(s) == "temperature");
  s.temperature = std::numeric_limits<double>::infinity();
  CHECK(setting_of(s) == "temperature");
  s = {};
  s.top_p = 1.5;
  CHECK(setting_of(s) == "top_p");
  s = {};
  s.max_output_tokens = 0;
  CHECK(setting_of(s) == "max_output_tokens");
  s = {};
  s.stop = std::vector<std::string>{"ok", ""};
  CHECK(setting_of(s) == "stop[1]");
  s = {};
  s.thinking_budget_tokens = -5;
  CHECK(setting_of(s) == "thinking_budget_tokens");
  s = {};
  s.extra = Json::array({1, 2});
  CHECK(setting_of(s) == "extra");
  s.extra = "temperature=2";
  CHECK(setting_of(s) == "extra");
  s.extra = {{"messages", Json::array()}};
  CHECK(setting_of(s) == "extra.messages");
  s.extra = {{"model", "gpt-5"}};
  CHECK(setting_of(s) == "extra.model");
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("cannot be overridden"));
  s.extra = {{"service_tier", "flex"}};
  CHECK(setting_of(s).empty());
  s.tool_choice = ToolChoice::named("");
  CHECK(setting_of(s) == "tool_choice");
}

TEST_CASE("ModelSettings JSON: round trip, unknown keys and wrong types name the key", "[settings]") {
  ModelSettings s;
  s.temperature = 0.5;
  s.top_p = 0.9;
  s.max_output_tokens = 256;
  s.stop = std::vector<std::string>{"\n\n"};
  s.seed = 42;
  s.tool_choice = ToolChoice::named("lookup");
  s.parallel_tool_calls = false;
  s.reasoning_effort = ReasoningEffort::low;
  s.thinking_budget_tokens = 2048;
  s.extra = {{"user", "u-1"}};
  const Json j = s.to_json();
  CHECK(j["tool_choice"] == Json({{"tool", "lookup"}}));
  CHECK(j["reasoning_effort"] == "low");
  CHECK(ModelSettings::from_json(j) == s);
  CHECK(ModelSettings::from_json(Json::object()).empty());

  const auto key_of = [](const Json& doc) {
    try {
      ModelSettings::from_json(doc);
    } catch (const ModelSettingsError& e) {
      return e.setting();
    }
    return std::string("(accepted)");
  };
  CHECK(key_of({{"temprature", 0.3}}) == "temprature");
  CHECK(key_of({{"temperature", "hot"}}) == "temperature");
  CHECK(key_of({{"max_output_tokens", 1.5}}) == "max_output_tokens");
  CHECK(key_of({{"max_output_tokens", 4294967297LL}}) == "max_output_tokens");
  CHECK(key_of({{"seed", 18446744073709551615ULL}}) == "seed");
  CHECK(key_of({{"stop", "END"}}) == "stop");
  CHECK(key_of({{"stop", {"a", 3}}}) == "stop[1]");
  CHECK(key_of({{"parallel_tool_calls", "yes"}}) == "parallel_tool_calls");
  CHECK(key_of({{"reasoning_effort", "extreme"}}) == "reasoning_effort");
  CHECK(key_of({{"tool_choice", "sometimes"}}) == "tool_choice");
  CHECK(key_of({{"tool_choice", {{"name", "x"}}}}) == "tool_choice");
  CHECK(key_of({{"top_p", 7}}) == "top_p");  // validated too
  CHECK(key_of({{"extra", {{"stream", false}}}}) == "extra.stream");
  CHECK_THROWS_AS(ModelSettings::from_json(Json::array()), ModelSettingsError);
}

TEST_CASE("Agent and start() check settings before anything runs, tool_choice must name an advertised tool",
          "[settings][agent]") {
  auto llm = FakeLLM::script({Turn{.content = "done"}});
  auto ctx = make_test_ctx({.llm = llm});
  AgentOptions bad;
  bad.model_settings.tool_choice = ToolChoice::named("delete_everything");
  CHECK_THROWS_WITH(Agent("a", "fake", "p", agentkit::cognition::react({lookup_tool()}), bad),
                    Catch::Contains("delete_everything") && Catch::Contains("lookup"));
  AgentOptions nan;
  nan.model_settings.temperature = std::nan("");
  CHECK_THROWS_AS(Agent("a", "fake", "p", nullptr, nan), ModelSettingsError);

  Agent agent("a", "fake", "p", agentkit::cognition::react({lookup_tool()}));
  RunOptions run;
  run.model_settings.tool_choice = ToolChoice::named("nope");
  CHECK_THROWS_AS(agent.run("go", ctx, run), ModelSettingsError);
  run.model_settings = {};
  run.model_settings.max_output_tokens = 0;
  CHECK_THROWS_AS(agent.run("go", ctx, run), ModelSettingsError);
  CHECK(llm->calls() == 0);
}

TEST_CASE("the model sees the agent's settings overridden field-wise by the run's", "[settings][agent]") {
  auto llm = FakeLLM::script({Turn{.content = "one"}, Turn{.content = "two"}});
  auto ctx = make_test_ctx({.llm = llm});
  AgentOptions options;
  options.model_settings.temperature = 0.1;
  options.model_settings.max_output_tokens = 300;
  options.model_settings.tool_choice = ToolChoice::named("lookup");
  Agent agent("a", "fake", "p", agentkit::cognition::react({lookup_tool()}), options);

  CHECK(agent.run("first", ctx).stop_reason == StopReason::answered);
  RunOptions run;
  run.model_settings.temperature = 0.7;
  run.model_settings.seed = 9;
  CHECK(agent.run("second", ctx, run).stop_reason == StopReason::answered);

  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].settings == options.model_settings);
  CHECK(requests[1].settings.temperature == 0.7);
  CHECK(requests[1].settings.seed == 9);
  CHECK(requests[1].settings.max_output_tokens == 300);
  CHECK(requests[1].settings.tool_choice == ToolChoice::named("lookup"));
}

TEST_CASE("a run's own settings survive suspension: resume and the stored state keep them", "[settings][agent]") {
  auto llm = FakeLLM::script({Turn{.tool_calls = {ToolCall{"c1", "refund", {{"order_id", "A-1"}}, {}}}},
                              Turn{.content = "Refunded."}});
  auto ctx = make_test_ctx({.llm = llm});
  AgentOptions options;
  options.model_settings.max_output_tokens = 300;
  Agent agent("desk", "fake", "p", agentkit::cognition::react({refund_tool()}), options);
  RunOptions run;
  run.model_settings.temperature = 0.3;
  auto suspended = agent.run("refund A-1", ctx, run);
  REQUIRE(suspended.stop_reason == StopReason::suspended);
  REQUIRE(suspended.state.model_settings);
  CHECK(suspended.state.model_settings->temperature == 0.3);
  CHECK_FALSE(suspended.state.model_settings->max_output_tokens);  // the agent's are not copied

  // Through the JSON document (as a host stores it) and back.
  const auto reloaded = agentkit::RunState::from_json(Json::parse(suspended.state.to_json().dump()));
  CHECK(reloaded.model_settings == suspended.state.model_settings);

  auto resumed = agent.resume(suspended.state.run_id, {{"c1", Decision::approve()}}, ctx);
  REQUIRE(resumed.stop_reason == StopReason::answered);
  const auto requests = llm->requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[1].settings.temperature == 0.3);
  CHECK(requests[1].settings.max_output_tokens == 300);

  // A document whose settings were tampered into nonsense does not load.
  Json doc = suspended.state.to_json();
  doc["model_settings"] = {{"temperature", "hot"}};
  CHECK_THROWS_WITH(agentkit::RunState::from_json(doc), Catch::Contains("temperature"));
}

TEST_CASE("close_objects: every object schema with properties is closed, property names are not schemas",
          "[settings][output]") {
  const agentkit::Schema in = agentkit::Schema::parse(
      R"({"type":"object","properties":{"properties":{"type":"object","properties":{"a":{"type":"string"}}},)"
      R"("list":{"type":"array","items":{"type":"object","properties":{"b":{"type":"integer"}}}},)"
      R"("map":{"type":"object","additionalProperties":{"type":"string"}},)"
      R"("either":{"anyOf":[{"type":"object","properties":{"c":{"type":"null"}}},{"type":"null"}]}}})");
  const agentkit::Schema out = agentkit::close_objects(in);
  CHECK(out["additionalProperties"] == false);
  CHECK(out["properties"]["properties"]["additionalProperties"] == false);
  CHECK_FALSE(out["properties"].contains("additionalProperties"));  // a name map, not a schema
  CHECK(out["properties"]["list"]["items"]["additionalProperties"] == false);
  CHECK(out["properties"]["map"]["additionalProperties"] == agentkit::Schema::parse(R"({"type":"string"})"));
  CHECK(out["properties"]["either"]["anyOf"][0]["additionalProperties"] == false);
}
