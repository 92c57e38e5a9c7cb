// OpenAI Chat Completions and Anthropic Messages adapters: request bodies,
// responses, streams; plus conformance over the recorded wire fixtures in
// ../shared/fixtures/wire when that folder exists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <fstream>
#include <iostream>
#include <sstream>

#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/openai.h>

#include "../helpers/paths.h"
#include "../helpers/files.h"
#include "../helpers/sse_decode.h"
#include "../helpers/wire_fixtures.h"

namespace fs = std::filesystem;
using agentkit::Json;
using agentkit::Message;
using agentkit::ModelRequest;
using agentkit::ToolCall;
using agentkit::Schema;
using namespace agentkit::providers;
using agentkit_test::decode_stream;
using agentkit_test::read_file;

namespace {

agentkit::ToolPtr weather_tool() {
  return agentkit::tool("get_weather")
      .doc("Get the current weather for a city, in the unit requested.")
      .side_effecting(false)
      .params("city")
      .fn([](const std::string& c) { return c; });
}

std::vector<Message> tool_history() {
  return {Message::user("Weather in Paris and Rome?"),
          Message::assistant("Checking.", {ToolCall{"c1", "get_weather", {{"city", "Paris"}}, {}},
                                           ToolCall{"c2", "get_weather", Json::object(), {}}}),
          Message::tool_result("c1", "get_weather", "sunny"),
          Message::tool_result("c2", "get_weather", "Tool failed: timeout", true)};
}


bool parses_as_object(const std::string& text) {
  try {
    return Json::parse(text).is_object();
  } catch (const Json::exception&) {
    return false;
  }
}

}  // namespace

TEST_CASE("OpenAI request body: roles, tool calls as JSON strings, tool results", "[adapter][openai]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  auto history = tool_history();
  ModelRequest request{"openai/gpt-4o-mini", "You are terse.", history, specs};
  Schema body = openai_chat_body(request, {.model = "gpt-4o-mini"}, true);
  CHECK(body["model"] == "gpt-4o-mini");
  CHECK(body["stream"] == true);
  CHECK(body["stream_options"]["include_usage"] == true);
  const auto& m = body["messages"];
  REQUIRE(m.size() == 5);
  CHECK(m[0] == Schema({{"role", "system"}, {"content", "You are terse."}}));
  CHECK(m[2]["tool_calls"][0]["function"]["arguments"] == R"({"city":"Paris"})");
  CHECK(m[2]["tool_calls"][1]["function"]["arguments"] == "{}");
  CHECK(m[2]["tool_calls"][0]["type"] == "function");
  CHECK(m[3] == Schema({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}}));
  CHECK(body["tools"][0]["function"]["name"] == "get_weather");

  SECTION("the system + tools prefix is byte-identical across turns") {
    std::vector<Message> shorter(history.begin(), history.begin() + 1);
    ModelRequest first{"m", "You are terse.", shorter, specs};
    const std::string a = openai_chat_body(first, {.model = "m"}, true).dump();
    const std::string b = openai_chat_body(request, {.model = "m"}, true).dump();
    const std::string prefix_a = a.substr(0, a.find(R"("content":"Weather)"));
    CHECK(b.substr(0, prefix_a.size()) == prefix_a);
    CHECK(openai_chat_body(first, {.model = "m"}, true)["tools"].dump() ==
          openai_chat_body(request, {.model = "m"}, true)["tools"].dump());
  }
  SECTION("an assistant turn with only tool calls sends content null") {
    std::vector<Message> h{Message::user("x"), Message::assistant("", {ToolCall{"c1", "get_weather", Json::object(), {}}})};
    ModelRequest r{"m", "", h, {}};
    Schema b = openai_chat_body(r, {.model = "m"}, false);
    CHECK(b["messages"][1]["content"].is_null());
    CHECK_FALSE(b.contains("stream"));
    CHECK_FALSE(b.contains("tools"));
  }
}

