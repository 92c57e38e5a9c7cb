// The Ollama native chat adapter (/api/chat, NDJSON): request bodies against
// the documented shapes in ../shared/fixtures/wire/ollama, replies and
// streams in any chunking, fail-closed reading (cut streams, errors
// mid-stream, mislabelled bodies), routing, and a whole agent run over
// loopback.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/ollama.h>
#include <agentkit/providers/settings.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/paths.h"
#include "../helpers/files.h"
#include "../helpers/wire_fixtures.h"

namespace fs = std::filesystem;
using agentkit::ErrorCode;
using agentkit::Json;
using agentkit::Message;
using agentkit::ModelRequest;
using agentkit::ModelSettings;
using agentkit::ToolCall;
using agentkit::testing::WireServer;
using namespace agentkit::providers;
using agentkit_test::error_of;
using agentkit_test::read_file;

namespace {

agentkit::ToolPtr weather_tool() {
  return agentkit::tool("get_weather")
      .doc("Get the weather in a given city")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& city) { return std::string(city == "Toronto" ? "11 degrees celsius" : "unknown"); });
}

HttpResponse ndjson_head() {
  HttpResponse head;
  head.status = 200;
  head.headers = {{"content-type", "application/x-ndjson"}};
  return head;
}

// A reply read as the adapter reads it off the wire, fed in `chunks`.
agentkit::ModelResponse read_reply(const std::vector<std::string>& chunks, const HttpResponse& head, bool stream) {
  ReplyReader reader(ollama_chat_reply(), "http://127.0.0.1:11434/api/chat",
                     stream ? std::make_unique<OllamaStreamAccumulator>() : nullptr);
  reader.on_headers(head);
  for (const auto& c : chunks) reader.feed(c);
  return reader.finish();
}


const char* const kToolCallStream =
    R"({"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Toronto"}}}]},"done":false})"
    "\n"
    R"({"model":"llama3.2","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"prompt_eval_count":169,"eval_count":15})"
    "\n";

}  // namespace

TEST_CASE("Ollama request body: the documented message shapes, tool_name on results, tools as functions", "[ollama]") {
  const auto tool = weather_tool();
  const std::vector<Message> history{
      Message::user("what is the weather in Toronto?"),
      Message::assistant("", {ToolCall{"", "get_weather", {{"city", "Toronto"}}, {}}}),
      Message::tool_result("", "get_weather", "11 degrees celsius")};
  const agentkit::ToolSpec* tools[] = {&tool->spec()};
  const ModelRequest request{"ollama/llama3.2", "", history, tools};
  const Json body = Json::parse(ollama_chat_body(request, {.model = "llama3.2"}, false).dump());
  if (auto dir = agentkit_test::wire_fixtures("ollama")) {
    const Json documented = Json::parse(read_file(*dir / "request_tool_result_history_docs.json"));
    CHECK(body["messages"] == documented["messages"]);
    CHECK(body["model"] == documented["model"]);
    CHECK(body["stream"] == documented["stream"]);
    const Json& ours = body["tools"][0];
    const Json& theirs = documented["tools"][0];
    CHECK(ours["type"] == theirs["type"]);
    CHECK(ours["function"]["name"] == theirs["function"]["name"]);
    CHECK(ours["function"]["description"] == theirs["function"]["description"]);
    CHECK(ours["function"]["parameters"]["required"] == theirs["function"]["parameters"]["required"]);
    CHECK(ours["function"]["parameters"]["properties"]["city"]["type"] == "string");
  } else {
    WARN("skipping the comparison with the documented request: " << AGENTKIT_SHARED_DIR << "/fixtures/wire/ollama not found");
  }
  CHECK(body["messages"][2] == Json({{"role", "tool"}, {"content", "11 degrees celsius"}, {"tool_name", "get_weather"}}));
  // A call with an id (newer servers send one) goes back with it, and a system prompt leads.
  const std::vector<Message> with_id{Message::user("hi"),
                                     Message::assistant("", {ToolCall{"call_ab12", "get_weather", {{"city", "Oslo"}}, {}}})};
  const Json second = Json::parse(ollama_chat_body({"m", "Be brief.", with_id, {}}, {}, true).dump());
  CHECK(second["messages"][0] == Json({{"role", "system"}, {"content", "Be brief."}}));
  CHECK(second["messages"][2]["tool_calls"][0]["id"] == "call_ab12");
  CHECK(second["model"] == "m");
  CHECK(second["stream"] == true);
  CHECK_FALSE(second.contains("tools"));
}

