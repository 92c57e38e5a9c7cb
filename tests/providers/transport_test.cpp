// Transport: the one HTTP client every adapter uses. Every peer is a loopback
// WireServer started by the test; nothing here touches the network.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <agentkit/providers/transport.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/timing.h"

using agentkit::CancellationToken;
using agentkit::providers::ErrorCode;
using agentkit::providers::HttpRequest;
using agentkit::providers::HttpResponse;
using agentkit::providers::ProviderError;
using agentkit::providers::Transport;
using agentkit::providers::TransportOptions;
using agentkit::testing::WireServer;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

WireServer::Response reply(int status, std::string body = "{}", agentkit::providers::Headers headers = {}) {
  WireServer::Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

WireServer::Response streamed(std::vector<std::string> chunks, std::chrono::milliseconds chunk_delay = 20ms) {
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = std::move(chunks);
  r.chunk_delay = chunk_delay;
  return r;
}

// Fast retries, so tests that exhaust them stay quick, and a total timeout
// that turns a broken idle timeout or cancellation into a failure, not a hang.
TransportOptions quick() {
  TransportOptions o;
  o.base_backoff = 5ms;
  o.max_backoff = 20ms;
  o.total_timeout = 3s;
  return o;
}

HttpRequest post(const WireServer& server, std::string path = "/v1/chat/completions") {
  return {"POST", server.base_url() + path, {{"content-type", "application/json"}}, R"({"model":"m"})"};
}

// Runs `f`, which must throw ProviderError, and returns the error.
template <class F>
ProviderError thrown_by(F&& f) {
  try {
    f();
  } catch (const ProviderError& e) {
    return e;
  }
  FAIL("expected a ProviderError");
  throw std::logic_error("unreachable");
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// A port nothing listens on: bind one, note it, close it.
std::uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

const std::string kOpenAiKey = "sk-proj-SECRETopenai0123456789";
const std::string kAnthropicKey = "sk-ant-SECRETanthropic0123456789";

}  // namespace

// --- send(): responses and retries ---------------------------------------

TEST_CASE("send returns a 2xx response with its body and lower-cased headers", "[transport]") {
  WireServer server;
  server.enqueue(reply(200, R"({"id":"x"})", {{"Content-Type", "application/json"}, {"X-Request-Id", "req_1"}}));
  Transport transport;
  const HttpResponse response = transport.send(post(server));
  CHECK(response.status == 200);
  CHECK(response.body == R"({"id":"x"})");
  CHECK(response.header("x-request-id") == std::optional<std::string_view>("req_1"));
  CHECK(response.header("content-type") == std::optional<std::string_view>("application/json"));
  CHECK_FALSE(response.header("absent").has_value());
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].body == R"({"model":"m"})");
  CHECK(requests[0].header("expect").empty());  // no 100-continue round trip
}

TEST_CASE("send does not retry a 404 and reports it as invalid", "[transport]") {
  WireServer server;
  server.enqueue(reply(404, R"({"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error","code":"model_not_found"}})"));
  Transport transport(quick());
  const auto e = thrown_by([&] { transport.send(post(server)); });
  CHECK(e.code() == ErrorCode::invalid_argument);
  CHECK(e.http_status() == 404);
  CHECK_FALSE(e.retryable());
  CHECK(std::string(e.what()) == "The model `gpt-9` does not exist (HTTP 404)");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send waits for retry-after seconds before retrying a 429", "[transport]") {
  WireServer server;
  server.enqueue(reply(429, R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})",
                       {{"retry-after", "0.05"}}));
  server.enqueue(reply(200, "ok"));
  TransportOptions options;
  options.base_backoff = 5s;  // would time the test out if retry-after were ignored
  Transport transport(options);
  const auto start = Clock::now();
  CHECK(transport.send(post(server)).body == "ok");
  const double elapsed = ms_since(start);
  CHECK(elapsed >= 45);
  CHECK(elapsed < agentkit_test::latency_bound_ms(500));
  CHECK(server.requests().size() == 2);
}

