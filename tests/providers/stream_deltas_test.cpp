// Streamed deltas: text, tool-call arguments and reasoning as the adapters
// decode them, against the recorded wire fixtures (../shared/fixtures/wire,
// skipped when absent), our own thinking fixtures, hostile streams, and
// whole runs over loopback (a cut stream, a retried request, the Anthropic
// final-answer tool).
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/settings.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/paths.h"
#include "../helpers/wire_fixtures.h"

namespace fs = std::filesystem;
using agentkit::Json;
using agentkit::ModelResponse;
using agentkit::ReasoningDelta;
using agentkit::TextDelta;
using agentkit::ToolCallDelta;
using agentkit::testing::WireServer;
using namespace agentkit::providers;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


std::string own_fixture(const char* name) {
  return read_file(fs::path(AGENTKIT_SOURCE_DIR) / "tests" / "providers" / "fixtures" / name);
}

struct Decoded {
  ModelResponse response;
  std::vector<StreamDelta> deltas;

  template <class D>
  std::vector<D> all() const {
    std::vector<D> out;
    for (const auto& d : deltas) {
      if (const auto* p = std::get_if<D>(&d)) out.push_back(*p);
    }
    return out;
  }
  std::string text() const {
    std::string out;
    for (const auto& d : all<TextDelta>()) out += d.text;
    return out;
  }
  std::string reasoning() const {
    std::string out;
    for (const auto& d : all<ReasoningDelta>()) out += d.text;
    return out;
  }
  // The arguments fragments of each call index, joined.
  std::map<std::size_t, std::string> arguments() const {
    std::map<std::size_t, std::string> out;
    for (const auto& d : all<ToolCallDelta>()) out[d.index] += d.arguments;
    return out;
  }
  // The kinds in stream order, runs collapsed: "text,tool" for text then calls.
  std::string order() const {
    std::string out;
    std::string last;
    for (const auto& d : deltas) {
      const std::string kind = std::holds_alternative<TextDelta>(d) ? "text"
                               : std::holds_alternative<ToolCallDelta>(d) ? "tool"
                                                                         : "reasoning";
      if (kind == last) continue;
      if (!out.empty()) out += ",";
      out += kind;
      last = kind;
    }
    return out;
  }
};

// Decodes a whole SSE body through the accumulator, collecting its deltas.
template <class Acc, class... Extra>
Decoded decode(const std::string& body, Extra&&... extra) {
  Decoded out;
  Acc acc([&](StreamDelta d) { out.deltas.push_back(std::move(d)); }, std::forward<Extra>(extra)...);
  SseDecoder decoder;
  const SseDecoder::Sink sink = [&](const SseEvent& e) { acc.on_event(e); };
  decoder.feed(body, sink);
  decoder.finish(sink);
  out.response = acc.finish();
  return out;
}

std::string reasoning_text(const agentkit::Message& m) {
  std::string out;
  for (const auto& p : m.content) {
    if (const auto* r = std::get_if<agentkit::ReasoningPart>(&p)) out += r->text;
  }
  return out;
}

// What every stream promises: joined, its deltas are the reply.
void check_deltas_join_to_reply(const Decoded& d) {
  CHECK(d.text() == d.response.message.text());
  CHECK(d.reasoning() == reasoning_text(d.response.message));
  const auto& calls = d.response.message.tool_calls;
  const auto joined = d.arguments();
  CHECK(joined.size() == calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    CAPTURE(i);
    const auto it = joined.find(i);
    REQUIRE(it != joined.end());
    if (it->second.empty()) {
      // A no-argument call streams no fragment; the reply says {} (or "{"
      // for an Anthropic input cut before it began).
      CHECK((calls[i].arguments_text.empty() || calls[i].arguments_text == "{}" || calls[i].arguments_text == "{"));
    } else {
      CHECK(it->second == calls[i].arguments_text);
    }
    // The first fragment of each call carries its id and name.
    for (const auto& delta : d.all<ToolCallDelta>()) {
      if (delta.index != i) continue;
      CHECK(delta.id == calls[i].id);
      CHECK(delta.name == calls[i].name);
      break;
    }
  }
  for (const auto& delta : d.deltas) {
    if (const auto* t = std::get_if<TextDelta>(&delta)) CHECK_FALSE(t->text.empty());
    if (const auto* r = std::get_if<ReasoningDelta>(&delta)) CHECK_FALSE(r->text.empty());
  }
}

