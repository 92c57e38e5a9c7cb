// The embeddable HTTP/1.1 server (providers/src/http_server.h) against raw
// sockets on 127.0.0.1: framing, keep-alive, pipelining, limits, timeouts, SSE,
// cross-thread responders, poll()-driven mode and a hostile corpus.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <agentkit/error.h>
#include <agentkit/providers/transport.h>

#include "../../providers/src/http_server.h"

namespace {

using namespace agentkit::providers::detail;
using namespace std::chrono_literals;
using namespace std::string_literals;
using Clock = std::chrono::steady_clock;

// A blocking-with-deadline raw TCP client.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Sends everything (the server reads concurrently, so this finishes or the peer closed).
  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{fd_, POLLOUT, 0};
        ::poll(&p, 1, 100);
      } else {
        return false;
      }
    }
    return true;
  }
  // Reads what arrives until `done(buffer)` or the deadline; false on timeout.
  bool read_until(const std::function<bool(const std::string&)>& done, std::chrono::milliseconds limit = 5s,
                  const std::function<void()>& idle = {}) {
    const auto deadline = Clock::now() + limit;
    while (!done(buffer_)) {
      if (Clock::now() > deadline) return false;
      if (idle) {
        idle();
        std::this_thread::sleep_for(1ms);
      }
      char buf[8192];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        buffer_.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0) {
        eof_ = true;
        return done(buffer_);
      } else if (errno == EAGAIN || errno == EINTR) {
        if (!idle) {
          pollfd p{fd_, POLLIN, 0};
          ::poll(&p, 1, 20);
        }
      } else {
        eof_ = true;
        return done(buffer_);
      }
    }
    return true;
  }
  // Reads one whole response (Content-Length or chunked) and removes it from the buffer.
  struct Response {
    int status = 0;
    std::string head;
    std::string body;
  };
  std::optional<Response> response(std::chrono::milliseconds limit = 5s, const std::function<void()>& idle = {}) {
    std::optional<Response> out;
    read_until(
        [&](const std::string& b) {
          out = parse(b);
          return out.has_value();
        },
        limit, idle);
    return out;
  }
  // True when the server closed the connection within `limit`.
  bool closed(std::chrono::milliseconds limit = 5s) {
    read_until([this](const std::string&) { return eof_; }, limit);
    return eof_;
  }
  std::string& buffer() { return buffer_; }
  int fd() const { return fd_; }

 private:
  std::optional<Response> parse(const std::string& b) {
    auto end = b.find("\r\n\r\n");
    if (end == std::string::npos) return std::nullopt;
    Response r;
    r.head = b.substr(0, end + 2);
    r.status = std::atoi(b.substr(9, 3).c_str());
    std::size_t pos = end + 4;
    std::string lower = r.head;
    for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (auto cl = lower.find("content-length: "); cl != std::string::npos) {
      std::size_t n = std::stoul(lower.substr(cl + 16));
      if (b.size() < pos + n) return std::nullopt;
      r.body = b.substr(pos, n);
      buffer_.erase(0, pos + n);
      return r;
    }
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      while (true) {
        auto e = b.find("\r\n", pos);
        if (e == std::string::npos) return std::nullopt;
        std::size_t n = std::stoul(b.substr(pos, e - pos), nullptr, 16);
        if (b.size() < e + 2 + n + 2) return std::nullopt;
        r.body += b.substr(e + 2, n);
        pos = e + 2 + n + 2;
        if (n == 0) break;
      }
      buffer_.erase(0, pos);
      return r;
    }
    buffer_.erase(0, pos);  // no body (e.g. 100 Continue, 204)
    return r;
  }

  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

std::string get(std::string_view target, std::string_view extra = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\n" + std::string(extra) + "\r\n";
}

