// The OpenAI Responses API adapter (/v1/responses, SSE with event: lines):
// request bodies against the recorded ones in
// ../shared/fixtures/wire/openai-responses, replies and streams in any
// chunking, fail-closed reading (cut streams, error events, failed
// responses, mislabelled bodies), faults over loopback, routing, and whole
// agent runs over loopback with parallel calls and reasoning carried back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/openai_responses.h>
#include <agentkit/providers/settings.h>
#include <agentkit/run_state.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/files.h"
#include "../helpers/wire_fixtures.h"

namespace fs = std::filesystem;
using agentkit::ContentPart;
using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::Message;
using agentkit::ModelRequest;
using agentkit::ModelSettings;
using agentkit::ReasoningPart;
using agentkit::ToolCall;
using agentkit::testing::WireServer;
using namespace agentkit::providers;
using agentkit_test::error_of;
using agentkit_test::read_file;

namespace {

const std::string kKey = "sk-proj-SECRETresponses0123456789";

Json fixture(const fs::path& dir, const std::string& name) { return Json::parse(read_file(dir / name)); }

HttpResponse sse_head() {
  HttpResponse head;
  head.status = 200;
  head.headers = {{"content-type", "text/event-stream; charset=utf-8"}};
  return head;
}

HttpResponse json_head() { return {200, {{"content-type", "application/json"}}}; }

agentkit::ModelResponse read_reply(const std::vector<std::string>& chunks, const HttpResponse& head, bool stream,
                                   DeltaSink deltas = {}) {
  ReplyReader reader(openai_responses_reply(), "https://api.openai.com/v1/responses",
                     stream ? std::make_unique<OpenAIResponsesStreamAccumulator>(std::move(deltas)) : nullptr);
  reader.on_headers(head);
  for (const auto& c : chunks) reader.feed(c);
  return reader.finish();
}


// One SSE event as the API frames it: an event: line naming the data's type.
std::string event(const std::string& type, Json data) {
  data["type"] = type;
  return "event: " + type + "\ndata: " + data.dump() + "\n\n";
}

// The events of `body` (split at blank lines), each with its blank line.
std::vector<std::string> events_of(const std::string& body) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < body.size();) {
    auto end = body.find("\n\n", at);
    end = end == std::string::npos ? body.size() : end + 2;
    out.push_back(body.substr(at, end - at));
    at = end;
  }
  return out;
}

agentkit::ToolSpec spec(std::string name, std::string description, const Json& parameters) {
  agentkit::ToolSpec s;
  s.name = std::move(name);
  s.description = std::move(description);
  s.parameters = agentkit::Schema::parse(parameters.dump());
  return s;
}

// The body as plain (key-sorted) JSON, for structural comparison.
Json body_of(const ModelRequest& request, const OpenAIResponsesOptions& options, bool stream) {
  return Json::parse(openai_responses_body(request, options, stream).dump());
}

const ReasoningPart& reasoning_at(const Message& m, std::size_t i) { return std::get<ReasoningPart>(m.content.at(i)); }

agentkit::ToolPtr weather_tool() {
  return agentkit::tool("get_weather")
      .doc("Get the weather in a given city")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& city) { return std::string(city == "Paris" ? "18 C" : city == "Oslo" ? "4 C" : "unknown"); });
}

}  // namespace

// ------------------------------------------------------------------ requests

TEST_CASE("Responses request bodies match the recorded ones: flat strict tools, function_call items, outputs", "[responses][request]") {
  WIRE_FIXTURES_OR_SKIP(dir, "openai-responses");
  const Json recorded_tool = fixture(*dir, "request_function_tool_live.json");
  const auto capital = spec("get_capital", "", recorded_tool["tools"][0]["parameters"]);
  const agentkit::ToolSpec* tools[] = {&capital};
  ModelSettings automatic;
  automatic.tool_choice = agentkit::ToolChoice::automatic();
  const OpenAIResponsesOptions options{.model = "gpt-4o", .include_encrypted_reasoning = false};

  SECTION("the first turn") {
    const std::vector<Message> history{Message::user("What is the capital of PotatoLand?")};
    const Json body = body_of({"openai-responses/gpt-4o", "", history, tools, nullptr, &automatic}, options, false);
    CHECK(body["input"] == recorded_tool["input"]);
    CHECK(body["model"] == recorded_tool["model"]);
    CHECK(body["stream"] == recorded_tool["stream"]);
    CHECK(body["tool_choice"] == recorded_tool["tool_choice"]);
    Json theirs = recorded_tool["tools"][0];
    theirs["description"] = "";  // the recorder sent null for a tool without one
    CHECK(body["tools"][0] == theirs);
    CHECK(body["store"] == false);
    CHECK_FALSE(body.contains("instructions"));  // no system prompt, no instructions
    CHECK_FALSE(body.contains("include"));
  }
  SECTION("the same turn streamed") {
    const Json recorded = fixture(*dir, "request_stream_function_tool_live_2025-03.json");
    const std::vector<Message> history{Message::user("What is the capital of France?")};
    const Json body = body_of({"m", "", history, tools, nullptr, &automatic}, options, true);
    CHECK(body["input"] == recorded["input"]);
    CHECK(body["stream"] == true);
    CHECK(body["tools"][0]["parameters"] == recorded["tools"][0]["parameters"]);
    CHECK(body["tools"][0]["strict"] == true);
  }
  SECTION("the call sent back, then its output") {
    const Json recorded = fixture(*dir, "request_function_call_output_live.json");
    const std::vector<Message> history{
        Message::user("What is the capital of PotatoLand?"),
        Message::assistant("", {ToolCall{"call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", Json::object(),
                                         "{\"country\":\"PotatoLand\"}"}}),
        Message::tool_result("call_YfwRsW8sUxDKipwyhWTzOXCA", "get_capital", "Potato City")};
    const Json body = body_of({"m", "", history, tools, nullptr, &automatic}, options, false);
    Json theirs = recorded["input"];
    theirs[1].erase("status");  // null in the recording; optional on input
    CHECK(body["input"] == theirs);
  }
  SECTION("parallel calls and their outputs, error text included") {
    const Json recorded = fixture(*dir, "request_parallel_function_call_outputs_live.json");
    const Json& in = recorded["input"];
    const std::vector<Message> history{
        Message::user(in[0]["content"].get<std::string>()),
        Message::assistant("", {ToolCall{in[2]["call_id"], "get_location", Json::object(), in[2]["arguments"]},
                                ToolCall{in[3]["call_id"], "get_location", Json::object(), in[3]["arguments"]}}),
        Message::tool_result(in[4]["call_id"], "get_location", in[4]["output"].get<std::string>(), true),
        Message::tool_result(in[5]["call_id"], "get_location", in[5]["output"].get<std::string>())};
    const auto location = spec("get_location", "", recorded["tools"][0]["parameters"]);
    const agentkit::ToolSpec* location_tools[] = {&location};
    const Json body = body_of({"m", "", history, location_tools, nullptr, &automatic}, options, false);
    // The recording carries an empty assistant message pydantic-ai adds; an
    // assistant turn without text sends none.
    Json theirs = Json::array();
    for (const auto& item : in) {
      if (!(item.contains("role") && item["role"] == "assistant")) theirs.push_back(item);
    }
    CHECK(body["input"] == theirs);
    CHECK(body["tools"][0]["parameters"] == recorded["tools"][0]["parameters"]);
  }
  SECTION("a reasoning model's first turn: include, effort, required tool, extra") {
    const Json recorded = fixture(*dir, "request_stream_reasoning_function_live_2025-09.json");
    const auto final_result = spec("final_result", "The final response which ends this conversation",
                                   recorded["tools"][0]["parameters"]);
    const agentkit::ToolSpec* final_tools[] = {&final_result};
    ModelSettings s;
    s.reasoning_effort = agentkit::ReasoningEffort::low;
    s.tool_choice = agentkit::ToolChoice::required();
    s.extra = {{"service_tier", "flex"}};
    const std::vector<Message> history{Message::user("Calculate 100 * 200 / 3")};
    const Json body = body_of({"m", "", history, final_tools, nullptr, &s}, {.model = "gpt-5"}, true);
    CHECK(body["include"] == recorded["include"]);
    CHECK(body["input"] == recorded["input"]);
    CHECK(body["model"] == recorded["model"]);
    CHECK(body["reasoning"] == Json({{"effort", "low"}}));  // summary not asked for: the recording sent null
    CHECK(body["service_tier"] == recorded["service_tier"]);
    CHECK(body["tool_choice"] == recorded["tool_choice"]);
    CHECK(body["tools"] == recorded["tools"]);
  }
  SECTION("the documented request, non-strict") {
    const Json recorded = fixture(*dir, "request_function_tool_docs.json");
    const Json& t = recorded["tools"][0];
    const auto weather = spec(t["name"], t["description"], t["parameters"]);
    const agentkit::ToolSpec* weather_tools[] = {&weather};
    const std::vector<Message> history{Message::user(recorded["input"].get<std::string>())};
    const Json body = body_of({"m", "", history, weather_tools, nullptr, &automatic},
                              {.model = "gpt-5.4", .strict_tools = false}, false);
    CHECK(body["input"][0] == Json({{"role", "user"}, {"content", recorded["input"]}}));
    Json ours = body["tools"][0];
    CHECK(ours["strict"] == false);
    ours.erase("strict");
    CHECK(ours == t);
    CHECK(body["tool_choice"] == recorded["tool_choice"]);
  }
}

