// WireServer, the loopback HTTP/1.1 peer that transport and adapter tests
// talk to: scripted responses, request recording, chunked streaming,
// keep-alive, and the 500 it answers when its script runs out.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include <agentkit/providers/transport.h>
#include <agentkit/testing/wire_server.h>

#include "../helpers/timing.h"

using agentkit::testing::WireServer;
using namespace std::chrono_literals;

namespace {

// A raw client, so the server is checked on the wire and not through Transport.
class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(const std::string& data) { REQUIRE(::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size())); }

  // One recv() worth of bytes ("" on EOF or after `timeout_ms` without data).
  std::string read_some(int timeout_ms = 2000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return {};
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

  // Everything until `marker` has been seen (or EOF).
  std::string read_until(const std::string& marker) {
    std::string all;
    while (all.find(marker) == std::string::npos) {
      const std::string more = read_some();
      if (more.empty()) break;
      all += more;
    }
    return all;
  }

 private:
  int fd_;
};

WireServer::Response ok(std::string body) {
  WireServer::Response r;
  r.headers = {{"content-type", "application/json"}};
  r.body = std::move(body);
  return r;
}

}  // namespace

TEST_CASE("WireServer serves queued responses in order", "[wire_server]") {
  WireServer server;
  server.enqueue(ok(R"({"n":1})"));
  server.enqueue(ok(R"({"n":2})"));
  agentkit::providers::Transport transport;
  const agentkit::providers::HttpRequest request{"GET", server.base_url() + "/v1/models", {}, ""};
  CHECK(transport.send(request).body == R"({"n":1})");
  const auto second = transport.send(request);
  CHECK(second.body == R"({"n":2})");
  CHECK(second.header("content-type") == std::optional<std::string_view>("application/json"));
}

TEST_CASE("WireServer records method, path, lower-cased headers and body", "[wire_server]") {
  WireServer server;
  server.enqueue(ok("{}"));
  agentkit::providers::Transport transport;
  transport.send({"POST", server.base_url() + "/v1/chat/completions?stream=true",
                  {{"Content-Type", "application/json"}, {"X-Custom-Header", "Value 1"}}, R"({"model":"m"})"});
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].path == "/v1/chat/completions?stream=true");
  CHECK(requests[0].header("x-custom-header") == "Value 1");
  CHECK(requests[0].header("X-Custom-Header") == "Value 1");
  CHECK(requests[0].header("content-type") == "application/json");
  CHECK(requests[0].header("absent") == "");
  CHECK(requests[0].body == R"({"model":"m"})");
}

TEST_CASE("WireServer with record_requests(false) answers and keeps no request", "[wire_server]") {
  WireServer server;
  server.enqueue(ok(R"({"n":1})"));
  server.enqueue(ok(R"({"n":2})"));
  server.enqueue(ok(R"({"n":3})"));
  agentkit::providers::Transport transport;
  const agentkit::providers::HttpRequest request{"POST", server.base_url() + "/v1/traces", {}, std::string(4096, 'x')};
  server.record_requests(false);
  CHECK(transport.send(request).body == R"({"n":1})");
  CHECK(transport.send(request).body == R"({"n":2})");
  CHECK(server.requests().empty());
  server.record_requests(true);
  CHECK(transport.send(request).body == R"({"n":3})");
  CHECK(server.requests().size() == 1);
}

TEST_CASE("WireServer reads chunked request bodies", "[wire_server]") {
  WireServer server;
  server.enqueue(ok("{}"));
  RawClient client(server.port());
  client.send("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  CHECK(client.read_until("{}").find("HTTP/1.1 200") == 0);
  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].body == "hello world");
}