std::string post(std::string_view target, std::string_view body) {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

// Answers with "<method> <target> <body>".
HttpHandler echo() {
  return [](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    res->respond(200, {{"Content-Type", "text/plain"}}, req.method + " " + req.target + " " + req.body);
  };
}

struct Running {
  explicit Running(HttpServerOptions options, HttpHandler handler) : server(std::move(options), std::move(handler)) {
    server.listen();
    server.run_in_thread();
  }
  ~Running() { server.stop(); }
  HttpServer server;
};

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 5s) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

}  // namespace

TEST_CASE("http server: a plain request gets its response, and the handler sees method, target, headers and peer",
          "[http_server]") {
  std::mutex mu;
  HttpRequest seen;
  Running s({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    {
      std::lock_guard lock(mu);
      seen = req;
    }
    res->respond(201, {{"X-Answer", "42"}, {"Content-Length", "999"}}, "made");
  });
  CHECK(s.server.port() > 0);
  CHECK(s.server.url() == "http://127.0.0.1:" + std::to_string(s.server.port()));
  RawClient c(s.server.port());
  c.send(get("/things?x=1", "X-Custom:  v a l \r\nAuthorization: Bearer sk-secret\r\n"));
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->status == 201);
  CHECK(r->head.find("HTTP/1.1 201 Created\r\n") == 0);
  CHECK(r->head.find("X-Answer: 42\r\n") != std::string::npos);
  CHECK(r->head.find("Content-Length: 4\r\n") != std::string::npos);  // the handler's own is dropped
  CHECK(r->head.find("999") == std::string::npos);
  CHECK(r->body == "made");
  std::lock_guard lock(mu);
  CHECK(seen.method == "GET");
  CHECK(seen.target == "/things?x=1");
  CHECK(seen.version == "HTTP/1.1");
  CHECK(seen.header("x-custom") == "v a l");
  CHECK(seen.header("HOST") == "localhost");
  CHECK_FALSE(seen.header("missing"));
  CHECK(seen.peer.rfind("127.0.0.1:", 0) == 0);
}

TEST_CASE("http server: keep-alive serves two requests on one connection, Connection: close ends it",
          "[http_server]") {
  std::mutex mu;
  std::vector<std::string> peers;
  Running s({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    {
      std::lock_guard lock(mu);
      peers.push_back(req.peer);
    }
    res->respond(200, {}, req.body);
  });
  RawClient c(s.server.port());
  c.send(post("/a", "one"));
  auto r1 = c.response();
  REQUIRE(r1);
  CHECK(r1->body == "one");
  c.send(post("/b", "two"));
  auto r2 = c.response();
  REQUIRE(r2);
  CHECK(r2->body == "two");
  CHECK(r2->head.find("Connection: close") == std::string::npos);
  c.send(get("/c", "Connection: close\r\n"));
  auto r3 = c.response();
  REQUIRE(r3);
  CHECK(r3->head.find("Connection: close\r\n") != std::string::npos);
  CHECK(c.closed());
  std::lock_guard lock(mu);
  REQUIRE(peers.size() == 3);
  CHECK(peers[0] == peers[1]);
}

TEST_CASE("http server: pipelined requests are answered in order", "[http_server]") {
  Running s({}, echo());
  RawClient c(s.server.port());
  c.send(post("/1", "a") + get("/2") + post("/3", "ccc"));
  auto r1 = c.response();
  auto r2 = c.response();
  auto r3 = c.response();
  REQUIRE(r1);
  REQUIRE(r2);
  REQUIRE(r3);
  CHECK(r1->body == "POST /1 a");
  CHECK(r2->body == "GET /2 ");
  CHECK(r3->body == "POST /3 ccc");
}

TEST_CASE("http server: a chunked request body is decoded, extensions and trailers dropped", "[http_server]") {
  Running s({}, echo());
  RawClient c(s.server.port());
  c.send("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  c.send("5;ext=1\r\nhello\r\n");
  std::this_thread::sleep_for(20ms);
  c.send("6\r\n, worl\r\n1\r\nd\r\n0\r\nX-Trailer: t\r\n\r\n");
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "POST /up hello, world");
  c.send(get("/after"));  // the connection survives
  auto r2 = c.response();
  REQUIRE(r2);
  CHECK(r2->body == "GET /after ");
}