TEST_CASE("send prefers retry-after-ms to retry-after", "[transport]") {
  WireServer server;
  server.enqueue(reply(429, "{}", {{"retry-after-ms", "30"}, {"retry-after", "30"}}));
  server.enqueue(reply(200, "ok"));
  TransportOptions options;
  options.base_backoff = 5s;
  Transport transport(options);
  const auto start = Clock::now();
  CHECK(transport.send(post(server)).body == "ok");
  const double elapsed = ms_since(start);
  CHECK(elapsed >= 25);
  CHECK(elapsed < agentkit_test::latency_bound_ms(500));
  CHECK(server.requests().size() == 2);
}

TEST_CASE("send obeys x-should-retry: false on a 503", "[transport]") {
  WireServer server;
  server.enqueue(reply(503, "upstream down", {{"x-should-retry", "false"}}));
  server.enqueue(reply(200));
  Transport transport(quick());
  const auto e = thrown_by([&] { transport.send(post(server)); });
  CHECK(e.code() == ErrorCode::unavailable);
  CHECK_FALSE(e.retryable());
  CHECK(std::string(e.what()) == "upstream down (HTTP 503)");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send obeys x-should-retry: true on a 400", "[transport]") {
  WireServer server;
  server.enqueue(reply(400, "{}", {{"x-should-retry", "true"}}));
  server.enqueue(reply(200, "ok"));
  Transport transport(quick());
  CHECK(transport.send(post(server)).body == "ok");
  CHECK(server.requests().size() == 2);
}

TEST_CASE("send retries 500 and 503 until a 200", "[transport]") {
  WireServer server;
  server.enqueue(reply(500));
  server.enqueue(reply(503));
  server.enqueue(reply(200, "third time"));
  Transport transport(quick());
  CHECK(transport.send(post(server)).body == "third time");
  CHECK(server.requests().size() == 3);
}

TEST_CASE("send gives up after max_retries and throws unavailable with the status", "[transport]") {
  WireServer server;
  TransportOptions options = quick();
  options.max_retries = 3;
  for (int i = 0; i < 10; ++i) server.enqueue(reply(500, R"({"error":{"message":"boom","type":"server_error"}})"));
  Transport transport(options);
  const auto e = thrown_by([&] { transport.send(post(server)); });
  CHECK(e.code() == ErrorCode::unavailable);
  CHECK(e.http_status() == 500);
  CHECK(e.retryable());
  CHECK(std::string(e.what()) == "boom (HTTP 500)");
  CHECK(server.requests().size() == 4);  // the first attempt and three retries
}

TEST_CASE("send retries an Anthropic 529 overloaded error", "[transport]") {
  const std::string overloaded = R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  SECTION("then succeeds") {
    WireServer server;
    server.enqueue(reply(529, overloaded));
    server.enqueue(reply(200, "ok"));
    Transport transport(quick());
    CHECK(transport.send(post(server)).body == "ok");
    CHECK(server.requests().size() == 2);
  }
  SECTION("or reports overloaded") {
    WireServer server;
    for (int i = 0; i < 3; ++i) server.enqueue(reply(529, overloaded));
    Transport transport(quick());
    const auto e = thrown_by([&] { transport.send(post(server)); });
    CHECK(e.code() == ErrorCode::overloaded);
    CHECK(e.retryable());
    CHECK(std::string(e.what()) == "Overloaded (HTTP 529)");
    CHECK(server.requests().size() == 3);
  }
}

TEST_CASE("send does not retry a 429 insufficient_quota", "[transport]") {
  WireServer server;
  server.enqueue(reply(429, R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}})"));
  server.enqueue(reply(200));
  Transport transport(quick());
  const auto e = thrown_by([&] { transport.send(post(server)); });
  CHECK(e.code() == ErrorCode::quota_exceeded);
  CHECK_FALSE(e.retryable());
  CHECK(e.http_status() == 429);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send reports an unreachable port as unavailable after retrying", "[transport]") {
  const std::uint16_t port = closed_port();
  TransportOptions options = quick();
  options.max_retries = 2;
  Transport transport(options);
  const auto e = thrown_by([&] { transport.send({"POST", "http://127.0.0.1:" + std::to_string(port) + "/v1/x", {}, "{}"}); });
  CHECK(e.code() == ErrorCode::unavailable);
  CHECK(e.http_status() == 0);
  CHECK(e.retryable());
  CHECK_THAT(e.what(), Catch::Contains("connection failed"));
}