TEST_CASE("Responses request body: instructions, content parts, notes, refusals, and only OpenAI's reasoning", "[responses][request][parts]") {
  const std::vector<Message> history{
      Message::system("Mid-run note."),
      Message::user(std::vector<ContentPart>{agentkit::TextPart{"What is in these?"},
                                             agentkit::ImagePart{"image/png", "\x89PNG", ""},
                                             agentkit::ImagePart{"", "", "https://example.com/a.png"},
                                             agentkit::FilePart{"application/pdf", "%PDF", "a.pdf", ""},
                                             agentkit::FilePart{"", "", "", "https://example.com/b.pdf"}}),
      Message::assistant(std::vector<ContentPart>{ReasoningPart{"theirs", "sig-anthropic", "", "anthropic"},
                                                  ReasoningPart{"First I look.", "rs_1", "ENC1", "openai"},
                                                  ReasoningPart{"Then I answer.", "rs_1", "", "openai"},
                                                  agentkit::TextPart{"A cat "}, agentkit::TextPart{"and a dog."},
                                                  agentkit::RefusalPart{"No faces."},
                                                  agentkit::ImagePart{"image/png", "IMG", ""}},
                         {ToolCall{"call_1", "zoom", {{"level", 2}}, ""}}),
      Message::tool_result("call_1", "zoom", std::vector<ContentPart>{agentkit::TextPart{"zoomed"},
                                                                      agentkit::ImagePart{"image/jpeg", "JPEG", ""}})};
  const Json body = body_of({"m", "You describe pictures.", history, {}}, {}, false);
  CHECK(body["instructions"] == "You describe pictures.");
  const Json& input = body["input"];
  REQUIRE(input.size() == 6);
  CHECK(input[0] == Json({{"role", "system"}, {"content", "Mid-run note."}}));
  const Json& user = input[1]["content"];
  REQUIRE(user.size() == 5);
  CHECK(user[0] == Json({{"type", "input_text"}, {"text", "What is in these?"}}));
  CHECK(user[1] == Json({{"type", "input_image"}, {"image_url", "data:image/png;base64," + agentkit::base64_encode("\x89PNG")}, {"detail", "auto"}}));
  CHECK(user[2]["image_url"] == "https://example.com/a.png");
  CHECK(user[3] == Json({{"type", "input_file"}, {"filename", "a.pdf"}, {"file_data", "data:application/pdf;base64," + agentkit::base64_encode("%PDF")}}));
  CHECK(user[4] == Json({{"type", "input_file"}, {"file_url", "https://example.com/b.pdf"}}));
  // The assistant turn: its reasoning item where it was, then the message, then the call.
  CHECK(input[2] == Json({{"type", "reasoning"},
                          {"id", "rs_1"},
                          {"summary", {{{"type", "summary_text"}, {"text", "First I look."}},
                                       {{"type", "summary_text"}, {"text", "Then I answer."}}}},
                          {"encrypted_content", "ENC1"}}));
  const Json& message = input[3];
  CHECK(message["type"] == "message");
  CHECK(message["role"] == "assistant");
  REQUIRE(message["content"].size() == 3);
  CHECK(message["content"][0] == Json({{"type", "output_text"}, {"text", "A cat and a dog."}}));
  CHECK(message["content"][1] == Json({{"type", "refusal"}, {"refusal", "No faces."}}));
  CHECK_THAT(message["content"][2]["text"].get<std::string>(), Catch::Contains("omitted") && Catch::Contains("assistant"));
  CHECK(input[4] == Json({{"type", "function_call"}, {"call_id", "call_1"}, {"name", "zoom"}, {"arguments", "{\"level\":2}"}}));
  CHECK(input[5]["type"] == "function_call_output");
  CHECK(input[5]["call_id"] == "call_1");
  const std::string output = input[5]["output"];
  CHECK_THAT(output, Catch::StartsWith("zoomed") && Catch::Contains("image image/jpeg, 4 bytes omitted"));
  const std::string dumped = body.dump();
  CHECK(dumped.find("theirs") == std::string::npos);
  CHECK(dumped.find("sig-anthropic") == std::string::npos);

  // Stateless, OpenAI reasoning without encrypted content cannot be sent (its
  // id would be looked up and not found); stored, the id alone refers to it.
  const std::vector<Message> bare{Message::user("q"),
                                  Message::assistant(std::vector<ContentPart>{ReasoningPart{"s", "rs_9", "", "openai"},
                                                                              agentkit::TextPart{"a"}})};
  const Json stateless = body_of({"m", "", bare, {}}, {}, false);
  REQUIRE(stateless["input"].size() == 2);
  CHECK(stateless["input"][1]["type"] == "message");
  const Json stored = body_of({"m", "", bare, {}}, {.store = true, .previous_response_id = "resp_abc"}, false);
  CHECK(stored["store"] == true);
  CHECK(stored["previous_response_id"] == "resp_abc");
  REQUIRE(stored["input"].size() == 3);
  CHECK(stored["input"][1] == Json({{"type", "reasoning"}, {"id", "rs_9"}, {"summary", {{{"type", "summary_text"}, {"text", "s"}}}}}));
}