TEST_CASE("OpenAI response: content null, arguments as strings, usage", "[adapter][openai]") {
  auto r = openai_chat_response(Json::parse(R"({"choices":[{"index":0,"finish_reason":"tool_calls","message":{
      "role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
      "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
      {"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]}}],
      "usage":{"prompt_tokens":12,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}})"));
  CHECK(r.message.text().empty());
  REQUIRE(r.message.tool_calls.size() == 2);
  CHECK(r.message.tool_calls[0].arguments_text == R"({"city": "Paris"})");
  CHECK(r.message.tool_calls[1].arguments_text == "{}");
  CHECK(r.finish_reason == "tool_calls");
  CHECK(r.usage == agentkit::Usage{12, 7, 4});
  CHECK_THROWS_AS(openai_chat_response(Json::parse(R"({"error":{"message":"bad","type":"invalid_request_error"}})")),
                  ProviderError);
  CHECK_THROWS_AS(openai_chat_response(Json::parse(R"({"choices":[]})")), ProviderError);
  CHECK_THROWS_AS(openai_chat_response(Json::parse(R"([1,2])")), ProviderError);
}

TEST_CASE("OpenAI stream: tool-call deltas keyed by index, usage chunk with no choices", "[adapter][openai]") {
  const std::string sse =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,"
      "\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{"
      "\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"ci\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Paris\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"Rome\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":48,\"completion_tokens\":19}}\n\n"
      "data: [DONE]\n\n";
  auto r = decode_stream<OpenAIStreamAccumulator>(sse);
  REQUIRE(r.message.tool_calls.size() == 2);
  CHECK(r.message.tool_calls[0].id == "call_a");
  CHECK(Json::parse(r.message.tool_calls[0].arguments_text) == Json({{"city", "Paris"}}));
  CHECK(Json::parse(r.message.tool_calls[1].arguments_text) == Json({{"city", "Rome"}}));
  CHECK(r.finish_reason == "tool_calls");
  CHECK(r.usage.input_tokens == 48);

  SECTION("text deltas, content \"\" first") {
    auto t = decode_stream<OpenAIStreamAccumulator>(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n");
    CHECK(t.message.text() == "Hello");
    CHECK(t.finish_reason == "stop");
  }
  SECTION("an error inside a 200 stream is a typed error") {
    CHECK_THROWS_AS(decode_stream<OpenAIStreamAccumulator>(
                        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
                        "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"),
                    ProviderError);
  }
  SECTION("a chunk that is not JSON is a protocol error") {
    try {
      decode_stream<OpenAIStreamAccumulator>("data: {not json\n\n");
      FAIL("expected ProviderError");
    } catch (const ProviderError& e) {
      CHECK(e.code() == ErrorCode::protocol);
    }
  }
}

TEST_CASE("Anthropic request body: input_schema tools, tool_result blocks first in the next user turn", "[adapter][anthropic]") {
  auto tool = weather_tool();
  const agentkit::ToolSpec* specs[] = {&tool->spec()};
  auto history = tool_history();
  history.push_back(Message::user("Thanks, and tomorrow?"));
  ModelRequest request{"anthropic/claude", "You are terse.", history, specs};
  Schema body = anthropic_body(request, {.model = "claude-x", .max_tokens = 512}, false);
  CHECK(body["model"] == "claude-x");
  CHECK(body["max_tokens"] == 512);
  CHECK(body["system"] == "You are terse.");
  CHECK(body["tools"][0]["input_schema"]["properties"]["city"]["type"] == "string");
  const auto& m = body["messages"];
  REQUIRE(m.size() == 4);
  CHECK(m[1]["content"][0] == Schema({{"type", "text"}, {"text", "Checking."}}));
  CHECK(m[1]["content"][1]["type"] == "tool_use");
  CHECK(m[1]["content"][1]["input"] == Schema({{"city", "Paris"}}));
  CHECK(m[1]["content"][2]["input"] == Schema::object());
  REQUIRE(m[2]["content"].size() == 2);  // both results in one user message
  CHECK(m[2]["content"][0]["type"] == "tool_result");
  CHECK(m[2]["content"][0]["tool_use_id"] == "c1");
  CHECK_FALSE(m[2]["content"][0].contains("is_error"));
  CHECK(m[2]["content"][1]["is_error"] == true);
  CHECK(m[3] == Schema({{"role", "user"}, {"content", "Thanks, and tomorrow?"}}));
  CHECK_FALSE(body.contains("stream"));
}

TEST_CASE("Anthropic stream: blocks by index, input_json_delta, cumulative usage, no-arg tools", "[adapter][anthropic]") {
  const std::string sse =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: ping\ndata: {\"type\": \"ping\"}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me check.\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"ci\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"ty\\\": \\\"Paris\\\"}\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"now\",\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}";  // no final blank line
  auto r = decode_stream<AnthropicStreamAccumulator>(sse);
  CHECK(r.message.text() == "Let me check.");
  REQUIRE(r.message.tool_calls.size() == 2);
  CHECK(Json::parse(r.message.tool_calls[0].arguments_text) == Json({{"city", "Paris"}}));
  CHECK(r.message.tool_calls[1].arguments_text.empty());  // no-arg tool: {}
  CHECK(r.message.tool_calls[1].arguments == Json::object());
  CHECK(r.finish_reason == "tool_calls");
  CHECK(r.usage.input_tokens == 20);
  CHECK(r.usage.output_tokens == 42);  // cumulative, not 43

  SECTION("max_tokens mid tool input leaves unparseable text, never a runnable call") {
    auto cut = decode_stream<AnthropicStreamAccumulator>(
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Par\"}}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n");
    REQUIRE(cut.message.tool_calls.size() == 1);
    CHECK_FALSE(parses_as_object(cut.message.tool_calls[0].arguments_text));
    CHECK(cut.finish_reason == "length");
  }
  SECTION("event: error is a typed error") {
    try {
      decode_stream<AnthropicStreamAccumulator>(
          "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n");
      FAIL("expected ProviderError");
    } catch (const ProviderError& e) {
      CHECK(e.code() == ErrorCode::overloaded);
    }
  }
}

TEST_CASE("Anthropic response: text and tool_use blocks, error bodies", "[adapter][anthropic]") {
  auto r = anthropic_response(Json::parse(R"({"content":[{"type":"text","text":"Sure."},
      {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],
      "stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":3}})"));
  CHECK(r.message.text() == "Sure.");
  REQUIRE(r.message.tool_calls.size() == 1);
  CHECK(r.message.tool_calls[0].arguments == Json({{"city", "Paris"}}));
  CHECK(r.usage == agentkit::Usage{10, 5, 3});
  CHECK(r.finish_reason == "tool_calls");
  CHECK_THROWS_AS(anthropic_response(Json::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":"x"}})")),
                  ProviderError);
}

// ------------------------------------------------------------ conformance over recorded traffic

namespace {

// Feeds `body` to an accumulator in the given chunks; a thrown error is part
// of the result (its message), so error streams compare too.
template <class Acc>
std::string decode_in_chunks(const std::string& body, const std::vector<std::size_t>& cuts) {
  Acc acc;
  SseDecoder decoder;
  const SseDecoder::Sink sink = [&](const SseEvent& e) { acc.on_event(e); };
  try {
    std::size_t at = 0;
    for (std::size_t cut : cuts) {
      decoder.feed(std::string_view(body).substr(at, cut - at), sink);
      at = cut;
    }
    decoder.feed(std::string_view(body).substr(at), sink);
    decoder.finish(sink);
    auto r = acc.finish();
    return agentkit::to_json(r.message).dump() + "|" + r.finish_reason + "|" + agentkit::to_json(r.usage).dump() + "|" +
           r.id + "|" + r.model;
  } catch (const ProviderError& e) {
    return std::string("error: ") + e.what();
  }
}

template <class Acc>
void check_chunking_invariance(const fs::path& file, std::mt19937& rng) {
  const std::string body = read_file(file);
  const std::string whole = decode_in_chunks<Acc>(body, {});
  // Every byte boundary is covered at the SSE level (sse_test.cpp: the
  // events, which are all an accumulator sees, are identical); here 64
  // evenly spaced two-way splits and random chunkings run through the whole
  // adapter decode.
  for (std::size_t i = 1; i <= 64; ++i) {
    const std::size_t k = body.size() * i / 65;
    if (k == 0 || k >= body.size()) continue;
    const std::string split = decode_in_chunks<Acc>(body, {k});
    if (split != whole) {
      FAIL_CHECK(file.filename().string() << " decodes differently when split at byte " << k);
      return;
    }
  }
  for (int round = 0; round < 20; ++round) {
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0;;) {
      at += 1 + rng() % 64;
      if (at >= body.size()) break;
      cuts.push_back(at);
    }
    CHECK(decode_in_chunks<Acc>(body, cuts) == whole);
  }
}

}  // namespace

