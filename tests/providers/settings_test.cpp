// Model settings and native structured output on the wire: the exact
// request bodies each adapter sends, the settings a provider cannot honour
// (refused before anything is sent), and a declared output type asked for in
// request 1 so a conforming answer costs no repair turn.
#include <catch2/catch.hpp>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/settings.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/wire_replies.h"

using agentkit::Agent;
using agentkit::AgentOptions;
using agentkit::Json;
using agentkit::Message;
using agentkit::ModelRequest;
using agentkit::ModelSettings;
using agentkit::ReasoningEffort;
using agentkit::RunOptions;
using agentkit::Schema;
using agentkit::StopReason;
using agentkit::ToolChoice;
using agentkit::testing::WireServer;
using namespace agentkit::providers;
using agentkit_test::json_reply;

namespace {

struct Forecast {
  std::string city;
  int high_c = 0;
};

struct Loose {
  std::string city;
  int high_c = 0;
};

}  // namespace

template <>
struct agentkit::Describe<Loose> {
  static constexpr std::string_view name = "Loose";
  static constexpr auto fields = std::tuple{agentkit::field("city", &Loose::city),
                                            agentkit::field("high_c", &Loose::high_c).defaulted()};
};

template <>
struct agentkit::Describe<Forecast> {
  static constexpr std::string_view name = "Forecast";
  static constexpr auto fields =
      std::tuple{agentkit::field("city", &Forecast::city), agentkit::field("high_c", &Forecast::high_c)};
};

namespace {

agentkit::ToolPtr weather_tool() {
  return agentkit::tool("get_weather")
      .doc("Get the current weather for a city, in degrees Celsius.")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& c) { return c + ": 21C"; });
}