TEST_CASE("Responses settings map to the API's fields, and what it has not is refused", "[responses][settings]") {
  const auto tool = weather_tool();
  const agentkit::ToolSpec* tools[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const auto body_with = [&](ModelSettings s, bool with_tools = true, const agentkit::Schema* output = nullptr,
                             OpenAIResponsesOptions options = {}) {
    ModelRequest request{"m", "", history, with_tools ? std::span<const agentkit::ToolSpec* const>(tools)
                                                      : std::span<const agentkit::ToolSpec* const>(),
                         output, &s};
    return body_of(request, options, false);
  };
  ModelSettings s;
  s.temperature = 0.2;
  s.top_p = 0.9;
  s.max_output_tokens = 64;
  s.parallel_tool_calls = false;
  s.tool_choice = agentkit::ToolChoice::named("get_weather");
  s.reasoning_effort = agentkit::ReasoningEffort::minimal;
  s.extra = {{"metadata", {{"run", "7"}}}, {"reasoning", {{"summary", "detailed"}}}};
  const Json body = body_with(s);
  CHECK(body["temperature"] == 0.2);
  CHECK(body["top_p"] == 0.9);
  CHECK(body["max_output_tokens"] == 64);
  CHECK(body["parallel_tool_calls"] == false);
  CHECK(body["tool_choice"] == Json({{"type", "function"}, {"name", "get_weather"}}));
  CHECK(body["reasoning"] == Json({{"effort", "minimal"}, {"summary", "detailed"}}));  // extra merged last
  CHECK(body["metadata"] == Json({{"run", "7"}}));
  CHECK(body["include"] == Json::array({"reasoning.encrypted_content"}));
  CHECK(body["tools"][0]["type"] == "function");
  CHECK(body["tools"][0]["name"] == "get_weather");
  CHECK_FALSE(body["tools"][0].contains("function"));  // flat, not Chat Completions' nesting

  ModelSettings effort;
  effort.reasoning_effort = agentkit::ReasoningEffort::high;
  CHECK(body_with(effort, true, nullptr, {.reasoning_summary = "auto"})["reasoning"] ==
        Json({{"effort", "high"}, {"summary", "auto"}}));
  ModelSettings none;
  none.tool_choice = agentkit::ToolChoice::none();
  CHECK(body_with(none)["tool_choice"] == "none");
  CHECK_FALSE(body_with(none, false).contains("tool_choice"));  // no tools: no tool fields
  ModelSettings serial;
  serial.parallel_tool_calls = true;
  CHECK_FALSE(body_with(serial, false).contains("parallel_tool_calls"));

  // An output schema: text.format json_schema, strict when strict mode can express it.
  const agentkit::Schema answer = {{"type", "object"},
                                   {"properties", {{"city", {{"type", "string"}}}, {"note", {{"type", "string"}}}}},
                                   {"required", {"city"}}};
  const Json format = body_with({}, false, &answer)["text"]["format"];
  CHECK(format["type"] == "json_schema");
  CHECK(format["name"] == "final_answer");
  CHECK(format["strict"] == true);
  CHECK(format["schema"]["additionalProperties"] == false);
  CHECK(format["schema"]["required"] == Json::array({"city", "note"}));
  CHECK(format["schema"]["properties"]["note"]["anyOf"][1] == Json({{"type", "null"}}));
  // A map strict mode cannot express goes as written, non-strict; tools alike.
  const agentkit::Schema map = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}};
  const Json loose = body_with({}, false, &map)["text"]["format"];
  CHECK(loose["strict"] == false);
  CHECK(loose["schema"] == Json::parse(map.dump()));
  const auto tally = spec("tally", "Count things", {{"type", "object"}, {"properties", {{"basket", Json::parse(map.dump())}}}});
  const agentkit::ToolSpec* tally_tools[] = {&tally};
  const Json tally_body = body_of({"m", "", history, tally_tools}, {}, false);
  CHECK(tally_body["tools"][0]["strict"] == false);
  CHECK(tally_body["tools"][0]["parameters"] == Json::parse(tally.parameters->dump()));

  const auto refused = [&](ModelSettings bad, const std::string& setting, bool with_tools = true) {
    try {
      body_with(bad, with_tools);
      FAIL("accepted " << setting);
    } catch (const UnsupportedSetting& e) {
      CHECK(e.setting() == setting);
      CHECK(e.provider() == "OpenAI Responses");
      CHECK(e.code() == ErrorCode::invalid_argument);
    }
  };
  ModelSettings seed;
  seed.seed = 7;
  refused(seed, "seed");
  ModelSettings stop;
  stop.stop = std::vector<std::string>{"END"};
  refused(stop, "stop");
  ModelSettings budget;
  budget.thinking_budget_tokens = 2048;
  refused(budget, "thinking_budget_tokens");
  ModelSettings required;
  required.tool_choice = agentkit::ToolChoice::required();
  refused(required, "tool_choice", false);
  ModelSettings unknown;
  unknown.tool_choice = agentkit::ToolChoice::named("nope");
  refused(unknown, "tool_choice");
  // An empty stop list asks for nothing: not refused.
  ModelSettings empty_stop;
  empty_stop.stop = std::vector<std::string>{};
  CHECK_FALSE(body_with(empty_stop).contains("stop"));
}

// ------------------------------------------------------------------ replies

TEST_CASE("Responses replies: the recorded bodies decode, calls keep call_id and their text", "[responses][reply]") {
  WIRE_FIXTURES_OR_SKIP(dir, "openai-responses");
  const auto call = openai_responses_response(fixture(*dir, "response_function_call_live.json"));
  REQUIRE(call.message.tool_calls.size() == 1);
  CHECK(call.message.tool_calls[0].id == "call_YfwRsW8sUxDKipwyhWTzOXCA");  // call_id, not the fc_ item id
  CHECK(call.message.tool_calls[0].name == "get_capital");
  CHECK(call.message.tool_calls[0].arguments_text == "{\"country\":\"PotatoLand\"}");
  CHECK(call.finish_reason == "tool_calls");
  CHECK(call.message.text().empty());
  CHECK(call.id == "resp_04907f5d3de791830068fbaa19bb908195a91378279dba0f14");
  CHECK(call.model == "gpt-4o-2024-08-06");

  const auto docs = openai_responses_response(fixture(*dir, "response_function_call_docs.json"));
  REQUIRE(docs.message.tool_calls.size() == 1);
  CHECK(docs.message.tool_calls[0].id == "call_unLAR8MvFNptuiZK6K6HCy5k");
  CHECK(docs.usage == agentkit::Usage{291, 23, 0});
  CHECK(docs.id == "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0");
  CHECK(docs.model == "gpt-5.4");

  const auto answer = openai_responses_response(fixture(*dir, "response_after_function_call_output_live.json"));
  CHECK(answer.message.text() == "The capital of PotatoLand is Potato City.");
  CHECK(answer.message.tool_calls.empty());
  CHECK(answer.finish_reason == "stop");
  CHECK(answer.usage == agentkit::Usage{67, 11, 0});

  const auto parallel = openai_responses_response(fixture(*dir, "response_parallel_function_calls_live.json"));
  REQUIRE(parallel.message.tool_calls.size() == 2);
  CHECK(parallel.message.tool_calls[0].arguments_text == "{\"loc_name\":\"Londos\"}");
  CHECK(parallel.message.tool_calls[1].id == "call_YnRAWeTyxI91m5uNa5bxXwVO");

  // The same bodies through ReplyReader, answering a non-streaming and a streaming request.
  for (bool stream : {false, true}) {
    const auto read = read_reply({read_file(*dir / "response_parallel_function_calls_live.json")}, json_head(), stream);
    CHECK(read.message.tool_calls == parallel.message.tool_calls);
    CHECK(read.id == "resp_67e547c48c9481918c5c4394464ce0c60ae6111e84dd5c08");
    CHECK(read.model == "gpt-4o-2024-08-06");
  }
}