TEST_CASE("conformance: every recorded stream decodes the same in any chunking", "[adapter][conformance]") {
  auto dir = agentkit_test::wire_fixtures();
  if (!dir) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found; chunking invariance not checked");
    return;
  }
  std::mt19937 rng(20261130);
  int files = 0;
  for (const char* sub : {"openai-chat", "openai-compatible", "anthropic"}) {
    for (const auto& entry : fs::directory_iterator(*dir / sub)) {
      if (entry.path().extension() != ".sse") continue;
      CAPTURE(entry.path().filename().string());
      ++files;
      if (std::string(sub) == "anthropic") {
        check_chunking_invariance<AnthropicStreamAccumulator>(entry.path(), rng);
      } else {
        check_chunking_invariance<OpenAIStreamAccumulator>(entry.path(), rng);
      }
    }
  }
  std::cout << "chunking invariance: " << files << " recorded streams, 64 two-way splits and 20 random chunkings each\n";
  CHECK(files >= 15);
}

TEST_CASE("conformance: every recorded OpenAI chat / compatible fixture decodes", "[adapter][conformance]") {
  auto dir = agentkit_test::wire_fixtures();
  if (!dir) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found; adapter conformance not checked");
    return;
  }
  int files = 0, calls = 0;
  for (const char* sub : {"openai-chat", "openai-compatible"}) {
    for (const auto& entry : fs::directory_iterator(*dir / sub)) {
      const auto path = entry.path();
      const std::string name = path.filename().string();
      CAPTURE(name);
      const std::string text = read_file(path);
      if (path.extension() == ".sse") {
        ++files;
        if (name.find("error") != std::string::npos) {
          CHECK_THROWS_AS(decode_stream<OpenAIStreamAccumulator>(text), ProviderError);
          continue;
        }
        auto r = decode_stream<OpenAIStreamAccumulator>(text);
        CHECK((!r.message.text().empty() || !r.message.tool_calls.empty()));
        for (const auto& c : r.message.tool_calls) {
          ++calls;
          CHECK_FALSE(c.name.empty());
          CHECK_FALSE(c.id.empty());
          CHECK(parses_as_object(c.arguments_text));
        }
        // Every chunk carries the response's id and model.
        CHECK_FALSE(r.id.empty());
        CHECK(r.id == agentkit_test::first_recorded(text, "/id"));
        CHECK(r.model == agentkit_test::first_recorded(text, "/model"));
      } else if (path.extension() == ".json" && name.rfind("response_", 0) == 0) {
        ++files;
        const Json body = Json::parse(text);
        auto r = openai_chat_response(body);
        for (const auto& c : r.message.tool_calls) {
          ++calls;
          CHECK_FALSE(c.name.empty());
          CHECK(parses_as_object(c.arguments_text));
        }
        CHECK_FALSE(r.id.empty());
        CHECK(r.id == body.value("id", ""));
        CHECK(r.model == body.value("model", ""));
      } else if (path.extension() == ".json" && name.rfind("error_", 0) == 0 && name.find("headers") == std::string::npos) {
        ++files;
        CHECK_THROWS_AS(openai_chat_response(Json::parse(text)), ProviderError);
      }
    }
  }
  const auto strict = decode_stream<OpenAIStreamAccumulator>(read_file(*dir / "openai-chat" / "stream_tool_call_strict_with_usage_live.sse"));
  REQUIRE(strict.message.tool_calls.size() == 1);
  CHECK(Json::parse(strict.message.tool_calls[0].arguments_text) == Json({{"city", "San Francisco"}, {"state", "CA"}}));
  CHECK(strict.usage.input_tokens == 48);
  CHECK(strict.usage.output_tokens == 19);
  CHECK(decode_stream<OpenAIStreamAccumulator>(read_file(*dir / "openai-chat" / "stream_parallel_tool_calls_with_usage_live.sse"))
            .message.tool_calls.size() == 2);
  CHECK(strict.id == "chatcmpl-ABfwCgi41eStOcARjZq97ohCEGBPO");
  CHECK(strict.model == "gpt-4o-2024-08-06");
  const auto no_arg = openai_chat_response(Json::parse(read_file(*dir / "openai-chat" / "response_no_arg_tool_call_live.json")));
  CHECK(no_arg.message.tool_calls.at(0).arguments_text == "{}");
  CHECK(no_arg.id == "chatcmpl-BSXk0dWkG4hfPt0lph4oFO35iT73I");
  CHECK(no_arg.model == "gpt-4o-2024-08-06");
  // A compatible server (Ollama /v1) says the same in its chunks.
  const auto compatible =
      decode_stream<OpenAIStreamAccumulator>(read_file(*dir / "openai-compatible" / "ollama_v1_stream_tool_call_RECONSTRUCTED.sse"));
  CHECK(compatible.id == "chatcmpl-273");
  CHECK(compatible.model == "gpt-oss:20b");
  std::cout << "OpenAI conformance: " << files << " fixture files, " << calls << " tool calls decoded\n";
  CHECK(files >= 15);
}