TEST_CASE("http server: Expect 100-continue gets an interim response before the body", "[http_server]") {
  Running s({}, echo());
  RawClient c(s.server.port());
  c.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  auto interim = c.response();
  REQUIRE(interim);
  CHECK(interim->status == 100);
  c.send("abc");
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->body == "POST /e abc");
}

TEST_CASE("http server: bodies over the cap get 413, headers over the cap 431, and the connection closes",
          "[http_server]") {
  std::atomic<int> calls{0};
  Running s({.max_header_bytes = 1024, .max_body_bytes = 100}, [&](const HttpRequest&, std::shared_ptr<HttpResponder> res) {
    ++calls;
    res->respond(200, {}, "");
  });
  SECTION("Content-Length over the cap") {
    RawClient c(s.server.port());
    c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n");
    auto r = c.response();
    REQUIRE(r);
    CHECK(r->status == 413);
    CHECK(c.closed());
  }
  SECTION("chunked over the cap") {
    RawClient c(s.server.port());
    c.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
           "\r\n40\r\n" + std::string(64, 'b') + "\r\n");
    auto r = c.response();
    REQUIRE(r);
    CHECK(r->status == 413);
    CHECK(c.closed());
  }
  SECTION("a header block over the cap, complete or not") {
    RawClient c(s.server.port());
    c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'h') + "\r\n\r\n");
    auto r = c.response();
    REQUIRE(r);
    CHECK(r->status == 431);
    CHECK(c.closed());
    RawClient d(s.server.port());
    d.send("GET / HTTP/1.1\r\nX-Endless: " + std::string(3000, 'h'));
    auto r2 = d.response();
    REQUIRE(r2);
    CHECK(r2->status == 431);
  }
  SECTION("exactly at the cap passes") {
    RawClient c(s.server.port());
    c.send(post("/", std::string(100, 'z')));
    auto r = c.response();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(calls == 1);
  }
}

TEST_CASE("http server: a malformed request line gets 400 and the connection closes", "[http_server]") {
  std::atomic<int> calls{0};
  Running s({}, [&](const HttpRequest&, std::shared_ptr<HttpResponder> res) {
    ++calls;
    res->respond(200, {}, "");
  });
  for (std::string bad : {"GARBAGE\r\n\r\n", "GET /\r\nHost: x\r\n\r\n", "GET / HTTP/2.0\r\nHost: x\r\n\r\n",
                          "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
                          "GET / HTTP/1.1\r\n\r\n" /* no Host */}) {
    INFO(bad);
    RawClient c(s.server.port());
    c.send(bad);
    auto r = c.response();
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(c.closed());
  }
  CHECK(calls == 0);
}

TEST_CASE("http server: a request that stalls past header_timeout gets 408 and is closed, others are served",
          "[http_server]") {
  Running s({.header_timeout = 200ms, .idle_timeout = 400ms}, echo());
  RawClient slow(s.server.port());
  slow.send("GET / HTTP/1.1\r\nHost: x\r\n");  // never finishes its headers
  RawClient body(s.server.port());
  body.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");  // never finishes its body
  RawClient idle(s.server.port());  // sends nothing: closed silently after idle_timeout
  RawClient good(s.server.port());
  good.send(get("/ok"));
  auto ok = good.response();
  REQUIRE(ok);
  CHECK(ok->status == 200);
  const auto start = Clock::now();
  auto r = slow.response(3s);
  REQUIRE(r);
  CHECK(r->status == 408);
  CHECK(slow.closed(3s));
  CHECK(Clock::now() - start < 3s);
  auto rb = body.response(3s);
  REQUIRE(rb);
  CHECK(rb->status == 408);
  CHECK(idle.closed(3s));
  CHECK(idle.buffer().empty());
}