TEST_CASE("WireServer streams chunks one by one with chunked encoding", "[wire_server]") {
  WireServer server;
  WireServer::Response r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.chunks = {"data: one\n\n", "data: two\n\n", "data: [DONE]\n\n"};
  r.chunk_delay = 60ms;
  server.enqueue(r);

  RawClient client(server.port());
  client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string head = client.read_until("data: one\n\n\r\n");
  CHECK(head.find("HTTP/1.1 200") == 0);
  CHECK(head.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(head.find("content-type: text/event-stream\r\n") != std::string::npos);
  CHECK(head.find("b\r\ndata: one\n\n\r\n") != std::string::npos);
  CHECK(head.find("two") == std::string::npos);  // the second chunk is still 60 ms away

  const auto before = std::chrono::steady_clock::now();
  const std::string rest = client.read_until("0\r\n\r\n");
  CHECK(std::chrono::steady_clock::now() - before >= 80ms);  // two more chunk delays
  CHECK(rest.find("b\r\ndata: two\n\n\r\n") != std::string::npos);
  CHECK(rest.find("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n") != std::string::npos);
}

TEST_CASE("WireServer keeps connections alive across requests", "[wire_server]") {
  WireServer server;
  for (int i = 0; i < 3; ++i) server.enqueue(ok("{}"));
  agentkit::providers::Transport transport;
  for (int i = 0; i < 3; ++i) transport.send({"POST", server.base_url() + "/v1/x", {}, "{}"});
  CHECK(server.requests().size() == 3);
  CHECK(server.connections_accepted() == 1);
}

TEST_CASE("WireServer closes the connection when the client asks", "[wire_server]") {
  WireServer server;
  server.enqueue(ok("{}"));
  RawClient client(server.port());
  client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string reply = client.read_until("{}");
  CHECK(reply.find("Connection: close\r\n") != std::string::npos);
  CHECK(client.read_some().empty());  // EOF
}

TEST_CASE("WireServer answers 500 naming the request number past the end of its script", "[wire_server]") {
  WireServer server;
  server.enqueue(ok("{}"));
  RawClient client(server.port());
  client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(client.read_until("{}").find("HTTP/1.1 200") == 0);
  client.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string reply = client.read_until("#2");
  CHECK(reply.find("HTTP/1.1 500") == 0);
  CHECK(reply.find("WireServer: no response scripted for request #2") != std::string::npos);
}

TEST_CASE("WireServer handler answers instead of the queue", "[wire_server]") {
  WireServer server;
  server.set_handler([](const WireServer::Request& req) { return ok(R"({"echo":")" + req.path + R"("})"); });
  agentkit::providers::Transport transport;
  CHECK(transport.send({"GET", server.base_url() + "/ping", {}, ""}).body == R"({"echo":"/ping"})");
}

TEST_CASE("WireServer reset fault sends RST after the given chunks", "[wire_server]") {
  WireServer server;
  WireServer::Response r;
  r.chunks = {"first", "second"};
  r.fault = WireServer::Fault::reset_mid_stream;
  r.fault_after_chunks = 1;
  server.enqueue(r);
  RawClient client(server.port());
  client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string got = client.read_until("first\r\n");
  CHECK(got.find("5\r\nfirst\r\n") != std::string::npos);
  std::string rest;
  for (std::string more = client.read_some(); !more.empty(); more = client.read_some()) rest += more;
  CHECK(rest.find("second") == std::string::npos);
  CHECK(rest.find("0\r\n\r\n") == std::string::npos);
}

TEST_CASE("WireServer stops promptly with a stalled connection open", "[wire_server]") {
  auto server = std::make_unique<WireServer>();
  WireServer::Response r;
  r.fault = WireServer::Fault::stall;
  server->enqueue(r);
  RawClient client(server->port());  // outlives the server: the connection is still open when it stops
  client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  while (server->requests().empty()) std::this_thread::sleep_for(1ms);
  CHECK(client.read_some(100).empty());  // no answer
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  CHECK(std::chrono::steady_clock::now() - start < agentkit_test::latency_bound(200ms));
}

TEST_CASE("WireServer::split cuts a body into fixed-size chunks", "[wire_server]") {
  CHECK(WireServer::split("abcdefg", 3) == std::vector<std::string>{"abc", "def", "g"});
  CHECK(WireServer::split("", 3).empty());
}