TEST_CASE("Responses replies: reasoning, refusals, incomplete and failed statuses, errors, wrong shapes", "[responses][reply]") {
  const Json body = {
      {"status", "completed"},
      {"output",
       {{{"type", "reasoning"}, {"id", "rs_1"}, {"encrypted_content", "ENC"},
         {"summary", {{{"type", "summary_text"}, {"text", "A"}}, {{"type", "summary_text"}, {"text", "B"}}}}},
        {{"type", "message"}, {"role", "assistant"},
         {"content", {{{"type", "output_text"}, {"text", "Hi"}}, {{"type", "refusal"}, {"refusal", "not that"}}}}},
        {{"type", "web_search_call"}, {"id", "ws_1"}},
        {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "f"}, {"arguments", ""}}}},
      {"usage", {{"input_tokens", 10}, {"input_tokens_details", {{"cached_tokens", 4}}}, {"output_tokens", 30},
                 {"output_tokens_details", {{"reasoning_tokens", 20}}}}}};
  const auto r = openai_responses_response(body);
  REQUIRE(r.message.content.size() == 4);
  CHECK(reasoning_at(r.message, 0) == ReasoningPart{"A", "rs_1", "ENC", "openai"});
  CHECK(reasoning_at(r.message, 1) == ReasoningPart{"B", "rs_1", "", "openai"});
  CHECK(r.message.text() == "Hi");
  CHECK(std::get<agentkit::RefusalPart>(r.message.content[3]).text == "not that");
  REQUIRE(r.message.tool_calls.size() == 1);
  CHECK(r.message.tool_calls[0].arguments_text == "{}");
  CHECK(r.usage == agentkit::Usage{10, 30, 4});
  CHECK(r.finish_reason == "tool_calls");
  // A reasoning item with no summary is still kept, for its encrypted content.
  const auto bare = openai_responses_response(
      {{"status", "completed"}, {"output", {{{"type", "reasoning"}, {"id", "rs_2"}, {"summary", Json::array()}, {"encrypted_content", "E2"}}}}});
  REQUIRE(bare.message.content.size() == 1);
  CHECK(reasoning_at(bare.message, 0) == ReasoningPart{"", "rs_2", "E2", "openai"});

  // What is decoded goes back as it came: the same items in the next request.
  const std::vector<Message> history{Message::user("q"), r.message};
  const Json next = body_of({"m", "", history, {}}, {}, false);
  Json expected_reasoning = body["output"][0];
  CHECK(next["input"][1] == expected_reasoning);
  CHECK(next["input"][3] == Json({{"type", "function_call"}, {"call_id", "call_1"}, {"name", "f"}, {"arguments", "{}"}}));

  const auto incomplete = [](const char* reason) {
    return openai_responses_response({{"status", "incomplete"},
                                      {"incomplete_details", {{"reason", reason}}},
                                      {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "Par"}}}}}}}});
  };
  CHECK(incomplete("max_output_tokens").finish_reason == "length");
  CHECK(incomplete("max_output_tokens").message.text() == "Par");
  CHECK(incomplete("content_filter").finish_reason == "content_filter");

  const auto failed = error_of([] {
    openai_responses_response({{"status", "failed"}, {"error", {{"code", "server_error"}, {"message", "The model failed."}}}});
  });
  CHECK(failed.code() == ErrorCode::unavailable);
  CHECK_THAT(failed.what(), Catch::Contains("The model failed."));
  CHECK(error_of([] { openai_responses_response({{"status", "failed"}}); }).code() == ErrorCode::unavailable);
  const auto quota = error_of([] {
    openai_responses_response({{"error", {{"type", "insufficient_quota"}, {"code", "insufficient_quota"}, {"message", "pay up"}}}});
  });
  CHECK(quota.code() == ErrorCode::quota_exceeded);
  CHECK_FALSE(quota.retryable());
  const auto protocol = [](const Json& j) {
    return error_of([&] { openai_responses_response(j); }).code() == ErrorCode::protocol;
  };
  CHECK(protocol({{"status", "in_progress"}, {"output", Json::array()}}));  // a background response, not finished
  CHECK(protocol({{"choices", Json::array()}}));                            // a Chat Completions body
  CHECK(protocol(Json::array()));
  CHECK(protocol({{"status", "completed"}, {"output", "text"}}));
  CHECK(protocol({{"status", "completed"}, {"output", {7}}}));
  CHECK(protocol({{"status", "completed"}, {"output", {{{"type", "message"}, {"content", {1}}}}}}));
  CHECK(protocol({{"status", "completed"}, {"output", {{{"type", "reasoning"}, {"summary", "x"}}}}}));
  CHECK(protocol({{"status", "completed"}, {"usage", {{"input_tokens", -1}}}}));
  CHECK(protocol({{"status", "completed"}, {"usage", {{"input_tokens", "3"}}}}));
}

// ------------------------------------------------------------------ streams