TEST_CASE("http server: connections beyond max_connections get 503", "[http_server]") {
  Running s({.max_connections = 2}, echo());
  RawClient a(s.server.port());
  RawClient b(s.server.port());
  a.send(get("/a"));
  REQUIRE(a.response());
  b.send(get("/b"));
  REQUIRE(b.response());
  RawClient c(s.server.port());
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(c.closed());
  a.close();
  // Once a slot is free a new connection is served.
  CHECK(eventually([&] {
    RawClient d(s.server.port());
    d.send(get("/d"));
    auto rd = d.response(1s);
    return rd && rd->status == 200;
  }));
}

TEST_CASE("http server: an SSE stream delivers each event as it is sent, and a client that leaves fires on_close",
          "[http_server]") {
  std::mutex mu;
  std::shared_ptr<HttpResponder> stream;
  std::atomic<int> closes{0};
  Running s({}, [&](const HttpRequest&, std::shared_ptr<HttpResponder> res) {
    {
      std::lock_guard lock(mu);
      stream = res;
    }
    res->on_close([&] { ++closes; });
    res->start_stream(200, {{"Mcp-Session-Id", "s1"}});
  });
  RawClient c(s.server.port());
  c.send(get("/events", "Accept: text/event-stream\r\n"));
  REQUIRE(c.read_until([](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; }));
  CHECK(c.buffer().find("Content-Type: text/event-stream\r\n") != std::string::npos);
  CHECK(c.buffer().find("Mcp-Session-Id: s1\r\n") != std::string::npos);
  CHECK(c.buffer().find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  std::shared_ptr<HttpResponder> res;
  {
    std::lock_guard lock(mu);
    res = stream;
  }
  REQUIRE(res);
  CHECK(res->open());
  for (int i = 1; i <= 3; ++i) {
    const std::string data = "{\"n\":" + std::to_string(i) + "}";
    REQUIRE(res->send_event(data, std::to_string(i)));
    // Each event arrives before the next is sent.
    CHECK(c.read_until([&](const std::string& b) { return b.find("data: " + data + "\n\n") != std::string::npos; }));
    CHECK(c.buffer().find("id: " + std::to_string(i) + "\n") != std::string::npos);
  }
  REQUIRE(res->send_event("line1\nline2"));
  CHECK(c.read_until([](const std::string& b) { return b.find("data: line1\ndata: line2\n\n") != std::string::npos; }));
  REQUIRE(res->send_retry(1500ms, "p0"));
  CHECK(c.read_until([](const std::string& b) { return b.find("id: p0\nretry: 1500\n") != std::string::npos; }));
  CHECK(closes == 0);
  c.close();
  CHECK(eventually([&] { return closes == 1; }));
  CHECK_FALSE(res->open());
  CHECK_FALSE(res->send_event("late"));
  res->end();  // harmless
  bool late = false;
  res->on_close([&] { late = true; });  // registered after the close: runs at once
  CHECK(late);
  CHECK(closes == 1);
}

TEST_CASE("http server: an ended stream is terminated and the connection is reused", "[http_server]") {
  std::atomic<bool> sent_after_end{true};
  Running s({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    if (req.target == "/s") {
      res->start_stream(200, {});
      res->send_event("a");
      res->send_comment("keep-alive");
      res->end();
      sent_after_end = res->send_event("after end");
    } else {
      res->respond(200, {}, "plain");
    }
  });
  RawClient c(s.server.port());
  c.send(get("/s"));
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->body == "data: a\n\n: keep-alive\n\n");
  c.send(get("/p"));
  auto r2 = c.response();
  REQUIRE(r2);
  CHECK(r2->body == "plain");
  CHECK_FALSE(sent_after_end);
}