TEST_CASE("Ollama request body: images as base64, notes for what it cannot take, its own reasoning only", "[ollama][parts]") {
  using agentkit::ContentPart;
  const std::vector<Message> history{
      Message::user(std::vector<ContentPart>{agentkit::TextPart{"What is in these?"},
                                             agentkit::ImagePart{"image/png", "\x89PNG", ""},
                                             agentkit::ImagePart{"image/png", "", "https://example.com/a.png"},
                                             agentkit::FilePart{"application/pdf", "%PDF", "a.pdf", ""}}),
      Message::assistant(std::vector<ContentPart>{agentkit::ReasoningPart{"mine", "", "", "ollama"},
                                                  agentkit::ReasoningPart{"theirs", "sig", "", "anthropic"},
                                                  agentkit::TextPart{"A cat."}}),
      Message::tool_result("c1", "camera", std::vector<ContentPart>{agentkit::ImagePart{"image/jpeg", "JPEG", ""}})};
  const Json body = Json::parse(ollama_chat_body({"m", "", history, {}}, {}, false).dump());
  const Json& user = body["messages"][0];
  CHECK(user["images"] == Json::array({agentkit::base64_encode("\x89PNG")}));
  const std::string text = user["content"];
  CHECK_THAT(text, Catch::StartsWith("What is in these?"));
  CHECK_THAT(text, Catch::Contains("omitted: Ollama takes images as bytes, not URLs"));
  CHECK_THAT(text, Catch::Contains("omitted: Ollama does not take files"));
  const Json& assistant = body["messages"][1];
  CHECK(assistant["thinking"] == "mine");
  CHECK(assistant["content"] == "A cat.");
  CHECK(body["messages"][2]["images"] == Json::array({agentkit::base64_encode("JPEG")}));
  CHECK(body.dump().find("theirs") == std::string::npos);
  CHECK(body.dump().find("sig") == std::string::npos);
}

TEST_CASE("Ollama settings map to options, think and format, and what it cannot enforce is refused", "[ollama][settings]") {
  const auto tool = weather_tool();
  const agentkit::ToolSpec* tools[] = {&tool->spec()};
  const std::vector<Message> history{Message::user("hi")};
  const auto body_with = [&](ModelSettings s, const agentkit::Schema* output = nullptr) {
    ModelRequest request{"m", "", history, tools, output, &s};
    return Json::parse(ollama_chat_body(request, {}, false).dump());
  };
  ModelSettings s;
  s.temperature = 0.2;
  s.top_p = 0.9;
  s.max_output_tokens = 64;
  s.stop = std::vector<std::string>{"END"};
  s.seed = 7;
  s.reasoning_effort = agentkit::ReasoningEffort::high;
  s.extra = {{"keep_alive", "5m"}, {"options", {{"num_ctx", 8192}}}};
  const Json body = body_with(s);
  CHECK(body["options"] == Json({{"temperature", 0.2}, {"top_p", 0.9}, {"num_predict", 64}, {"stop", {"END"}},
                                 {"seed", 7}, {"num_ctx", 8192}}));
  CHECK(body["think"] == "high");
  CHECK(body["keep_alive"] == "5m");
  const agentkit::Schema schema = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}};
  CHECK(body_with({}, &schema)["format"] == Json::parse(schema.dump()));
  CHECK_FALSE(body_with({}).contains("options"));

  ModelSettings none;
  none.tool_choice = agentkit::ToolChoice{agentkit::ToolChoice::Mode::none, ""};
  CHECK_FALSE(body_with(none).contains("tools"));
  const auto refused = [&](ModelSettings bad, const std::string& setting) {
    try {
      body_with(bad);
      FAIL("accepted " << setting);
    } catch (const UnsupportedSetting& e) {
      CHECK(e.setting() == setting);
      CHECK(e.provider() == "Ollama");
    }
  };
  ModelSettings required;
  required.tool_choice = agentkit::ToolChoice{agentkit::ToolChoice::Mode::required, ""};
  refused(required, "tool_choice");
  ModelSettings named;
  named.tool_choice = agentkit::ToolChoice{agentkit::ToolChoice::Mode::tool, "get_weather"};
  refused(named, "tool_choice");
  ModelSettings serial;
  serial.parallel_tool_calls = false;
  refused(serial, "parallel_tool_calls");
  ModelSettings budget;
  budget.thinking_budget_tokens = 2048;
  refused(budget, "thinking_budget_tokens");
  ModelSettings minimal;
  minimal.reasoning_effort = agentkit::ReasoningEffort::minimal;
  refused(minimal, "reasoning_effort");
}