std::string openai_chunk(const Json& delta) {
  return "data: " + Json({{"choices", {{{"index", 0}, {"delta", delta}}}}}).dump() + "\n\n";
}

std::string openai_call_chunk(const Json& call) { return openai_chunk({{"tool_calls", {call}}}); }

std::string anthropic_event(const Json& data) {
  return "event: " + data["type"].get<std::string>() + "\ndata: " + data.dump() + "\n\n";
}

bool is_protocol_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ProviderError& e) {
    return e.code() == agentkit::ErrorCode::protocol;
  }
  return false;
}

// Records every event a run emits (the observer sees them on the host's thread).
struct Recorder : agentkit::Observer {
  std::mutex mutex;
  std::vector<agentkit::Event> events;
  void on_event(const agentkit::Event& e) override {
    std::lock_guard lock(mutex);
    events.push_back(e);
  }
  template <class E>
  std::vector<E> all() {
    std::lock_guard lock(mutex);
    std::vector<E> out;
    for (const auto& e : events) {
      if (const auto* p = std::get_if<E>(&e)) out.push_back(*p);
    }
    return out;
  }
};

WireServer::Response sse(std::vector<std::string> chunks) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = std::move(chunks);
  return r;
}

agentkit::ToolPtr counted_tool(std::atomic<int>& runs) {
  return agentkit::tool("record")
      .doc("Record one entry in the external ledger; side-effecting.")
      .side_effecting(true)
      .params("entry")
      .fn([&runs](const std::string&) { return ++runs; });
}

}  // namespace

TEST_CASE("recorded OpenAI streams: tool-call deltas join to the reply's calls", "[deltas][openai][conformance]") {
  auto dir = agentkit_test::wire_fixtures();
  if (!dir) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found; recorded tool-call deltas not checked");
    return;
  }
  int streams = 0;
  for (const char* sub : {"openai-chat", "openai-compatible"}) {
    for (const auto& entry : fs::directory_iterator(*dir / sub)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".sse" || name.find("error") != std::string::npos) continue;
      CAPTURE(name);
      ++streams;
      check_deltas_join_to_reply(decode<OpenAIStreamAccumulator>(read_file(entry.path())));
    }
  }
  CHECK(streams >= 6);

  const auto strict = decode<OpenAIStreamAccumulator>(read_file(*dir / "openai-chat" / "stream_tool_call_strict_with_usage_live.sse"));
  const auto calls = strict.all<ToolCallDelta>();
  REQUIRE(calls.size() > 2);
  // The first announces the call (id, name, no arguments); fragments follow in order.
  CHECK(calls.front().arguments.empty());
  CHECK_FALSE(calls.front().id.empty());
  CHECK(calls.front().name == strict.response.message.tool_calls.at(0).name);
  CHECK(Json::parse(strict.arguments().at(0)) == Json({{"city", "San Francisco"}, {"state", "CA"}}));

  const auto parallel = decode<OpenAIStreamAccumulator>(read_file(*dir / "openai-chat" / "stream_parallel_tool_calls_with_usage_live.sse"));
  REQUIRE(parallel.arguments().size() == 2);
  CHECK(parallel.all<ToolCallDelta>().front().index == 0);
  CHECK(parallel.all<ToolCallDelta>().back().index == 1);
  CHECK(parallel.order() == "tool");

  // A compatible server's whole call in one delta: the announcement and its arguments.
  const auto whole = decode<OpenAIStreamAccumulator>(read_file(*dir / "openai-compatible" / "ollama_v1_stream_tool_call_RECONSTRUCTED.sse"));
  REQUIRE(whole.all<ToolCallDelta>().size() == 1);
  CHECK(whole.all<ToolCallDelta>()[0].name == "final_result");
  CHECK(whole.all<ToolCallDelta>()[0].arguments == R"({"city":"Paris","country":"France"})");
  // This adapter does not read `reasoning` from compatible servers: no ReasoningDelta.
  CHECK(whole.all<ReasoningDelta>().empty());
}