TEST_CASE("http server: a responder answers from another thread while a silent handler blocks nobody",
          "[http_server]") {
  std::mutex mu;
  std::vector<std::shared_ptr<HttpResponder>> kept;
  std::vector<std::thread> workers;
  Running s({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    std::lock_guard lock(mu);
    if (req.target == "/never") {
      kept.push_back(res);  // never answered
    } else if (req.target == "/worker") {
      workers.emplace_back([res] {
        std::this_thread::sleep_for(100ms);
        res->respond(200, {}, "from a worker");
      });
    } else {
      res->respond(200, {}, "direct");
    }
  });
  RawClient never(s.server.port());
  never.send(get("/never"));
  RawClient worker(s.server.port());
  worker.send(get("/worker"));
  RawClient direct(s.server.port());
  direct.send(get("/direct"));
  auto d = direct.response();
  REQUIRE(d);
  CHECK(d->body == "direct");
  auto w = worker.response();
  REQUIRE(w);
  CHECK(w->body == "from a worker");
  CHECK(never.buffer().empty());
  {
    std::lock_guard lock(mu);
    for (auto& t : workers) t.join();
    REQUIRE(kept.size() == 1);
    CHECK(kept[0]->open());
  }
  s.server.stop();  // stop closes the unanswered exchange
  std::lock_guard lock(mu);
  CHECK_FALSE(kept[0]->open());
  kept[0]->respond(200, {}, "too late");  // safe after stop
}

TEST_CASE("http server: a handler that throws or drops its responder answers 500", "[http_server]") {
  Running s({}, [](const HttpRequest& req, std::shared_ptr<HttpResponder>) {
    if (req.target == "/throw") throw std::runtime_error("boom");
  });
  RawClient c(s.server.port());
  c.send(get("/throw"));
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->status == 500);
  c.send(get("/drop"));
  auto r2 = c.response();
  REQUIRE(r2);
  CHECK(r2->status == 500);
}

TEST_CASE("http server: a response header with CR or LF is refused", "[http_server]") {
  std::atomic<bool> threw{false};
  HttpServer s2({}, [&](const HttpRequest&, std::shared_ptr<HttpResponder> res) {
    try {
      res->respond(200, {{"X-Evil", "a\r\nSet-Cookie: b"}}, "");
    } catch (const agentkit::Error& e) {
      threw = e.code() == agentkit::ErrorCode::invalid_argument;
      throw;
    }
  });
  s2.listen();
  s2.run_in_thread();
  RawClient c(s2.port());
  c.send(get("/"));
  auto r = c.response();
  REQUIRE(r);
  CHECK(r->status == 500);
  CHECK(r->head.find("Set-Cookie") == std::string::npos);
  CHECK(threw);
  s2.stop();
  s2.stop();  // idempotent
}

TEST_CASE("http server: poll() driven by the test thread alone serves requests without blocking", "[http_server]") {
  std::atomic<int> calls{0};
  HttpServer server({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    ++calls;
    res->respond(200, {}, "polled " + req.target);
  });
  CHECK_THROWS_AS(server.poll(), agentkit::Error);  // before listen()
  server.listen();
  const auto t0 = Clock::now();
  CHECK_FALSE(server.poll());  // nothing to do, returns at once
  CHECK(Clock::now() - t0 < 100ms);
  RawClient c(server.port());  // loopback connect completes in the backlog
  c.send(get("/one"));
  auto r = c.response(5s, [&] { server.poll(); });
  REQUIRE(r);
  CHECK(r->body == "polled /one");
  c.send(get("/two"));
  auto r2 = c.response(5s, [&] { server.poll(); });
  REQUIRE(r2);
  CHECK(r2->body == "polled /two");
  CHECK(calls == 2);
  server.stop();
}

