// Provider replies that are not what they claim: streams cut before their
// terminal event, 200 bodies of the wrong kind, JSON past its limits, numbers
// out of range and values of the wrong shape. Each ends in a typed
// ProviderError, never in a made-up answer (nor a raw nlohmann exception).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/reply.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/paths.h"
#include "../helpers/wire_fixtures.h"

using agentkit::Json;
using agentkit::JsonError;
using agentkit::testing::WireServer;
using namespace agentkit::providers;
using agentkit_test::error_of;

namespace {

// OpenAI: a text stream and a tool-call stream, one event per string.
const std::vector<std::string> kOpenAIText = {
    R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})" "\n\n",
    R"(data: {"choices":[{"index":0,"delta":{"content":"Hello "}}]})" "\n\n",
    R"(data: {"choices":[{"index":0,"delta":{"content":"from "}}]})" "\n\n",
    R"(data: {"choices":[{"index":0,"delta":{"content":"Lisbon."},"finish_reason":"stop"}]})" "\n\n",
    R"(data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4}})" "\n\n",
    "data: [DONE]\n\n"};

const std::vector<std::string> kOpenAITool = {
    R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"record","arguments":""}}]}}]})" "\n\n",
    R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"note\":\"a\"}"}}]}}]})" "\n\n",
    R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})" "\n\n",
    R"(data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":10}})" "\n\n",
    "data: [DONE]\n\n"};

// Anthropic: the same two.
const std::vector<std::string> kAnthropicText = {
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello from \"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Lisbon.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"};

const std::vector<std::string> kAnthropicTool = {
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"record\",\"input\":{}}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"note\\\": \\\"a\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":12}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"};

std::vector<std::string> first(const std::vector<std::string>& events, std::size_t n) {
  return {events.begin(), events.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::string joined(const std::vector<std::string>& events) {
  std::string out;
  for (const auto& e : events) out += e;
  return out;
}

HttpResponse head(std::string content_type, Headers extra = {}) {
  HttpResponse r;
  r.status = 200;
  if (!content_type.empty()) r.headers.emplace_back("content-type", std::move(content_type));
  for (auto& h : extra) r.headers.push_back(std::move(h));
  return r;
}

constexpr const char* kUrl = "http://127.0.0.1:9/v1/chat/completions?key=secret";

// One reply read the way an adapter reads it: streamed when `streaming`.
template <class Acc>
agentkit::ModelResponse read_reply(const ReplyFormat& format, const HttpResponse& h, const std::string& body,
                                   bool streaming = true) {
  ReplyReader reader(format, kUrl, streaming ? std::make_unique<Acc>() : nullptr);
  reader.on_headers(h);
  reader.feed(body);
  return reader.finish();
}

agentkit::ModelResponse openai(const std::string& body, bool streaming = true,
                               const HttpResponse& h = head("text/event-stream")) {
  return read_reply<OpenAIStreamAccumulator>(openai_chat_reply(), h, body, streaming);
}

agentkit::ModelResponse anthropic(const std::string& body, bool streaming = true,
                                  const HttpResponse& h = head("text/event-stream")) {
  return read_reply<AnthropicStreamAccumulator>(anthropic_reply(), h, body, streaming);
}


WireServer::Response unframed(std::vector<std::string> events) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = std::move(events);
  r.chunk_delay = std::chrono::milliseconds(5);
  r.unframed = true;
  return r;
}

}  // namespace

// ------------------------------------------------------------------ truncated