TEST_CASE("Responses streams: every recorded stream decodes, in any chunking", "[responses][stream]") {
  WIRE_FIXTURES_OR_SKIP(dir, "openai-responses");
  struct Case {
    std::string file;
    std::function<void(const agentkit::ModelResponse&)> check;
  };
  const std::vector<Case> cases{
      {"stream_function_call_live_2025-03.sse",
       [](const agentkit::ModelResponse& r) {
         REQUIRE(r.message.tool_calls.size() == 1);
         CHECK(r.message.tool_calls[0].id == "call_kL0PCQV7M2WMoVX8V8OtYSAL");
         CHECK(r.message.tool_calls[0].name == "get_capital");
         CHECK(r.message.tool_calls[0].arguments_text == "{\"country\":\"France\"}");
         CHECK(r.finish_reason == "tool_calls");
         CHECK(r.message.content.empty());
         CHECK(r.id == "resp_67e554a155508191900ee113293c4c830794405d35281ae2");
         CHECK(r.model == "gpt-4o-2024-08-06");
       }},
      {"stream_reasoning_then_function_call_live_2025-09.sse",
       [](const agentkit::ModelResponse& r) {
         REQUIRE(r.message.content.size() == 1);
         const auto& reasoning = reasoning_at(r.message, 0);
         CHECK(reasoning.signature == "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405");
         CHECK_THAT(reasoning.redacted, Catch::StartsWith("gAAAAABoyXvynDJ_"));  // response.completed's, not the added item's
         CHECK(reasoning.provider == "openai");
         REQUIRE(r.message.tool_calls.size() == 1);
         CHECK(r.message.tool_calls[0].arguments_text == "{\"result\":6666}");
         CHECK(r.usage == agentkit::Usage{53, 469, 0});
         CHECK(r.id == "resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33");
         CHECK(r.model == "gpt-5-2025-08-07");
       }},
      {"stream_text_docs_ELIDED.sse",
       [](const agentkit::ModelResponse& r) {
         CHECK(r.message.text() == "Hi there! How can I assist you today?");
         CHECK(r.finish_reason == "stop");
         CHECK(r.usage == agentkit::Usage{37, 11, 0});
         CHECK(r.id == "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654");
         CHECK(r.model == "gpt-5.4");
       }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const std::string body = read_file(*dir / c.file);
    const auto whole = read_reply({body}, sse_head(), true);
    c.check(whole);
    // The terminal event's response is the one recorded, named as it names itself.
    CHECK(whole.id == agentkit_test::first_recorded(body, "/response/id"));
    CHECK(whole.model == agentkit_test::first_recorded(body, "/response/model"));
    const auto same = [&](const agentkit::ModelResponse& r) {
      CHECK(r.message == whole.message);
      CHECK(r.usage == whole.usage);
      CHECK(r.finish_reason == whole.finish_reason);
      CHECK(r.id == whole.id);
      CHECK(r.model == whole.model);
    };
    // Split at every byte near an event boundary (where a clean cut between
    // events lives) and at every byte of small bodies; the large recorded
    // streams at a stride elsewhere (every byte of them is quadratic, too
    // slow under ThreadSanitizer).
    const std::size_t stride = std::max<std::size_t>(1, body.size() / 1500);
    for (std::size_t cut = 1; cut < body.size(); ++cut) {
      const std::size_t boundary = body.rfind("\n\n", cut);
      const bool near_boundary = boundary != std::string::npos && cut - boundary <= 4;
      if (!near_boundary && cut % stride != 0) continue;
      same(read_reply({body.substr(0, cut), body.substr(cut)}, sse_head(), true));
    }
    std::mt19937 rng(20260417);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::string> chunks;
      for (std::size_t at = 0; at < body.size();) {
        const std::size_t n = std::min<std::size_t>(1 + rng() % 29, body.size() - at);
        chunks.push_back(body.substr(at, n));
        at += n;
      }
      same(read_reply(chunks, sse_head(), true));
    }
    // CRLF line ends read the same.
    std::string crlf;
    for (char ch : body) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
    same(read_reply({crlf}, sse_head(), true));
  }
}

TEST_CASE("Responses stream deltas: text, reasoning summaries, calls keyed by item id", "[responses][stream][deltas]") {
  WIRE_FIXTURES_OR_SKIP(dir, "openai-responses");
  std::vector<StreamDelta> deltas;
  const auto r = read_reply({read_file(*dir / "stream_function_call_live_2025-03.sse")}, sse_head(), true,
                            [&](StreamDelta d) { deltas.push_back(std::move(d)); });
  REQUIRE(deltas.size() == 6);  // the call announced, then five argument fragments
  std::string arguments;
  for (const auto& d : deltas) {
    const auto& call = std::get<agentkit::ToolCallDelta>(d);
    CHECK(call.index == 0);
    CHECK(call.id == "call_kL0PCQV7M2WMoVX8V8OtYSAL");
    CHECK(call.name == "get_capital");
    arguments += call.arguments;
  }
  CHECK(std::get<agentkit::ToolCallDelta>(deltas[0]).arguments.empty());
  CHECK(arguments == r.message.tool_calls[0].arguments_text);

  // A reasoning summary, text, and two calls after a reasoning item: the
  // delta index counts calls, not output items.
  deltas.clear();
  const std::vector<std::string> stream{
      event("response.created", {{"response", {{"status", "in_progress"}}}}),
      event("response.output_item.added", {{"output_index", 0}, {"item", {{"type", "reasoning"}, {"id", "rs_1"}}}}),
      event("response.reasoning_summary_text.delta", {{"item_id", "rs_1"}, {"output_index", 0}, {"delta", "Look "}}),
      event("response.reasoning_summary_text.delta", {{"item_id", "rs_1"}, {"output_index", 0}, {"delta", "twice."}}),
      event("response.output_item.added", {{"output_index", 1}, {"item", {{"type", "message"}, {"id", "msg_1"}}}}),
      event("response.output_text.delta", {{"item_id", "msg_1"}, {"output_index", 1}, {"delta", "On it."}, {"obfuscation", "xyz"}}),
      event("response.output_item.added", {{"output_index", 2}, {"item", {{"type", "function_call"}, {"id", "fc_a"}, {"call_id", "call_a"}, {"name", "get_weather"}, {"arguments", ""}}}}),
      event("response.output_item.added", {{"output_index", 3}, {"item", {{"type", "function_call"}, {"id", "fc_b"}, {"call_id", "call_b"}, {"name", "get_weather"}, {"arguments", ""}}}}),
      event("response.function_call_arguments.delta", {{"item_id", "fc_b"}, {"output_index", 3}, {"delta", "{\"city\":\"Oslo\"}"}}),
      event("response.function_call_arguments.delta", {{"item_id", "fc_a"}, {"output_index", 2}, {"delta", "{\"city\":\"Paris\"}"}}),
      event("response.something_new", {{"whatever", 1}}),
      event("response.completed",
            {{"response",
              {{"status", "completed"},
               {"output",
                {{{"type", "reasoning"}, {"id", "rs_1"}, {"summary", {{{"type", "summary_text"}, {"text", "Look twice."}}}}},
                 {{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "On it."}}}}},
                 {{"type", "function_call"}, {"id", "fc_a"}, {"call_id", "call_a"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}},
                 {{"type", "function_call"}, {"id", "fc_b"}, {"call_id", "call_b"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}}}})};
  const auto two = read_reply(stream, sse_head(), true, [&](StreamDelta d) { deltas.push_back(std::move(d)); });
  REQUIRE(deltas.size() == 7);
  CHECK(std::get<agentkit::ReasoningDelta>(deltas[0]).text == "Look ");
  CHECK(std::get<agentkit::TextDelta>(deltas[2]).text == "On it.");
  CHECK(std::get<agentkit::ToolCallDelta>(deltas[3]).index == 0);
  CHECK(std::get<agentkit::ToolCallDelta>(deltas[4]).index == 1);
  const auto& b = std::get<agentkit::ToolCallDelta>(deltas[5]);
  CHECK(b.index == 1);
  CHECK(b.id == "call_b");
  CHECK(b.arguments == "{\"city\":\"Oslo\"}");
  CHECK(std::get<agentkit::ToolCallDelta>(deltas[6]).index == 0);
  REQUIRE(two.message.tool_calls.size() == 2);
  CHECK(two.message.tool_calls[1].id == "call_b");
  CHECK(two.message.text() == "On it.");
  CHECK(reasoning_at(two.message, 0).text == "Look twice.");

  // A completed response with an empty output (some proxies send only
  // usage): the items of the output_item.done events stand in.
  const std::vector<std::string> sparse{
      event("response.output_item.done", {{"output_index", 1}, {"item", {{"type", "function_call"}, {"call_id", "call_z"}, {"name", "f"}, {"arguments", "{}"}}}}),
      event("response.output_item.done", {{"output_index", 0}, {"item", {{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "first"}}}}}}}),
      event("response.completed", {{"response", {{"output", Json::array()}, {"usage", {{"input_tokens", 5}, {"output_tokens", 2}}}}}})};
  const auto filled = read_reply(sparse, sse_head(), true);
  CHECK(filled.message.text() == "first");
  REQUIRE(filled.message.tool_calls.size() == 1);
  CHECK(filled.message.tool_calls[0].id == "call_z");
  CHECK(filled.usage == agentkit::Usage{5, 2, 0});
}