TEST_CASE("Ollama replies: the documented bodies decode, errors are typed, a body that is not a reply is refused", "[ollama]") {
  if (auto dir = agentkit_test::wire_fixtures("ollama")) {
    const auto calls = ollama_chat_response(Json::parse(read_file(*dir / "response_chat_tool_calls_nostream_docs.json")));
    REQUIRE(calls.message.tool_calls.size() == 1);
    CHECK(calls.message.tool_calls[0].name == "get_weather");
    CHECK(calls.message.tool_calls[0].arguments == Json({{"city", "Tokyo"}}));
    CHECK(calls.message.tool_calls[0].arguments_text.empty());
    CHECK(calls.finish_reason == "tool_calls");
    CHECK(calls.usage.input_tokens == 169);
    CHECK(calls.usage.output_tokens == 18);
    CHECK(calls.model == "llama3.2");
    CHECK(calls.id.empty());  // Ollama names no reply
    const auto answer = ollama_chat_response(Json::parse(read_file(*dir / "response_after_tool_result_docs.json")));
    CHECK_FALSE(answer.message.text().empty());
    CHECK(answer.message.tool_calls.empty());
    const auto e = error_of([&] { read_reply({read_file(*dir / "error_body_docs.json")}, {200, {{"content-type", "application/json"}}}, false); });
    CHECK_THAT(e.what(), Catch::Contains("the model failed to generate a response"));
  } else {
    WARN("skipping the documented Ollama replies: " << AGENTKIT_SHARED_DIR << "/fixtures/wire/ollama not found");
  }
  const Json thinking = {{"message", {{"role", "assistant"}, {"content", "4"}, {"thinking", "2+2"}}},
                         {"done", true}, {"done_reason", "length"}};
  const auto r = ollama_chat_response(thinking);
  CHECK(r.message.text() == "4");
  REQUIRE(r.message.content.size() == 2);
  CHECK(std::get<agentkit::ReasoningPart>(r.message.content[0]) == agentkit::ReasoningPart{"2+2", "", "", "ollama"});
  CHECK(r.finish_reason == "length");
  // Arguments that are text or not an object reach the engine as text, for it to refuse to the model.
  const Json odd = {{"message", {{"role", "assistant"}, {"content", ""},
                                 {"tool_calls", {{{"function", {{"name", "a"}, {"arguments", "{\"x\":1}"}}}},
                                                 {{"function", {{"name", "b"}, {"arguments", {1, 2}}}}},
                                                 {{"function", {{"name", "c"}}}}}}}},
                    {"done", true}};
  const auto o = ollama_chat_response(odd);
  REQUIRE(o.message.tool_calls.size() == 3);
  CHECK(o.message.tool_calls[0].arguments_text == "{\"x\":1}");
  CHECK(o.message.tool_calls[1].arguments_text == "[1,2]");
  CHECK(o.message.tool_calls[2].arguments == Json::object());
  CHECK(error_of([] { ollama_chat_response(Json{{"message", {{"content", "partial"}}}, {"done", false}}); }).code() ==
        ErrorCode::protocol);
  CHECK(error_of([] { ollama_chat_response(Json{{"message", "text"}, {"done", true}}); }).code() == ErrorCode::protocol);
  CHECK(error_of([] { ollama_chat_response(Json{{"message", {{"tool_calls", "x"}}}, {"done", true}}); }).code() ==
        ErrorCode::protocol);
  CHECK(error_of([] { ollama_chat_response(Json{{"done", true}, {"eval_count", -1}}); }).code() == ErrorCode::protocol);
}