TEST_CASE("http server: listen() on a port in use throws unavailable", "[http_server]") {
  HttpServer a({}, echo());
  a.listen();
  HttpServer b({.port = a.port()}, echo());
  try {
    b.listen();
    FAIL("listen on a taken port succeeded");
  } catch (const agentkit::Error& e) {
    CHECK(e.code() == agentkit::ErrorCode::unavailable);
    CHECK(std::string(e.what()).find(std::to_string(a.port())) != std::string::npos);
  }
}

TEST_CASE("http server: a hostile corpus gets 400s (or 413/431) and never crashes the server", "[http_server]") {
  Running s({.max_header_bytes = 4096, .max_body_bytes = 1000, .header_timeout = 300ms}, echo());
  struct Case {
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551617\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n", 400},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY", 400},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nX-Nul: a\0b\r\n\r\n"s, 400},
      {"GET /\0 HTTP/1.1\r\nHost: x\r\n\r\n"s, 400},
      {"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417},
      {"GET / HTTP/1.1\r\nHost: x\r\nX-Huge: " + std::string(10'000, 'A') + "\r\n\r\n", 431},
      {std::string(10'000, '\0'), 431},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", 413},
  };
  for (const auto& k : cases) {
    INFO(k.bytes.substr(0, 80));
    RawClient c(s.server.port());
    c.send(k.bytes);
    auto r = c.response(3s);
    REQUIRE(r);
    CHECK(r->status == k.status);
    CHECK(c.closed(3s));
  }
  // Random bytes on many connections at once, some ending the header block.
  std::mt19937 rng(20261204);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 40; ++i) {
    std::string junk(rng() % 3000, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng() % 256);
    if (i % 2 == 0) junk += "\r\n\r\n";
    if (i % 5 == 0) junk = "GET / HTTP/1.1\r\nHost: x\r\n" + junk;
    clients.push_back(std::make_unique<RawClient>(s.server.port()));
    clients.back()->send(junk);
    if (i % 3 == 0) clients.back()->close();
  }
  for (auto& c : clients)
    if (c->fd() >= 0) CHECK(c->closed(3s));
  RawClient good(s.server.port());
  good.send(post("/still", "alive"));
  auto r = good.response();
  REQUIRE(r);
  CHECK(r->body == "POST /still alive");
}

TEST_CASE("http server: libcurl (agentkit's Transport) posts a large body and reads an SSE stream", "[http_server]") {
  std::atomic<int> requests{0};
  std::mutex mu;
  std::vector<std::string> peers;
  Running s({}, [&](const HttpRequest& req, std::shared_ptr<HttpResponder> res) {
    ++requests;
    {
      std::lock_guard lock(mu);
      peers.push_back(req.peer);
    }
    if (req.target == "/sse") {
      res->start_stream(200, {});
      std::thread([res] {
        for (int i = 0; i < 3; ++i) res->send_event("e" + std::to_string(i), std::to_string(i));
        res->end();
      }).detach();
      return;
    }
    res->respond(200, {{"Content-Type", "application/json"}}, std::to_string(req.body.size()));
  });
  agentkit::providers::Transport transport({.max_retries = 0});
  agentkit::providers::HttpRequest big{.url = s.server.url() + "/big", .body = std::string(2 * 1024 * 1024, 'x')};
  auto r = transport.send(big);
  CHECK(r.status == 200);
  CHECK(r.body == std::to_string(2 * 1024 * 1024));
  std::string streamed;
  transport.stream({.method = "GET", .url = s.server.url() + "/sse"}, [&](std::string_view data) {
    streamed.append(data);
    return true;
  });
  CHECK(streamed == "id: 0\ndata: e0\n\nid: 1\ndata: e1\n\nid: 2\ndata: e2\n\n");
  auto again = transport.send({.url = s.server.url() + "/small", .body = "abc"});
  CHECK(again.body == "3");
  CHECK(requests == 3);
  std::lock_guard lock(mu);
  CHECK(peers.front() == peers.back());  // libcurl reused the keep-alive connection
}
