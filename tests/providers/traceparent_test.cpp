// Trace context on the wire, for every provider adapter over loopback: a
// traced call (ModelRequest::traceparent set) carries `traceparent` exactly
// once and exactly as given, blocking or not, streaming or not; an untraced
// call carries none. Each adapter names its provider as the OpenTelemetry
// GenAI conventions do (gen_ai.provider.name), and the reply's id and model
// come back on the response.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/gemini.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/ollama.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/openai_responses.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>
#include <agentkit/trace.h>

using agentkit::Message;
using agentkit::Model;
using agentkit::ModelRequest;
using agentkit::ModelResponse;
using agentkit::testing::WireServer;
using namespace agentkit::providers;

namespace {

constexpr const char* kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

WireServer::Response reply(std::string content_type, std::string body) {
  WireServer::Response r;
  r.headers = {{"content-type", std::move(content_type)}};
  r.chunks = WireServer::split(body, 40);
  return r;
}

// The `traceparent` values a request carried, in order (names are lower-cased).
std::vector<std::string> traceparents(const WireServer::Request& request) {
  std::vector<std::string> out;
  for (const auto& [name, value] : request.headers) {
    if (name == "traceparent") out.push_back(value);
  }
  return out;
}

std::shared_ptr<Transport> transport() { return std::make_shared<Transport>(TransportOptions{.max_retries = 0}); }

// One adapter: how to build it against a server, a whole and a streamed
// reply, and the id and model those replies name.
struct Adapter {
  std::string name;
  std::string provider;  // its gen_ai.provider.name
  std::function<std::shared_ptr<Model>(const std::string& base_url, bool stream)> make;
  WireServer::Response whole;
  WireServer::Response streamed;
  std::string id;  // empty: the API names no reply
  std::string model;
};

std::vector<Adapter> adapters() {
  std::vector<Adapter> out;
  out.push_back({"OpenAI chat", "openai",
                 [](const std::string& base, bool stream) -> std::shared_ptr<Model> {
                   return std::make_shared<OpenAIChatModel>(
                       transport(), OpenAIOptions{.base_url = base + "/v1", .api_key = "sk-test", .model = "gpt-4o-mini", .stream = stream});
                 },
                 reply("application/json",
                       R"({"id":"chatcmpl-trace1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18",)"
                       R"("choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]})"),
                 reply("text/event-stream",
                       "data: {\"id\":\"chatcmpl-trace1\",\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,"
                       "\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"
                       "data: {\"id\":\"chatcmpl-trace1\",\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,"
                       "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                       "data: [DONE]\n\n"),
                 "chatcmpl-trace1", "gpt-4o-mini-2024-07-18"});
  const std::string response =
      R"({"id":"resp_trace2","object":"response","model":"gpt-5-2025-08-07","status":"completed",)"
      R"("output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}]})";
  out.push_back({"OpenAI Responses", "openai",
                 [](const std::string& base, bool stream) -> std::shared_ptr<Model> {
                   return std::make_shared<OpenAIResponsesModel>(
                       transport(),
                       OpenAIResponsesOptions{.base_url = base + "/v1", .api_key = "sk-test", .model = "gpt-5", .stream = stream});
                 },
                 reply("application/json", response),
                 reply("text/event-stream", "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" +
                                                response + "}\n\n"),
                 "resp_trace2", "gpt-5-2025-08-07"});
  out.push_back({"Anthropic", "anthropic",
                 [](const std::string& base, bool stream) -> std::shared_ptr<Model> {
                   return std::make_shared<AnthropicModel>(
                       transport(), AnthropicOptions{.base_url = base, .api_key = "sk-ant-test", .model = "claude-test", .stream = stream});
                 },
                 reply("application/json",
                       R"({"id":"msg_trace3","type":"message","role":"assistant","model":"claude-test-20250101",)"
                       R"("content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}})"),
                 reply("text/event-stream",
                       "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_trace3\",\"type\":"
                       "\"message\",\"role\":\"assistant\",\"model\":\"claude-test-20250101\",\"content\":[],\"usage\":{"
                       "\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
                       "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{"
                       "\"type\":\"text\",\"text\":\"\"}}\n\n"
                       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                       "\"text_delta\",\"text\":\"hi\"}}\n\n"
                       "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                       "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                       "\"usage\":{\"output_tokens\":1}}\n\n"
                       "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
                 "msg_trace3", "claude-test-20250101"});
  const std::string chunk =
      R"({"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],)"
      R"("responseId":"trace4Gemini","modelVersion":"gemini-2.5-flash-001"})";
  out.push_back({"Gemini", "gcp.gemini",
                 [](const std::string& base, bool stream) -> std::shared_ptr<Model> {
                   return std::make_shared<GeminiModel>(
                       transport(), GeminiOptions{.base_url = base + "/v1beta", .api_key = "AIza-test", .model = "gemini-2.5-flash", .stream = stream});
                 },
                 reply("application/json", chunk), reply("text/event-stream", "data: " + chunk + "\r\n\r\n"),
                 "trace4Gemini", "gemini-2.5-flash-001"});
  const std::string done = R"({"model":"llama3.2","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},)"
                           R"("done_reason":"stop","done":true,"prompt_eval_count":3,"eval_count":1})";
  out.push_back({"Ollama", "ollama",
                 [](const std::string& base, bool stream) -> std::shared_ptr<Model> {
                   return std::make_shared<OllamaChatModel>(transport(),
                                                            OllamaOptions{.base_url = base, .model = "llama3.2", .stream = stream});
                 },
                 reply("application/json", R"({"model":"llama3.2","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant",)"
                                           R"("content":"hi"},"done_reason":"stop","done":true,"prompt_eval_count":3,"eval_count":1})"),
                 reply("application/x-ndjson",
                       R"({"model":"llama3.2","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},"done":false})"
                       "\n" + done + "\n"),
                 "", "llama3.2"});
  return out;
}