TEST_CASE("send times out on a stalled server after idle_timeout, without retrying", "[transport]") {
  WireServer server;
  WireServer::Response stall;
  stall.fault = WireServer::Fault::stall;
  server.enqueue(stall);
  TransportOptions options = quick();
  options.idle_timeout = 200ms;
  Transport transport(options);
  const auto start = Clock::now();
  const auto e = thrown_by([&] { transport.send(post(server)); });
  const double elapsed = ms_since(start);
  CHECK(e.code() == ErrorCode::timeout);
  CHECK(elapsed >= 190);
  CHECK(elapsed < 1000);  // not scaled: total_timeout (3 s) must not be what ends it
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send is cancelled within 50 ms while waiting for a stalled server", "[transport]") {
  WireServer server;
  WireServer::Response stall;
  stall.fault = WireServer::Fault::stall;
  server.enqueue(stall);
  Transport transport(quick());
  CancellationToken cancel;
  std::atomic<Clock::time_point> cancelled_at{Clock::time_point{}};
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    cancelled_at = Clock::now();
    cancel.cancel();
  });
  const auto e = thrown_by([&] { transport.send(post(server), &cancel); });
  const double latency = ms_since(cancelled_at.load());
  canceller.join();
  CHECK(e.code() == ErrorCode::cancelled);
  CHECK(latency < agentkit_test::latency_bound_ms(50));
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send is cancelled within 50 ms while backing off", "[transport]") {
  WireServer server;
  server.enqueue(reply(503, "{}", {{"retry-after", "2"}}));
  Transport transport(quick());
  CancellationToken cancel;
  std::atomic<Clock::time_point> cancelled_at{Clock::time_point{}};
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    cancelled_at = Clock::now();
    cancel.cancel();
  });
  const auto e = thrown_by([&] { transport.send(post(server), &cancel); });
  const double latency = ms_since(cancelled_at.load());
  canceller.join();
  CHECK(e.code() == ErrorCode::cancelled);
  CHECK(latency < agentkit_test::latency_bound_ms(50));
  CHECK(server.requests().size() == 1);
}

TEST_CASE("send with an already cancelled token sends nothing", "[transport]") {
  WireServer server;
  Transport transport;
  CancellationToken cancel;
  cancel.cancel();
  CHECK(thrown_by([&] { transport.send(post(server), &cancel); }).code() == ErrorCode::cancelled);
  CHECK(server.requests().empty());
}

// --- stream() --------------------------------------------------------------

TEST_CASE("stream delivers chunks as they arrive", "[transport]") {
  WireServer server;
  const std::string body = "data: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: {\"n\":3}\n\ndata: [DONE]\n\n";
  server.enqueue(streamed(WireServer::split(body, 15), 20ms));
  Transport transport;
  std::string received;
  std::vector<double> arrivals;
  const auto start = Clock::now();
  transport.stream(post(server), [&](std::string_view bytes) {
    received += bytes;
    arrivals.push_back(ms_since(start));
    return true;
  });
  CHECK(received == body);
  REQUIRE(arrivals.size() > 1);
  CHECK(arrivals.back() - arrivals.front() >= 40);  // spread over the chunk delays, not one lump
}

TEST_CASE("stream stops when on_data returns false", "[transport]") {
  WireServer server;
  server.enqueue(streamed({"one", "two", "three"}, 20ms));
  Transport transport(quick());
  int calls = 0;
  transport.stream(post(server), [&](std::string_view) { return ++calls < 1; });
  CHECK(calls == 1);
  CHECK(server.requests().size() == 1);
}