TEST_CASE("Responses streams fail closed: cut between events, error events, failed responses, mislabelled bodies", "[responses][stream][fail_closed]") {
  WIRE_FIXTURES_OR_SKIP(dir, "openai-responses");
  const std::string body = read_file(*dir / "stream_function_call_live_2025-03.sse");
  const auto events = events_of(body);
  const auto terminal = std::find_if(events.begin(), events.end(), [](const std::string& e) {
    return e.find("event: response.completed") != std::string::npos;
  });
  REQUIRE(terminal - events.begin() == 10);
  SECTION("cut cleanly between events, before the terminal one: at every event boundary") {
    std::string prefix;
    for (std::size_t n = 0; n < 10; ++n) {
      prefix += events[n];
      CAPTURE(n);
      const auto e = error_of([&] { read_reply({prefix}, sse_head(), true); });
      CHECK(e.code() == ErrorCode::truncated);
      CHECK_THAT(e.what(), Catch::Contains("response.completed"));
    }
    CHECK(error_of([] { read_reply({""}, sse_head(), true); }).code() == ErrorCode::truncated);
  }
  SECTION("cut inside the terminal event") {
    const auto e = error_of([&] { read_reply({body.substr(0, body.size() - 40)}, sse_head(), true); });
    CHECK((e.code() == ErrorCode::truncated || e.code() == ErrorCode::protocol));
  }
  SECTION("an error event, then response.failed (recorded)") {
    const auto e = error_of([&] { read_reply({read_file(*dir / "stream_error_insufficient_quota_REFRAMED.sse")}, sse_head(), true); });
    CHECK(e.code() == ErrorCode::quota_exceeded);
    CHECK_FALSE(e.retryable());
    CHECK_THAT(e.what(), Catch::Contains("You exceeded your current quota"));
  }
  SECTION("the API reference's event examples") {
    const Json examples = fixture(*dir, "event_examples_from_spec.json");
    const auto one = [&](const char* name) {
      // Each line of the (pretty-printed) example as a data: line.
      std::string framed = "event: x\n";
      const std::string text = examples[name];
      for (std::size_t at = 0; at < text.size();) {
        const auto end = std::min(text.find('\n', at), text.size());
        framed += "data: " + text.substr(at, end - at) + "\n";
        at = end + 1;
      }
      return read_reply({framed + "\n"}, sse_head(), true);
    };
    CHECK_THAT(one("ResponseCompletedEvent").message.text(), Catch::StartsWith("In a shimmering forest"));
    const auto error = error_of([&] { one("ResponseErrorEvent"); });
    CHECK_THAT(error.what(), Catch::Contains("Something went wrong"));
    CHECK_THAT(error.what(), Catch::Contains("api.openai.com/v1/responses"));
    const auto failed = error_of([&] { one("ResponseFailedEvent"); });
    CHECK(failed.code() == ErrorCode::unavailable);
    CHECK_THAT(failed.what(), Catch::Contains("The model failed to generate a response."));
    // The reference's own delta example is not JSON.
    CHECK(error_of([&] { one("ResponseFunctionCallArgumentsDeltaEvent"); }).code() == ErrorCode::protocol);
    // Events that repeat what the terminal event carries are not a reply by themselves.
    CHECK(error_of([&] { one("ResponseOutputItemAddedEvent"); }).code() == ErrorCode::truncated);
    CHECK(error_of([&] { one("ResponseFunctionCallArgumentsDoneEvent"); }).code() == ErrorCode::truncated);
  }
  SECTION("arguments for a call never announced") {
    const auto e = error_of([&] {
      read_reply({event("response.function_call_arguments.delta", {{"item_id", "fc_x"}, {"output_index", 0}, {"delta", "{"}})},
                 sse_head(), true);
    });
    CHECK(e.code() == ErrorCode::protocol);
  }
  SECTION("response.incomplete ends the stream, as length") {
    const auto r = read_reply({events[0], event("response.incomplete", {{"response", {{"incomplete_details", {{"reason", "max_output_tokens"}}}, {"output", Json::array()}}}})},
                              sse_head(), true);
    CHECK(r.finish_reason == "length");
  }
  SECTION("a 200 HTML page from a proxy, streaming or not") {
    for (bool stream : {true, false}) {
      const auto e = error_of([&] { read_reply({"<html>Sign in</html>"}, {200, {{"content-type", "text/html"}}}, stream); });
      CHECK(e.code() == ErrorCode::protocol);
      CHECK_THAT(e.what(), Catch::Contains("text/html"));
    }
  }
  SECTION("an event stream answering a non-streaming request") {
    CHECK(error_of([&] { read_reply({body}, sse_head(), false); }).code() == ErrorCode::protocol);
  }
  SECTION("a 200 JSON error body answering a streaming request is that error") {
    const auto e = error_of([&] { read_reply({read_file(*dir / "error_400_stream_request_rejected_live.json")}, json_head(), true); });
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("Invalid 'temperature'"));
  }
  SECTION("events that are not JSON objects") {
    CHECK(error_of([] { read_reply({"event: response.completed\ndata: [1]\n\n"}, sse_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([] { read_reply({"data: nope\n\n"}, sse_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([] { read_reply({event("response.completed", {{"response", 3}})}, sse_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([] { read_reply({event("response.completed", {})}, sse_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([] { read_reply({event("response.output_item.done", {{"output_index", "0"}, {"item", Json::object()}})}, sse_head(), true); }).code() == ErrorCode::protocol);
  }
}

TEST_CASE("Responses streams cap what they accumulate", "[responses][stream][limits]") {
  OpenAIResponsesStreamAccumulator acc;
  SseEvent e;
  e.data = Json{{"type", "response.output_text.delta"}, {"delta", std::string(512u << 10, 'x')}}.dump();
  std::size_t fed = 0;
  const auto e1 = error_of([&] {
    for (; fed <= 2 * kMaxStreamedReplyBytes / (1u << 20); ++fed) acc.on_event(e);
  });
  CHECK(fed == 2 * kMaxStreamedReplyBytes / (1u << 20));  // the fragment that passed the cap
  CHECK(e1.code() == ErrorCode::protocol);
  CHECK_THAT(e1.what(), Catch::Contains("over " + std::to_string(kMaxStreamedReplyBytes) + " bytes"));
  OpenAIResponsesStreamAccumulator calls;
  const auto e2 = error_of([&] {
    for (int i = 0; i <= 1024; ++i) {
      SseEvent added;
      added.data = Json{{"type", "response.output_item.added"}, {"output_index", i},
                        {"item", {{"type", "function_call"}, {"id", "fc_" + std::to_string(i)}, {"call_id", "c"}, {"name", "f"}}}}
                       .dump();
      calls.on_event(added);
    }
  });
  CHECK_THAT(e2.what(), Catch::Contains("1024"));
}

// ------------------------------------------------------------------ over loopback

TEST_CASE("Responses over loopback: the 400 to a stream request, 429 and 5xx retried, resets and cuts typed, the key never shown", "[responses][loopback][faults]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 2});
  OpenAIResponsesModel model(transport, {.base_url = server.base_url() + "/v1/", .api_key = kKey, .model = "gpt-5"});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<Message> history{Message::user("hi")};
  const ModelRequest request{"openai-responses/gpt-5", "Be brief.", history, {}};
  const auto sse = [](std::vector<std::string> chunks) {
    WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream; charset=utf-8"}};
    r.chunks = std::move(chunks);
    return r;
  };
  const std::vector<std::string> text_stream{
      event("response.output_text.delta", {{"delta", "Hello"}}),
      event("response.completed",
            {{"response", {{"status", "completed"},
                           {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "Hello"}}}}}}},
                           {"usage", {{"input_tokens", 9}, {"output_tokens", 1}}}}}})};
  const auto clean = [&](const ProviderError& e) {
    CHECK(std::string(e.what()).find(kKey) == std::string::npos);
    CHECK(std::string(e.what()).find("SECRET") == std::string::npos);
  };

  SECTION("the recorded 400 (a plain JSON body) answering a streaming request") {
    WireServer::Response rejected;
    rejected.status = 400;
    rejected.headers = {{"content-type", "application/json"}};
    if (auto dir = agentkit_test::wire_fixtures("openai-responses")) {
      rejected.body = read_file(*dir / "error_400_stream_request_rejected_live.json");
    } else {
      WARN("using an inline copy of the 400: the fixtures are not found");
      rejected.body = R"({"error":{"code":"decimal_below_min_value","message":"Invalid 'temperature': decimal below minimum value.","param":"temperature","type":"invalid_request_error"}})";
    }
    server.enqueue(rejected);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(e.http_status() == 400);
    CHECK_FALSE(e.retryable());
    CHECK_THAT(e.what(), Catch::Contains("Invalid 'temperature'") && Catch::Contains("param 'temperature'"));
    clean(e);
    const auto requests = server.requests();
    REQUIRE(requests.size() == 1);  // a 400 is not retried
    const auto& sent = requests[0];
    CHECK(sent.path == "/v1/responses");
    CHECK(sent.header("authorization") == "Bearer " + kKey);
    const Json body = Json::parse(sent.body);
    CHECK(body["stream"] == true);
    CHECK(body["store"] == false);
    CHECK(body["instructions"] == "Be brief.");
  }
  SECTION("429 with retry-after, then 503, then the stream") {
    WireServer::Response limited;
    limited.status = 429;
    limited.headers = {{"content-type", "application/json"}, {"retry-after", "0"}};
    limited.body = R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})";
    server.enqueue(limited);
    WireServer::Response busy;
    busy.status = 503;
    busy.body = "upstream busy";
    server.enqueue(busy);
    server.enqueue(sse(text_stream));
    const auto r = model.complete(request, ctx);
    CHECK(r.message.text() == "Hello");
    CHECK(r.usage == agentkit::Usage{9, 1, 0});
    CHECK(server.requests().size() == 3);
  }
  SECTION("a 429 that outlasts the retries is rate_limited, with its advice") {
    for (int i = 0; i < 3; ++i) {
      WireServer::Response limited;
      limited.status = 429;
      limited.headers = {{"content-type", "application/json"}, {"retry-after", "0"}};
      limited.body = R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})";
      server.enqueue(limited);
    }
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::rate_limited);
    CHECK(e.retryable());
    CHECK(e.http_status() == 429);
  }
  SECTION("a 401 that echoes the key") {
    WireServer::Response denied;
    denied.status = 401;
    denied.headers = {{"content-type", "application/json"}};
    denied.body = R"({"error":{"message":"Incorrect API key provided: )" + kKey + R"(","type":"invalid_request_error"}})";
    server.enqueue(denied);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::unauthenticated);
    clean(e);
  }
  SECTION("a reset mid-stream is not retried") {
    WireServer::Response reset = sse(text_stream);
    reset.fault = WireServer::Fault::reset_mid_stream;
    reset.fault_after_chunks = 1;
    server.enqueue(reset);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::unavailable);
    clean(e);
    CHECK(server.requests().size() == 1);
  }
  SECTION("a chunked body cut short") {
    WireServer::Response cut = sse(text_stream);
    cut.fault = WireServer::Fault::truncate;
    cut.fault_after_chunks = 1;
    server.enqueue(cut);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK((e.code() == ErrorCode::unavailable || e.code() == ErrorCode::truncated));
  }
  SECTION("a stream cut cleanly between events, before response.completed") {
    WireServer::Response cut = sse({text_stream[0]});
    cut.unframed = true;
    server.enqueue(cut);
    const auto e = error_of([&] { model.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains(server.base_url() + "/v1/responses"));
    // The same stream whole, unframed too, is accepted.
    WireServer::Response whole = sse(text_stream);
    whole.unframed = true;
    server.enqueue(whole);
    CHECK(model.complete(request, ctx).message.text() == "Hello");
  }
  SECTION("a 200 HTML page from a proxy, streaming or not") {
    for (bool stream : {true, false}) {
      OpenAIResponsesModel m(transport, {.base_url = server.base_url() + "/v1", .api_key = kKey, .model = "m", .stream = stream});
      WireServer::Response html;
      html.headers = {{"content-type", "text/html"}};
      html.body = "<html><body>Sign in to the proxy</body></html>";
      server.enqueue(html);
      const auto e = error_of([&] { m.complete(request, ctx); });
      CHECK(e.code() == ErrorCode::protocol);
      CHECK_THAT(e.what(), Catch::Contains("text/html"));
      clean(e);
    }
  }
  SECTION("non-streaming: the whole response") {
    OpenAIResponsesModel m(transport, {.base_url = server.base_url() + "/v1", .api_key = kKey, .model = "m", .stream = false});
    WireServer::Response r;
    r.headers = {{"content-type", "application/json"}};
    r.body = Json{{"status", "completed"},
                  {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "Whole."}}}}}}}}
                 .dump();
    server.enqueue(r);
    CHECK(m.complete(request, ctx).message.text() == "Whole.");
    CHECK(Json::parse(server.requests().back().body)["stream"] == false);
  }
}