TEST_CASE("recorded Anthropic streams: deltas join to the reply, text before tool calls", "[deltas][anthropic][conformance]") {
  auto dir = agentkit_test::wire_fixtures();
  if (!dir) {
    WARN("skipping: " << AGENTKIT_SHARED_DIR << "/fixtures/wire not found; recorded tool-call deltas not checked");
    return;
  }
  int streams = 0;
  for (const auto& entry : fs::directory_iterator(*dir / "anthropic")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".sse" || name.find("error") != std::string::npos ||
        name.find("overloaded") != std::string::npos) {
      continue;
    }
    CAPTURE(name);
    ++streams;
    check_deltas_join_to_reply(decode<AnthropicStreamAccumulator>(read_file(entry.path())));
  }
  CHECK(streams >= 6);

  const auto mixed = decode<AnthropicStreamAccumulator>(read_file(*dir / "anthropic" / "stream_text_then_tool_use_live.sse"));
  CHECK(mixed.order() == "text,tool");
  REQUIRE_FALSE(mixed.all<ToolCallDelta>().empty());
  // The call is the reply's first (index 0), though its content block is the second.
  CHECK(mixed.all<ToolCallDelta>().front().index == 0);
  CHECK(mixed.all<ToolCallDelta>().front().arguments.empty());
  CHECK(mixed.all<ToolCallDelta>().front().id == mixed.response.message.tool_calls.at(0).id);
}

TEST_CASE("Anthropic thinking streams as ReasoningDelta, never its signature", "[deltas][anthropic]") {
  const std::string body = own_fixture("anthropic_thinking_tool_use.sse");
  const auto d = decode<AnthropicStreamAccumulator>(body);
  check_deltas_join_to_reply(d);
  CHECK(d.order() == "reasoning,text,tool");
  const auto reasoning = d.all<ReasoningDelta>();
  REQUIRE(reasoning.size() == 2);
  CHECK(reasoning[0].text == "The user wants the weather in Paris. ");
  CHECK(reasoning[1].text == "I should call get_weather with city=Paris.");
  const auto& part = std::get<agentkit::ReasoningPart>(d.response.message.content.at(0));
  REQUIRE_FALSE(part.signature.empty());
  for (const auto& delta : d.deltas) {
    if (const auto* r = std::get_if<ReasoningDelta>(&delta)) CHECK(r->text.find(part.signature) == std::string::npos);
  }
  const auto calls = d.all<ToolCallDelta>();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].index == 0);
  CHECK(calls[0].name == "get_weather");
  CHECK(calls[1].arguments == R"({"city": "Paris"})");

  // Redacted thinking streams nothing (its data is encrypted).
  const auto redacted = decode<AnthropicStreamAccumulator>(own_fixture("anthropic_after_tool_result.sse"));
  check_deltas_join_to_reply(redacted);
  for (const auto& p : redacted.response.message.content) {
    const auto* r = std::get_if<agentkit::ReasoningPart>(&p);
    if (!r || r->redacted.empty()) continue;
    for (const auto& delta : redacted.all<ReasoningDelta>()) CHECK(delta.text.find(r->redacted) == std::string::npos);
  }
}

TEST_CASE("the Anthropic final-answer tool streams no ToolCallDelta when hidden", "[deltas][anthropic][output]") {
  const std::string body = own_fixture("anthropic_thinking_final_answer.sse");
  const auto hidden = decode<AnthropicStreamAccumulator>(body, std::string(kFinalAnswerTool));
  CHECK(hidden.all<ToolCallDelta>().empty());
  CHECK(hidden.reasoning() == "The user wants a city and its temperature. Paris, 18.");
  CHECK(hidden.order() == "reasoning");
  // Not hidden (no declared output; an agent tool of that name): a call like any other.
  const auto shown = decode<AnthropicStreamAccumulator>(body);
  REQUIRE(shown.arguments().size() == 1);
  CHECK(shown.all<ToolCallDelta>().front().name == kFinalAnswerTool);
  CHECK(Json::parse(shown.arguments().at(0)) == Json({{"city", "Paris"}, {"temp_c", 18}}));
  // Hidden calls are not counted: a real call after it is index 0.
  const std::string with_call =
      body.substr(0, body.find("event: message_delta")) +
      anthropic_event({{"type", "content_block_start"}, {"index", 2},
                       {"content_block", {{"type", "tool_use"}, {"id", "toolu_2"}, {"name", "get_weather"}, {"input", Json::object()}}}}) +
      anthropic_event({{"type", "content_block_stop"}, {"index", 2}}) +
      body.substr(body.find("event: message_delta"));
  const auto beside = decode<AnthropicStreamAccumulator>(with_call, std::string(kFinalAnswerTool));
  REQUIRE(beside.all<ToolCallDelta>().size() == 1);
  CHECK(beside.all<ToolCallDelta>()[0].index == 0);
  CHECK(beside.all<ToolCallDelta>()[0].name == "get_weather");
}