TEST_CASE("stream throws after a reset mid-stream and does not retry", "[transport]") {
  WireServer server;
  WireServer::Response r = streamed({"data: first\n\n", "data: second\n\n"}, 30ms);
  r.fault = WireServer::Fault::reset_mid_stream;
  r.fault_after_chunks = 1;
  server.enqueue(r);
  server.enqueue(streamed({"data: retried\n\n"}));
  Transport transport(quick());
  std::string received;
  const auto e = thrown_by([&] {
    transport.stream(post(server), [&](std::string_view bytes) {
      received += bytes;
      return true;
    });
  });
  CHECK(e.code() == ErrorCode::unavailable);
  CHECK(received == "data: first\n\n");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("stream throws when the body is truncated", "[transport]") {
  WireServer server;
  WireServer::Response r = streamed({"data: first\n\n", "data: second\n\n", "data: third\n\n"}, 10ms);
  r.fault = WireServer::Fault::truncate;
  r.fault_after_chunks = 2;
  server.enqueue(r);
  Transport transport(quick());
  std::string received;
  const auto e = thrown_by([&] {
    transport.stream(post(server), [&](std::string_view bytes) {
      received += bytes;
      return true;
    });
  });
  CHECK(e.code() == ErrorCode::unavailable);
  CHECK(received == "data: first\n\ndata: second\n\n");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("stream retries a non-2xx before any byte and reads error bodies whole", "[transport]") {
  WireServer server;
  server.enqueue(reply(503, R"({"error":{"message":"busy"}})"));
  server.enqueue(reply(401, R"({"error":{"message":"Invalid API key","type":"invalid_request_error"}})"));
  Transport transport(quick());
  std::string received;
  const auto e = thrown_by([&] {
    transport.stream(post(server), [&](std::string_view bytes) {
      received += bytes;
      return true;
    });
  });
  CHECK(e.code() == ErrorCode::unauthenticated);
  CHECK(std::string(e.what()) == "Invalid API key (HTTP 401)");
  CHECK(received.empty());
  CHECK(server.requests().size() == 2);
}

TEST_CASE("stream times out when the stream goes idle", "[transport]") {
  WireServer server;
  server.enqueue(streamed({"data: first\n\n", "data: late\n\n"}, 2000ms));
  TransportOptions options = quick();
  options.idle_timeout = 200ms;
  Transport transport(options);
  std::string received;
  const auto start = Clock::now();
  const auto e = thrown_by([&] {
    transport.stream(post(server), [&](std::string_view bytes) {
      received += bytes;
      return true;
    });
  });
  CHECK(e.code() == ErrorCode::timeout);
  CHECK(ms_since(start) < 1000);
  CHECK(received == "data: first\n\n");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("stream is cancelled within 50 ms mid-stream", "[transport]") {
  WireServer server;
  // The next chunk is 300 ms away, so only the transport's own polling can notice the cancel.
  server.enqueue(streamed(std::vector<std::string>(10, "data: tick\n\n"), 300ms));
  Transport transport(quick());
  CancellationToken cancel;
  std::atomic<Clock::time_point> cancelled_at{Clock::time_point{}};
  int chunks = 0;
  std::thread canceller;
  const auto e = thrown_by([&] {
    transport.stream(post(server), [&](std::string_view) {
      if (++chunks == 1) {
        canceller = std::thread([&] {
          cancelled_at = Clock::now();
          cancel.cancel();
        });
      }
      return true;
    }, &cancel);
  });
  const double latency = ms_since(cancelled_at.load());
  if (canceller.joinable()) canceller.join();
  CHECK(e.code() == ErrorCode::cancelled);
  CHECK(chunks == 1);
  CHECK(latency < agentkit_test::latency_bound_ms(50));
}

TEST_CASE("stream lets an exception from on_data propagate", "[transport]") {
  WireServer server;
  server.enqueue(streamed({"one", "two"}));
  Transport transport(quick());
  CHECK_THROWS_WITH(transport.stream(post(server), [](std::string_view) -> bool { throw std::runtime_error("parse failed"); }),
                    "parse failed");
  CHECK(server.requests().size() == 1);
}

// --- concurrency -----------------------------------------------------------

TEST_CASE("concurrent sends share a Transport on pooled keep-alive connections", "[transport]") {
  WireServer server;
  server.set_handler([](const WireServer::Request& req) {
    WireServer::Response r;
    r.body = req.body;
    return r;
  });
  Transport transport(quick());
  constexpr int kThreads = 4, kEach = 25;
  std::atomic<int> echoed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string body = std::to_string(t) + ":" + std::to_string(i);
        if (transport.send({"POST", server.base_url() + "/echo", {}, body}).body == body) ++echoed;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(echoed == kThreads * kEach);
  CHECK(server.connections_accepted() <= kThreads);
}

// --- secrets ---------------------------------------------------------------

TEST_CASE("error messages never contain API keys", "[transport]") {
  const agentkit::providers::Headers auth = {{"Authorization", "Bearer " + kOpenAiKey}, {"x-api-key", kAnthropicKey}};
  auto check_clean = [&](const ProviderError& e) {
    const std::string message = e.what();
    CHECK_FALSE(message.empty());
    CHECK(message.find(kOpenAiKey) == std::string::npos);
    CHECK(message.find(kAnthropicKey) == std::string::npos);
    CHECK(message.find("SECRET") == std::string::npos);
  };

  SECTION("a 401 with an empty body") {
    WireServer server;
    server.enqueue(reply(401, ""));
    Transport transport(quick());
    const auto e = thrown_by([&] { transport.send({"POST", server.base_url() + "/v1/messages", auth, "{}"}); });
    CHECK(e.code() == ErrorCode::unauthenticated);
    check_clean(e);
    CHECK(server.requests()[0].header("authorization") == "Bearer " + kOpenAiKey);  // it was sent, just never echoed
  }
  SECTION("a server that echoes the key back") {
    WireServer server;
    server.enqueue(reply(401, R"({"error":{"message":"Incorrect API key provided: )" + kOpenAiKey + R"("}})"));
    Transport transport(quick());
    const auto e = thrown_by([&] { transport.send({"POST", server.base_url() + "/v1/messages", auth, "{}"}); });
    check_clean(e);
    CHECK_THAT(e.what(), Catch::Contains("[redacted]"));
  }
  SECTION("a non-JSON body that echoes a header") {
    WireServer server;
    server.enqueue(reply(400, "bad header x-api-key: " + kAnthropicKey));
    Transport transport(quick());
    check_clean(thrown_by([&] { transport.send({"POST", server.base_url() + "/v1/messages", auth, "{}"}); }));
  }
  SECTION("a connection failure") {
    Transport transport(quick());
    const auto url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/messages?key=" + kOpenAiKey;
    const auto e = thrown_by([&] { transport.send({"POST", url, auth, "{}"}); });
    CHECK(e.code() == ErrorCode::unavailable);
    check_clean(e);
  }
  SECTION("a timeout") {
    WireServer server;
    WireServer::Response stall;
    stall.fault = WireServer::Fault::stall;
    server.enqueue(stall);
    TransportOptions options = quick();
    options.idle_timeout = 50ms;
    Transport transport(options);
    check_clean(thrown_by([&] { transport.send({"POST", server.base_url() + "/v1/messages", auth, "{}"}); }));
  }
}

TEST_CASE("send refuses header values with line breaks, without echoing them", "[transport]") {
  WireServer server;
  Transport transport(quick());
  const auto e = thrown_by([&] {
    transport.send({"POST", server.base_url() + "/v1/x", {{"x-api-key", kAnthropicKey + "\r\nx-injected: 1"}}, "{}"});
  });
  CHECK(e.code() == ErrorCode::invalid_argument);
  CHECK(std::string(e.what()).find("SECRET") == std::string::npos);
  CHECK(server.requests().empty());
}

// --- error_from_response / retry_advice ----------------------------------

TEST_CASE("error_from_response maps statuses and provider bodies to codes", "[transport]") {
  using agentkit::providers::error_from_response;
  auto code_of = [](int status, std::string body = "") { return error_from_response({status, {}, std::move(body)}).code(); };
  CHECK(code_of(400) == ErrorCode::invalid_argument);
  CHECK(code_of(404) == ErrorCode::invalid_argument);
  CHECK(code_of(409) == ErrorCode::invalid_argument);
  CHECK(code_of(413) == ErrorCode::invalid_argument);
  CHECK(code_of(422) == ErrorCode::invalid_argument);
  CHECK(code_of(401) == ErrorCode::unauthenticated);
  CHECK(code_of(403) == ErrorCode::permission_denied);
  CHECK(code_of(408) == ErrorCode::timeout);
  CHECK(code_of(429) == ErrorCode::rate_limited);
  CHECK(code_of(429, R"({"error":{"type":"insufficient_quota","message":"q"}})") == ErrorCode::quota_exceeded);
  CHECK(code_of(429, R"({"error":{"type":"tokens","code":"insufficient_quota","message":"q"}})") == ErrorCode::quota_exceeded);
  CHECK(code_of(529) == ErrorCode::overloaded);
  CHECK(code_of(500, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})") ==
        ErrorCode::overloaded);
  CHECK(code_of(500) == ErrorCode::unavailable);
  CHECK(code_of(502) == ErrorCode::unavailable);
  CHECK(code_of(503) == ErrorCode::unavailable);

  CHECK(error_from_response({429, {}, "{}"}).retryable());
  CHECK(error_from_response({408, {}, ""}).retryable());
  CHECK_FALSE(error_from_response({400, {}, ""}).retryable());
  CHECK_FALSE(error_from_response({401, {}, ""}).retryable());
}

TEST_CASE("error_from_response builds the message from the provider's error body", "[transport]") {
  using agentkit::providers::error_from_response;
  auto message_of = [](int status, std::string body) {
    return std::string(error_from_response({status, {}, std::move(body)}).what());
  };
  CHECK(message_of(400, R"({"error":{"message":"Invalid 'messages'","type":"invalid_request_error","param":"messages","code":null}})") ==
        "Invalid 'messages' (param 'messages') (HTTP 400)");
  CHECK(message_of(400, R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}})") ==
        "max_tokens: required (HTTP 400)");
  CHECK(message_of(502, "<html>Bad Gateway</html>") == "<html>Bad Gateway</html> (HTTP 502)");
  CHECK(message_of(503, "") == "unavailable (HTTP 503)");
  const std::string long_message(1000, 'm');
  const std::string from_json = message_of(400, R"({"error":{"message":")" + long_message + R"("}})");
  CHECK(from_json.size() < 320);
  CHECK(from_json.rfind(std::string(300, 'm'), 0) == 0);
  const std::string from_text = message_of(500, std::string(1000, 't'));
  CHECK(from_text.size() < 220);
  CHECK(from_text.rfind(std::string(200, 't'), 0) == 0);
}