TEST_CASE("openai-responses/<model> routes to the Responses adapter with OpenAI's key and base URL", "[responses][models]") {
  const auto target = resolve_model("openai-responses/gpt-5", {.openai_api_key = "k1", .openai_base_url = "https://proxy.example/v1"});
  CHECK(target.provider == "openai-responses");
  CHECK(target.model == "gpt-5");
  CHECK(target.api_key == "k1");
  CHECK(target.api_key_variable == "OPENAI_API_KEY");
  CHECK(target.api_key_required);
  CHECK(target.base_url == "https://proxy.example/v1");
  auto model = make_model("openai-responses/gpt-5", {.openai_api_key = "k1"}, nullptr);
  auto* responses = dynamic_cast<OpenAIResponsesModel*>(model.get());
  REQUIRE(responses != nullptr);
  CHECK(responses->options().base_url == "https://api.openai.com/v1");
  CHECK(responses->options().model == "gpt-5");
  CHECK(responses->options().store == false);
  auto at = make_model("openai-responses/gpt-5@http://127.0.0.1:9/v1/", {}, nullptr);
  CHECK(dynamic_cast<OpenAIResponsesModel&>(*at).options().base_url == "http://127.0.0.1:9/v1");
  CHECK(dynamic_cast<OpenAIResponsesModel*>(make_model("openai/gpt-5", {}, nullptr).get()) == nullptr);  // chat stays chat
  CHECK_THROWS_AS(make_model("openai-responses/gpt-5@127.0.0.1:9/v1", {}, nullptr), agentkit::Error);
  CHECK_THROWS_AS(make_model("openai-responses/", {}, nullptr), agentkit::Error);
}