TEST_CASE("a stream cut between events before its terminal event is truncated, with its usage", "[fail_closed][truncated]") {
  SECTION("OpenAI text: three events answer nothing, not \"Hello from \"") {
    const auto e = error_of([] { openai(joined(first(kOpenAIText, 3))); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK(to_string(e.code()) == "truncated");
    CHECK_THAT(e.what(), Catch::Contains("data: [DONE]") && Catch::Contains("http://127.0.0.1:9/v1/chat/completions") &&
                             !Catch::Contains("secret"));
    CHECK_FALSE(e.retryable());
  }
  SECTION("OpenAI: the usage chunk arrived, [DONE] did not") {
    const auto e = error_of([] { openai(joined(first(kOpenAIText, 5))); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK(e.usage().input_tokens == 11);
    CHECK(e.usage().output_tokens == 4);
  }
  SECTION("OpenAI tool call") {
    CHECK(error_of([] { openai(joined(first(kOpenAITool, 3))); }).code() == ErrorCode::truncated);
  }
  SECTION("Anthropic text: message_start's usage is carried") {
    const auto e = error_of([] { anthropic(joined(first(kAnthropicText, 4))); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains("message_stop"));
    CHECK(e.usage().input_tokens == 30);
  }
  SECTION("Anthropic tool use, cut after message_delta") {
    const auto e = error_of([] { anthropic(joined(first(kAnthropicTool, 5))); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK(e.usage().output_tokens == 12);
  }
  SECTION("cut mid-line, inside the last event") {
    std::string body = joined(first(kAnthropicText, 3)) + kAnthropicText[3].substr(0, 40);
    const auto e = error_of([&] { anthropic(body); });
    CHECK(e.code() == ErrorCode::truncated);
    CHECK_THAT(e.what(), Catch::Contains("cut off"));
  }
  SECTION("an empty 200 stream") {
    CHECK(error_of([] { openai(""); }).code() == ErrorCode::truncated);
  }
}

TEST_CASE("an error event mid-stream is that error, carrying the usage reported before it", "[fail_closed]") {
  const auto e = error_of([] {
    anthropic(joined(first(kAnthropicText, 3)) +
              "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
  });
  CHECK(e.code() == ErrorCode::overloaded);
  CHECK(e.usage().input_tokens == 30);
}

TEST_CASE("complete streams still decode through ReplyReader in any chunking", "[fail_closed][truncated]") {
  for (std::size_t size : {1u, 7u, 64u, 100000u}) {
    ReplyReader reader(openai_chat_reply(), kUrl, std::make_unique<OpenAIStreamAccumulator>());
    reader.on_headers(head("text/event-stream; charset=utf-8"));
    for (const auto& chunk : WireServer::split(joined(kOpenAIText), size)) reader.feed(chunk);
    const auto r = reader.finish();
    CHECK(r.message.text() == "Hello from Lisbon.");
    CHECK(r.usage.input_tokens == 11);
  }
  // message_stop without its final blank line (three recorded SDK fixtures end so).
  std::string body = joined(kAnthropicText);
  body.resize(body.size() - 2);
  CHECK(anthropic(body).message.text() == "Hello from Lisbon.");
}

TEST_CASE("every recorded stream reads through ReplyReader as complete, or as its error", "[fail_closed][truncated][conformance]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(AGENTKIT_SHARED_DIR) / "fixtures" / "wire";
  if (!fs::is_directory(dir)) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found");
    return;
  }
  int complete = 0;
  for (const char* sub : {"openai-chat", "openai-compatible", "anthropic"}) {
    const bool is_anthropic = std::string(sub) == "anthropic";
    for (const auto& entry : fs::directory_iterator(dir / sub)) {
      if (entry.path().extension() != ".sse") continue;
      const std::string name = entry.path().filename().string();
      CAPTURE(name);
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      const auto read = [&] { return is_anthropic ? anthropic(text.str()) : openai(text.str()); };
      if (name.find("error") != std::string::npos || name.find("overloaded") != std::string::npos) {
        CHECK(error_of(read).code() != ErrorCode::truncated);
        continue;
      }
      CHECK_NOTHROW(read());
      ++complete;
      // The same stream without its terminal event is truncated.
      const std::string body = text.str();
      const auto terminal = body.rfind(is_anthropic ? "event: message_stop" : "data: [DONE]");
      REQUIRE(terminal != std::string::npos);
      const auto cut = [&] { return is_anthropic ? anthropic(body.substr(0, terminal)) : openai(body.substr(0, terminal)); };
      CHECK(error_of(cut).code() == ErrorCode::truncated);
    }
  }
  CHECK(complete >= 14);
}

// ------------------------------------------------------------------ wrong kind of body

TEST_CASE("a 200 answering a streaming request with something else is judged by content type and body", "[fail_closed][content_type]") {
  SECTION("a JSON error object is the error it describes, retryable when it says so") {
    const auto limited = error_of([] {
      openai(R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})", true,
             head("application/json", {{"retry-after", "2"}}));
    });
    CHECK(limited.code() == ErrorCode::rate_limited);
    CHECK(limited.retryable());
    CHECK(limited.retry_after() == std::chrono::milliseconds(2000));
    CHECK_THAT(limited.what(), Catch::Contains("slow down") && Catch::Contains("127.0.0.1:9"));
    const auto overloaded = error_of([] {
      anthropic(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", true,
                head("application/json"));
    });
    CHECK(overloaded.code() == ErrorCode::overloaded);
    CHECK(overloaded.retryable());
    const auto invalid = error_of([] {
      openai(R"({"error":{"message":"bad","type":"invalid_request_error"}})", true, head("application/json"));
    });
    CHECK(invalid.code() == ErrorCode::invalid_argument);
    CHECK_FALSE(invalid.retryable());
    const auto forced = error_of([] {
      openai(R"({"error":{"message":"bad","type":"invalid_request_error"}})", true,
             head("application/json", {{"x-should-retry", "true"}}));
    });
    CHECK(forced.retryable());
  }
  SECTION("an HTML proxy page is a protocol error naming the URL and the content type") {
    const auto e = error_of([] { openai("<html><body>502 Bad Gateway</body></html>", true, head("text/html")); });
    CHECK(e.code() == ErrorCode::protocol);
    CHECK_THAT(e.what(), Catch::Contains("text/html") && Catch::Contains("http://127.0.0.1:9/v1/chat/completions"));
    CHECK(error_of([] { anthropic("<html></html>", true, head("text/html; charset=utf-8")); }).code() ==
          ErrorCode::protocol);
    CHECK(error_of([] { openai("plain text", true, head("text/plain")); }).code() == ErrorCode::protocol);
  }
  SECTION("a complete JSON completion is accepted as that completion") {
    const auto r = openai(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],)"
                          R"("usage":{"prompt_tokens":3,"completion_tokens":1}})",
                          true, head("application/json"));
    CHECK(r.message.text() == "Hi.");
    CHECK(r.usage.input_tokens == 3);
    const auto a = anthropic(R"({"type":"message","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn"})",
                             true, head("application/json"));
    CHECK(a.message.text() == "Hi.");
  }
  SECTION("JSON that is not a completion is a protocol error") {
    CHECK(error_of([] { openai(R"({"id":"x"})", true, head("application/json")); }).code() == ErrorCode::protocol);
    CHECK(error_of([] { openai("[1,2]", true, head("application/json")); }).code() == ErrorCode::protocol);
  }
  SECTION("no content type: the body decides") {
    CHECK(openai(joined(kOpenAIText), true, head("")).message.text() == "Hello from Lisbon.");
    CHECK(error_of([] { openai(R"({"error":{"message":"x","type":"tokens"}})", true, head("")); }).code() ==
          ErrorCode::rate_limited);
  }
}

TEST_CASE("a non-streaming request answered with an event stream or HTML is a protocol error", "[fail_closed][content_type]") {
  const auto sse = error_of([] { openai(joined(kOpenAIText), false, head("text/event-stream")); });
  CHECK(sse.code() == ErrorCode::protocol);
  CHECK_THAT(sse.what(), Catch::Contains("text/event-stream"));
  const auto html = error_of([] { anthropic("<!doctype html><p>login</p>", false, head("text/html")); });
  CHECK(html.code() == ErrorCode::protocol);
  CHECK_THAT(html.what(), Catch::Contains("text/html"));
  CHECK(error_of([] { openai("{\"choices\": [", false, head("application/json")); }).code() == ErrorCode::protocol);
  // The same 200 error body as in a stream.
  CHECK(error_of([] { openai(R"({"error":{"message":"quota","type":"insufficient_quota"}})", false, head("application/json")); })
            .code() == ErrorCode::quota_exceeded);
}

// ------------------------------------------------------------------ limits

TEST_CASE("provider JSON is parsed under JsonLimits", "[fail_closed][limits]") {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  SECTION("a stream event nested past max_depth") {
    const auto e = error_of([&] { openai("data: {\"choices\":" + deep + "}\n\n"); });
    CHECK(e.code() == ErrorCode::protocol);
    CHECK_THAT(e.what(), Catch::Contains("nested deeper than 64 levels"));
    CHECK(error_of([&] { anthropic("data: {\"type\":\"ping\",\"x\":" + deep + "}\n\n"); }).code() == ErrorCode::protocol);
  }
  SECTION("a whole body nested past max_depth, or past max_bytes") {
    CHECK(error_of([&] { openai("{\"x\":" + deep + "}", false, head("application/json")); }).code() ==
          ErrorCode::protocol);
    ReplyReader reader(openai_chat_reply(), kUrl, nullptr, agentkit::JsonLimits{.max_bytes = 64});
    reader.on_headers(head("application/json"));
    const auto e = error_of([&] { reader.feed(std::string(65, ' ')); });
    CHECK(e.code() == ErrorCode::protocol);
    CHECK_THAT(e.what(), Catch::Contains("64 bytes"));
  }
  SECTION("one string past max_string_bytes") {
    const std::string big(agentkit::JsonLimits{}.max_string_bytes + 1, 'a');
    CHECK(error_of([&] { openai(R"(data: {"choices":[{"index":0,"delta":{"content":")" + big + "\"}}]}\n\n"); })
              .code() == ErrorCode::protocol);
    CHECK(error_of([] { parse_provider_json(R"({"a":"123456789"})", "event", {.max_string_bytes = 8}); }).code() ==
          ErrorCode::protocol);
  }
}

// ------------------------------------------------------------------ numbers and shapes

TEST_CASE("json_integer range-checks before converting", "[fail_closed][json_integer]") {
  CHECK(agentkit::json_integer<int>(Json(5), "n") == 5);
  CHECK(agentkit::json_integer<int>(Json(5.0), "n") == 5);
  CHECK(agentkit::json_integer<std::int64_t>(Json(-7), "n") == -7);
  CHECK(agentkit::json_integer<std::uint64_t>(Json(std::numeric_limits<std::uint64_t>::max()), "n") ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK_THROWS_AS(agentkit::json_integer<std::int64_t>(Json(1e300), "usage.prompt_tokens"), JsonError);
  CHECK_THROWS_WITH(agentkit::json_integer<std::int64_t>(Json(1e300), "usage.prompt_tokens"),
                    Catch::Contains("usage.prompt_tokens"));
  CHECK_THROWS_AS(agentkit::json_integer<std::size_t>(Json(-1.5), "index"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<std::size_t>(Json(-1), "index"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<int>(Json(4294967297LL), "version"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<int>(Json(5.7e21), "n"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<int>(Json(2.5), "n"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<int>(Json("3"), "n"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<int>(Json(true), "n"), JsonError);
  CHECK_THROWS_AS(agentkit::json_integer<std::int64_t>(Json(9223372036854775808.0), "n"), JsonError);
  CHECK(agentkit::json_integer<std::int64_t>(Json(-9223372036854775808.0), "n") == std::numeric_limits<std::int64_t>::min());
  CHECK_FALSE(agentkit::exact_integer<std::int64_t>(std::numeric_limits<double>::infinity()));
  CHECK_FALSE(agentkit::exact_integer<std::int64_t>(std::numeric_limits<double>::quiet_NaN()));
}

TEST_CASE("usage and indices out of range are a ProviderError, never a cast", "[fail_closed][json_integer]") {
  const auto body = [](const std::string& usage) {
    return Json::parse(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"x"}}],"usage":)" + usage + "}");
  };
  CHECK_THROWS_AS(openai_chat_response(body(R"({"prompt_tokens":1e300})")), ProviderError);
  CHECK_THROWS_AS(openai_chat_response(body(R"({"completion_tokens":-3})")), ProviderError);
  CHECK_THROWS_AS(openai_chat_response(body(R"({"prompt_tokens_details":{"cached_tokens":5.7e21}})")), ProviderError);
  CHECK(error_of([] { openai(R"(data: {"choices":[],"usage":{"prompt_tokens":1e300}})" "\n\n"); }).code() ==
        ErrorCode::protocol);
  CHECK(error_of([] { openai(R"(data: {"choices":[{"index":-1.5,"delta":{}}]})" "\n\n"); }).code() == ErrorCode::protocol);
  CHECK(error_of([] {
          openai(R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":-1.5,"id":"c"}]}}]})" "\n\n");
        }).code() == ErrorCode::protocol);
  CHECK(error_of([] {
          anthropic("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1e300}}}\n\n");
        }).code() == ErrorCode::protocol);
  CHECK(error_of([] { anthropic("data: {\"type\":\"content_block_start\",\"index\":5.7e21,\"content_block\":{}}\n\n"); })
            .code() == ErrorCode::protocol);
  CHECK(error_of([] { anthropic("data: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":1e300}}\n\n"); })
            .code() == ErrorCode::protocol);
  CHECK_THROWS_AS(anthropic_response(Json::parse(R"({"content":[],"usage":{"output_tokens":1e300}})")), ProviderError);
}

TEST_CASE("valid JSON of the wrong shape raises ProviderError(protocol), not a type_error", "[fail_closed][shape]") {
  const auto protocol = [](const std::function<void()>& f) { return error_of(f).code() == ErrorCode::protocol; };
  CHECK(protocol([] { openai(R"(data: {"choices":[{"index":0,"delta":"x"}]})" "\n\n"); }));
  CHECK(protocol([] { openai(R"(data: {"choices":{}})" "\n\n"); }));
  CHECK(protocol([] { openai(R"(data: {"choices":[3]})" "\n\n"); }));
  CHECK(protocol([] { openai(R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":"f"}]}}]})" "\n\n"); }));
  CHECK(protocol([] { openai(R"(data: 3)" "\n\n"); }));
  CHECK(protocol([] { openai_chat_response(Json::parse(R"({"choices":[{"message":3}]})")); }));
  CHECK(protocol([] { openai_chat_response(Json::parse(R"({"choices":[{"message":{"tool_calls":[{"function":7}]}}]})")); }));
  CHECK(protocol([] { anthropic("data: {\"type\":\"message_start\",\"message\":3}\n\n"); }));
  CHECK(protocol([] { anthropic("data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":\"x\"}\n\n"); }));
  CHECK(protocol([] { anthropic("data: {\"type\":\"content_block_start\",\"index\":\"0\"}\n\n"); }));
  CHECK(protocol([] { anthropic_response(Json::parse(R"({"content":[{"type":"tool_use"}],"usage":[1]})")); }));
}

TEST_CASE("OpenAI content as text parts is read, content of another type is protocol, never an empty answer",
          "[fail_closed][shape]") {
  const auto reply = [](const std::string& message) {
    return openai_chat_response(Json::parse(R"({"choices":[{"message":)" + message + R"(,"finish_reason":"stop"}]})"));
  };
  CHECK(reply(R"({"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]})").message.text() == "Hello");
  const auto refused = reply(R"({"content":null,"refusal":"I can't help with that."})").message;
  REQUIRE(refused.content.size() == 1);
  CHECK(std::get<agentkit::RefusalPart>(refused.content[0]).text == "I can't help with that.");
  for (const char* bad : {R"({"content":5})", R"({"content":{"text":"Hello"}})", R"({"content":[{"type":"image"}]})",
                          R"({"content":"ok","refusal":7})"}) {
    CAPTURE(bad);
    CHECK(error_of([&] { reply(bad); }).code() == ErrorCode::protocol);
  }
  const auto stream = [](const std::string& delta) {
    return openai(R"(data: {"choices":[{"index":0,"delta":)" + delta + R"(,"finish_reason":"stop"}]})" "\n\n"
                  "data: [DONE]\n\n");
  };
  CHECK(stream(R"({"content":[{"type":"text","text":"Hi"}]})").message.text() == "Hi");
  CHECK(error_of([&] { stream(R"({"content":{"x":1}})"); }).code() == ErrorCode::protocol);
}

TEST_CASE("tool-call arguments of the wrong shape reach the loop as text, never as no arguments", "[fail_closed][shape]") {
  const auto openai_call = [](const std::string& arguments) {
    const auto reply = openai_chat_response(Json::parse(
        R"({"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"rm")" +
        (arguments.empty() ? std::string() : ",\"arguments\":" + arguments) + R"(}}]},"finish_reason":"tool_calls"}]})"));
    REQUIRE(reply.message.tool_calls.size() == 1);
    return reply.message.tool_calls[0];
  };
  // A lenient server's object is its JSON text (the loop parses it); a
  // number stays a number the tool refuses; absent or null is no arguments.
  CHECK(openai_call(R"({"path":"/x"})").arguments_text == R"({"path":"/x"})");
  CHECK(openai_call("5").arguments_text == "5");
  CHECK(openai_call(R"("{\"path\":\"/x\"}")").arguments_text == R"({"path":"/x"})");
  CHECK(openai_call("").arguments_text == "{}");
  CHECK(openai_call("null").arguments_text == "{}");
  CHECK(agentkit::parse_arguments("rm", openai_call(R"({"path":"/x"})").arguments_text) == Json{{"path", "/x"}});

  const auto anthropic_call = [](const std::string& input) {
    const auto reply = anthropic_response(Json::parse(R"({"content":[{"type":"tool_use","id":"t","name":"rm")" +
                                                      (input.empty() ? std::string() : ",\"input\":" + input) +
                                                      R"(}],"stop_reason":"tool_use"})"));
    REQUIRE(reply.message.tool_calls.size() == 1);
    return reply.message.tool_calls[0];
  };
  // Text the loop parses to a string, which no tool takes as its arguments.
  const auto text = anthropic_call(R"("{\"path\":\"/x\"}")");
  CHECK(text.arguments_text == R"("{\"path\":\"/x\"}")");
  CHECK(agentkit::parse_arguments("rm", text.arguments_text).is_string());
  CHECK(anthropic_call("[1]").arguments_text == "[1]");
  CHECK(anthropic_call(R"({"path":"/x"})").arguments == Json{{"path", "/x"}});
  CHECK(anthropic_call(R"({"path":"/x"})").arguments_text.empty());
  for (const std::string absent : {"", "null"}) {
    const auto call = anthropic_call(absent);
    CHECK(call.arguments == Json::object());
    CHECK(call.arguments_text.empty());
  }
}

TEST_CASE("stream fragments nobody announced are a protocol error, never dropped", "[fail_closed][shape]") {
  const auto protocol = [](const std::function<void()>& f) { return error_of(f).code() == ErrorCode::protocol; };
  // OpenAI: a call's arguments continued without its index, or at a wrong
  // one, would leave call_1 to run with no arguments.
  for (const std::string& where : {std::string(), std::string(R"("index":1,)")}) {
    CAPTURE(where);
    std::vector<std::string> events = kOpenAITool;
    events[1] = R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{)" + where +
                R"("function":{"arguments":"{\"note\":\"a\"}"}}]}}]})" "\n\n";
    CHECK(protocol([&] { openai(joined(events)); }));
  }
  CHECK(openai(joined(kOpenAITool)).message.tool_calls.at(0).arguments_text == R"({"note":"a"})");

  // Anthropic: a delta or stop before its block's start, a second start, a
  // fragment that is not text.
  const auto delta = [](const std::string& partial) {
    return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
           "\"input_json_delta\",\"partial_json\":" + partial + "}}\n\n";
  };
  std::vector<std::string> orphan = kAnthropicTool;
  orphan.erase(orphan.begin() + 1);  // no content_block_start
  CHECK(protocol([&] { anthropic(joined(orphan)); }));
  std::vector<std::string> stop_only = {kAnthropicTool[0], kAnthropicTool[3], kAnthropicTool[4], kAnthropicTool[5]};
  CHECK(protocol([&] { anthropic(joined(stop_only)); }));
  std::vector<std::string> twice = kAnthropicTool;
  twice.insert(twice.begin() + 2, kAnthropicTool[1]);
  CHECK(protocol([&] { anthropic(joined(twice)); }));
  std::vector<std::string> number = kAnthropicTool;
  number.insert(number.begin() + 2, delta("5"));
  CHECK(protocol([&] { anthropic(joined(number)); }));
  std::vector<std::string> untyped = kAnthropicText;
  untyped[1] = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{}}\n\n";
  CHECK(protocol([&] { anthropic(joined(untyped)); }));
  std::vector<std::string> split = kAnthropicTool;
  split[2] = delta(R"("{\"note\": ")") + delta(R"("\"a\"}")");
  CHECK(anthropic(joined(split)).message.tool_calls.at(0).arguments_text == R"({"note": "a"})");
}

// ------------------------------------------------------------------ over loopback

TEST_CASE("streams cut cleanly between events over loopback are truncated, for both adapters", "[fail_closed][loopback]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .model = "m"});
  AnthropicModel claude(transport, {.base_url = server.base_url(), .model = "m"});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<agentkit::Message> history{agentkit::Message::user("hi")};
  const agentkit::ModelRequest request{"m", "p", history, {}};

  server.enqueue(unframed(first(kOpenAIText, 3)));
  const auto text = error_of([&] { gpt.complete(request, ctx); });
  CHECK(text.code() == ErrorCode::truncated);
  CHECK_THAT(text.what(), Catch::Contains(server.base_url() + "/v1/chat/completions"));

  server.enqueue(unframed(first(kOpenAITool, 4)));
  const auto tool = error_of([&] { gpt.complete(request, ctx); });
  CHECK(tool.code() == ErrorCode::truncated);
  CHECK(tool.usage().input_tokens == 50);

  server.enqueue(unframed(first(kAnthropicText, 3)));
  CHECK(error_of([&] { claude.complete(request, ctx); }).code() == ErrorCode::truncated);

  server.enqueue(unframed(first(kAnthropicTool, 3)));
  const auto cut = error_of([&] { claude.complete(request, ctx); });
  CHECK(cut.code() == ErrorCode::truncated);
  CHECK(cut.usage().input_tokens == 30);

  // Unframed but whole: accepted.
  server.enqueue(unframed(kOpenAIText));
  CHECK(gpt.complete(request, ctx).message.text() == "Hello from Lisbon.");
  server.enqueue(unframed(kAnthropicText));
  CHECK(claude.complete(request, ctx).message.text() == "Hello from Lisbon.");
  CHECK(server.requests().size() == 6);  // none retried
}

TEST_CASE("a 200 HTML page or JSON error over loopback is typed, streaming or not", "[fail_closed][loopback]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<agentkit::Message> history{agentkit::Message::user("hi")};
  const agentkit::ModelRequest request{"m", "p", history, {}};
  for (bool stream : {true, false}) {
    CAPTURE(stream);
    OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .model = "m", .stream = stream});
    WireServer::Response html;
    html.headers = {{"content-type", "text/html"}};
    html.body = "<html><body>Sign in to the proxy</body></html>";
    server.enqueue(html);
    const auto page = error_of([&] { gpt.complete(request, ctx); });
    CHECK(page.code() == ErrorCode::protocol);
    CHECK_THAT(page.what(), Catch::Contains("text/html") && Catch::Contains(server.base_url()));
    WireServer::Response error;
    error.headers = {{"content-type", "application/json"}};
    error.body = R"({"error":{"message":"Rate limit reached","type":"tokens","code":"rate_limit_exceeded"}})";
    server.enqueue(error);
    const auto limited = error_of([&] { gpt.complete(request, ctx); });
    CHECK(limited.code() == ErrorCode::rate_limited);
    CHECK(limited.retryable());
  }
  AnthropicModel claude(transport, {.base_url = server.base_url(), .model = "m", .stream = false});
  WireServer::Response sse;
  sse.headers = {{"content-type", "text/event-stream"}};
  sse.body = joined(kAnthropicText);
  server.enqueue(sse);
  const auto e = error_of([&] { claude.complete(request, ctx); });
  CHECK(e.code() == ErrorCode::protocol);
  CHECK_THAT(e.what(), Catch::Contains("text/event-stream"));
}