TEST_CASE("retry_advice follows the SDKs' header order", "[transport]") {
  using agentkit::providers::retry_advice;
  auto advise = [](int status, agentkit::providers::Headers headers, std::string body = "") {
    return retry_advice(status, {status, std::move(headers), std::move(body)});
  };
  CHECK(advise(408, {}).retry);
  CHECK(advise(409, {}).retry);
  CHECK(advise(429, {}).retry);
  CHECK(advise(500, {}).retry);
  CHECK(advise(529, {}).retry);
  CHECK_FALSE(advise(400, {}).retry);
  CHECK_FALSE(advise(401, {}).retry);
  CHECK_FALSE(advise(404, {}).retry);
  CHECK_FALSE(advise(429, {}, R"({"error":{"code":"insufficient_quota"}})").retry);
  CHECK_FALSE(advise(500, {{"x-should-retry", "false"}}).retry);
  CHECK(advise(400, {{"x-should-retry", "true"}}).retry);

  CHECK_FALSE(advise(429, {}).after.has_value());  // no header: the caller's backoff applies
  CHECK(advise(429, {{"retry-after", "2"}}).after == std::chrono::milliseconds(2000));
  CHECK(advise(429, {{"retry-after", "0.05"}}).after == std::chrono::milliseconds(50));
  CHECK(advise(429, {{"retry-after-ms", "120"}, {"retry-after", "9"}}).after == std::chrono::milliseconds(120));
  CHECK(advise(429, {{"retry-after-ms", "soon"}, {"retry-after", "1"}}).after == std::chrono::milliseconds(1000));
  CHECK_FALSE(advise(429, {{"retry-after", "whenever"}}).after.has_value());

  // An HTTP date 5 s ahead.
  const auto when = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + 5s;
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  const auto after = advise(503, {{"retry-after", date}}).after;
  REQUIRE(after.has_value());
  CHECK(*after > 3s);
  CHECK(*after <= 5s);
}