TEST_CASE("an agent run through the Responses API over loopback: parallel calls, reasoning carried back verbatim", "[responses][loopback][agent]") {
  WireServer server;
  const auto sse = [](std::vector<std::string> chunks) {
    WireServer::Response r;
    r.headers = {{"content-type", "text/event-stream; charset=utf-8"}};
    r.chunks = std::move(chunks);
    return r;
  };
  const std::string encrypted = "gAAAAABencrypted+/==reasoning";
  const Json reasoning_item = {{"type", "reasoning"}, {"id", "rs_42"}, {"encrypted_content", encrypted},
                               {"summary", {{{"type", "summary_text"}, {"text", "Both cities, at once."}}}}};
  const Json call_a = {{"type", "function_call"}, {"id", "fc_a"}, {"call_id", "call_a"}, {"name", "get_weather"},
                       {"arguments", "{\"city\":\"Paris\"}"}, {"status", "completed"}};
  const Json call_b = {{"type", "function_call"}, {"id", "fc_b"}, {"call_id", "call_b"}, {"name", "get_weather"},
                       {"arguments", "{\"city\":\"Oslo\"}"}, {"status", "completed"}};
  Json added_a = call_a, added_b = call_b;
  added_a["arguments"] = added_b["arguments"] = "";
  server.enqueue(sse({
      event("response.created", {{"sequence_number", 0}, {"response", {{"status", "in_progress"}, {"output", Json::array()}}}}),
      event("response.output_item.added", {{"sequence_number", 1}, {"output_index", 0}, {"item", {{"type", "reasoning"}, {"id", "rs_42"}, {"summary", Json::array()}}}}),
      event("response.reasoning_summary_text.delta", {{"sequence_number", 2}, {"item_id", "rs_42"}, {"output_index", 0}, {"delta", "Both cities, at once."}}),
      event("response.output_item.done", {{"sequence_number", 3}, {"output_index", 0}, {"item", reasoning_item}}),
      event("response.output_item.added", {{"sequence_number", 4}, {"output_index", 1}, {"item", added_a}}),
      event("response.function_call_arguments.delta", {{"sequence_number", 5}, {"item_id", "fc_a"}, {"output_index", 1}, {"delta", "{\"city\":"}, {"obfuscation", "ab"}}),
      event("response.function_call_arguments.delta", {{"sequence_number", 6}, {"item_id", "fc_a"}, {"output_index", 1}, {"delta", "\"Paris\"}"}}),
      event("response.output_item.added", {{"sequence_number", 7}, {"output_index", 2}, {"item", added_b}}),
      event("response.function_call_arguments.delta", {{"sequence_number", 8}, {"item_id", "fc_b"}, {"output_index", 2}, {"delta", "{\"city\":\"Oslo\"}"}}),
      event("response.completed", {{"sequence_number", 9},
                                   {"response", {{"status", "completed"},
                                                 {"output", {reasoning_item, call_a, call_b}},
                                                 {"usage", {{"input_tokens", 40}, {"output_tokens", 30}, {"input_tokens_details", {{"cached_tokens", 8}}}}}}}}),
  }));
  server.enqueue(sse({
      event("response.output_text.delta", {{"delta", "Paris 18 C, "}}),
      event("response.output_text.delta", {{"delta", "Oslo 4 C."}}),
      event("response.completed", {{"response", {{"status", "completed"},
                                                  {"output", {{{"type", "message"}, {"role", "assistant"},
                                                               {"content", {{{"type", "output_text"}, {"text", "Paris 18 C, Oslo 4 C."}}}}}}},
                                                  {"usage", {{"input_tokens", 70}, {"output_tokens", 9}}}}}}),
  }));
  agentkit::Agent agent("forecaster", "openai-responses/gpt-5@" + server.base_url() + "/v1", "You report the weather.",
                        agentkit::cognition::react({weather_tool()}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({.openai_api_key = kKey});
  const auto result = agent.run("Weather in Paris and Oslo?", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "Paris 18 C, Oslo 4 C.");
  CHECK(result.usage.input_tokens == 110);
  CHECK(result.usage.output_tokens == 39);
  CHECK(result.usage.cached_tokens == 8);

  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].path == "/v1/responses");
  CHECK(requests[1].header("authorization") == "Bearer " + kKey);
  const Json first = Json::parse(requests[0].body);
  CHECK(first["instructions"] == "You report the weather.");
  CHECK(first["input"] == Json::array({{{"role", "user"}, {"content", "Weather in Paris and Oslo?"}}}));
  CHECK(first["tools"][0]["name"] == "get_weather");
  CHECK(first["tools"][0]["strict"] == true);
  CHECK(first["include"] == Json::array({"reasoning.encrypted_content"}));
  const Json second = Json::parse(requests[1].body);
  const Json& input = second["input"];
  REQUIRE(input.size() == 6);
  // The reasoning item exactly as it came (id, summary, encrypted content), before the calls it preceded.
  CHECK(input[1] == reasoning_item);
  CHECK(input[2] == Json({{"type", "function_call"}, {"call_id", "call_a"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}));
  CHECK(input[3] == Json({{"type", "function_call"}, {"call_id", "call_b"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}));
  CHECK(input[4] == Json({{"type", "function_call_output"}, {"call_id", "call_a"}, {"output", "18 C"}}));
  CHECK(input[5] == Json({{"type", "function_call_output"}, {"call_id", "call_b"}, {"output", "4 C"}}));

  // The reasoning survives a checkpoint: the run's state as JSON and back.
  const auto restored = agentkit::RunState::from_json(Json::parse(result.state.to_json().dump()));
  CHECK(restored.history == result.state.history);
  REQUIRE(restored.history.size() >= 2);
  CHECK(reasoning_at(restored.history[1], 0) == ReasoningPart{"Both cities, at once.", "rs_42", encrypted, "openai"});

  // The same run when the first stream is cut between events: failed
  // truncated, no tool ran.
  WireServer::Response cut = sse({event("response.output_item.added", {{"output_index", 0}, {"item", added_a}}),
                                  event("response.function_call_arguments.delta", {{"item_id", "fc_a"}, {"output_index", 0}, {"delta", "{\"city\":\"Paris\"}"}})});
  cut.unframed = true;
  server.enqueue(cut);
  auto cut_ctx = agentkit::testing::make_test_ctx();
  cut_ctx.models = model_resolver({.openai_api_key = kKey});
  const auto failed = agent.run("Weather in Paris?", cut_ctx);
  CHECK(failed.stop_reason == agentkit::StopReason::failed);
  REQUIRE(failed.failure);
  CHECK(failed.failure->code == ErrorCode::truncated);
  CHECK(failed.state.history.size() == 1);
  CHECK(failed.failure->message.find(kKey) == std::string::npos);
}
