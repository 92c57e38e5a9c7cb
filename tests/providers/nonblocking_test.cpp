// Non-blocking provider calls: AsyncRequest polls that never wait on the
// network, retries scheduled by deadline, and agent runs over the real
// adapters advanced from RunHandle::poll() on the test's own thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <agentkit/agent.h>
#include <agentkit/cognition/react.h>
#include <agentkit/executor.h>
#include <agentkit/function_tool.h>
#include <agentkit/providers/anthropic.h>
#include <agentkit/providers/models.h>
#include <agentkit/providers/openai.h>
#include <agentkit/providers/transport.h>
#include <agentkit/testing/fake_llm.h>
#include <agentkit/testing/test_context.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/timing.h"

using agentkit::CancellationToken;
using agentkit::providers::AsyncRequest;
using agentkit::providers::ErrorCode;
using agentkit::providers::HttpRequest;
using agentkit::providers::ProviderError;
using agentkit::providers::Transport;
using agentkit::providers::TransportOptions;
using agentkit::testing::WireServer;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The slowest a single poll() may take. Measured well under 1 ms; the bound
// leaves room for a loaded CI machine (and, scaled, for sanitizer builds)
// while staying far below the server's 300 ms delay, so a blocking poll()
// still fails it.
constexpr double kMaxPollMs = agentkit_test::latency_bound_ms(20);

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

HttpRequest post(const WireServer& server) {
  HttpRequest r;
  r.url = server.base_url() + "/v1/chat/completions";
  r.headers = {{"content-type", "application/json"}};
  r.body = R"({"model":"m"})";
  return r;
}

// Polls `request` to the end like a host's frame loop (1 ms between polls);
// returns the slowest single poll() in milliseconds.
double poll_to_end(AsyncRequest& request, std::chrono::milliseconds limit = 5s) {
  double slowest = 0;
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const auto t = Clock::now();
    const bool done = request.poll();
    slowest = std::max(slowest, ms_since(t));
    if (done) return slowest;
    REQUIRE(Clock::now() < deadline);
    std::this_thread::sleep_for(1ms);
  }
}

// The same for a run.
double poll_to_end(agentkit::RunHandle& handle, std::chrono::milliseconds limit = 10s) {
  double slowest = 0;
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const auto t = Clock::now();
    const bool done = handle.poll();
    slowest = std::max(slowest, ms_since(t));
    if (done) return slowest;
    REQUIRE(Clock::now() < deadline);
    std::this_thread::sleep_for(1ms);
  }
}

WireServer::Response sse(std::vector<std::string> events, std::chrono::milliseconds chunk_delay = 0ms) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  for (auto& e : events) r.chunks.push_back(std::move(e));
  r.chunk_delay = chunk_delay;
  return r;
}

agentkit::ToolPtr city_population() {
  return agentkit::tool("city_population")
      .doc("Look up the most recent census population for a named city.")
      .side_effecting(false)
      .idempotent()
      .params("city")
      .fn([](const std::string& city) { return city == "Lisbon" ? 545000 : 0; });
}

WireServer::Response openai_tool_turn(std::chrono::milliseconds chunk_delay) {
  return sse({R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"city_population","arguments":""}}]}}]})" "\n\n",
              R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]})" "\n\n",
              R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Lisbon\"}"}}]}}]})" "\n\n",
              R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})" "\n\n",
              R"(data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":10}})" "\n\ndata: [DONE]\n\n"},
             chunk_delay);
}

WireServer::Response openai_answer_turn(std::chrono::milliseconds chunk_delay) {
  return sse({R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})" "\n\n",
              R"(data: {"choices":[{"index":0,"delta":{"content":"Lisbon has about "}}]})" "\n\n",
              R"(data: {"choices":[{"index":0,"delta":{"content":"545,000 residents."},"finish_reason":"stop"}]})" "\n\n",
              R"(data: {"choices":[],"usage":{"prompt_tokens":70,"completion_tokens":8}})" "\n\ndata: [DONE]\n\n"},
             chunk_delay);
}

agentkit::Agent lisbon_agent(const std::string& model) {
  return agentkit::Agent("atlas", model, "You answer questions about cities.",
                         agentkit::cognition::react({city_population()}));
}

}  // namespace

TEST_CASE("AsyncRequest polls return at once while the server takes 300 ms", "[nonblocking]") {
  WireServer server;
  WireServer::Response slow;
  slow.body = R"({"ok":true})";
  slow.delay = 300ms;
  server.enqueue(slow);
  Transport transport;
  const auto started = Clock::now();
  AsyncRequest request = transport.start(post(server));
  const double slowest = poll_to_end(request);
  CHECK(ms_since(started) >= 250);
  CHECK(slowest < kMaxPollMs);
  const auto response = request.take();
  CHECK(response.status == 200);
  CHECK(response.body == R"({"ok":true})");
  INFO("slowest poll " << slowest << " ms");
}