// Keeps every span it is given.
class Spans final : public agentkit::trace::SpanSink {
 public:
  void on_end(agentkit::trace::Span span) override {
    std::lock_guard lock(mutex_);
    spans_.push_back(std::move(span));
  }
  std::vector<agentkit::trace::Span> all() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<agentkit::trace::Span> spans_;
};

// The call as the run loop makes it (begin(), polled to the end), or blocking.
ModelResponse call(Model& model, const ModelRequest& request, agentkit::RunContext& ctx, bool blocking) {
  if (blocking) return model.complete(request, ctx);
  auto pending = model.begin(request, ctx);
  while (!pending->poll()) pending->wait(std::chrono::milliseconds(10));
  return pending->take();
}

}  // namespace

TEST_CASE("every adapter sends a traced call's traceparent header exactly, and an untraced call none",
          "[trace][loopback]") {
  for (const auto& adapter : adapters()) {
    CAPTURE(adapter.name);
    WireServer server;
    auto ctx = agentkit::testing::make_test_ctx();
    const std::vector<Message> history{Message::user("hi")};
    ModelRequest request{"test-model", "Be brief.", history, {}};
    int sent = 0;
    for (const bool traced : {true, false}) {
      request.traceparent = traced ? kTraceparent : "";
      for (const bool stream : {false, true}) {
        for (const bool blocking : {true, false}) {
          CAPTURE(traced, stream, blocking);
          auto model = adapter.make(server.base_url(), stream);
          server.enqueue(stream ? adapter.streamed : adapter.whole);
          const ModelResponse r = call(*model, request, ctx, blocking);
          CHECK(r.message.text() == "hi");
          CHECK(r.id == adapter.id);
          CHECK(r.model == adapter.model);
          const auto requests = server.requests();
          REQUIRE(requests.size() == static_cast<std::size_t>(++sent));
          const auto values = traceparents(requests.back());
          if (traced) {
            CHECK(values == std::vector<std::string>{kTraceparent});
          } else {
            CHECK(values.empty());
          }
        }
      }
    }
  }
}

TEST_CASE("a traced call's traceparent replaces one the host configured, a malformed one is never sent", "[trace][loopback]") {
  WireServer server;
  const std::string host_value = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  OpenAIChatModel model(transport(), {.base_url = server.base_url() + "/v1",
                                      .model = "gpt-4o-mini",
                                      .stream = false,
                                      .extra_headers = {{"TraceParent", host_value}}});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<Message> history{Message::user("hi")};
  ModelRequest request{"test-model", "", history, {}};
  const auto whole = adapters().front().whole;

  server.enqueue(whole);
  request.traceparent = kTraceparent;
  model.complete(request, ctx);
  server.enqueue(whole);
  request.traceparent = "";
  model.complete(request, ctx);
  server.enqueue(whole);
  request.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx-injected: 1";
  model.complete(request, ctx);

  const auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  CHECK(traceparents(requests[0]) == std::vector<std::string>{kTraceparent});  // the run's span is the parent
  CHECK(traceparents(requests[1]) == std::vector<std::string>{host_value});    // untraced: the host's, untouched
  CHECK(traceparents(requests[2]) == std::vector<std::string>{host_value});
  CHECK(requests[2].header("x-injected").empty());
}

TEST_CASE("each adapter names its provider as gen_ai.provider.name does", "[trace][models]") {
  for (const auto& adapter : adapters()) {
    CAPTURE(adapter.name);
    CHECK(adapter.make("http://127.0.0.1:9", false)->provider() == adapter.provider);
  }
  const ProviderSettings settings{.openai_api_key = "k", .anthropic_api_key = "k", .gemini_api_key = "k"};
  const std::pair<const char*, const char*> routes[] = {
      {"openai/gpt-4o", "openai"},
      {"openai/llama3@http://127.0.0.1:8080/v1", "openai"},  // a compatible server speaks OpenAI's API
      {"openai-responses/gpt-5", "openai"},
      {"anthropic/claude-sonnet-4-5", "anthropic"},
      {"gemini/gemini-2.5-flash", "gcp.gemini"},
      {"ollama/llama3.2", "ollama"},
  };
  for (const auto& [spec, provider] : routes) {
    CAPTURE(spec);
    CHECK(make_model(spec, settings, transport())->provider() == provider);
  }
}

TEST_CASE("a traced agent run sends its model call's span as the call's traceparent", "[trace][loopback][agent]") {
  WireServer server;
  server.enqueue(adapters().front().whole);
  agentkit::Agent agent("atlas", "openai/gpt-4o-mini@" + server.base_url() + "/v1", "Be brief.", agentkit::cognition::react({}));
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = model_resolver({.openai_api_key = "sk-test", .stream = false});
  auto spans = std::make_shared<Spans>();
  ctx.tracer = spans;
  const auto result = agent.run("hi", ctx);
  REQUIRE(result.stop_reason == agentkit::StopReason::answered);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  const auto values = traceparents(requests[0]);
  REQUIRE(values.size() == 1);
  const auto parent = agentkit::trace::parse_traceparent(values[0]);
  REQUIRE(parent);
  // The header names a span the run ended: the model call's, in the run's trace.
  bool found = false;
  for (const auto& span : spans->all()) {
    if (span.span_id != parent->span_id) continue;
    found = true;
    CHECK(span.trace_id == parent->trace_id);
    CHECK(span.kind == agentkit::trace::SpanKind::client);
  }
  CHECK(found);
}