TEST_CASE("Ollama streams: the same reply in any chunking, tool calls kept past the done line", "[ollama][stream]") {
  std::string body = kToolCallStream;
  if (auto dir = agentkit_test::wire_fixtures("ollama")) body = read_file(*dir / "stream_chat_tool_calls_docs_reformatted.ndjson");
  const auto whole = read_reply({body}, ndjson_head(), true);
  REQUIRE(whole.message.tool_calls.size() == 1);
  CHECK(whole.message.tool_calls[0].name == "get_weather");
  CHECK(whole.message.tool_calls[0].arguments.is_object());
  CHECK(whole.finish_reason == "tool_calls");
  CHECK(whole.usage.input_tokens == 169);
  CHECK(whole.usage.output_tokens == 15);
  CHECK(whole.model == "llama3.2");
  CHECK(whole.id.empty());
  const auto same = [&](const agentkit::ModelResponse& r) {
    CHECK(r.message.tool_calls.size() == whole.message.tool_calls.size());
    CHECK(r.message.tool_calls[0].arguments == whole.message.tool_calls[0].arguments);
    CHECK(r.usage == whole.usage);
    CHECK(r.model == whole.model);
  };
  for (std::size_t cut = 1; cut < body.size(); ++cut) {
    same(read_reply({body.substr(0, cut), body.substr(cut)}, ndjson_head(), true));
  }
  std::mt19937 rng(20261202);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> chunks;
    for (std::size_t at = 0; at < body.size();) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 17, body.size() - at);
      chunks.push_back(body.substr(at, n));
      at += n;
    }
    same(read_reply(chunks, ndjson_head(), true));
  }
  // CRLF line ends and blank lines between documents read the same.
  std::string crlf;
  for (char c : body) crlf += c == '\n' ? std::string("\r\n\r\n") : std::string(1, c);
  same(read_reply({crlf}, ndjson_head(), true));

  // Deltas: text and thinking as they come, each call once, whole.
  std::vector<StreamDelta> deltas;
  OllamaStreamAccumulator acc([&](StreamDelta d) { deltas.push_back(std::move(d)); });
  for (const char* line : {R"({"message":{"role":"assistant","content":"","thinking":"Let me "},"done":false})",
                           R"({"message":{"role":"assistant","content":"","thinking":"check."},"done":false})",
                           R"({"message":{"role":"assistant","content":"Sure: ","tool_calls":[{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Oslo"}}}]},"done":false})",
                           R"({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"})"}) {
    SseEvent e;
    e.data = line;
    acc.on_event(e);
  }
  REQUIRE(acc.done());
  const auto streamed = acc.finish();
  CHECK(streamed.message.text() == "Sure: ");
  CHECK(std::get<agentkit::ReasoningPart>(streamed.message.content.at(0)).text == "Let me check.");
  REQUIRE(streamed.message.tool_calls.size() == 1);
  CHECK(streamed.message.tool_calls[0].id == "call_1");
  REQUIRE(deltas.size() == 4);
  CHECK(std::get<agentkit::ReasoningDelta>(deltas[0]).text == "Let me ");
  CHECK(std::get<agentkit::TextDelta>(deltas[2]).text == "Sure: ");
  const auto& call = std::get<agentkit::ToolCallDelta>(deltas[3]);
  CHECK(call.id == "call_1");
  CHECK(call.name == "get_weather");
  CHECK(Json::parse(call.arguments) == Json({{"city", "Oslo"}}));
}