TEST_CASE("OpenAI: text and tool calls stream in the order the stream has them", "[deltas][openai]") {
  const std::string body =
      openai_chunk({{"role", "assistant"}, {"content", "Checking "}}) + openai_chunk({{"content", "both."}}) +
      openai_call_chunk({{"index", 0}, {"id", "c1"}, {"type", "function"}, {"function", {{"name", "a"}, {"arguments", ""}}}}) +
      openai_call_chunk({{"index", 0}, {"function", {{"arguments", "{\"x\":"}}}}) +
      openai_call_chunk({{"index", 1}, {"id", "c2"}, {"function", {{"name", "b"}, {"arguments", "{}"}}}}) +
      openai_call_chunk({{"index", 0}, {"function", {{"arguments", "1}"}}}}) + "data: [DONE]\n\n";
  const auto d = decode<OpenAIStreamAccumulator>(body);
  check_deltas_join_to_reply(d);
  CHECK(d.order() == "text,tool");
  const auto calls = d.all<ToolCallDelta>();
  REQUIRE(calls.size() == 4);
  CHECK(calls[1].index == 0);
  CHECK(calls[1].id == "c1");  // id and name ride on every fragment once known
  CHECK(calls[2].index == 1);
  CHECK(calls[2].arguments == "{}");  // announced with its whole arguments
  CHECK(calls[3].index == 0);
  CHECK(calls[3].arguments == "1}");
}

TEST_CASE("hostile tool-call deltas are typed errors, never a crash or unbounded memory", "[deltas][hostile]") {
  const auto openai = [](const Json& call) {
    return [call] { decode<OpenAIStreamAccumulator>(openai_call_chunk(call) + "data: [DONE]\n\n"); };
  };
  CHECK(is_protocol_error(openai({{"index", 1000000000}, {"function", {{"arguments", "{"}}}})));
  CHECK(is_protocol_error(openai({{"index", 1e9}, {"function", {{"arguments", "{"}}}})));
  CHECK(is_protocol_error(openai({{"index", -1}, {"function", {{"arguments", "{"}}}})));
  CHECK(is_protocol_error(openai({{"index", 0.5}, {"function", {{"arguments", "{"}}}})));
  CHECK(is_protocol_error(openai({{"index", 0}, {"function", {{"arguments", 42}}}})));
  CHECK(is_protocol_error(openai({{"index", 0}, {"function", {{"arguments", {{"x", 1}}}}}})));
  CHECK(is_protocol_error(openai({{"index", 0}, {"function", {{"arguments", Json::array()}}}})));
  CHECK_NOTHROW(decode<OpenAIStreamAccumulator>(openai_call_chunk({{"index", 0}, {"id", "c"}, {"function", {{"name", "n"}, {"arguments", nullptr}}}}) +
                                                "data: [DONE]\n\n"));
  CHECK(is_protocol_error([] {
    decode<AnthropicStreamAccumulator>(
        anthropic_event({{"type", "content_block_start"}, {"index", 1000000000},
                         {"content_block", {{"type", "tool_use"}, {"id", "t"}, {"name", "n"}}}}));
  }));
  CHECK(is_protocol_error([] {
    decode<AnthropicStreamAccumulator>(anthropic_event(
        {{"type", "content_block_delta"}, {"index", -1}, {"delta", {{"type", "input_json_delta"}, {"partial_json", "{"}}}}));
  }));

  SECTION("a hundred thousand one-byte fragments: each a delta, joined the arguments") {
    std::string body = openai_call_chunk({{"index", 0}, {"id", "c"}, {"function", {{"name", "n"}, {"arguments", ""}}}});
    std::string arguments = "{\"k\":\"" + std::string(100000 - 8, 'a') + "\"}";
    for (char c : arguments) body += openai_call_chunk({{"index", 0}, {"function", {{"arguments", std::string(1, c)}}}});
    body += "data: [DONE]\n\n";
    const auto d = decode<OpenAIStreamAccumulator>(body);
    CHECK(d.all<ToolCallDelta>().size() == arguments.size() + 1);
    CHECK(d.arguments().at(0) == arguments);
    CHECK(d.response.message.tool_calls.at(0).arguments_text == arguments);
  }
  SECTION("fragments past kMaxStreamedReplyBytes end the stream with a typed error") {
    const std::string piece(1u << 19, 'a');  // under JsonLimits' 1 MiB string cap
    for (const bool anthropic : {false, true}) {
      CAPTURE(anthropic);
      std::size_t deltas = 0;
      std::unique_ptr<StreamAccumulator> acc;
      const DeltaSink sink = [&](StreamDelta) { ++deltas; };
      if (anthropic) {
        acc = std::make_unique<AnthropicStreamAccumulator>(sink);
      } else {
        acc = std::make_unique<OpenAIStreamAccumulator>(sink);
      }
      ReplyReader reader(anthropic ? anthropic_reply() : openai_chat_reply(), "http://127.0.0.1/v1", std::move(acc));
      HttpResponse head;
      head.status = 200;
      head.headers = {{"content-type", "text/event-stream"}};
      reader.on_headers(head);
      const std::string event =
          anthropic ? anthropic_event({{"type", "content_block_delta"}, {"index", 0},
                                       {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}})
                    : openai_call_chunk({{"index", 0}, {"function", {{"arguments", piece}}}});
      // The call is announced first (fragments for no call are refused on their own).
      reader.feed(anthropic ? anthropic_event({{"type", "content_block_start"}, {"index", 0},
                                               {"content_block", {{"type", "tool_use"}, {"id", "t"}, {"name", "n"}}}})
                            : openai_call_chunk({{"index", 0}, {"id", "t"}, {"function", {{"name", "n"}}}}));
      bool refused = false;
      for (std::size_t i = 0; i < 2 * (kMaxStreamedReplyBytes / piece.size()) && !refused; ++i) {
        try {
          reader.feed(event);
        } catch (const ProviderError& e) {
          CHECK(e.code() == agentkit::ErrorCode::protocol);
          CHECK_THAT(e.what(), Catch::Contains("fragments are over"));
          refused = true;
        }
      }
      CHECK(refused);
      CHECK(deltas <= kMaxStreamedReplyBytes / piece.size() + 1);
    }
  }
}