TEST_CASE("AsyncRequest streams a trickled body through polls that never wait", "[nonblocking]") {
  WireServer server;
  server.enqueue(sse({"data: a\n\n", "data: b\n\n", "data: c\n\n"}, 100ms));
  Transport transport;
  std::string received;
  AsyncRequest request = transport.start_stream(post(server), [&](std::string_view bytes) {
    received += bytes;
    return true;
  });
  const double slowest = poll_to_end(request);
  CHECK(slowest < kMaxPollMs);
  CHECK(request.take().status == 200);
  CHECK(received == "data: a\n\ndata: b\n\ndata: c\n\n");
}

TEST_CASE("AsyncRequest schedules a retry-after-ms backoff instead of sleeping", "[nonblocking]") {
  WireServer server;
  WireServer::Response limited;
  limited.status = 429;
  limited.headers = {{"retry-after-ms", "200"}};
  limited.body = R"({"error":{"message":"slow down","type":"rate_limit_error"}})";
  server.enqueue(limited);
  WireServer::Response ok;
  ok.body = "second";
  server.enqueue(ok);
  Transport transport(TransportOptions{.max_retries = 2});
  const auto started = Clock::now();
  AsyncRequest request = transport.start(post(server));
  const double slowest = poll_to_end(request);
  CHECK(ms_since(started) >= 190);
  CHECK(slowest < kMaxPollMs);
  CHECK(request.take().body == "second");
  CHECK(server.requests().size() == 2);
}

TEST_CASE("AsyncRequest wait() blocks until progress, so a blocking driver does not spin", "[nonblocking]") {
  WireServer server;
  WireServer::Response slow;
  slow.body = "late";
  slow.delay = 100ms;
  server.enqueue(slow);
  Transport transport;
  AsyncRequest request = transport.start(post(server));
  int polls = 0;
  while (!request.poll()) {
    ++polls;
    request.wait(10ms);
  }
  CHECK(polls < 60);  // about one per 10 ms tick, not a busy loop
  CHECK(request.take().body == "late");
}

TEST_CASE("AsyncRequest cancel() ends the request at the next poll", "[nonblocking]") {
  WireServer server;
  server.enqueue(sse({"data: a\n\n", "data: b\n\n"}, 300ms));
  Transport transport;
  AsyncRequest request = transport.start_stream(post(server), [](std::string_view) { return true; });
  for (int i = 0; i < 20; ++i) {
    REQUIRE_FALSE(request.poll());
    std::this_thread::sleep_for(5ms);
  }
  request.cancel();
  const auto t = Clock::now();
  CHECK(request.poll());
  CHECK(ms_since(t) < kMaxPollMs);
  try {
    request.take();
    FAIL("take() did not throw");
  } catch (const ProviderError& e) {
    CHECK(e.code() == ErrorCode::cancelled);
  }
}

TEST_CASE("a cancelled token ends an AsyncRequest at the next poll", "[nonblocking]") {
  WireServer server;
  WireServer::Response slow;
  slow.delay = 300ms;
  server.enqueue(slow);
  Transport transport;
  CancellationToken token;
  AsyncRequest request = transport.start(post(server), &token);
  CHECK_FALSE(request.poll());
  token.cancel();
  CHECK(request.poll());
  CHECK_THROWS_AS(request.take(), ProviderError);
}

TEST_CASE("destroying an AsyncRequest mid-stream returns its slot, the transport keeps working", "[nonblocking]") {
  WireServer server;
  server.enqueue(sse({"data: a\n\n", "data: b\n\n", "data: c\n\n"}, 200ms));
  WireServer::Response ok;
  ok.body = "after";
  server.enqueue(ok);
  server.enqueue(ok);
  Transport transport;
  {
    bool got_first = false;
    AsyncRequest request = transport.start_stream(post(server), [&](std::string_view) {
      got_first = true;
      return true;
    });
    const auto deadline = Clock::now() + 2s;
    while (!got_first && Clock::now() < deadline) {
      request.poll();
      request.wait(10ms);
    }
    REQUIRE(got_first);
    const auto t = Clock::now();
    { AsyncRequest gone = std::move(request); }
    CHECK(ms_since(t) < kMaxPollMs);
  }
  CHECK(transport.send(post(server)).body == "after");
  CHECK(transport.send(post(server)).body == "after");
  // The aborted transfer's connection was closed; the next two share one.
  CHECK(server.connections_accepted() == 2);
}