TEST_CASE("Ollama streams fail closed: cut before the done line, an error line, a mislabelled body", "[ollama][fail_closed]") {
  const std::string body = kToolCallStream;
  const std::string first_line = body.substr(0, body.find('\n') + 1);
  SECTION("cut cleanly between lines, before done") {
    const auto e = error_of([&] { read_reply({first_line}, ndjson_head(), true); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains("\"done\": true"));
  }
  SECTION("cut inside the last line") {
    const auto e = error_of([&] { read_reply({body.substr(0, body.size() - 10)}, ndjson_head(), true); });
    CHECK((e.code() == ErrorCode::truncated || e.code() == ErrorCode::protocol));
  }
  SECTION("an error line under HTTP 200") {
    std::string stream = first_line + R"({"error":"an error was encountered while running the model"})" "\n";
    if (auto dir = agentkit_test::wire_fixtures("ollama")) stream = read_file(*dir / "stream_error_mid_stream_docs.ndjson");
    const auto e = error_of([&] { read_reply({stream}, ndjson_head(), true); });
    CHECK_THAT(e.what(), Catch::Contains("an error was encountered while running the model"));
    CHECK_FALSE(e.retryable());
  }
  SECTION("an HTML page from a proxy, streaming or not") {
    for (bool stream : {true, false}) {
      const auto e = error_of([&] { read_reply({"<html>Sign in</html>"}, {200, {{"content-type", "text/html"}}}, stream); });
      CHECK(e.code() == ErrorCode::protocol);
      CHECK_THAT(e.what(), Catch::Contains("text/html"));
    }
  }
  SECTION("NDJSON answering a non-streaming request") {
    CHECK(error_of([&] { read_reply({body}, ndjson_head(), false); }).code() == ErrorCode::protocol);
  }
  SECTION("a line that is not JSON, or not an object") {
    CHECK(error_of([&] { read_reply({"not json\n"}, ndjson_head(), true); }).code() == ErrorCode::protocol);
    CHECK(error_of([&] { read_reply({"[1]\n"}, ndjson_head(), true); }).code() == ErrorCode::protocol);
  }
  SECTION("a whole JSON reply to a streaming request is that reply; without a content type, lines") {
    const std::string last = body.substr(first_line.size());
    CHECK(read_reply({last}, {200, {{"content-type", "application/json"}}}, true).usage.input_tokens == 169);
    CHECK(read_reply({body}, {200, {}}, true).message.tool_calls.size() == 1);
  }
}

TEST_CASE("ollama/<model> routes to the native adapter, OLLAMA_HOST as Ollama reads it", "[ollama][models]") {
  const auto target = resolve_model("ollama/llama3.2", {});
  CHECK(target.provider == "ollama");
  CHECK(target.model == "llama3.2");
  CHECK(target.base_url.empty());
  CHECK(target.api_key_variable == "OLLAMA_API_KEY");
  auto model = make_model("ollama/llama3.2", {}, nullptr);
  auto* ollama = dynamic_cast<OllamaChatModel*>(model.get());
  REQUIRE(ollama != nullptr);
  CHECK(ollama->options().base_url == "http://localhost:11434");
  CHECK(resolve_model("ollama/qwen3@http://10.0.0.5:11434", {}).base_url == "http://10.0.0.5:11434");
  const char* saved = std::getenv("OLLAMA_HOST");
  const std::string restore = saved ? saved : "";
  for (const auto& [host, url] : std::vector<std::pair<std::string, std::string>>{
           {"127.0.0.1", "http://127.0.0.1:11434"},
           {"127.0.0.1:9999", "http://127.0.0.1:9999"},
           {"[::1]", "http://[::1]:11434"},
           {"https://ollama.example/base", "https://ollama.example/base"}}) {
    ::setenv("OLLAMA_HOST", host.c_str(), 1);
    CHECK(settings_from_environment().ollama_base_url == url);
  }
  if (saved) {
    ::setenv("OLLAMA_HOST", restore.c_str(), 1);
  } else {
    ::unsetenv("OLLAMA_HOST");
  }
  CHECK_THROWS_AS(make_model("ollama/m", {.ollama_base_url = "ftp://127.0.0.1"}, nullptr), agentkit::Error);
}

TEST_CASE("a whole agent run through Ollama over loopback: streamed tool call, tool result, answer", "[ollama][loopback]") {
  WireServer server;
  const auto ndjson = [](std::vector<std::string> lines) {
    WireServer::Response r;
    r.headers = {{"content-type", "application/x-ndjson"}};
    for (auto& l : lines) r.chunks.push_back(std::move(l) + "\n");
    return r;
  };
  WireServer::Response limited;
  limited.status = 429;
  limited.headers = {{"content-type", "application/json"}, {"retry-after", "0"}};
  limited.body = R"({"error":"too many requests"})";
  server.enqueue(limited);
  server.enqueue(ndjson({R"({"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Toronto"}}}]},"done":false})",
                         R"({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":9})"}));
  server.enqueue(ndjson({R"({"message":{"role":"assistant","content":"It is 11 degrees "},"done":false})",
                         R"({"message":{"role":"assistant","content":"in Toronto."},"done":false})",
                         R"({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":60,"eval_count":7})"}));
  agentkit::Agent agent("forecaster", "ollama/llama3.2@" + server.base_url(), "You report the weather.",
                        agentkit::cognition::react({weather_tool()}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({});
  const auto result = agent.run("Weather in Toronto?", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.output == "It is 11 degrees in Toronto.");
  CHECK(result.usage.input_tokens == 100);
  CHECK(result.usage.output_tokens == 16);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);  // the 429 was retried once
  CHECK(requests[0].path == "/api/chat");
  CHECK(requests[0].header("authorization").empty());
  const Json last = Json::parse(requests[2].body);
  CHECK(last["model"] == "llama3.2");
  CHECK(last["stream"] == true);
  CHECK(last["messages"][0] == Json({{"role", "system"}, {"content", "You report the weather."}}));
  CHECK(last["messages"][2]["tool_calls"][0]["function"]["arguments"] == Json({{"city", "Toronto"}}));
  CHECK(last["messages"][3] == Json({{"role", "tool"}, {"content", "11 degrees celsius"}, {"tool_name", "get_weather"}}));

  // A stream cut between lines fails the run truncated; the tool never runs.
  WireServer::Response cut = ndjson({R"({"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Toronto"}}}]},"done":false})"});
  cut.unframed = true;
  server.enqueue(cut);
  auto cut_ctx = agentkit::testing::make_test_ctx();
  cut_ctx.models = model_resolver({});
  const auto failed = agent.run("Weather in Toronto?", cut_ctx);
  CHECK(failed.stop_reason == agentkit::StopReason::failed);
  REQUIRE(failed.failure);
  CHECK(failed.failure->code == ErrorCode::truncated);
  CHECK(failed.state.history.size() == 1);  // the task only: no call was admitted
}