TEST_CASE("a key a server quotes back in a 200 error body or an error event never reaches our error", "[fail_closed][loopback][secrets]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<agentkit::Message> history{agentkit::Message::user("hi")};
  const agentkit::ModelRequest request{"m", "p", history, {}};
  const std::string key = "sk-live-0123456789abcdef";
  const std::string quoted = R"({"error":{"message":"Invalid key )" + key + R"(","type":"invalid_request_error"}})";
  for (bool stream : {true, false}) {
    CAPTURE(stream);
    OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .api_key = key, .model = "m", .stream = stream});
    WireServer::Response body;
    body.headers = {{"content-type", "application/json"}};
    body.body = quoted;
    server.enqueue(body);
    const auto e = error_of([&] { gpt.complete(request, ctx); });
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("Invalid key") && !Catch::Contains(key));
  }
  OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .api_key = key, .model = "m", .stream = true});
  server.enqueue(unframed({kOpenAIText[0], kOpenAIText[1], "data: " + quoted + "\n\n"}));
  const auto mid = error_of([&] { gpt.complete(request, ctx); });
  CHECK_THAT(mid.what(), Catch::Contains("Invalid key") && !Catch::Contains(key));
  AnthropicModel claude(transport, {.base_url = server.base_url(), .api_key = key, .model = "m"});
  server.enqueue(unframed({kAnthropicText[0], "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                                              "\"overloaded_error\",\"message\":\"Overloaded for " + key + "\"}}\n\n"}));
  const auto event = error_of([&] { claude.complete(request, ctx); });
  CHECK(event.code() == ErrorCode::overloaded);
  CHECK_THAT(event.what(), Catch::Contains("Overloaded for") && !Catch::Contains(key));
}