TEST_CASE("a stream cut after tool-call deltas fails the call as truncated and runs no tool", "[deltas][loopback][faults]") {
  std::atomic<int> runs{0};
  const bool anthropic = GENERATE(false, true);
  CAPTURE(anthropic);
  WireServer server;
  WireServer::Response cut;
  if (anthropic) {
    cut = sse({anthropic_event({{"type", "message_start"}, {"message", {{"usage", {{"input_tokens", 20}, {"output_tokens", 1}}}}}}),
               anthropic_event({{"type", "content_block_start"}, {"index", 0},
                                {"content_block", {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "record"}, {"input", Json::object()}}}}),
               anthropic_event({{"type", "content_block_delta"}, {"index", 0},
                                {"delta", {{"type", "input_json_delta"}, {"partial_json", "{\"entry\": \"x\"}"}}}}),
               anthropic_event({{"type", "content_block_stop"}, {"index", 0}}),
               anthropic_event({{"type", "message_delta"}, {"delta", {{"stop_reason", "tool_use"}}}, {"usage", {{"output_tokens", 9}}}})});
  } else {
    cut = sse({openai_call_chunk({{"index", 0}, {"id", "call_1"}, {"type", "function"}, {"function", {{"name", "record"}, {"arguments", ""}}}}),
               openai_call_chunk({{"index", 0}, {"function", {{"arguments", "{\"entry\":"}}}}),
               openai_call_chunk({{"index", 0}, {"function", {{"arguments", "\"x\"}"}}}}),
               "data: " + Json({{"choices", {{{"index", 0}, {"delta", Json::object()}, {"finish_reason", "tool_calls"}}}}}).dump() + "\n\n"});
  }
  cut.unframed = true;  // the connection closes cleanly between events: no terminal event, no framing error
  server.enqueue(cut);
  agentkit::Agent agent("a", (anthropic ? "anthropic/m@" : "openai/m@") + server.base_url() + (anthropic ? "" : "/v1"), "p",
                        agentkit::cognition::react({counted_tool(runs)}));
  auto recorder = std::make_shared<Recorder>();
  auto ctx = agentkit::testing::make_test_ctx({.observer = recorder});
  ctx.models = model_resolver({.openai_api_key = "k", .anthropic_api_key = "k"});
  const auto result = agent.run("go", ctx);
  CHECK(result.stop_reason == agentkit::StopReason::failed);
  REQUIRE(result.failure.has_value());
  CHECK(result.failure->code == agentkit::ErrorCode::truncated);
  CHECK(runs == 0);
  CHECK(recorder->all<agentkit::ToolCallStarted>().empty());
  // The deltas went out before the cut: provisional, and now void.
  const auto deltas = recorder->all<ToolCallDelta>();
  REQUIRE(deltas.size() >= 2);
  CHECK(deltas.front().name == "record");
  std::string joined;
  for (const auto& d : deltas) joined += d.arguments;
  CHECK(Json::parse(joined) == Json({{"entry", "x"}}));
}