TEST_CASE("to_string names every error code", "[transport]") {
  using agentkit::providers::to_string;
  CHECK(to_string(ErrorCode::timeout) == "timeout");
  CHECK(to_string(ErrorCode::rate_limited) == "rate_limited");
  CHECK(to_string(ErrorCode::quota_exceeded) == "quota_exceeded");
  CHECK(to_string(ErrorCode::cancelled) == "cancelled");
  CHECK(to_string(ErrorCode::protocol) == "protocol");
}

TEST_CASE("any_status returns non-2xx responses whole, without retrying", "[transport]") {
  WireServer server;
  server.enqueue(reply(503, "busy", {{"Retry-After", "0"}}));
  server.enqueue(reply(302, "", {{"Location", "http://127.0.0.1:1/next"}}));
  Transport transport(quick());
  HttpRequest request = post(server);
  request.any_status = true;
  const HttpResponse busy = transport.send(request);
  CHECK(busy.status == 503);
  CHECK(busy.body == "busy");
  const HttpResponse moved = transport.send(request);  // redirects are never followed
  CHECK(moved.status == 302);
  CHECK(moved.header("location") == std::optional<std::string_view>("http://127.0.0.1:1/next"));
  CHECK(server.requests().size() == 2);
}

TEST_CASE("on_headers sees status and headers once, before the first body byte", "[transport]") {
  WireServer server;
  server.enqueue(streamed({"one", "two"}, 10ms));
  server.enqueue(reply(202, "", {{"Mcp-Session-Id", "s1"}}));
  Transport transport(quick());
  std::vector<std::string> seen;
  auto on_data = [&](std::string_view bytes) {
    seen.emplace_back(bytes);
    return true;
  };
  auto on_headers = [&](const HttpResponse& r) { seen.push_back("headers " + std::to_string(r.status)); };
  auto first = transport.start_stream(post(server), on_data, nullptr, on_headers);
  while (!first.poll()) first.wait(10ms);
  first.take();
  REQUIRE(seen.size() >= 2);
  CHECK(seen.front() == "headers 200");
  CHECK(std::count(seen.begin(), seen.end(), "headers 200") == 1);
  seen.clear();
  auto bodiless = transport.start_stream(post(server), on_data, nullptr, on_headers);
  while (!bodiless.poll()) bodiless.wait(10ms);
  CHECK(bodiless.take().header("mcp-session-id") == std::optional<std::string_view>("s1"));
  CHECK(seen == std::vector<std::string>{"headers 202"});
}