TEST_CASE("an AsyncRequest may outlive its Transport", "[nonblocking]") {
  WireServer server;
  WireServer::Response ok;
  ok.body = "orphan";
  ok.delay = 50ms;
  server.enqueue(ok);
  auto transport = std::make_unique<Transport>();
  AsyncRequest request = transport->start(post(server));
  transport.reset();
  poll_to_end(request);
  CHECK(request.take().body == "orphan");
}

TEST_CASE("an OpenAI agent run advances from poll() alone while the server trickles", "[nonblocking][openai]") {
  WireServer server;
  server.enqueue(openai_tool_turn(50ms));
  server.enqueue(openai_answer_turn(50ms));
  auto agent = lisbon_agent("openai/gpt-4o-mini@" + server.base_url() + "/v1");
  auto ctx = agentkit::testing::make_test_ctx();  // no executor
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key"});
  const auto started = Clock::now();
  auto handle = agent.start("How big is Lisbon?", ctx);
  const double slowest = poll_to_end(handle);
  INFO("slowest RunHandle::poll() " << slowest << " ms");
  CHECK(slowest < kMaxPollMs);
  CHECK(ms_since(started) >= 350);  // 2 turns x 4 gaps x 50 ms (less scheduling slack): the stream did trickle
  REQUIRE(handle.result().stop_reason == agentkit::StopReason::answered);
  CHECK(handle.result().output == "Lisbon has about 545,000 residents.");
  CHECK(handle.result().usage.input_tokens == 120);
  CHECK(server.connections_accepted() == 1);  // keep-alive across the two turns
}

TEST_CASE("an Anthropic agent run advances from poll() alone, without streaming", "[nonblocking][anthropic]") {
  WireServer server;
  WireServer::Response tool_turn;
  tool_turn.headers = {{"content-type", "application/json"}};
  tool_turn.delay = 100ms;
  tool_turn.body = agentkit::Json({{"type", "message"}, {"role", "assistant"}, {"stop_reason", "tool_use"},
                                   {"content", {{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "city_population"},
                                                 {"input", {{"city", "Lisbon"}}}}}},
                                   {"usage", {{"input_tokens", 5}, {"output_tokens", 5}}}})
                       .dump();
  server.enqueue(tool_turn);
  WireServer::Response answer = tool_turn;
  answer.body = agentkit::Json({{"type", "message"}, {"role", "assistant"}, {"stop_reason", "end_turn"},
                                {"content", {{{"type", "text"}, {"text", "About 545,000."}}}},
                                {"usage", {{"input_tokens", 7}, {"output_tokens", 3}}}})
                    .dump();
  server.enqueue(answer);
  auto agent = lisbon_agent("anthropic/claude-test@" + server.base_url());
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.anthropic_api_key = "sk-ant-test", .stream = false});
  auto handle = agent.start("How big is Lisbon?", ctx);
  const double slowest = poll_to_end(handle);
  INFO("slowest RunHandle::poll() " << slowest << " ms");
  CHECK(slowest < kMaxPollMs);
  REQUIRE(handle.result().stop_reason == agentkit::StopReason::answered);
  CHECK(handle.result().output == "About 545,000.");
}

TEST_CASE("cancelling a run mid-stream finishes it at the next poll and the handle dies promptly",
          "[nonblocking][openai]") {
  WireServer server;
  server.enqueue(openai_tool_turn(300ms));
  auto agent = lisbon_agent("openai/gpt-4o-mini@" + server.base_url() + "/v1");
  auto ctx = agentkit::testing::make_test_ctx();
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key"});
  auto handle = std::make_unique<agentkit::RunHandle>(agent.start("How big is Lisbon?", ctx));
  const auto deadline = Clock::now() + 2s;
  while (server.requests().empty() && Clock::now() < deadline) {
    REQUIRE_FALSE(handle->poll());
    std::this_thread::sleep_for(2ms);
  }
  REQUIRE_FALSE(server.requests().empty());
  for (int i = 0; i < 10; ++i) {  // well inside the stream's first 300 ms gap
    REQUIRE_FALSE(handle->poll());
    std::this_thread::sleep_for(5ms);
  }
  handle->cancel();
  const auto t = Clock::now();
  CHECK(handle->poll());
  CHECK(ms_since(t) < agentkit_test::latency_bound_ms(50));
  CHECK(handle->result().stop_reason == agentkit::StopReason::cancelled);
  const auto d = Clock::now();
  handle.reset();
  CHECK(ms_since(d) < agentkit_test::latency_bound_ms(50));
}