Json openai_text(const std::string& content) {
  return {{"choices", {{{"index", 0}, {"finish_reason", "stop"}, {"message", {{"role", "assistant"}, {"content", content}}}}}},
          {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
}

Json openai_call(const std::string& name, const std::string& arguments) {
  return {{"choices",
           {{{"index", 0},
             {"finish_reason", "tool_calls"},
             {"message",
              {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls", {{{"id", "call_1"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}}}}}}}}},
          {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}};
}

Json anthropic_tool_use(const std::string& id, const std::string& name, const Json& input) {
  return {{"type", "message"},
          {"role", "assistant"},
          {"content", {{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}}},
          {"stop_reason", "tool_use"},
          {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}};
}

struct Run {
  agentkit::RunResult result;
  std::vector<WireServer::Request> requests;
  Json first() const { return Json::parse(requests.at(0).body); }
};

Run run_agent(WireServer& server, const std::string& provider, AgentOptions options,
              std::vector<agentkit::ToolPtr> tools = {}, RunOptions run = {}) {
  const std::string model = provider == "openai" ? "openai/gpt-test@" + server.base_url() + "/v1"
                                                 : "anthropic/claude-test@" + server.base_url();
  Agent agent("forecaster", model, "You forecast.", agentkit::cognition::react(std::move(tools)), std::move(options));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({.openai_api_key = "sk-test", .anthropic_api_key = "sk-ant-test", .stream = false});
  Run out;
  out.result = agent.run("Forecast for Lisbon?", ctx, std::move(run));
  out.requests = server.requests();
  return out;
}

ModelSettings all_openai_settings() {
  ModelSettings s;
  s.temperature = 0.25;
  s.top_p = 0.9;
  s.max_output_tokens = 700;
  s.stop = std::vector<std::string>{"END", "\n\n"};
  s.seed = 42;
  s.tool_choice = ToolChoice::named("get_weather");
  s.parallel_tool_calls = false;
  s.reasoning_effort = ReasoningEffort::minimal;
  s.extra = {{"service_tier", "flex"}, {"metadata", {{"team", "ops"}}}};
  return s;
}

}  // namespace

TEST_CASE("OpenAI chat: every setting in the request body, extra merged last", "[settings][openai]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const ModelSettings s = all_openai_settings();
  ModelRequest request{"openai/gpt-test", "", history, specs, nullptr, &s};
  const Schema body = openai_chat_body(request, {.model = "gpt-test", .max_tokens = 99, .tool_choice = "auto"}, false);
  CHECK(body["temperature"] == 0.25);
  CHECK(body["top_p"] == 0.9);
  CHECK(body["max_completion_tokens"] == 700);
  CHECK_FALSE(body.contains("max_tokens"));  // replaced, not sent twice
  CHECK(body["stop"] == Schema::array({"END", "\n\n"}));
  CHECK(body["seed"] == 42);
  CHECK(body["tool_choice"] == Schema::parse(R"({"type":"function","function":{"name":"get_weather"}})"));
  CHECK(body["parallel_tool_calls"] == false);
  CHECK(body["reasoning_effort"] == "minimal");
  CHECK(body["service_tier"] == "flex");
  CHECK(body["metadata"] == Schema::parse(R"({"team":"ops"})"));

  // The modes as strings; tool fields only with tools.
  for (auto [choice, wire] : {std::pair{ToolChoice::automatic(), "auto"}, std::pair{ToolChoice::required(), "required"},
                              std::pair{ToolChoice::none(), "none"}}) {
    ModelSettings m;
    m.tool_choice = choice;
    ModelRequest r{"m", "", history, specs, nullptr, &m};
    CHECK(openai_chat_body(r, {}, false)["tool_choice"] == wire);
  }
  ModelSettings parallel;
  parallel.parallel_tool_calls = true;
  parallel.tool_choice = ToolChoice::none();
  ModelRequest no_tools{"m", "", history, {}, nullptr, &parallel};
  const Schema plain = openai_chat_body(no_tools, {}, false);
  CHECK_FALSE(plain.contains("parallel_tool_calls"));
  CHECK_FALSE(plain.contains("tool_choice"));
  // Without settings the body is what it always was.
  ModelRequest bare{"m", "", history, specs};
  const Schema old = openai_chat_body(bare, {.max_tokens = 99}, false);
  CHECK(old["max_tokens"] == 99);
  CHECK_FALSE(old.contains("temperature"));
}

TEST_CASE("Anthropic: every setting in the request body, extra deep-merged last", "[settings][anthropic]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  ModelSettings s;
  s.temperature = 0.5;
  s.top_p = 0.8;
  s.max_output_tokens = 3000;
  s.stop = std::vector<std::string>{"END"};
  s.tool_choice = ToolChoice::named("get_weather");
  s.parallel_tool_calls = false;
  s.extra = {{"metadata", {{"user_id", "u-1"}}}, {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}, {"x", 1}}}};
  ModelRequest request{"anthropic/claude-test", "sys", history, specs, nullptr, &s};
  const Schema body = anthropic_body(request, {.model = "claude-test"}, false);
  CHECK(body["temperature"] == 0.5);
  CHECK(body["top_p"] == 0.8);
  CHECK(body["max_tokens"] == 3000);
  CHECK(body["stop_sequences"] == Schema::array({"END"}));
  CHECK(body["tool_choice"] ==
        Schema::parse(R"({"type":"tool","name":"get_weather","disable_parallel_tool_use":true,"x":1})"));
  CHECK(body["metadata"] == Schema::parse(R"({"user_id":"u-1"})"));
  CHECK_FALSE(body.contains("thinking"));

  ModelSettings think;
  think.max_output_tokens = 4000;
  think.thinking_budget_tokens = 2048;
  think.tool_choice = ToolChoice::required();
  ModelRequest forced{"m", "", history, specs, nullptr, &think};
  // Extended thinking cannot be combined with forced tool use.
  CHECK_THROWS_AS(anthropic_body(forced, {}, false), UnsupportedSetting);
  think.tool_choice = ToolChoice::automatic();
  const Schema thinking = anthropic_body(forced, {}, false);
  CHECK(thinking["thinking"] == Schema::parse(R"({"type":"enabled","budget_tokens":2048})"));
  CHECK(thinking["tool_choice"] == Schema::parse(R"({"type":"auto"})"));
  for (auto [choice, wire] : {std::pair{ToolChoice::required(), "any"}, std::pair{ToolChoice::none(), "none"}}) {
    ModelSettings m;
    m.tool_choice = choice;
    ModelRequest r{"m", "", history, specs, nullptr, &m};
    CHECK(anthropic_body(r, {}, false)["tool_choice"]["type"] == wire);
  }
}

TEST_CASE("settings a provider cannot honour are refused, naming the setting and the provider", "[settings]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const auto refusal = [&](const ModelSettings& s, bool anthropic) -> std::string {
    ModelRequest r{"m", "", history, specs, nullptr, &s};
    try {
      if (anthropic) {
        anthropic_body(r, {.max_tokens = 2000}, false);
      } else {
        openai_chat_body(r, {}, false);
      }
    } catch (const UnsupportedSetting& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_THAT(e.what(), Catch::Contains(e.provider()) && Catch::Contains("'" + e.setting() + "'"));
      return e.provider() + ":" + e.setting();
    }
    return "(accepted)";
  };
  ModelSettings s;
  s.seed = 1;
  CHECK(refusal(s, true) == "Anthropic:seed");
  s = {};
  s.reasoning_effort = ReasoningEffort::high;
  CHECK(refusal(s, true) == "Anthropic:reasoning_effort");
  s = {};
  s.temperature = 1.5;  // valid for OpenAI, not for Anthropic
  CHECK(refusal(s, true) == "Anthropic:temperature");
  CHECK(refusal(s, false) == "(accepted)");
  s = {};
  s.thinking_budget_tokens = 1023;
  CHECK(refusal(s, true) == "Anthropic:thinking_budget_tokens");
  s.thinking_budget_tokens = 2000;  // == max_tokens
  CHECK(refusal(s, true) == "Anthropic:thinking_budget_tokens");
  CHECK(refusal(s, false) == "OpenAI chat:thinking_budget_tokens");
  s = {};
  s.thinking_budget_tokens = 1024;  // extended thinking samples at temperature 1, top_p 0.95 to 1
  s.temperature = 0.5;
  CHECK(refusal(s, true) == "Anthropic:temperature");
  s.temperature = 1;
  CHECK(refusal(s, true) == "(accepted)");
  s.top_p = 0.9;
  CHECK(refusal(s, true) == "Anthropic:top_p");
  s = {};
  s.tool_choice = ToolChoice::named("launch_missiles");
  CHECK(refusal(s, true) == "Anthropic:tool_choice");
  CHECK(refusal(s, false) == "OpenAI chat:tool_choice");
  s = {};
  s.stop = std::vector<std::string>{"a", "b", "c", "d", "e"};
  CHECK(refusal(s, false) == "OpenAI chat:stop");
}

TEST_CASE("Anthropic interleaved thinking: the beta header, and a budget past max_tokens", "[settings][anthropic][loopback]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  ModelSettings s;
  s.max_output_tokens = 2000;
  s.thinking_budget_tokens = 8000;  // spans every thinking block of the turn
  ModelRequest request{"m", "", history, specs, nullptr, &s};
  CHECK_THROWS_AS(anthropic_body(request, {}, false), UnsupportedSetting);
  CHECK(anthropic_body(request, {.interleaved_thinking = true}, false)["thinking"]["budget_tokens"] == 8000);

  WireServer server;
  const auto answer = Json{{"type", "message"}, {"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "ok"}}}},
                           {"stop_reason", "end_turn"}, {"usage", {{"input_tokens", 1}, {"output_tokens", 1}}}};
  for (int i = 0; i < 3; ++i) server.enqueue(json_reply(answer));
  const auto send = [&](AnthropicOptions options, const ModelSettings& settings) {
    options.base_url = server.base_url();
    options.api_key = "sk-ant-test";
    options.stream = false;
    AnthropicModel model(std::make_shared<Transport>(), options);
    ModelRequest r{"m", "", history, specs, nullptr, &settings};
    auto ctx = agentkit::testing::make_test_ctx();
    model.complete(r, ctx);
    return server.requests().back();
  };
  CHECK(send({.interleaved_thinking = true}, s).header("anthropic-beta") == "interleaved-thinking-2025-05-14");
  // A beta the host set stays; the feature joins its list.
  CHECK(send({.interleaved_thinking = true, .extra_headers = {{"Anthropic-Beta", "files-api-2025-04-14"}}}, s)
            .header("anthropic-beta") == "files-api-2025-04-14,interleaved-thinking-2025-05-14");
  // Without a thinking budget there is no thinking to interleave.
  CHECK(send({.interleaved_thinking = true}, ModelSettings{}).header("anthropic-beta").empty());
}

TEST_CASE("an unsupported setting fails the run at its first call, before any request is sent", "[settings][loopback]") {
  WireServer server;
  AgentOptions options;
  options.model_settings.seed = 7;
  auto run = run_agent(server, "anthropic", options);
  CHECK(run.result.stop_reason == StopReason::failed);
  REQUIRE(run.result.failure); CHECK(run.result.failure->code == ErrorCode::invalid_argument);
  CHECK_THAT(run.result.failure.value().message, Catch::Contains("Anthropic") && Catch::Contains("'seed'"));
  CHECK(run.requests.empty());
}

TEST_CASE("settings reach the wire over loopback, a run's override wins", "[settings][loopback]") {
  WireServer server;
  server.enqueue(json_reply(openai_text("Sunny.")));
  server.enqueue(json_reply({{"content", {{{"type", "text"}, {"text", "Sunny."}}}}, {"stop_reason", "end_turn"}}));
  AgentOptions options;
  options.model_settings.temperature = 0.2;
  options.model_settings.max_output_tokens = 500;
  RunOptions per_run;
  per_run.model_settings.temperature = 0.6;
  auto openai = run_agent(server, "openai", options, {}, per_run);
  REQUIRE(openai.result.stop_reason == StopReason::answered);
  const Json body = openai.first();
  CHECK(body["temperature"] == 0.6);
  CHECK(body["max_completion_tokens"] == 500);

  auto anthropic = run_agent(server, "anthropic", options);
  REQUIRE(anthropic.result.stop_reason == StopReason::answered);
  const Json second = Json::parse(anthropic.requests.at(1).body);
  CHECK(second["temperature"] == 0.2);
  CHECK(second["max_tokens"] == 500);
}

TEST_CASE("a provider 400 about a setting surfaces as a clear invalid error", "[settings][loopback]") {
  WireServer server;
  server.enqueue(json_reply({{"error",
                              {{"message", "Unsupported value: 'temperature' does not support 0.2 with this model."},
                               {"type", "invalid_request_error"},
                               {"param", "temperature"},
                               {"code", "unsupported_value"}}}},
                            400));
  AgentOptions options;
  options.model_settings.temperature = 0.2;
  auto run = run_agent(server, "openai", options);
  CHECK(run.result.stop_reason == StopReason::failed);
  REQUIRE(run.result.failure); CHECK(run.result.failure->code == ErrorCode::invalid_argument);
  CHECK_THAT(run.result.failure.value().message, Catch::Contains("'temperature' does not support 0.2") && Catch::Contains("HTTP 400") &&
                                   Catch::Contains("param 'temperature'"));
  CHECK(run.requests.size() == 1);  // a 400 is not retried
}

TEST_CASE("openai_strict_compatible: strict only when every object is closed and fully required", "[settings][openai]") {
  CHECK(openai_strict_compatible(Schema::parse(
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}},"required":["b"],"additionalProperties":false}}},"required":["a"],"additionalProperties":false})")));
  CHECK_FALSE(openai_strict_compatible(
      Schema::parse(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})")));
  CHECK_FALSE(openai_strict_compatible(Schema::parse(
      R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false})")));
  CHECK_FALSE(openai_strict_compatible(Schema::parse(
      R"({"type":"object","properties":{"a":{"anyOf":[{"type":"object","additionalProperties":{"type":"string"}}]}},"required":["a"],"additionalProperties":false})")));
  CHECK(openai_strict_compatible(Schema::parse(R"({"type":"array","items":{"type":"string"}})")));
  // A struct with a defaulted (optional) field is not fully required: not strict.
  CHECK_FALSE(openai_strict_compatible(agentkit::output_type<Loose>().schema));
  CHECK(openai_strict_compatible(agentkit::output_type<Forecast>().schema));
}

TEST_CASE("structured output, OpenAI: response_format in request 1, a conforming answer costs one call",
          "[settings][output][openai]") {
  WireServer server;
  server.enqueue(json_reply(openai_text(R"({"city":"Lisbon","high_c":24})")));
  auto run = run_agent(server, "openai", {.output = agentkit::output_type<Forecast>()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({{"city", "Lisbon"}, {"high_c", 24}}));
  CHECK(run.requests.size() == 1);  // zero repair turns
  const Json format = run.first()["response_format"];
  CHECK(format["type"] == "json_schema");
  CHECK(format["json_schema"]["name"] == "final_answer");
  CHECK(format["json_schema"]["schema"] == Json::parse(agentkit::output_type<Forecast>().schema.dump()));
  CHECK(format["json_schema"]["strict"] == true);  // closed by output_type, every field required
}

TEST_CASE("structured output, OpenAI: a non-conforming answer still gets the repair turn", "[settings][output][openai]") {
  WireServer server;
  server.enqueue(json_reply(openai_text(R"({"city":"Lisbon"})")));
  server.enqueue(json_reply(openai_text(R"({"city":"Lisbon","high_c":24})")));
  auto run = run_agent(server, "openai", {.output = agentkit::output_type<Forecast>()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  REQUIRE(run.requests.size() == 2);
  const Json second = Json::parse(run.requests[1].body);
  CHECK_THAT(second["messages"].back()["content"].get<std::string>(), Catch::Contains("did not match"));
  CHECK(second.contains("response_format"));
}

TEST_CASE("structured output, Anthropic: a forced final_answer tool, turned back into the answer",
          "[settings][output][anthropic]") {
  WireServer server;
  server.enqueue(json_reply(anthropic_tool_use("toolu_1", "final_answer", {{"city", "Lisbon"}, {"high_c", 24}})));
  auto run = run_agent(server, "anthropic", {.output = agentkit::output_type<Forecast>()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({{"city", "Lisbon"}, {"high_c", 24}}));
  CHECK(Json::parse(run.result.output) == run.result.structured);
  CHECK(run.requests.size() == 1);  // zero repair turns
  const Json body = run.first();
  REQUIRE(body["tools"].size() == 1);
  CHECK(body["tools"][0]["name"] == "final_answer");
  CHECK(body["tools"][0]["input_schema"] == Json::parse(agentkit::output_type<Forecast>().schema.dump()));
  CHECK(body["tool_choice"] == Json({{"type", "tool"}, {"name", "final_answer"}}));
}

TEST_CASE("structured output, Anthropic: real tools first under tool_choice any, then the answer",
          "[settings][output][anthropic]") {
  WireServer server;
  server.enqueue(json_reply(anthropic_tool_use("toolu_1", "get_weather", {{"city", "Lisbon"}})));
  server.enqueue(json_reply(anthropic_tool_use("toolu_2", "final_answer", {{"city", "Lisbon"}, {"high_c", 21}})));
  auto run = run_agent(server, "anthropic", {.output = agentkit::output_type<Forecast>()}, {weather_tool()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({{"city", "Lisbon"}, {"high_c", 21}}));
  REQUIRE(run.requests.size() == 2);
  const Json body = run.first();
  CHECK(body["tool_choice"] == Json({{"type", "any"}}));
  REQUIRE(body["tools"].size() == 2);
  CHECK(body["tools"][0]["name"] == "get_weather");
  CHECK(body["tools"][1]["name"] == "final_answer");
  const Json second = Json::parse(run.requests[1].body);
  CHECK(second["messages"][2]["content"][0]["content"] == "Lisbon: 21C");
}

TEST_CASE("structured output, Anthropic: a non-conforming final_answer still gets the repair turn",
          "[settings][output][anthropic]") {
  WireServer server;
  server.enqueue(json_reply(anthropic_tool_use("toolu_1", "final_answer", {{"city", "Lisbon"}, {"high_c", "warm"}})));
  server.enqueue(json_reply(anthropic_tool_use("toolu_2", "final_answer", {{"city", "Lisbon"}, {"high_c", 24}})));
  auto run = run_agent(server, "anthropic", {.output = agentkit::output_type<Forecast>()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({{"city", "Lisbon"}, {"high_c", 24}}));
  REQUIRE(run.requests.size() == 2);
  const Json second = Json::parse(run.requests[1].body);
  CHECK_THAT(second["messages"].back()["content"].get<std::string>(), Catch::Contains("did not match"));
  // The first answer went back as the assistant's text, not as a dangling tool_use.
  CHECK(second["messages"][1]["content"] == R"({"city":"Lisbon","high_c":"warm"})");
}

TEST_CASE("structured output, Anthropic: a non-object output type travels wrapped as {value}",
          "[settings][output][anthropic]") {
  WireServer server;
  server.enqueue(json_reply(anthropic_tool_use("toolu_1", "final_answer", {{"value", {"a", "b"}}})));
  auto run = run_agent(server, "anthropic", {.output = agentkit::output_type<std::vector<std::string>>()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({"a", "b"}));
  const Json schema = run.first()["tools"][0]["input_schema"];
  CHECK(schema["type"] == "object");
  CHECK(schema["required"] == Json({"value"}));
  CHECK(schema["properties"]["value"]["type"] == "array");
}

TEST_CASE("structured output, Anthropic: an agent tool named final_answer is refused", "[settings][output][anthropic]") {
  WireServer server;
  auto clash = agentkit::tool("final_answer")
                   .doc("A tool that happens to have the reserved name for answers.")
                   .side_effecting(false)
                   .params("text")
                   .fn([](const std::string& t) { return t; });
  auto run = run_agent(server, "anthropic", {.output = agentkit::output_type<Forecast>()}, {clash});
  CHECK(run.result.stop_reason == StopReason::failed);
  CHECK_THAT(run.result.failure.value().message, Catch::Contains("final_answer"));
  CHECK(run.requests.empty());
}

TEST_CASE("structured output, OpenAI: a tool call first, then a conforming answer: no repair turn",
          "[settings][output][openai]") {
  WireServer server;
  server.enqueue(json_reply(openai_call("get_weather", R"({"city":"Lisbon"})")));
  server.enqueue(json_reply(openai_text(R"({"city":"Lisbon","high_c":21})")));
  auto run = run_agent(server, "openai", {.output = agentkit::output_type<Forecast>()}, {weather_tool()});
  REQUIRE(run.result.stop_reason == StopReason::answered);
  CHECK(run.result.structured == Json({{"city", "Lisbon"}, {"high_c", 21}}));
  REQUIRE(run.requests.size() == 2);
  const Json second = Json::parse(run.requests[1].body);
  CHECK(second["response_format"] == run.first()["response_format"]);
  CHECK(second["messages"].back()["content"] == "Lisbon: 21C");
}

TEST_CASE("structured output, Anthropic streaming: the streamed final_answer input becomes the answer",
          "[settings][output][anthropic]") {
  WireServer server;
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = {
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n",
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"final_answer\",\"input\":{}}}\n\n",
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Lis\"}}\n\n",
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"bon\\\", \\\"high_c\\\": 24}\"}}\n\n",
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"};
  server.enqueue(r);
  Agent agent("forecaster", "anthropic/claude-test@" + server.base_url(), "You forecast.", nullptr,
              {.output = agentkit::output_type<Forecast>()});
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({.anthropic_api_key = "sk-ant-test"});
  auto result = agent.run("Forecast for Lisbon?", ctx);
  REQUIRE(result.stop_reason == StopReason::answered);
  CHECK(result.structured == Json({{"city", "Lisbon"}, {"high_c", 24}}));
  CHECK(result.iterations == 1);
  CHECK(server.requests().size() == 1);
}