TEST_CASE("conformance: every recorded Anthropic fixture decodes", "[adapter][conformance]") {
  auto dir = agentkit_test::wire_fixtures();
  if (!dir) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found; adapter conformance not checked");
    return;
  }
  int files = 0, calls = 0;
  for (const auto& entry : fs::directory_iterator(*dir / "anthropic")) {
    const auto path = entry.path();
    const std::string name = path.filename().string();
    CAPTURE(name);
    const std::string text = read_file(path);
    if (path.extension() == ".sse") {
      ++files;
      if (name.find("error") != std::string::npos || name.find("overloaded") != std::string::npos) {
        CHECK_THROWS_AS(decode_stream<AnthropicStreamAccumulator>(text), ProviderError);
        continue;
      }
      auto r = decode_stream<AnthropicStreamAccumulator>(text);
      CHECK((!r.message.text().empty() || !r.message.tool_calls.empty()));
      // message_start names the message and its model.
      CHECK_FALSE(r.id.empty());
      CHECK(r.id == agentkit_test::first_recorded(text, "/message/id"));
      CHECK(r.model == agentkit_test::first_recorded(text, "/message/model"));
      for (const auto& c : r.message.tool_calls) {
        ++calls;
        CHECK_FALSE(c.name.empty());
        const bool truncated = name.find("max_tokens") != std::string::npos;
        if (truncated) {
          CHECK_FALSE(parses_as_object(c.arguments_text));
          CHECK(r.finish_reason == "length");
        } else {
          CHECK((c.arguments_text.empty() || parses_as_object(c.arguments_text)));
        }
      }
    } else if (path.extension() == ".json" && name.rfind("response_", 0) == 0) {
      ++files;
      const Json body = Json::parse(text);
      auto r = anthropic_response(body);
      for (const auto& c : r.message.tool_calls) {
        ++calls;
        CHECK(c.arguments.is_object());
      }
      CHECK_FALSE(r.id.empty());
      CHECK(r.id == body.value("id", ""));
      CHECK(r.model == body.value("model", ""));
    } else if (path.extension() == ".json" && name.rfind("error_", 0) == 0 && name.find(".meta.") == std::string::npos) {
      ++files;
      CHECK_THROWS_AS(anthropic_response(Json::parse(text)), ProviderError);
    }
  }
  const auto no_arg = decode_stream<AnthropicStreamAccumulator>(read_file(*dir / "anthropic" / "stream_no_arg_tool_REFRAMED.sse"));
  REQUIRE(no_arg.message.tool_calls.size() == 1);
  CHECK(no_arg.message.tool_calls[0].arguments_text.empty());
  CHECK(no_arg.id == "msg_01GE2RKp1VYsPzdFs3sS9z5S");
  CHECK(no_arg.model == "claude-sonnet-4-5-20250929");
  const auto tool_use = anthropic_response(Json::parse(read_file(*dir / "anthropic" / "response_tool_use_live.json")));
  CHECK(tool_use.id == "msg_018yE33RyaCdsMnr8kGYUQ5Y");
  CHECK(tool_use.model == "claude-haiku-4-5-20251001");
  std::cout << "Anthropic conformance: " << files << " fixture files, " << calls << " tool calls decoded\n";
  CHECK(files >= 12);
}