TEST_CASE("complete() still works on both adapters, as begin() driven to the end", "[nonblocking]") {
  WireServer server;
  server.enqueue(openai_answer_turn(0ms));
  auto transport = std::make_shared<Transport>();
  agentkit::providers::OpenAIChatModel model(transport, {.base_url = server.base_url() + "/v1", .model = "m"});
  auto ctx = agentkit::testing::make_test_ctx();
  const std::vector<agentkit::Message> history{agentkit::Message::user("hi")};
  const agentkit::ModelRequest request{"m", "sys", history, {}};
  CHECK(model.complete(request, ctx).message.text() == "Lisbon has about 545,000 residents.");
  auto pending = model.begin(request, ctx);
  REQUIRE(pending);
  pending->cancel();
  CHECK(pending->poll());
  CHECK_THROWS_AS(pending->take(), ProviderError);
}

TEST_CASE("RunHandle::wait_ready sleeps until the reply arrives, so a host with nothing else to do does not spin",
          "[nonblocking][openai]") {
  WireServer server;
  server.enqueue(openai_tool_turn(40ms));
  server.enqueue(openai_answer_turn(40ms));
  auto agent = lisbon_agent("openai/gpt-4o-mini@" + server.base_url() + "/v1");
  auto ctx = agentkit::testing::make_test_ctx();  // no executor: the replies are read from poll()
  ctx.models = agentkit::providers::model_resolver({.openai_api_key = "sk-test-key"});
  const auto started = Clock::now();
  auto handle = agent.start("How big is Lisbon?", ctx);
  int polls = 1;
  for (; !handle.poll(); ++polls) {
    REQUIRE(ms_since(started) < 10'000);
    handle.wait_ready(1s);
  }
  const double elapsed = ms_since(started);
  INFO(polls << " polls in " << elapsed << " ms");
  CHECK(elapsed >= 250);  // 2 turns x 4 gaps x 40 ms: the stream did trickle
  // Woken by each chunk, not by the 1 s bound (which would take seconds),
  // and not spinning (thousands of polls in 300 ms).
  CHECK(elapsed < 2000);
  CHECK(polls < 100);
  REQUIRE(handle.result().stop_reason == agentkit::StopReason::answered);
  CHECK(handle.result().output == "Lisbon has about 545,000 residents.");
  const auto t = Clock::now();
  handle.wait_ready(5s);  // a run that is done: at once
  CHECK(ms_since(t) < agentkit_test::latency_bound_ms(50));
}

TEST_CASE("RunHandle::wait_ready returns within its bound while a tool runs, and when the tool finishes",
          "[nonblocking]") {
  std::atomic<bool> running{false};
  auto slow = agentkit::tool("slow_lookup")
                  .doc("Look a value up in a slow archive and return it.")
                  .side_effecting(false)
                  .params("key")
                  .fn([&running](const std::string& key) {
                    running = true;
                    std::this_thread::sleep_for(400ms);
                    return key + "!";
                  });
  auto llm = agentkit::testing::FakeLLM::script(
      {{.tool_calls = {{"call_1", "slow_lookup", {{"key", "k"}}, {}}}}, {.content = "found k!"}});
  const agentkit::Agent agent("archivist", "fake", "You look things up.", agentkit::cognition::react({slow}));
  auto ctx = agentkit::testing::make_test_ctx(
      {.llm = llm, .executor = std::make_shared<agentkit::ThreadPoolExecutor>(2)});
  auto handle = agent.start("Find k.", ctx);
  const auto deadline = Clock::now() + 5s;
  while (!running) {
    REQUIRE(Clock::now() < deadline);
    REQUIRE_FALSE(handle.poll());
    handle.wait_ready(5ms);
  }
  REQUIRE_FALSE(handle.poll());  // the tool's batch is on the executor
  auto t = Clock::now();
  handle.wait_ready(30ms);  // the bound, not the tool's 400 ms
  double waited = ms_since(t);
  CHECK(waited >= 25);
  CHECK(waited < 300);
  t = Clock::now();
  handle.wait_ready(5s);  // until the tool is done, not the bound
  waited = ms_since(t);
  CHECK(waited < 1000);
  while (!handle.poll()) {
    REQUIRE(Clock::now() < deadline);
    handle.wait_ready(50ms);
  }
  REQUIRE(handle.result().stop_reason == agentkit::StopReason::answered);
  CHECK(handle.result().output == "found k!");
}