TEST_CASE("a 200 body past 64 MiB is refused while it arrives, never buffered without end", "[fail_closed][loopback][limits]") {
  WireServer server;
  auto transport = std::make_shared<Transport>(TransportOptions{.max_retries = 0});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<agentkit::Message> history{agentkit::Message::user("hi")};
  const agentkit::ModelRequest request{"m", "p", history, {}};
  OpenAIChatModel gpt(transport, {.base_url = server.base_url() + "/v1", .model = "m", .stream = false});
  WireServer::Response huge;
  huge.headers = {{"content-type", "application/json"}};
  huge.body = R"({"choices":[{"message":{"content":")" + std::string((std::size_t{64} << 20) + 1, 'a') + R"("}}]})";
  server.enqueue(huge);
  const auto e = error_of([&] { gpt.complete(request, ctx); });
  CHECK(e.code() == ErrorCode::protocol);
  CHECK_THAT(e.what(), Catch::Contains("over 64 MiB"));
}

TEST_CASE("an agent run whose tool-call stream is cut fails truncated: no tool run, no repair turn, usage charged", "[fail_closed][loopback][agent]") {
  struct Case {
    std::string name;
    std::string model;
    std::vector<std::string> events;
    std::int64_t input_tokens;
  };
  WireServer server;
  const std::vector<Case> cases = {
      {"OpenAI", "openai/m@" + server.base_url() + "/v1", first(kOpenAITool, 4), 50},
      {"Anthropic", "anthropic/m@" + server.base_url(), first(kAnthropicTool, 5), 30},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    std::atomic<int> runs{0};
    auto record = agentkit::tool("record")
                      .doc("Record one note in the external ledger; side-effecting.")
                      .side_effecting(true)
                      .params("note")
                      .fn([&](const std::string&) { return ++runs; });
    const std::size_t before = server.requests().size();
    server.enqueue(unframed(c.events));
    agentkit::Agent agent("a", c.model, "p", agentkit::cognition::react({record}));
    auto ctx = agentkit::testing::make_test_ctx();
    ctx.models = model_resolver({.openai_api_key = "k", .anthropic_api_key = "k"});
    const auto result = agent.run("note a", ctx);
    CHECK(result.stop_reason == agentkit::StopReason::failed);
    CHECK(result.failure.value().code == ErrorCode::truncated);
    CHECK(result.failure->model == c.model);
    CHECK(result.state.failure == result.failure);
    CHECK_THAT(result.failure.value().message, Catch::Contains("ended before its terminal event"));
    CHECK(runs == 0);                                   // the cut call never ran
    CHECK(server.requests().size() == before + 1);      // no repair turn, no retry
    CHECK(result.usage.input_tokens == c.input_tokens);  // what the provider reported is charged
    CHECK(result.state.usage.input_tokens == c.input_tokens);
    CHECK(ctx.budget->tokens() >= c.input_tokens);
    // The history holds no assistant turn made up from the cut reply.
    for (const auto& m : result.state.history) CHECK(m.role != agentkit::Role::assistant);
    // The code survives the run document.
    CHECK(agentkit::RunState::from_json(result.state.to_json()).failure == result.failure);
    CHECK(result.state.to_json()["error_code"] == "truncated");
  }
}