TEST_CASE("a request retried before its body streams emits its deltas once", "[deltas][loopback]") {
  std::atomic<int> runs{0};
  WireServer server;
  WireServer::Response busy;
  busy.status = 429;
  busy.headers = {{"retry-after-ms", "10"}, {"content-type", "application/json"}};
  busy.body = R"({"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}})";
  server.enqueue(busy);
  server.enqueue(sse({openai_chunk({{"role", "assistant"}, {"content", "Noting it. "}}),
                      openai_call_chunk({{"index", 0}, {"id", "call_1"}, {"type", "function"}, {"function", {{"name", "record"}, {"arguments", ""}}}}),
                      openai_call_chunk({{"index", 0}, {"function", {{"arguments", "{\"entry\":\"x\"}"}}}}),
                      "data: [DONE]\n\n"}));
  server.enqueue(sse({openai_chunk({{"content", "Done."}}), "data: [DONE]\n\n"}));
  agentkit::Agent agent("a", "openai/m@" + server.base_url() + "/v1", "p", agentkit::cognition::react({counted_tool(runs)}));
  auto recorder = std::make_shared<Recorder>();
  auto ctx = agentkit::testing::make_test_ctx({.observer = recorder});
  ctx.models = model_resolver({.openai_api_key = "k"});
  const auto result = agent.run("go", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(server.requests().size() == 3);  // the 429 was retried by the transport
  CHECK(runs == 1);
  CHECK(recorder->all<ToolCallDelta>().size() == 2);
  std::string text;
  for (const auto& d : recorder->all<TextDelta>()) text += d.text;
  CHECK(text == "Noting it. Done.");
  // In the run's event order: the call's deltas before its start.
  std::size_t last_delta = 0, started = 0;
  for (std::size_t i = 0; i < recorder->events.size(); ++i) {
    if (std::holds_alternative<ToolCallDelta>(recorder->events[i])) last_delta = i;
    if (std::holds_alternative<agentkit::ToolCallStarted>(recorder->events[i])) started = i;
  }
  CHECK(last_delta < started);
}

TEST_CASE("a declared output type over Anthropic streams reasoning but no final_answer call", "[deltas][loopback][output]") {
  WireServer server;
  server.enqueue(sse({own_fixture("anthropic_thinking_final_answer.sse")}));
  agentkit::AgentOptions options;
  options.output = agentkit::OutputSpec{
      Json{{"type", "object"},
           {"properties", {{"city", {{"type", "string"}}}, {"temp_c", {{"type", "integer"}}}}},
           {"required", {"city", "temp_c"}}},
      "Weather", [](const Json& v, agentkit::DecodeState&) { return v.is_object() && v.contains("city"); }};
  agentkit::Agent agent("a", "anthropic/m@" + server.base_url(), "p", agentkit::cognition::react({}), options);
  auto recorder = std::make_shared<Recorder>();
  auto ctx = agentkit::testing::make_test_ctx({.observer = recorder});
  ctx.models = model_resolver({.anthropic_api_key = "k"});
  const auto result = agent.run("Weather?", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  CHECK(result.structured == Json({{"city", "Paris"}, {"temp_c", 18}}));
  CHECK(Json::parse(server.requests().at(0).body)["tools"][0]["name"] == kFinalAnswerTool);
  CHECK(recorder->all<ToolCallDelta>().empty());
  CHECK(recorder->all<TextDelta>().empty());
  std::string reasoning;
  for (const auto& d : recorder->all<ReasoningDelta>()) reasoning += d.text;
  CHECK(reasoning == "The user wants a city and its temperature. Paris, 18.");
}