TEST_CASE("retry_advice reads Retry-After seconds and all three HTTP date forms through curl_getdate",
          "[transport][retry-after]") {
  using agentkit::providers::retry_advice;
  using std::chrono::milliseconds;
  auto after = [](std::string value) {
    return retry_advice(503, {503, {{"retry-after", std::move(value)}}, ""}).after;
  };
  auto format = [](std::chrono::system_clock::time_point when, const char* layout) {
    const std::time_t t = std::chrono::system_clock::to_time_t(when);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[64];
    std::strftime(text, sizeof text, layout, &tm);
    return std::string(text);
  };
  const auto soon = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + 30s;

  CHECK(after("7") == milliseconds(7000));
  CHECK(after(" 7 ") == milliseconds(7000));
  // IMF-fixdate, the obsolete RFC 850 form and asctime, each 30 s ahead.
  for (const char* layout : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"}) {
    const std::string date = format(soon, layout);
    INFO(date);
    const auto wait = after(date);
    REQUIRE(wait.has_value());
    CHECK(*wait > 25s);
    CHECK(*wait <= 30s);
  }
  CHECK(after("Sun, 06 Nov 1994 08:49:37 GMT") == milliseconds(0));  // a past date: retry now
  CHECK_FALSE(after("whenever").has_value());
  CHECK_FALSE(after("").has_value());
  CHECK_FALSE(after("-5").has_value());
  CHECK_FALSE(after("Funday, 99 Smarch 20x4").has_value());
  // Huge values are clamped (to 24 hours), never overflowed.
  CHECK(after("1e300") == std::chrono::hours(24));
  CHECK(after("99999999999999999999") == std::chrono::hours(24));
  CHECK(retry_advice(429, {429, {{"retry-after-ms", "1e300"}}, ""}).after == std::chrono::hours(24));
  CHECK(after(format(std::chrono::system_clock::now() + std::chrono::hours(24 * 365), "%a, %d %b %Y %H:%M:%S GMT")) ==
        std::chrono::hours(24));
}
